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
(no silver rows), or refused when `missing_day` is `refuse`; a day whose landing files
were never ingested is refused whatever the setting.
"""

from __future__ import annotations

import datetime as dt
from contextlib import ExitStack
from dataclasses import dataclass

from probcep.errors import ProbcepError
from probcep.lake.delta import contents, replace_days, spark_read
from probcep.lake.spark import column_sum
from probcep.lake.tables import BRONZE, INGEST_LOG, NORMALIZE_LOG, QUARANTINE, SILVER
from probcep.pipeline.context import RunContext


@dataclass(frozen=True)
class NormalizeReport:
    day: dt.date
    rows: int
    streams: int


def normalize_day(ctx: RunContext, day: dt.date) -> NormalizeReport:
    """Replace the day's silver partition; returns its row and stream counts."""
    return normalize_days(ctx, [day])[0]


def normalize_days(ctx: RunContext, days: list[dt.date]) -> list[NormalizeReport]:
    """Replace the days' silver partitions in one Spark pass (a backfill pays Spark's
    jobs and the silver suite once, not once a day); a report per day.

    The new rows pass the silver suite before they are committed (Data Docs under the
    run's `docs_dir`): silver that fails is never published, and the days' previous
    silver stays as it was. Each day takes the readings of every batch ingested on or
    after it, so a backfill's days also take late readings that landed in its later
    days (as normalizing them again would).
    """
    from probcep.lake.expectations import SILVER_SUITE, days_name, validate

    settings, lake = ctx.settings, ctx.lake
    reports, heard = {}, []
    for day in days:  # landing files never ingested are not silence: refused
        why = not_ingested(settings, day)
        if why:
            raise ProbcepError(f"{why}: run `probcep ingest --date {day}` first (silver "
                               f"left as it was)")
    with ExitStack() as held:  # the days' silver locks, until their log rows are
        # written: live mode takes a day whose log row it finds as the night's (live.py)
        for day in sorted(days):
            held.enter_context(SILVER.lock(lake, day))
        version = BRONZE.version(lake)  # one snapshot: the bronze read is the bronze logged
        listed = BRONZE.file_lister(lake, version)
        for day in days:
            if listed([("batch_date", ">=", day.isoformat())]):
                heard.append(day)
                continue
            if settings.missing_day == "refuse":
                raise ProbcepError(f"no bronze readings ingested for {day} or later in "
                                   f"{BRONZE.path(lake)}: run `probcep ingest --date {day}`")
            SILVER.clear_day(lake, day, ctx.commit_meta(date=day.isoformat(),
                                                        clock=ctx.clock.label,
                                                        gaps=settings.gap_label))
            reports[day] = NormalizeReport(day, 0, 0)  # a day of silence: no Spark needed
        if heard:
            spark = ctx.spark
            bronze = spark_read(spark, BRONZE, lake,
                                [("batch_date", ">=", heard[0].isoformat())], version)
            silver = day_distributions(bronze, settings, heard)

            def check(staged):
                validate(staged, SILVER_SUITE, settings.silver_domain, docs_dir=ctx.docs_dir,
                         day=days_name(heard), run_id=ctx.run_id)

            made = replace_days(silver, SILVER, lake, heard,
                                lambda d: ctx.commit_meta(date=d.isoformat(),
                                                          clock=ctx.clock.label,
                                                          gaps=settings.gap_label),
                                settings.target_file_bytes, check=check, count="stream_id")
            reports.update({d: NormalizeReport(d, *made[d]) for d in heard})
        for day in days:
            _log(ctx, reports[day], contents(listed(sources(settings, day))))
    return [reports[day] for day in days]


def _log(ctx: RunContext, report: NormalizeReport, bronze: str) -> None:
    """Record the normalized day in `silver/normalize_log` (no commit when a rerun found
    the same counts and bronze)."""
    import pyarrow as pa

    row = {"date": report.day, "rows": report.rows, "streams": report.streams,
           "bronze": bronze, "run_id": ctx.run_id, "normalize_time": dt.datetime.now(dt.UTC)}
    NORMALIZE_LOG.replace_day(ctx.lake, report.day,
                              pa.Table.from_pylist([row], schema=NORMALIZE_LOG.schema),
                              ctx.commit_meta(date=report.day.isoformat()))


