"""Staging a day by Spark's executors: one day is written straight into its folder,
several days by partition (`partitionBy`); both are fingerprinted by reading the staged
rows back. Both give a day the same rows and the same fingerprint, which is what lets a
nightly rerun of a day that a backfill wrote commit nothing."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from probcep.lake.delta import FINGERPRINT_FILE, _parts, staged_days
from probcep.lake.tables import BRONZE

DAYS = [dt.date(2026, 3, 1), dt.date(2026, 3, 2)]


def bronze_rows(spark, days, n: int = 40, run: str = "r1"):
    """Bronze rows over `days`, with null sensors and a repeated reading."""
    rows = []
    for k, day in enumerate(days):
        for i in range(n):
            ts = dt.datetime(day.year, day.month, day.day, 0, 0, i % 30, tzinfo=dt.UTC)
            rows.append((f"s{i % 3}", None if i % 4 == 0 else f"x{i % 2}", ts,
                         "abc"[i % 3], (i % 7) / 7 + k, day, f"/land/{day}/f.csv",
                         dt.datetime(2026, 3, 5, tzinfo=dt.UTC) if run == "r1" else
                         dt.datetime(2026, 3, 6, tzinfo=dt.UTC)))
    rows.append(rows[0])
    return spark.createDataFrame(rows, BRONZE.schema.names).select(*BRONZE.schema.names)


def staged(tmp_path, frame, days):
    """{day: (fingerprint, rows as sorted tuples)} of `frame` staged for `days`."""
    out = {}
    with staged_days(frame, BRONZE, tmp_path, days) as rows:
        for day, folder in rows.folders.items():
            fp = json.loads((folder / FINGERPRINT_FILE).read_text())["fingerprint"]
            parts = _parts(folder)
            table = pa.concat_tables([pq.read_table(p) for p in parts]) if parts else None
            got = [] if table is None else sorted(
                tuple(map(str, r.values())) for r in table.drop(["ingest_time"]).to_pylist())
            out[day] = (fp, got)
    return out


def test_one_day_and_several_days_stage_the_same_rows_and_fingerprints(spark, tmp_path):
    both = staged(tmp_path, bronze_rows(spark, DAYS), DAYS)
    alone = staged(tmp_path, bronze_rows(spark, DAYS[:1]), DAYS[:1])
    assert set(alone) == {DAYS[0]}
    assert alone[DAYS[0]] == both[DAYS[0]]
    assert len(both[DAYS[0]][1]) == 41 and both[DAYS[0]][0] != both[DAYS[1]][0]
    # the run's own columns are not part of the fingerprint; the rows are
    rerun = staged(tmp_path, bronze_rows(spark, DAYS[:1], run="r2"), DAYS[:1])
    assert rerun[DAYS[0]][0] == alone[DAYS[0]][0]
    fewer = staged(tmp_path, bronze_rows(spark, DAYS[:1], n=39), DAYS[:1])
    assert fewer[DAYS[0]][0] != alone[DAYS[0]][0]


def test_one_day_stages_only_its_rows_and_an_empty_day_stages_none(spark, tmp_path):
    frame = bronze_rows(spark, DAYS)
    second = staged(tmp_path, frame, DAYS[1:])
    assert second[DAYS[1]] == staged(tmp_path, frame, DAYS)[DAYS[1]]
    empty = staged(tmp_path, frame.limit(0), DAYS[:1])
    nothing = staged(tmp_path, frame.limit(0), DAYS)
    assert empty[DAYS[0]][1] == [] and empty[DAYS[0]] == nothing[DAYS[0]]
