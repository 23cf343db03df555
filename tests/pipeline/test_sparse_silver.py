"""Sparse silver: rows only where a stream has readings, silence stepped over by the
engine, days without any reading, streams gone for days. The groups are exactly those
of the dense form (every timestep of every stream from its first reading on, silent
ones filled with the no-reading symbol), and quiet streams keep no state."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from probcep.config.registry import parse_entry
from probcep.lake.tables import STATES
from probcep.pipeline.group_day import group_exact
from tests.pipeline.nights import DAY0, STEPS_PER_DAY, FrameSilver, context, day_of, group_rows

pytestmark = pytest.mark.slow
SYMBOLS = ("Hallway", "Door", "Room", "NoReading")
SILENCE = (0.0, 0.0, 0.0, 1.0)
DAYS = 5
PATTERNS = (
    parse_entry("visit", {"pattern": "Door Room+ Door", "policy": "complete",
                          "threshold": 0.02, "window": 30}, SYMBOLS),
    parse_entry("pass", {"pattern": "Hallway Door Hallway", "policy": "single",
                         "threshold": 0.0, "window": 5}, SYMBOLS),
    parse_entry("stay", {"pattern": "Room ( Room | NoReading ){2,} Room", "policy": "single",
                         "threshold": 0.01, "window": 12}, SYMBOLS),
)


def dense_silver(seed=11, streams=5):
    """Every timestep of every stream from its first reading to the last day's end;
    bursts of readings between long silences, all of day 2 silent, stream s0 gone from
    day 1 to day 3."""
    rng = np.random.default_rng(seed)
    n = DAYS * STEPS_PER_DAY
    frames = []
    for k in range(streams):
        first = int(rng.integers(0, STEPS_PER_DAY // 2))
        t = np.arange(first, n)
        heard = np.zeros(len(t), bool)
        for start in rng.integers(0, len(t) - 30, size=12):
            heard[start:start + int(rng.integers(3, 25))] = True
        heard[(t // STEPS_PER_DAY) == 2] = False
        if k == 0:
            heard[(t // STEPS_PER_DAY >= 1) & (t // STEPS_PER_DAY <= 3)] = False
        heard[0] = True  # a stream begins with its first reading
        p = rng.dirichlet(np.full(3, 0.4), size=len(t))
        probs = np.zeros((len(t), 4))
        probs[heard, :3] = p[heard]
        probs[~heard, 3] = 1.0
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": t,
                                    **{d: probs[:, i] for i, d in enumerate(SYMBOLS)}}))
    return pd.concat(frames, ignore_index=True)


def test_sparse_silver_groups_equal_the_dense_form(spark, tmp_path):
    dense = dense_silver()
    sparse = dense[dense.NoReading < 1.0]
    assert len(sparse) < 0.3 * len(dense)
    dense_source = FrameSilver(lambda d: day_of(dense, (d - DAY0).days), tmp_path / "d",
                               SYMBOLS)
    sparse_source = FrameSilver(lambda d: day_of(sparse, (d - DAY0).days), tmp_path / "s",
                                SYMBOLS, SILENCE)
    assert not len(day_of(sparse, 2))  # a day of silence: no silver at all
    for k in range(DAYS):
        day = DAY0 + dt.timedelta(k)
        group_exact(context(tmp_path / "dense", dense_source, f"d{k}", PATTERNS), day)
        group_exact(context(tmp_path / "sparse", sparse_source, f"s{k}", PATTERNS), day)
    want, got = group_rows(tmp_path / "dense"), group_rows(tmp_path / "sparse")
    assert len(want) > 20 and set(want.pattern) == {"visit", "pass", "stay"}
    pd.testing.assert_frame_equal(got, want)
    # quiet streams keep no state: the sparse lake holds fewer state rows
    assert STATES.read(tmp_path / "sparse").num_rows < STATES.read(tmp_path / "dense").num_rows
