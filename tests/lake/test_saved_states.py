"""The saved engine states read a batch at a time (`saved_states`, `Table.scan`) equal
what a whole read of the state table filtered in memory gives, on random state tables."""

from __future__ import annotations

import datetime as dt
import warnings
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from probcep.errors import ProbcepWarning
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


class Silver:
    """A silver source holding rows on `days`."""

    def __init__(self, days, unready=None):
        self.days = set(days)
        self.why = unready or {}

    def unready(self, day):
        return self.why.get(day, "")

    def days_with_rows(self, first, last):
        # a version grouped the day before has no day between to ask about: silver's
        # log would be read for nothing, once per pattern and night
        assert first <= last, (first, last)
        return sorted(d for d in self.days if first <= d <= last)

    def silence(self):
        return (1.0,)


def whole_read(lake, patterns, day, silver_days=()) -> pa.Table:
    """The reference: every row read at once, the latest day before `day` per version,
    unless silver holds rows on a day between that one and `day`."""
    rows = STATES.read(lake, filters=[("batch_date", "<", day)])
    keep = []
    for p in patterns:
        mine = rows.filter(pc.and_(pc.equal(rows["pattern"], p.name),
                                   pc.equal(rows["pattern_version"], p.version)))
        if mine.num_rows:
            last = pc.max(mine["batch_date"])
            if any(last.as_py() < d < day for d in silver_days):
                continue
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
    silver = Silver(DAY0 + dt.timedelta(days=k) for k in range(6) if rng.random() < 0.3)
    for k in range(6):
        day = DAY0 + dt.timedelta(days=k)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = pa.Table.from_batches(list(saved_states(lake, patterns, day, silver,
                                                          batch_rows=3)), STATES.schema)
        assert all(b.num_rows <= 3 for b in saved_states(lake, patterns, day, Silver(()),
                                                         batch_rows=3))
        assert ordered(got) == ordered(whole_read(lake, patterns, day, silver.days)), (
            seed, day)
        assert ordered(pa.Table.from_batches(list(saved_states(lake, patterns, day,
                                                               Silver(()))), STATES.schema)
                       ) == ordered(whole_read(lake, patterns, day)), (seed, day)
        # a version passed over for having missed days of silver says so, naming itself
        rows = STATES.read(lake, filters=[("batch_date", "<", day)])
        last = {}
        for name, version, d in zip(*(rows[c].to_pylist() for c in (
                "pattern", "pattern_version", "batch_date"))):
            last[name, version] = max(d, last.get((name, version), d))
        skipped = sorted(f"{name} (version {version}) was last grouped on {d}"
                         for (name, version), d in last.items()
                         if any(d < s < day for s in silver.days))
        said = sorted(str(w.message).split(";")[0] for w in caught
                      if issubclass(w.category, ProbcepWarning))
        assert said == skipped, (seed, day)


def save_day(lake, p, day) -> None:
    """The night of `day` for pattern version `p`: one stream's state and the day's
    "day processed" row."""
    table = pa.table({"pattern": [p.name] * 2, "pattern_version": [p.version] * 2,
                      "stream_id": ["s1", PROCESSED],
                      "batch_date": pa.array([day] * 2, pa.date32()),
                      "next_t": pa.array([7, None], pa.int64()),
                      "state": pa.array([b"x", None], pa.binary()),
                      "run_id": ["r"] * 2}).cast(STATES.schema)
    STATES.replace_day(lake, day, table, {"run_id": "r"}, pattern=[p.name])


def test_a_version_that_missed_days_of_silver_starts_empty_with_a_warning(tmp_path):
    """v1 on day 0, v2 on day 1 (a registry change, undone for day 2): v1 resumed from
    day 0 would take day 1's readings for silence (QA: a group across midnight lost)."""
    lake = tmp_path / "lake"
    v1, v2 = SimpleNamespace(name="visit", version="v1"), SimpleNamespace(name="visit",
                                                                          version="v2")
    for k, p in enumerate((v1, v2)):
        save_day(lake, p, DAY0 + dt.timedelta(days=k))
    day2 = DAY0 + dt.timedelta(days=2)
    with pytest.warns(ProbcepWarning, match=r"visit \(version v1\) was last grouped on "
                      r"2026-03-01; 2026-03-02 holds readings it never grouped, so it starts "
                      r"from an empty state on 2026-03-03"):
        assert list(saved_states(lake, [v1], day2, Silver([DAY0, day2 - dt.timedelta(1)])))\
            == []
    # days between without silver are silence: resumed as before
    got = pa.Table.from_batches(list(saved_states(lake, [v1], day2, Silver([DAY0]))))
    assert got["stream_id"].to_pylist() == ["s1"]


