"""The saved engine states read a batch at a time (`saved_states`, `Table.scan`) equal
what a whole read of the state table filtered in memory gives, on random state tables."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from probcep.lake.tables import STATES
from probcep.pipeline.group_day import PROCESSED, saved_states

DAY0 = dt.date(2026, 3, 1)


def random_states(lake, rng) -> list[SimpleNamespace]:
    """Days of saved states for a few pattern versions, each day written as the night
    writes it (its "day processed" row included), some days skipped per pattern."""
    patterns = [SimpleNamespace(name=n, version=v) for n, v in
                [("visit", "v1"), ("visit", "v2"), ("pass", "v1")]]
    for k in range(int(rng.integers(1, 5))):
        day = DAY0 + dt.timedelta(days=k)
        rows = []
        for p in patterns:
            if rng.random() < 0.3:
                continue  # not run that day
            streams = sorted({f"s{int(i)}" for i in rng.integers(0, 40, rng.integers(0, 30))})
            rows += [(p.name, p.version, s, int(rng.integers(0, 99)), rng.bytes(5))
                     for s in streams]
            rows.append((p.name, p.version, PROCESSED, None, None))
        if not rows:
            continue
        names, versions, ids, next_t, state = zip(*rows)
        table = pa.table({"pattern": names, "pattern_version": versions, "stream_id": ids,
                          "batch_date": pa.array([day] * len(rows), pa.date32()),
                          "next_t": pa.array(next_t, pa.int64()),
                          "state": pa.array(state, pa.binary()),
                          "run_id": [f"run-{k}"] * len(rows)}).cast(STATES.schema)
        STATES.replace_day(lake, day, table, {"run_id": f"run-{k}"},
                           pattern=sorted({p.name for p in patterns}))
    return patterns + [SimpleNamespace(name="never", version="v1")]


def whole_read(lake, patterns, day) -> pa.Table:
    """The reference: every row read at once, the latest day before `day` per version."""
    rows = STATES.read(lake, filters=[("batch_date", "<", day)])
    keep = []
    for p in patterns:
        mine = rows.filter(pc.and_(pc.equal(rows["pattern"], p.name),
                                   pc.equal(rows["pattern_version"], p.version)))
        if mine.num_rows:
            last = pc.max(mine["batch_date"])
            keep.append(mine.filter(pc.and_(pc.equal(mine["batch_date"], last),
                                            pc.not_equal(mine["stream_id"], PROCESSED))))
    return pa.concat_tables(keep) if keep else STATES.schema.empty_table()


def ordered(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table[c].to_pylist() for c in table.column_names)),
                  key=lambda r: tuple("" if v is None else str(v) for v in r))


@pytest.mark.parametrize("seed", range(8))
def test_saved_states_a_batch_at_a_time_equal_a_whole_read(tmp_path, seed):
    rng = np.random.default_rng(seed)
    lake = tmp_path / "lake"
    patterns = random_states(lake, rng)
    for k in range(6):
        day = DAY0 + dt.timedelta(days=k)
        got = pa.Table.from_batches(list(saved_states(lake, patterns, day, batch_rows=3)),
                                    STATES.schema)
        assert all(b.num_rows <= 3 for b in saved_states(lake, patterns, day, batch_rows=3))
        assert ordered(got) == ordered(whole_read(lake, patterns, day)), (seed, day)


def test_scan_selects_columns_and_rows_as_a_read_does(tmp_path):
    lake = tmp_path / "lake"
    random_states(lake, np.random.default_rng(3))
    where = pc.field("next_t") > 50
    got = pa.Table.from_batches(list(STATES.scan(lake, where=where, columns=[
        "stream_id", "next_t"], batch_rows=4)))
    whole = STATES.read(lake).filter(where).select(["stream_id", "next_t"])
    assert got.num_rows > 0
    assert ordered(got) == ordered(whole)
