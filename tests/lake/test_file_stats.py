"""The statistics of an add action, read from a Parquet footer: other Delta readers skip a
file by them, so a value written in another form than the protocol's hides its rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings
from hypothesis import strategies as st

from probcep.lake.delta import footer_stats

SCHEMA = pa.schema([("stream_id", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("batch_date", pa.date32())])
times = st.datetimes(min_value=dt.datetime(1, 1, 1), timezones=st.just(dt.UTC))


@settings(max_examples=60, deadline=None)
@given(st.lists(times, min_size=1, max_size=4))
@example([dt.datetime(1, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, 0, 0, 0, 1500,
                                                            tzinfo=dt.UTC)])
@example([dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)])
def test_timestamp_bounds_are_iso_and_hold_every_value(tmp_path_factory, values):
    """A reading from a zeroed clock (year 1) is bronze's as a late reading; its bound was
    written `1-01-01T…` (strftime's %Y), which delta-rs cannot read: a filter on `ts`
    then skipped the file (QA, 2026-11-27)."""
    path = tmp_path_factory.mktemp("stats") / "f.parquet"
    pq.write_table(pa.table({"stream_id": ["s"] * len(values), "ts": values,
                             "batch_date": [dt.date(2026, 1, 1)] * len(values)},
                            schema=SCHEMA), path)
    stats = footer_stats(pq.read_metadata(path), SCHEMA, "batch_date")
    if max(values) > dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC):
        assert "ts" not in stats["maxValues"]  # widened, it would pass year 9999
        return
    lo, hi = stats["minValues"]["ts"], stats["maxValues"]["ts"]
    for bound in (lo, hi):
        assert len(bound) == 24 and bound.endswith("Z")  # yyyy-mm-ddThh:mm:ss.fffZ
    lo, hi = (dt.datetime.fromisoformat(b) for b in (lo, hi))
    assert lo <= min(values) and max(values) <= hi
    assert min(values) - lo < dt.timedelta(milliseconds=1)
    assert hi - max(values) < dt.timedelta(milliseconds=1)
