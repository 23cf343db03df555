"""Ingest a day of raw readings from the landing folder into `bronze/readings`.

Raw files are CSV, JSON lines or Parquet, in either layout users have:
  long: stream_id, ts, symbol, score [, sensor_id]   (many readings per stream and step)
  wide: stream_id, ts, one probability column per symbol   (sensors emitting distributions)
Wide rows are unpivoted into long ones (score = the symbol's probability), so everything
downstream sees one layout. Every row is checked with Spark expressions; a bad row goes
to `bronze/quarantine` with the first reason it fails and its source file, so
bronze rows + quarantined rows = input rows. The good rows pass the bronze suite
before anything is written. Rerunning a day replaces that day.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from probcep.config.settings import Settings
from probcep.errors import ProbcepError
from probcep.lake.delta import commit_staged, staged, staged_rows
from probcep.lake.tables import BRONZE, QUARANTINE, RAW_COLUMNS
from probcep.pipeline.context import RunContext

FORMATS = {".csv": "csv", ".jsonl": "json", ".json": "json", ".ndjson": "json",
           ".parquet": "parquet"}


class IngestError(ProbcepError):
    """A batch that cannot be ingested (no files, too much quarantined)."""


@dataclass(frozen=True)
class IngestReport:
    day: dt.date
    files: int
    rows: int
    bronze: int
    quarantined: int
    reasons: dict
    silent: str = ""  # why the day has no readings, when it has none

    def line(self) -> str:
        if self.silent:
            return f"{self.silent}: a day of silence"
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.reasons.items()))
        return (f"{self.day}: {self.rows} readings from {self.files} files -> bronze "
                f"{self.bronze}, quarantine {self.quarantined}" + (f" ({why})" if why else ""))


def landing_files(settings: Settings, day: dt.date) -> list[Path]:
    folder = settings.landing_dir / day.isoformat()
    if not folder.is_dir():
        raise IngestError(f"no landing folder for {day}: {folder} does not exist")
    files = sorted(p for p in folder.glob("*") if p.suffix.lower() in FORMATS)
    if not files:
        raise IngestError(f"no landing files for {day} in {folder} "
                          f"(expected {', '.join(sorted(FORMATS))})")
    return files


def read_raw(spark, files: list[Path], domain):
    """All files of a day as long-layout rows of strings plus `source_file`."""
    from pyspark.sql import functions as F

    frames = []
    for path in files:
        fmt = FORMATS[path.suffix.lower()]
        reader = spark.read.option("header", True) if fmt == "csv" else spark.read
        if fmt == "json":
            reader = reader.option("primitivesAsString", True)
        frame = getattr(reader, fmt)(str(path))
        frame = frame.select([F.col(f"`{c}`").cast("string").alias(c) for c in frame.columns])
        if "symbol" not in frame.columns and any(d in frame.columns for d in domain):
            frame = _unpivot(frame, [d for d in domain if d in frame.columns])
        for c in RAW_COLUMNS:
            if c not in frame.columns:
                frame = frame.withColumn(c, F.lit(None).cast("string"))
        frames.append(frame.select(*RAW_COLUMNS).withColumn("source_file", F.lit(str(path))))
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _unpivot(frame, symbols):
    from pyspark.sql import functions as F

    pairs = F.array(*[F.struct(F.lit(s).alias("symbol"), F.col(f"`{s}`").alias("score"))
                      for s in symbols])
    return (frame.withColumn("_p", F.explode(pairs))
            .select("stream_id", "ts", F.col("_p.symbol").alias("symbol"),
                    F.col("_p.score").alias("score")))


def checked(raw, domain):
    """Raw rows with `reason` (null when the row is good) and typed ts and score."""
    from pyspark.sql import functions as F

    ts = F.try_to_timestamp(F.col("ts"))
    score = F.col("score").try_cast("double")
    reason = (F.when(F.col("stream_id").isNull() | (F.trim("stream_id") == ""),
                     "missing stream_id")
              .when(ts.isNull(), "unparseable timestamp")
              .when(F.col("symbol").isNull() | ~F.col("symbol").isin(*domain), "unknown symbol")
              .when(score.isNull(), "score is not a number")
              .when(F.isnan(score), "score is NaN")
              .when(score < 0, "negative score"))
    return raw.withColumn("reason", reason).withColumn("ts_typed", ts) \
              .withColumn("score_typed", score)


def ingest_day(ctx: RunContext, day: dt.date) -> IngestReport:
    """Check the day's landing files and replace the day in bronze and quarantine.

    The rows flow from Spark's executors through staged Parquet into Delta (see
    `probcep.lake.delta`); the driver only sees counts. Nothing is committed when the
    bronze suite fails or too much is quarantined.
    """
    from pyspark.sql import functions as F

    from probcep.lake.expectations import BRONZE_SUITE, validate

    settings, lake = ctx.settings, ctx.lake
    try:
        files = landing_files(settings, day)  # before Spark starts: a missing day is quick
    except IngestError as missing:
        if settings.missing_day == "refuse":
            raise
        if day >= dt.datetime.now(dt.UTC).date():  # not over yet: no silence to speak of
            raise IngestError(f"{missing} (the day has not ended, so it is not taken as a "
                              f"day of silence)") from None
        meta = {"run_id": ctx.run_id, "batch_date": day.isoformat(), "files": 0}
        for table in (BRONZE, QUARANTINE):
            table.clear_day(lake, day, meta)
        return IngestReport(day, 0, 0, 0, 0, {}, silent=str(missing))
    rows = checked(read_raw(ctx.spark, files, settings.domain), settings.domain) \
        .withColumn("batch_date", F.lit(day).cast("date")) \
        .withColumn("ingest_time", F.current_timestamp()).cache()
    try:
        good = rows.where(F.col("reason").isNull()).select(
            "stream_id", "sensor_id", F.col("ts_typed").alias("ts"), "symbol",
            F.col("score_typed").alias("score"), "batch_date", "source_file", "ingest_time")
        bad = rows.where(F.col("reason").isNotNull()).select(
            *RAW_COLUMNS, "reason", "source_file", "batch_date", "ingest_time")
        validate(good, BRONZE_SUITE, settings.domain,  # before anything is written
                 day=day.isoformat(), run_id=ctx.run_id)
        reasons = {r["reason"]: r["count"] for r in bad.groupBy("reason").count().collect()}
        meta = {"run_id": ctx.run_id, "batch_date": day.isoformat(), "files": len(files)}
        with BRONZE.lock(lake, day), QUARANTINE.lock(lake, day), \
                staged(good, BRONZE.path(lake)) as good_dir, \
                staged(bad, QUARANTINE.path(lake)) as bad_dir:
            n_good, n_bad = staged_rows(good_dir), staged_rows(bad_dir)
            report = IngestReport(day, len(files), n_good + n_bad, n_good, n_bad, reasons)
            if report.rows and n_bad / report.rows > settings.max_quarantine_fraction:
                raise IngestError(f"{report.line()}: quarantined fraction "
                                  f"{n_bad / report.rows:.3f} exceeds "
                                  f"max_quarantine_fraction {settings.max_quarantine_fraction}")
            for folder, frame, table in ((good_dir, good, BRONZE), (bad_dir, bad, QUARANTINE)):
                commit_staged(folder, frame.limit(0).toArrow().schema, table, lake, day, meta,
                              settings.target_file_bytes)
    finally:
        rows.unpersist()
    return report
