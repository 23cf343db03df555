"""Normalize a day of bronze readings into `silver/distributions`.

A reading at time ts falls in timestep t = floor((ts - epoch) / step). Readings of one
stream, timestep and symbol are combined (sum or max of scores, `aggregation`), and the
row is normalized over the domain. A timestep with no reading is filled by the
`gap_policy`: `no_reading` (the reserved symbol gets 1), `uniform`, or `hold_last`
(repeat the last distribution for up to `hold_last_steps`, then `no_reading`).

Silver is wide, one row per stream and timestep: `stream_id`, `t`, `ts`, `date` and one
probability column per silver symbol, partitioned by `date` and sorted by stream and t,
so one stream's time slice reads one day's files and skips the rest by their stats.
Every stream seen that day or the day before gets every timestep of the day, so t has no
gaps across days. The day's readings are taken from every batch ingested on or after that
day: late readings that land in a later batch are picked up by normalizing the day again.
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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from probcep.lake.expectations import SILVER_SUITE, validate

    settings, spark, lake = ctx.settings, ctx.spark, ctx.lake
    first, stop = settings.clock.day_range(day)
    step_us = settings.clock.step_micros
    epoch_us = settings.clock.epoch_micros
    bronze = spark_read(spark, BRONZE, lake, [("batch_date", ">=", day.isoformat())])
    if bronze is None:
        raise ProbcepError(f"no bronze readings ingested for {day} or later in "
                           f"{BRONZE.path(lake)}: run `probcep ingest --date {day}`")
    t = F.floor((F.unix_micros("ts") - F.lit(epoch_us)) / F.lit(step_us)).cast("long")
    readings = bronze.withColumn("t", t).where((F.col("t") >= first) & (F.col("t") < stop))
    combine = F.sum if settings.aggregation == "sum" else F.max
    scores = (readings.groupBy("stream_id", "t").pivot("symbol", list(settings.domain))
              .agg(combine("score")).na.fill(0.0, list(settings.domain)))
    streams = readings.select("stream_id").distinct()
    before = spark_read(spark, SILVER, lake, [("date", "=", (day - dt.timedelta(1)).isoformat())])
    if before is not None:
        streams = streams.union(before.select("stream_id")).distinct()
    grid = streams.withColumn("t", F.explode(F.sequence(F.lit(first).cast("long"),
                                                        F.lit(stop - 1).cast("long"))))
    rows = grid.join(scores, ["stream_id", "t"], "left")
    total = sum(F.coalesce(F.col(f"`{d}`"), F.lit(0.0)) for d in settings.domain)
    rows = rows.withColumn("_total", total)
    seen = F.col("_total") > 0
    probs = {d: F.when(seen, F.col(f"`{d}`") / F.col("_total")) for d in settings.domain}
    rows = rows.select("stream_id", "t", "_total", *[p.alias(d) for d, p in probs.items()])
    reserved = settings.no_reading_symbol
    filled = {d: F.when(seen, F.col(d)) for d in settings.domain}
    fill_reserved = F.when(seen, F.lit(0.0)).otherwise(F.lit(1.0))
    if settings.gap_policy == "uniform":
        filled = {d: F.coalesce(F.col(d), F.lit(1.0 / len(settings.domain)))
                  for d in settings.domain}
        fill_reserved = F.lit(0.0)
    elif settings.gap_policy == "hold_last":
        back = Window.partitionBy("stream_id").orderBy("t").rowsBetween(
            -settings.hold_last_steps, 0)
        held = F.last(F.when(seen, F.col("t")), ignorenulls=True).over(back)
        filled = {d: F.when(seen, F.col(d)).when(held.isNotNull(),
                                                 F.last(F.col(d), ignorenulls=True).over(back))
                  for d in settings.domain}
        fill_reserved = F.when(seen | held.isNotNull(), F.lit(0.0)).otherwise(F.lit(1.0))
    silver = rows.select(
        "stream_id", "t",
        F.timestamp_micros(F.lit(epoch_us) + F.col("t") * F.lit(step_us)).alias("ts"),
        F.lit(day).cast("date").alias("date"),
        *[F.coalesce(c, F.lit(0.0)).alias(d) for d, c in filled.items()],
        fill_reserved.alias(reserved)).orderBy("stream_id", "t")
    rows = replace_day(silver, SILVER, lake, day, {"run_id": ctx.run_id, "date": day.isoformat()},
                       settings.target_file_bytes,
                       check=lambda staged: validate(staged, SILVER_SUITE, settings.silver_domain,
                                                     docs_dir=ctx.docs_dir))
    return NormalizeReport(day, rows, rows // settings.steps_per_day())
