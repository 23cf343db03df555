"""Grouping on Spark executors equals the engine run directly, batch after batch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probcep.engine import StreamMatcher
from probcep.gold.grouping import STATE_SCHEMA, run_grouping
from probcep.registry import parse_entry

pytestmark = pytest.mark.slow
DOMAIN = ("Hallway", "Door", "Room")


def _silver(n_streams=6, length=600, seed=4):
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_streams):
        p = rng.dirichlet(np.full(3, 0.5), size=length)
        p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(length) + 7 * k,
                                    **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pd.concat(frames, ignore_index=True)


PATTERNS = [
    parse_entry("visit", {"pattern": "Door Room+ Door", "policy": "complete",
                          "threshold": 0.01, "window": 12}, DOMAIN),
    parse_entry("pass", {"pattern": "Hallway Door Hallway", "policy": "single",
                         "threshold": 0.0, "window": 5}, DOMAIN),
]


def _direct(silver):
    rows = []
    for sid, part in silver.groupby("stream_id"):
        part = part.sort_values("t")
        for p in PATTERNS:
            m = StreamMatcher(p.query)
            for g in m.feed(int(part.t.iloc[0]), part[list(DOMAIN)].to_numpy()) + m.finish():
                rows.append((p.name, sid, g.t_start, g.t_first, g.t_end, g.probability,
                             g.n_matches, g.max_match_probability))
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or 0))


def _groups(frame):
    rows = [(r.pattern, r.stream_id, r.t_start, r.t_first, r.t_end, r.probability,
             r.n_matches, r.max_match_probability)
            for r in frame.itertuples() if r.kind == "group"]
    rows = [tuple(None if pd.isna(x) else x for x in r) for r in rows]
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or 0))


def test_days_one_at_a_time_equal_one_pass(spark):
    silver = _silver()
    expected = _direct(silver)
    assert expected
    states = spark.createDataFrame([], STATE_SCHEMA)
    got = []
    cuts = [0, 150, 151, 420, 10_000]
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        day = spark.createDataFrame(silver[(silver.t >= lo) & (silver.t < hi)])
        final = hi == cuts[-1]
        out = run_grouping(day, states, PATTERNS, DOMAIN, final=final).toPandas()
        got += _groups(out)
        state_rows = out[out.kind == "state"][["pattern", "pattern_version", "stream_id",
                                               "next_t", "state"]]
        states = spark.createDataFrame(state_rows, STATE_SCHEMA)
        if not final:
            assert len(state_rows) == len(PATTERNS) * silver.stream_id.nunique()
    assert sorted(got, key=lambda r: (r[0], r[1], r[2], r[3] or 0)) == expected
