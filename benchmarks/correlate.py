"""Read strategies for live ⋈ archive correlations (docs/engine.md §6) on the workload of
the archive paper's Table 2 (Peng et al.): 1,000 streams, one night of 1,440 timesteps,
a 30-day archive before it; the share of streams with a live group varies from 0.05 to
1.0, and the archive pattern is as common as the live side or 10× rarer.

Silver is sparse (a stream is heard in bursts, about a fifth of its timesteps; silence
is the NoReading symbol). With `--source parquet` (the default) it is written as the
lake lays silver out (one Parquet file a day, sorted by stream and t, row groups of
`ROW_GROUP_ROWS`) and read through the lake's `SilverArchive` (files of the range's
days, row groups pruned by their statistics), so reads cost what they cost; with
`--source memory` it is held in memory (`Timeline`) and reads are almost free, leaving
the plans' transducer passes.
Live groups are planted in the night (P(g) in [0.5, 1]); the archive pattern `Door
Hallway{3,} Door` (window 30) is planted in the archive of a share of streams, elsewhere
a reader's Door is noise of at most 2%. τ_C = 0.3, lookback 30 days, gap 1. The
statistics table (`ArchiveStats`, per stream and day) is built once before timing, as
the pipeline keeps it, and its build time is printed apart.

    .venv/bin/python benchmarks/correlate.py [--streams 1000] [--days 30] [--seed 1]
        [--source parquet|memory] [--shares 0.05 0.1 0.25 0.5 1.0]

Printed per (live share, archive share): the ratio of silver rows lazy/active, the
speed-up active/lazy, auto against the better of active, lazy and sublazy (time ratio),
lazy/auto, sublazy's reads against lazy's, and auto's time against its reads plus one
transducer pass over the ranges it evaluates. All strategies' rows are checked equal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from probcep.config.clock import Clock
from probcep.engine import Group
from probcep.engine.correlate import Correlation, archive_probabilities
from probcep.engine.read_plans import (
    READ_COST_ROWS,
    STRATEGIES,
    ArchiveStats,
    Timeline,
    _coalesce,
    correlate,
)
from probcep.engine.transducer import Transducer
from probcep.lake.archive import SilverArchive
from probcep.lake.delta import ROW_GROUP_ROWS

DOMAIN = ("Hallway", "Door", "Room", "NoReading")
SILENCE = (0.0, 0.0, 0.0, 1.0)
DAY = 1440


def make_archive(rng, streams: int, days: int, archive_share: float):
    """Sparse silver rows per stream over days + 1 days (the archive, then the night)."""
    n = (days + 1) * DAY
    planted = rng.random(streams) < archive_share
    rows = {}
    for k in range(streams):
        heard = np.zeros(n, bool)
        for start in rng.integers(0, n - 60, size=(days + 1) * 6):
            heard[start:start + int(rng.integers(10, 60))] = True
        heard[0] = True
        t = np.flatnonzero(heard)
        probs = np.zeros((len(t), 4))
        noise = rng.uniform(0, 0.02, len(t))  # Door noise
        place = rng.integers(0, 2, len(t))  # Hallway or Room
        probs[np.arange(len(t)), place * 2] = 1 - noise
        probs[:, 1] = noise
        if planted[k]:  # a loiter: Door Hallway Hallway Hallway Door, somewhere in the archive
            at = int(rng.integers(0, len(t) - 6))
            probs[at:at + 5] = [[0.05, 0.9, 0.05, 0], [0.9, 0.05, 0.05, 0], [0.9, 0.05, 0.05, 0],
                                [0.9, 0.05, 0.05, 0], [0.05, 0.9, 0.05, 0]]
            t[at:at + 5] = t[at] + np.arange(5)
            keep = np.r_[np.diff(t) > 0, True]
            t, probs = t[keep], probs[keep]
        rows[f"s{k:04d}"] = (t, probs)
    return rows


def live_groups(rng, streams: int, days: int, share: float) -> dict[str, list[Group]]:
    night = days * DAY
    groups = {}
    for k in np.flatnonzero(rng.random(streams) < share):
        starts = np.sort(rng.choice(DAY - 60, size=int(rng.integers(1, 4)), replace=False))
        groups[f"s{k:04d}"] = [Group(night + int(s), None, night + int(s) + 10,
                                     float(rng.uniform(0.5, 1.0)), 1, 0.5) for s in starts]
    return groups


CLOCK = Clock(dt.datetime(2026, 1, 1), dt.timedelta(minutes=1))


def write_parquet(rows, folder: Path, days: int) -> dict[dt.date, list[str]]:
    """The archive as silver lays it out: a file per day, sorted by stream and t."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = {}
    for d in range(days + 1):
        lo, hi = d * DAY, (d + 1) * DAY
        ids, ts, ps = [], [], []
        for sid in sorted(rows):
            t, p = rows[sid]
            keep = (t >= lo) & (t < hi)
            ids.append(np.full(int(keep.sum()), sid))
            ts.append(t[keep])
            ps.append(p[keep])
        p = np.concatenate(ps)
        table = pa.table({"stream_id": np.concatenate(ids), "t": np.concatenate(ts),
                          **{name: p[:, k] for k, name in enumerate(DOMAIN)}})
        day = (CLOCK.epoch + d * DAY * CLOCK.step).date()
        path = folder / f"{day}.parquet"
        pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS)
        files[day] = [str(path)]
    return files