def sources(settings, day: dt.date) -> list:
    """Filters for the bronze files that may hold readings of the day: batches ingested
    on or after it whose `ts` statistics reach into it."""
    first, stop = settings.clock.day_range(day)
    return [("batch_date", ">=", day.isoformat()), ("ts", ">=", settings.clock.time(first)),
            ("ts", "<", settings.clock.time(stop))]


def not_ingested(settings, day: dt.date) -> str:
    """Why the day's landing files are not in the lake as they are now ('' when they
    are, or there are none): never ingested, or changed since (a file added, removed or
    rewritten: `bronze/ingest_log` keeps a digest of what ingest read). Ingested means a
    row in the log, or bronze or quarantine rows of the day (a lake ingested before the
    log existed, whose files cannot be compared)."""
    from probcep.pipeline.landing import data_files, listing

    folder = settings.landing_dir / day.isoformat()
    files = data_files(folder) if folder.is_dir() else []
    lake = settings.lake_root
    logged = INGEST_LOG.read(lake, INGEST_LOG.day_filter(day, {})).to_pylist()
    if logged and logged[0]["landing"] is not None:
        if logged[0]["landing"] == listing(files):
            return ""
        return (f"{folder} changed since {day} was ingested ({logged[0]['files']} landing "
                f"file(s) then, {len(files)} now, or one rewritten)")
    on_day = [("batch_date", "=", day.isoformat())]
    if not files or logged or any(t.files(lake, on_day) for t in (BRONZE, QUARANTINE)):
        return ""
    return f"{day} was never ingested, yet {folder} holds {len(files)} landing file(s)"


def unready(settings, day: dt.date) -> str:
    """Why the day's silver is not ready to be grouped ('' when it is): its landing files
    never ingested, or changed since; bronze readings of the day (the files' `ts`
    statistics) that normalize never turned into silver; or silver made from bronze that
    has changed since (re-ingested after a data fix: `silver/normalize_log` says what
    bronze held). A day normalized before the log existed, or by live mode, is taken as
    it is."""
    lake = settings.lake_root
    why = not_ingested(settings, day)
    if why:
        return f"{why}: run `probcep ingest --date {day}` and `probcep normalize --date {day}`"
    bronze = BRONZE.files(lake, sources(settings, day))
    logged = NORMALIZE_LOG.read(lake, NORMALIZE_LOG.day_filter(day, {}))["bronze"].to_pylist()
    if not SILVER.files(lake, [("date", "=", day.isoformat())]):
        if not bronze:  # silence, if normalize said so or the settings take it as such
            if settings.missing_day == "refuse" and not logged:
                return (f"{day} was never normalized, and a day without data is an error "
                        f"(missing_day: refuse): run `probcep ingest --date {day}` and "
                        f"`probcep normalize --date {day}`")
            return ""
        if not logged:
            return (f"{day} has bronze readings but no silver: run `probcep normalize "
                    f"--date {day}` first")
    now = contents(bronze)
    if not logged or logged[0] == now:
        return ""
    changed = sorted({w.split("/")[0].removeprefix("batch_date=")
                      for w in set(logged[0].split()) ^ set(now.split())})
    return (f"{day}'s silver is older than its bronze (batch {', '.join(changed)} ingested "
            f"since): run `probcep normalize --date {day}` first, or `probcep rerun --from "
            f"{day} --to {day}`")


