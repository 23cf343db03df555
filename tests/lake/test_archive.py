"""Reads of silver as an archive served from a prefetched scan equal reads one range at a
time, over random silver files spread across days and files."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from probcep.config.clock import Clock
from probcep.lake import archive as archive_module
from probcep.lake.archive import SilverArchive

DOMAIN = ("a", "b")
CLOCK = Clock(dt.datetime(2026, 1, 1), dt.timedelta(hours=1))  # 24 timesteps a day


def silver(tmp_path, rng) -> dict[dt.date, list[str]]:
    """Random sparse rows of 6 streams over 3 days, each day in 1 to 3 files."""
    files: dict[dt.date, list[str]] = {}
    for d in range(3):
        day = CLOCK.epoch.date() + dt.timedelta(d)
        rows = [(f"s{s}", t) for s in range(6) for t in range(24 * d, 24 * d + 24)
                if rng.random() < 0.4]
        cut = sorted(rng.choice(len(rows) + 1, size=int(rng.integers(0, 3)), replace=True))
        for k, (a, b) in enumerate(zip([0, *cut], [*cut, len(rows)])):
            part = rows[a:b]
            p = rng.random(len(part))
            path = tmp_path / f"{day}-{k}.parquet"
            pq.write_table(pa.table({"stream_id": pa.array([r[0] for r in part], pa.string()),
                                     "t": pa.array([r[1] for r in part], pa.int64()),
                                     "a": p, "b": 1 - p}), path)
            files.setdefault(day, []).append(str(path))
    return files


@pytest.mark.parametrize("seed", range(6))
def test_prefetched_reads_equal_reads_one_range_at_a_time(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    files = silver(tmp_path, rng)
    plan = {}
    for s in rng.permutation(7):  # s6 has no row
        spans = sorted((int(lo), int(lo + rng.integers(0, 30)))
                       for lo in rng.integers(0, 60, rng.integers(1, 4)))
        plan[f"s{s}"] = spans
    monkeypatch.setattr(archive_module, "PREFETCH_STREAMS", 2)
    plain = SilverArchive(lambda d: files.get(d, []), CLOCK, DOMAIN, None, 0, 71)
    ahead = SilverArchive(lambda d: files.get(d, []), CLOCK, DOMAIN, None, 0, 71)
    ahead.prefetch(plan)
    for sid, spans in plan.items():
        for lo, hi in spans:
            (t1, p1), (t2, p2) = plain.read(sid, lo, hi), ahead.read(sid, lo, hi)
            assert t1.tolist() == t2.tolist() and np.array_equal(p1, p2), (sid, lo, hi)
            assert len(t1) == 0 or (t1.min() >= lo and t1.max() <= hi)
    assert (plain.reads, plain.rows_read, plain.files_read) == \
        (ahead.reads, ahead.rows_read, ahead.files_read)
    assert plain.rows_read > 0
