"""Normalize a day of bronze readings into `silver/distributions`.

A reading at time ts falls in timestep t = floor((ts - epoch) / step). Readings of one
stream, timestep and symbol are combined (sum or max of scores, `aggregation`), and the
row is normalized over the domain.

Silver is sparse: one row per stream and timestep *with readings* (under `hold_last`,
also the timesteps that hold the last reading's distribution, up to `hold_last_steps`
within the day). A timestep without a row holds the settings' `silence` (the reserved
no-reading symbol with probability 1, or the uniform distribution under `uniform`);
readers and the engine apply it, stepping over silent stretches instead of storing them.
A stream's timeline starts at its first reading and goes on, silent, between readings.

Silver is wide: `stream_id`, `t`, `ts`, `date` and one probability column per silver
symbol, partitioned by `date` and sorted by stream and t, so one stream's time slice
reads one day's files and skips the rest by their stats. The day's readings are taken
from every batch ingested on or after that day: late readings that land in a later batch
are picked up by normalizing the day again. A day with no readings is a day of silence
(no silver rows), or refused when `missing_day` is `refuse`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from probcep.errors import ProbcepError
from probcep.lake.delta import replace_day, spark_read
from probcep.lake.tables import BRONZE, SILVER
from probcep.pipeline.context import RunContext


@dataclass(frozen=True)
class NormalizeReport:
    day: dt.date
    rows: int
    streams: int


def normalize_day(ctx: RunContext, day: dt.date) -> NormalizeReport:
    """Replace the day's silver partition; returns its row and stream counts.

    The new rows pass the silver suite before they are committed (Data Docs under the
    run's `docs_dir`): silver that fails is never published, and the day's previous
    silver stays as it was.
    """
    from probcep.lake.expectations import SILVER_SUITE, validate

    settings, lake = ctx.settings, ctx.lake
    first, stop = settings.clock.day_range(day)
    if not BRONZE.files(lake, [("batch_date", ">=", day.isoformat())]):
        if settings.missing_day == "refuse":
            raise ProbcepError(f"no bronze readings ingested for {day} or later in "
                               f"{BRONZE.path(lake)}: run `probcep ingest --date {day}`")
        SILVER.clear_day(lake, day, {"run_id": ctx.run_id, "date": day.isoformat()})
        return NormalizeReport(day, 0, 0)  # a day of silence: no Spark needed
    spark = ctx.spark
    bronze = spark_read(spark, BRONZE, lake, [("batch_date", ">=", day.isoformat())])
    silver = distributions(bronze, settings, day, first, stop).orderBy("stream_id", "t")

    def check(staged):
        validate(staged, SILVER_SUITE, settings.silver_domain, docs_dir=ctx.docs_dir,
                 day=day.isoformat(), run_id=ctx.run_id)

    rows = replace_day(silver, SILVER, lake, day, {"run_id": ctx.run_id, "date": day.isoformat()},
                       settings.target_file_bytes, check=check)
    return NormalizeReport(day, rows, _streams(spark, day, lake))


def distributions(bronze, settings, day: dt.date, lo: int, hi: int):
    """Silver rows (Spark) of the day's timesteps in [lo, hi) from bronze readings (those
    of batches ingested on or after the day: the caller's filter). Live mode normalizes
    the complete timesteps of a day piece by piece with it; under `hold_last`, readings
    up to `hold_last_steps` before `lo` (within the day) are read for the rows they hold."""
    from pyspark.sql import functions as F

    first, stop = settings.clock.day_range(day)
    step_us = settings.clock.step_micros
    epoch_us = settings.clock.epoch_micros
    held = settings.hold_last_steps if settings.gap_policy == "hold_last" else 0
    t = F.floor((F.unix_micros("ts") - F.lit(epoch_us)) / F.lit(step_us)).cast("long")
    readings = bronze.withColumn("t", t).where(
        (F.col("t") >= max(first, lo - held)) & (F.col("t") < min(stop, hi)))
    combine = F.sum if settings.aggregation == "sum" else F.max
    domain = list(settings.domain)
    scores = (readings.groupBy("stream_id", "t").pivot("symbol", domain)
              .agg(combine("score")).na.fill(0.0, domain))
    total = sum(F.col(f"`{d}`") for d in domain)
    rows = scores.where(total > 0).select(
        "stream_id", "t", *[(F.col(f"`{d}`") / total).alias(d) for d in domain])
    if held:
        rows = _held(rows, domain, held, min(stop, hi)).where(F.col("t") >= lo)
    return rows.select(
        "stream_id", "t",
        F.timestamp_micros(F.lit(epoch_us) + F.col("t") * F.lit(step_us)).alias("ts"),
        F.lit(day).cast("date").alias("date"), *domain,
        F.lit(0.0).alias(settings.no_reading_symbol))


def _streams(spark, day: dt.date, lake) -> int:
    """How many streams the day's silver holds, counted by the executors."""
    from pyspark.sql import functions as F

    files = SILVER.files(lake, [("date", "=", day.isoformat())])
    if not files:
        return 0
    return spark.read.parquet(*files).select(F.countDistinct("stream_id")).first()[0]


def _held(rows, domain: list[str], hold: int, stop: int):
    """`hold_last`: after a timestep with readings, up to `hold` timesteps without any
    repeat its distribution (the latest reading wins; the day's end cuts the hold)."""
    from pyspark.sql import functions as F

    offsets = F.explode(F.sequence(F.lit(0), F.lit(hold)))
    spread = rows.withColumn("_k", offsets) \
        .select("stream_id", (F.col("t") + F.col("_k")).alias("t"), "_k", *domain) \
        .where(F.col("t") < stop)
    latest = F.min_by(F.struct(*domain), "_k")
    return spread.groupBy("stream_id", "t").agg(latest.alias("_p")) \
        .select("stream_id", "t", *[F.col(f"_p.{d}").alias(d) for d in domain])