def test_a_version_resumed_over_days_not_ready_says_so(tmp_path):
    """Days between the last grouped one and this one whose nights never ran (landing
    files never ingested: a DAG unpaused after days down runs only yesterday) are taken
    for silence; the states resume, with a warning naming the first such day and the
    rerun that regroups from it (QA, 2026-11-28: a rerun of a later day said nothing)."""
    lake = tmp_path / "lake"
    v1 = SimpleNamespace(name="visit", version="v1")
    save_day(lake, v1, DAY0)
    later = DAY0 + dt.timedelta(days=5)
    why = {DAY0 + dt.timedelta(days=k): f"day {k} never ingested" for k in (2, 3)}
    with pytest.warns(ProbcepWarning, match=r"visit \(version v1\) was last grouped on "
                      r"2026-03-01; 2026-03-03 and 1 more days are not ready \(day 2 never "
                      r"ingested\), so 2026-03-06 takes them for silence: once they are "
                      r"run, `probcep rerun --from 2026-03-03 --to 2026-03-06` regroups"):
        got = pa.Table.from_batches(list(saved_states(lake, [v1], later, Silver([DAY0], why))))
    assert got["stream_id"].to_pylist() == ["s1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ready days between, or none between: no word
        for day, unready in ((later, {}), (DAY0 + dt.timedelta(days=1), why)):
            got = pa.Table.from_batches(list(saved_states(lake, [v1], day,
                                                          Silver([DAY0], unready))))
            assert got["stream_id"].to_pylist() == ["s1"]


def test_scan_selects_columns_and_rows_as_a_read_does(tmp_path):
    lake = tmp_path / "lake"
    random_states(lake, np.random.default_rng(3))
    where = pc.field("next_t") > 50
    got = pa.Table.from_batches(list(STATES.scan(lake, where=where, columns=[
        "stream_id", "next_t"], batch_rows=4)))
    whole = STATES.read(lake).filter(where).select(["stream_id", "next_t"])
    assert got.num_rows > 0
    assert ordered(got) == ordered(whole)


def test_processed_days_filters_rows_of_a_file_that_holds_several_days(tmp_path):
    """state/engine is not partitioned: a file live mode writes for a micro-batch that
    ended several days holds them all, and a filter on batch_date pruned only files, so
    `processed_days(.., [("batch_date", "=", D)])` gave D's neighbours too (QA,
    2026-11-28)."""
    from deltalake import write_deltalake

    from probcep.pipeline.group_day import processed_days

    days = [DAY0 + dt.timedelta(days=k) for k in range(3)]
    n = len(days)
    rows = pa.table({"pattern": ["visit"] * n, "pattern_version": ["v1"] * n,
                     "stream_id": [PROCESSED] * n, "batch_date": pa.array(days, pa.date32()),
                     "next_t": pa.nulls(n, pa.int64()), "state": pa.nulls(n, pa.binary()),
                     "run_id": ["live-0"] * n}).cast(STATES.schema)
    write_deltalake(str(STATES.path(tmp_path)), rows)
    visit = [SimpleNamespace(name="visit", version="v1")]
    key = ("visit", "v1")
    assert processed_days(tmp_path, visit) == {key: set(days)}
    assert processed_days(tmp_path, visit, [("batch_date", "=", days[1])]) == {key: {days[1]}}
    assert processed_days(tmp_path, visit, [("batch_date", ">", days[0])]) == {
        key: set(days[1:])}
    assert processed_days(tmp_path, visit, [("batch_date", ">=", days[0]),
                                            ("batch_date", "<=", days[0])]) == {key: {days[0]}}
