"""The nightly work for one day, a range of days (backfill), or a rerun.

A day is: (with `LakeSilver`) ingest the landing files into bronze, normalize them into
silver and validate it; then group every exact pattern (states carried from the previous
day), check the day's groups against the gold expectations, publish alerts, and run the
approximate patterns. Days of a range run in date order, since engine state flows night
to night. `DistributionFiles` (one Parquet file of distributions per day) stands in for
silver where there are no raw readings, as in the demo.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from probcep.gold import approx, batch
from probcep.gold.validate import validate_groups
from probcep.registry import RegisteredApprox, RegisteredPattern


@dataclass(frozen=True)
class DistributionFiles:
    """Daily files of per-timestep distributions standing in for silver."""

    folder: Path

    def path(self, day: dt.date) -> Path:
        return self.folder / f"distributions-{day.isoformat()}.parquet"

    def domain(self) -> tuple[str, ...]:
        """The symbol columns (file order) of the first file: the domain, as for
        `probcep group`."""
        import pyarrow.parquet as pq

        files = sorted(self.folder.glob("distributions-*.parquet"))
        if not files:
            raise FileNotFoundError(f"{self.folder}: no distributions-<date>.parquet files")
        return tuple(n for n in pq.read_schema(files[0]).names
                     if n not in ("stream_id", "t", "ts"))

    def files(self, day: dt.date) -> list[str]:
        path = self.path(day)
        if not path.exists():
            raise FileNotFoundError(f"no distributions for {day}: {path} does not exist")
        return [str(path)]

    def read(self, spark, day: dt.date):
        return spark.read.parquet(*self.files(day))


@dataclass(frozen=True)
class LakeSilver:
    """Silver in the lake, filled from the landing folder by ingest and normalize."""

    settings: object  # probcep.settings.Settings

    def domain(self) -> tuple[str, ...]:
        return self.settings.silver_domain

    def prepare(self, spark, day: dt.date, run_id: str, echo=print) -> None:
        """Ingest and normalize the day; silver is validated before it is committed
        (raises on failure)."""
        from probcep.lake.ingest import ingest_day
        from probcep.lake.normalize import normalize_day

        echo(ingest_day(spark, self.settings, day, run_id).line())
        made = normalize_day(spark, self.settings, day, run_id,
                             docs_dir=self.settings.lake_root / "gx")
        echo(f"{day}: silver {made['rows']} rows over {made['streams']} streams (validated)")

    def version(self) -> int:
        """The silver table's Delta version: gold commits name the version they read."""
        from deltalake import DeltaTable

        from probcep.gold import tables as T
        from probcep.lake.normalize import SILVER

        return DeltaTable(str(T.table_path(self.settings.lake_root, SILVER))).version()

    def files(self, day: dt.date) -> list[str]:
        """The day's silver files (the Delta snapshot's files of the day's partition)."""
        from deltalake import DeltaTable

        from probcep.gold import tables as T
        from probcep.lake.normalize import SILVER

        path = T.table_path(self.settings.lake_root, SILVER)
        day_filter = [("date", "=", day.isoformat())]
        files = DeltaTable(str(path)).file_uris(file_pruning_predicate=day_filter) \
            if DeltaTable.is_deltatable(str(path)) else []
        if not files:
            raise FileNotFoundError(f"no silver for {day}: run `probcep normalize --date {day}`")
        return files

    def read(self, spark, day: dt.date):
        """The day's silver as the engine wants it: stream_id, t and the probabilities."""
        return self.rows(spark, day).select("stream_id", "t",
                                            *[f"`{d}`" for d in self.domain()])

    def rows(self, spark, day: dt.date):
        """The day's silver rows, all columns."""
        return spark.read.parquet(*self.files(day))


@dataclass(frozen=True)
class DayReport:
    day: dt.date
    groups: int
    streams: int
    alerts_added: int
    alerts_retracted: int
    approx_matches: int | None

    def line(self) -> str:
        text = (f"{self.day}: {self.groups} groups final over {self.streams} streams "
                f"(validated), alerts +{self.alerts_added} -{self.alerts_retracted}")
        if self.approx_matches is not None:
            text += f", approximate match classes {self.approx_matches}"
        return text


def split(entries) -> tuple[list[RegisteredPattern], list[RegisteredApprox]]:
    exact = [e for e in entries if not isinstance(e, RegisteredApprox)]
    return exact, [e for e in entries if isinstance(e, RegisteredApprox)]


def run_day(spark, source, lake: Path, entries, domain, day: dt.date, run_id: str,
            clock: batch.Clock, echo=print) -> DayReport:
    """The whole night: prepare silver (lake), group and validate, alerts."""
    if hasattr(source, "prepare"):
        source.prepare(spark, day, run_id, echo)
    result, found = group_patterns(spark, source, lake, entries, domain, day, run_id, clock)
    alerts = batch.publish_alerts(lake, split(entries)[0], day, run_id)
    return DayReport(day, result.groups, result.streams, alerts.added, alerts.retracted, found)


def group_patterns(spark, source, lake: Path, entries, domain, day: dt.date, run_id: str,
                   clock: batch.Clock):
    """Group the exact patterns and check their gold rows; match the approximate ones."""
    exact, approximate = split(entries)
    read = {"silver_version": source.version()} if hasattr(source, "version") else {}
    result = batch.DayResult(0, 0, False, False)
    if exact:
        result, groups, _ = batch.group_day(spark, source.files(day), lake, exact, domain,
                                            day, run_id, clock, metadata=read)
        validate_groups(groups.to_pandas())
    found = None
    if approximate:
        found = approx.approx_day(spark, source.read(spark, day), lake, approximate, domain,
                                  day, run_id)["matches"]
    return result, found


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    if last < first:
        raise ValueError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(d) for d in range((last - first).days + 1)]


def run_range(spark, source, lake, entries, domain, first, last, run_id, clock, echo=print):
    """A backfill: every day from first to last, in order."""
    from tqdm import tqdm

    reports = []
    for day in tqdm(days_between(first, last), desc="days", unit="day", leave=False):
        reports.append(run_day(spark, source, lake, entries, domain, day,
                               f"{run_id}-{day.isoformat()}", clock, echo))
        echo(reports[-1].line())
    return reports


def rerun(spark, source, lake, entries, domain, first, last, run_id, clock, reason="",
          echo=print):
    """After a data fix to first..last: recompute from the states before `first`."""
    exact, approximate = split(entries)
    if hasattr(source, "prepare"):  # re-ingest and re-normalize the fixed days
        for day in days_between(first, last):
            source.prepare(spark, day, run_id, echo)
    done = batch.rerun_days(spark, source.files, lake, exact, domain,
                            first, last, run_id, clock, metadata={"rerun_reason": reason})
    for d in done:
        validate_groups(batch.read_day_groups(lake, exact, d.day).to_pandas())
        echo(f"{d.day}: recomputed, groups {'replaced' if d.result.groups_written else 'unchanged'}"
             f", alerts +{d.alerts.added} -{d.alerts.retracted}")
    if approximate:
        for day in days_between(first, last):
            approx.approx_day(spark, source.read(spark, day), lake, approximate, domain, day,
                              run_id)
    return done
