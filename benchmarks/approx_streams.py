"""Approximate patterns in a night: the executors' step over many small streams, one call
per stream (`applyInPandas`, the automaton built each time: the code before 2026-11-27)
against one call per partition (`mapInPandas`, `approx_day._match_partition`), alternated
in one process, medians of three; both give the same rows (checked first).

    PYTHONPATH=src .venv/bin/python benchmarks/approx_streams.py --streams 20000
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import time

import numpy as np
import pandas as pd

from probcep.config.registry import parse_entry
from probcep.engine.approx import Budget, ErrorAutomaton, History, make_policy, run_stream
from probcep.lake.spark import spark_session
from probcep.pipeline import approx_day

DOMAIN = ("Hallway", "Door", "Room")
ENTRY = parse_entry("k1", {"pattern": "Door Room+ Door", "max_errors": 1, "window": 60,
                           "budget": 2.0}, DOMAIN)
HISTORIES = {"k1": pickle.dumps(History(60))}
COLUMNS = [c.split()[0] for c in approx_day._OUT.split(", ")]


def per_stream(events: pd.DataFrame) -> pd.DataFrame:
    """The executor function before: the automaton built for every stream."""
    events = events.sort_values("t")
    sid = str(events["stream_id"].iloc[0])
    ea = ErrorAutomaton.build(ENTRY.pattern, ENTRY.max_errors, DOMAIN)
    policy = make_policy("history", history=pickle.loads(HISTORIES["k1"]))
    found = run_stream(ea, ENTRY.window, list(events["symbol"]), list(events["t"]),
                       budget=Budget(ENTRY.budget), policy=policy, stream_id=sid)
    rows = [("match", ENTRY.name, ENTRY.version, sid, m.start_tag, m.match_point, m.errors,
             m.count, None) for m in found.matches]
    rows += [("bundle", ENTRY.name, ENTRY.version, sid, b.bundle_id, b.first_point,
              b.last_point, b.n_matches, b.min_errors) for b in found.bundles]
    return pd.DataFrame(rows, columns=COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=5, help="events per stream")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)")
    rng = np.random.default_rng(0)
    n, k = args.streams, args.events
    frame = pd.DataFrame({"stream_id": np.repeat([f"s{i}" for i in range(n)], k),
                          "t": np.tile(np.arange(k) * 40, n),
                          "symbol": rng.choice(DOMAIN, n * k)})
    events = spark_session().createDataFrame(frame).cache()
    events.count()
    sides = {
        "per stream": lambda: events.groupBy("stream_id").applyInPandas(
            per_stream, approx_day._OUT).toArrow(),
        "per partition": lambda: events.repartition("stream_id")
        .sortWithinPartitions("stream_id", "t")
        .mapInPandas(functools.partial(approx_day._match_partition, entries=[ENTRY],
                                       domain=DOMAIN, histories=HISTORIES), approx_day._OUT)
        .toArrow()}

    def rows(table):
        return sorted(map(tuple, table.to_pandas().astype(str).to_numpy().tolist()))

    assert rows(sides["per stream"]()) == rows(sides["per partition"]())
    times = {name: [] for name in sides}
    for _ in range(3):
        for name, run in sides.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    old, new = (float(np.median(times[name])) for name in sides)
    print(f"{n:,} streams x {k} events: per stream {old:.2f} s, per partition {new:.2f} s, "
          f"{old / new:.2f}x; load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
