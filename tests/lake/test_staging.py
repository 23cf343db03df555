"""Staging a day by Spark's executors: one day is written straight into its folder,
several days by partition (`partitionBy`); both are fingerprinted by reading the staged
rows back. Both give a day the same rows and the same fingerprint, which is what lets a
nightly rerun of a day that a backfill wrote commit nothing."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from probcep.lake.delta import (
    FINGERPRINT_FILE,
    HASH_PIECE,
    _fingerprint,
    _hash_sum,
    _parts,
    day_fingerprints,
    staged_days,
)
from probcep.lake.tables import BRONZE, RUN_COLUMNS

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


@given(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), max_size=50))
def test_hash_pieces_add_up_to_the_exact_sum(hashes):
    """Arithmetic shifts and masks, as Spark's `shiftright` and `&` compute them."""
    mask = (1 << HASH_PIECE) - 1
    pieces = (sum(h >> 2 * HASH_PIECE for h in hashes),
              sum((h >> HASH_PIECE) & mask for h in hashes), sum(h & mask for h in hashes))
    assert _hash_sum(pieces if hashes else (None, None, None)) == sum(hashes)


def test_fingerprints_are_those_of_a_decimal_sum(spark):
    """The hashes summed in pieces give the fingerprints of their sum as decimal(38,0),
    so a day committed before the change is still recognised by a rerun."""
    from pyspark.sql import functions as F

    rows = bronze_rows(spark, DAYS).withColumn("day", F.col("batch_date"))
    names = [c for c in rows.columns if c not in RUN_COLUMNS and c != "day"]
    nulls = F.concat_ws("", *[F.when(F.col(c).isNull(), "1").otherwise("0") for c in names])
    h = F.xxhash64(*[F.col(c) for c in names], nulls)
    want = {r[0]: _fingerprint(rows.schema, names, *r[1:]) for r in rows.groupBy(
        F.col("day").cast("string")).agg(F.count(F.lit(1)), F.sum(h.cast("decimal(38,0)")),
                                         F.bit_xor(h)).collect()}
    assert day_fingerprints(rows, "day") == want and len(want) == 2
