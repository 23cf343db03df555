"""What a run records in gold/alert_changes: an alert whose every column but the run that
wrote it is unchanged (a float within 1e-12 of itself) is no change; any other difference
is (QA, 2026-11-28: a rerun that changed only an alert's n_matches recorded nothing, so a
reader of the changes kept the old count). Correlation alerts also leave out the silver
version and read strategy."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from probcep.lake.tables import ALERTS, CORRELATION_ALERTS
from probcep.pipeline.correlate_day import SAME_ALERT_BUT as CORRELATION_BUT
from probcep.pipeline.publish_alerts import anti_join


def rows(schema: pa.Schema, n: int, **columns) -> pa.Table:
    """`n` rows of `schema`, each column a value of its type unless given."""
    made = {"string": "x", "int64": 7, "double": 0.5, "date32[day]": dt.date(2026, 1, 5),
            "timestamp[us, tz=UTC]": dt.datetime(2026, 1, 5, tzinfo=dt.UTC)}
    return pa.table({f.name: pa.array(columns.get(f.name, [made[str(f.type)]] * n), f.type)
                     for f in schema}, schema=schema)


def test_an_alert_that_changed_only_its_count_is_retracted_and_added():
    before = rows(ALERTS.schema, 3, t_start=[1, 2, 3], n_matches=[6, 6, 6], run_id=["a"] * 3)
    after = rows(ALERTS.schema, 3, t_start=[1, 2, 3], n_matches=[6, 5, 6], run_id=["b"] * 3)
    assert anti_join(after, before)["t_start"].to_pylist() == [2]  # added
    assert anti_join(before, after)["n_matches"].to_pylist() == [6]  # retracted
    again = rows(ALERTS.schema, 3, t_start=[1, 2, 3], n_matches=[6, 5, 6], run_id=["c"] * 3)
    assert anti_join(again, after).num_rows == anti_join(after, again).num_rows == 0


def test_a_null_t_first_matches_itself():
    single = rows(ALERTS.schema, 2, t_first=[None, None], t_start=[1, 2])
    assert anti_join(single, single).num_rows == 0


def test_a_correlation_alert_read_from_a_later_silver_is_no_change():
    before = rows(CORRELATION_ALERTS.schema, 2, silver_version=[3, 3], strategy=["lazy"] * 2)
    after = rows(CORRELATION_ALERTS.schema, 2, silver_version=[9, 9], strategy=["auto"] * 2)
    assert anti_join(after, before, CORRELATION_BUT).num_rows == 0
    moved = rows(CORRELATION_ALERTS.schema, 2, archive_probability=[0.5, 0.25])
    assert anti_join(moved, before, CORRELATION_BUT)["archive_probability"].to_pylist() == [0.25]


def test_a_probability_moved_in_its_last_bits_is_no_change():
    """Another release's arithmetic moves the last bits of the same group's probability:
    bit for bit, an upgrade retracted and added every alert again (QA, 2026-11-28)."""
    p = 0.7619051561785589
    before = rows(ALERTS.schema, 3, t_start=[1, 2, 3], probability=[p, p, p])
    after = rows(ALERTS.schema, 3, t_start=[1, 2, 3],
                 probability=[0.7619051561785588, p * (1 + 1e-9), p])
    assert anti_join(after, before)["t_start"].to_pylist() == [2]
    assert anti_join(before, after)["t_start"].to_pylist() == [2]
    tiny = rows(ALERTS.schema, 2, t_start=[1, 2], probability=[1e-300, 0.0])
    assert anti_join(tiny, rows(ALERTS.schema, 2, t_start=[1, 2], probability=[2e-300, 0.0])
                     )["t_start"].to_pylist() == [1]  # relative, not absolute
    correlation = rows(CORRELATION_ALERTS.schema, 1, archive_probability=[0.25])
    nudged = rows(CORRELATION_ALERTS.schema, 1, archive_probability=[0.25 + 1e-16])
    assert anti_join(nudged, correlation, CORRELATION_BUT).num_rows == 0