class Source:
    """A fresh source of the cell's silver per run (its read counters start at 0)."""

    def __init__(self, kind: str, rows, folder: Path, days: int):
        self.kind, self.rows, self.days = kind, rows, days
        self.files = write_parquet(rows, folder, days) if kind == "parquet" else None

    def open(self):
        if self.kind == "memory":
            return Timeline(SILENCE, self.rows)
        return SilverArchive(lambda day: self.files.get(day, []), CLOCK, DOMAIN, SILENCE,
                             horizon=0, end=(self.days + 1) * DAY - 1)


def timed(corr, transducer, groups, source, strategy, night, stats):
    archive = source.open()
    began = time.perf_counter()
    out = correlate(corr, transducer, groups, archive, strategy, night, stats)
    seconds = time.perf_counter() - began
    text = "".join(json.dumps(r.as_dict()) + "\n" for r in out)
    return {"seconds": seconds, "rows": archive.rows_read, "reads": archive.reads,
            "text": text}


def floor_cost(corr, transducer, groups, source, stats):
    """Auto's reads (its pruned, coalesced spans) plus one transducer pass over the ranges
    it evaluates, each timed alone: what a night cannot do without."""
    from probcep.engine.read_plans import _prunable

    archive = source.open()
    ranges = {}
    for sid, gs in groups.items():
        first = archive.first_t(sid)
        for g in gs:
            r = None if first is None else corr.archive_range(g.t_start, first)
            if r and not _prunable(corr, g.probability, stats.bound(sid, *r)):
                ranges.setdefault(sid, []).append(r)
    read = 0.0
    passes = 0.0
    for sid, rs in ranges.items():
        for lo, hi in _coalesce(rs, READ_COST_ROWS):
            began = time.perf_counter()
            t, p = archive.read(sid, lo, hi)
            read += time.perf_counter() - began
            inside = sorted({r for r in rs if lo <= r[0] and r[1] <= hi})
            began = time.perf_counter()
            archive_probabilities(transducer, t, p, SILENCE, inside)
            passes += time.perf_counter() - began
    return read + passes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", choices=("parquet", "memory"), default="parquet")
    ap.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.1, 0.25, 0.5, 1.0])
    args = ap.parse_args()
    corr = Correlation.build("Door Hallway{3,} Door", DOMAIN, window=30,
                             lookback=args.days * DAY, gap=1, min_probability=0.3)
    transducer = Transducer(corr.dfa, corr.window)
    night = (args.days * DAY, (args.days + 1) * DAY - 1)
    print(f"{args.streams} streams, night of {DAY} timesteps, {args.days}-day archive, "
          f"τ_C = {corr.min_probability}, archive `{corr.dfa.pattern}` w={corr.window}, "
          f"silver from {args.source}")
    print("| live share | archive share | rows lazy/active | time active/lazy "
          "| auto / best | time lazy/auto | reads sublazy/lazy | auto / (reads + pass) "
          "| seconds active, lazy, sublazy, auto |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        warm = make_archive(np.random.default_rng(0), 3, 1, 1.0)  # compile the loops first
        source = Source(args.source, warm, Path(tmp), 1)
        for strategy in STRATEGIES:
            timed(corr, transducer, live_groups(np.random.default_rng(0), 3, 1, 1.0), source,
                  strategy, (DAY, 2 * DAY - 1), ArchiveStats.from_timeline(
                      corr.dfa, corr.window, Timeline(SILENCE, warm), DAY))
        for share in args.shares:
            for rarer in (1, 10):
                rng = np.random.default_rng(args.seed)
                rows = make_archive(rng, args.streams, args.days, share / rarer)
                groups = live_groups(rng, args.streams, args.days, share)
                source = Source(args.source, rows, Path(tmp), args.days)
                began = time.perf_counter()
                stats = ArchiveStats.from_timeline(corr.dfa, corr.window,
                                                   Timeline(SILENCE, rows), DAY, night[1])
                stats_seconds = time.perf_counter() - began
                runs = {s: timed(corr, transducer, groups, source, s, night, stats)
                        for s in STRATEGIES}
                assert len({r["text"] for r in runs.values()}) == 1, "strategies disagree"
                best = min(runs[s]["seconds"] for s in ("active", "lazy", "sublazy"))
                floor = floor_cost(corr, transducer, groups, source, stats)
                a, lz, sl, au = (runs[s] for s in STRATEGIES)
                tail = f"{au['seconds'] / floor:.2f}" if floor > 1e-3 else "– (all pruned)"
                secs = ", ".join(f"{runs[s]['seconds']:.2f}" for s in STRATEGIES)
                print(f"| {share} | {share / rarer:g} | {lz['rows'] / a['rows']:.3f} "
                      f"| {a['seconds'] / lz['seconds']:.2f} | {au['seconds'] / best:.2f} "
                      f"| {lz['seconds'] / au['seconds']:.2f} "
                      f"| {sl['reads'] / lz['reads']:.2f} | {tail} | {secs} |  "
                      f"<!-- stats {stats_seconds:.1f} s, "
                      f"{au['text'].count(chr(10))} rows -->", flush=True)


if __name__ == "__main__":
    main()