def day_distributions(bronze, settings, days: list[dt.date]):
    """Silver rows (Spark) of every timestep of the given days, from bronze readings
    (those of batches ingested on or after the first day: the caller's filter), in
    (date, stream_id, t) order: each file then holds a range of streams and times, and
    its row groups' statistics let a reader skip to a stream. The readings are range
    partitioned by (stream_id, t) before they are combined, so the combining needs no
    shuffle of its own and the order only a sort within each partition (a global
    `orderBy` after it shuffled the rows twice: docs/performance.md §5)."""
    from pyspark.sql import functions as F

    first = settings.clock.day_range(days[0])[0]
    per_day = settings.steps_per_day()
    index = F.floor((F.col("t") - F.lit(first)) / F.lit(per_day)).cast("int")
    wanted = [(d - days[0]).days for d in days]
    return _rows(bronze, settings, first, settings.clock.day_range(days[-1])[1],
                 F.date_add(F.lit(days[0]), index), index.isin(wanted),
                 F.lit(first) + (index + 1) * F.lit(per_day), ordered=True)


def distributions(bronze, settings, day: dt.date, lo: int, hi: int):
    """Silver rows (Spark) of the day's timesteps in [lo, hi) from bronze readings (those
    of batches ingested on or after the day: the caller's filter). Live mode normalizes
    the complete timesteps of a day piece by piece with it; under `hold_last`, readings
    up to `hold_last_steps` before `lo` (within the day) are read for the rows they hold."""
    from pyspark.sql import functions as F

    first, stop = settings.clock.day_range(day)
    return _rows(bronze, settings, max(first, lo), min(stop, hi), F.lit(day).cast("date"),
                 F.lit(True), F.lit(min(stop, hi)))


def _rows(bronze, settings, lo: int, hi: int, date, wanted, stop, ordered: bool = False):
    """Silver rows of timesteps [lo, hi) whose `wanted` holds, each of day `date` whose
    holding (`hold_last`) ends before `stop`: column expressions of `t`; with `ordered`,
    in (date, stream_id, t) order (`day_distributions`)."""
    from pyspark.sql import functions as F

    first_of_day = settings.clock.day_range(settings.clock.day_of(lo))[0]
    step_us = settings.clock.step_micros
    epoch_us = settings.clock.epoch_micros
    held = settings.held_steps
    t = F.floor((F.unix_micros("ts") - F.lit(epoch_us)) / F.lit(step_us)).cast("long")
    readings = bronze.withColumn("t", t).where(
        (F.col("t") >= max(first_of_day, lo - held)) & (F.col("t") < hi) & wanted)
    if ordered:
        readings = readings.repartitionByRange("stream_id", "t")
    combine = F.sum if settings.aggregation == "sum" else F.max
    domain = list(settings.domain)
    scores = (readings.groupBy("stream_id", "t").pivot("symbol", domain)
              .agg(combine("score")).na.fill(0.0, domain))
    total = column_sum([F.col(f"`{d}`") for d in domain])
    rows = scores.where(total > 0).select(
        "stream_id", "t", *[(F.col(f"`{d}`") / total).alias(d) for d in domain])
    if held:
        rows = _held(rows, domain, held, stop).where((F.col("t") >= lo) & wanted)
    rows = rows.select(
        "stream_id", "t",
        F.timestamp_micros(F.lit(epoch_us) + F.col("t") * F.lit(step_us)).alias("ts"),
        date.alias("date"), *domain,
        F.lit(0.0).alias(settings.no_reading_symbol))
    return rows.sortWithinPartitions("date", "stream_id", "t") if ordered else rows


def _held(rows, domain: list[str], hold: int, stop):
    """`hold_last`: after a timestep with readings, up to `hold` timesteps without any
    repeat its distribution (the latest reading wins; the day's end, `stop`, a column
    expression of the reading's `t`, cuts the hold)."""
    from pyspark.sql import functions as F

    offsets = F.explode(F.sequence(F.lit(0), F.lit(hold)))
    spread = rows.withColumn("_stop", stop).withColumn("_k", offsets) \
        .select("stream_id", (F.col("t") + F.col("_k")).alias("t"), "_k", "_stop", *domain) \
        .where(F.col("t") < F.col("_stop"))
    latest = F.min_by(F.struct(*domain), "_k")
    return spread.groupBy("stream_id", "t").agg(latest.alias("_p")) \
        .select("stream_id", "t", *[F.col(f"_p.{d}").alias(d) for d in domain])
