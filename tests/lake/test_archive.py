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
    monkeypatch.setattr(archive_module, "PREFETCH_ROWS", 40)
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


@pytest.mark.parametrize("seed", range(6))
def test_stream_starts_kept_across_archives_equal_a_fresh_scan(tmp_path, seed):
    """A day's files grow (a micro-batch each), in any order, then lose one (a rerun):
    the starts kept from earlier calls equal a fresh scan of the files each time."""
    from probcep.lake.archive import StreamStarts

    rng = np.random.default_rng(seed)
    day, files = next(iter(silver(tmp_path, rng).items()))
    (tmp_path / "more").mkdir()
    pool = [f for fs in silver(tmp_path / "more", rng).values() for f in fs] + files
    order = [pool[i] for i in rng.permutation(len(pool))]
    kept = StreamStarts()
    seen = [order[:k] for k in range(1, len(order) + 1)]
    seen.append([f for f in order if f != order[int(rng.integers(len(order)))]])
    for listed in seen:
        fresh = StreamStarts().of_day(day, listed)
        assert kept.of_day(day, listed) == fresh
        assert fresh == {sid: min(t for f in listed for sid2, t in zip(
            *[pq.read_table(f)[c].to_pylist() for c in ("stream_id", "t")]) if sid2 == sid)
            for sid in fresh}


def test_stream_starts_scan_each_file_once(tmp_path):
    """Files already scanned are not read again, however many empty days are asked for
    in between (walking back to the clock's epoch): the files are deleted, and asking
    again still answers."""
    from probcep.lake.archive import STARTS_DAYS, StreamStarts

    files = silver(tmp_path, np.random.default_rng(0))
    day = min(files)
    kept = StreamStarts()
    first = dict(kept.of_day(day, files[day]))
    for k in range(1, 3 * STARTS_DAYS):
        assert kept.of_day(day - dt.timedelta(k), []) == {}
    for f in files[day]:
        (tmp_path / f).unlink()
    assert kept.of_day(day, files[day]) == first and first


def test_silvers_first_day_is_read_from_the_log_at_a_version(tmp_path):
    """Correlations clip their ranges at it (no stream starts earlier)."""
    from deltalake import write_deltalake

    from probcep.lake.tables import SILVER

    def rows(day):
        return pa.table({"stream_id": ["s"], "t": [0], "date": pa.array([day], pa.date32()),
                         "a": [1.0], "b": [0.0]})

    assert SILVER.first_day(tmp_path) is None
    path = str(SILVER.path(tmp_path))
    write_deltalake(path, rows(dt.date(2026, 1, 3)), partition_by=["date"])
    write_deltalake(path, rows(dt.date(2026, 1, 2)), mode="append")
    assert SILVER.first_day(tmp_path) == dt.date(2026, 1, 2)
    assert SILVER.first_day(tmp_path, version=0) == dt.date(2026, 1, 3)
