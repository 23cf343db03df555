"""What every step of a run shares: settings, the lake, the chosen patterns, the clock, the
run id, where silver comes from, and a Spark session started only by steps that need it.

A night, a backfill and a rerun all run on one `RunContext`. Silver comes from a
`SilverSource`: `LakeSilver` (ingest and normalize the landing folder into the lake) or
`DistributionFiles` (daily Parquet files of distributions standing in for silver, as in
tests and benchmarks).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

from probcep.config.clock import Clock, iso_day
from probcep.config.registry import RegisteredApprox, RegisteredPattern, load_registry
from probcep.config.settings import Settings, load_settings
from probcep.errors import ProbcepError
from probcep.lake.tables import SILVER, refuse_other_silver


class SilverSource(Protocol):
    """Where a run's silver comes from."""

    def domain(self) -> tuple[str, ...]:
        """The probability columns, in order: the engine's domain."""

    def prepare(self, ctx: RunContext, days: Sequence[dt.date]) -> None:
        """Make the days' silver (ingest and normalize), or nothing when it exists."""

    def files(self, day: dt.date) -> list[str]:
        """The day's silver as Parquet files (stream_id, t, the domain's columns)."""

    def first_day(self, version: int | None) -> dt.date | None:
        """The earliest day with silver (at `version`, a Delta version; None: none, or
        not known): correlations' ranges reach no further back."""

    def days_with_rows(self, first: dt.date, last: dt.date) -> list[dt.date]:
        """The days of first..last whose silver holds rows, in order (a day of silence
        has none; none when last < first). Asked only of sources with `silence`."""

    def version(self) -> int | None:
        """The Delta version of silver read (None when silver is not a Delta table)."""

    def silence(self) -> tuple[float, ...] | None:
        """What a timestep with no row holds (None: every stream is gap-free)."""

    def unready(self, day: dt.date) -> str:
        """Why the day's silver is not ready to be grouped (steps run out of order: none
        made though it should be, or made before its bronze changed), or ''."""


@dataclass(frozen=True)
class DistributionFiles:
    """Daily files `distributions-YYYY-MM-DD.parquet` of per-timestep distributions."""

    folder: Path

    def path(self, day: dt.date) -> Path:
        return self.folder / f"distributions-{day.isoformat()}.parquet"

    def domain(self) -> tuple[str, ...]:
        """The symbol columns (file order) of the first file, as for `probcep group`."""
        import pyarrow.parquet as pq

        found = sorted(self.folder.glob("distributions-*.parquet"))
        if not found:
            raise ProbcepError(f"{self.folder}: no distributions-<date>.parquet files")
        return tuple(n for n in pq.read_schema(found[0]).names
                     if n not in ("stream_id", "t", "ts"))

    def prepare(self, ctx: RunContext, days: Sequence[dt.date]) -> None:
        pass

    def first_day(self, version: int | None) -> dt.date | None:
        days = []
        for path in self.folder.glob("distributions-*.parquet"):
            try:
                days.append(iso_day(path.stem.removeprefix("distributions-")))
            except ValueError:  # 20251231 would be a day whose file is never found
                raise ProbcepError(f"{path}: not named distributions-YYYY-MM-DD.parquet"
                                   ) from None
        return min(days) if days else None

    def files(self, day: dt.date) -> list[str]:
        path = self.path(day)
        if not path.exists():
            raise ProbcepError(f"no distributions for {day}: {path} does not exist")
        return [str(path)]

    def version(self) -> int | None:
        return None

    def silence(self) -> tuple[float, ...] | None:
        return None

    def unready(self, day: dt.date) -> str:
        return ""  # `files` names a missing file itself


@dataclass(frozen=True)
class LakeSilver:
    """Silver in the lake, made from the landing folder by ingest and normalize."""

    settings: Settings

    def domain(self) -> tuple[str, ...]:
        return self.settings.silver_domain

    def prepare(self, ctx: RunContext, days: Sequence[dt.date]) -> None:
        """Ingest and normalize the days, each step in one Spark pass over them all;
        silver is validated before it is committed."""
        from probcep.pipeline.ingest import ingest_days
        from probcep.pipeline.normalize import normalize_days

        for report in ingest_days(ctx, list(days)):
            ctx.echo(report.line())
        for made in normalize_days(ctx, list(days)):
            ctx.echo(f"{made.day}: silver {made.rows} rows over {made.streams} streams "
                     f"(validated)")

    def files(self, day: dt.date) -> list[str]:
        """The day's silver files (the Delta snapshot's files of the day's partition);
        none for a day of silence."""
        return SILVER.files(self.settings.lake_root, [("date", "=", day.isoformat())])

    def first_day(self, version: int | None) -> dt.date | None:
        return SILVER.first_day(self.settings.lake_root, version)

    def days_with_rows(self, first: dt.date, last: dt.date) -> list[dt.date]:
        return sorted(d for d in SILVER.days(self.settings.lake_root) if first <= d <= last)

    def version(self) -> int | None:
        return SILVER.data_version(self.settings.lake_root)  # a vacuum is not new silver

    def unready(self, day: dt.date) -> str:
        from probcep.pipeline.normalize import unready

        return unready(self.settings, day)

    def silence(self) -> tuple[float, ...] | None:
        return self.settings.silence


def new_run_id(step: str) -> str:
    return f"{step}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunContext:
    """One run of the pipeline: a night, a backfill, a rerun or a single step."""

    settings: Settings
    patterns: tuple[RegisteredPattern | RegisteredApprox, ...]
    source: SilverSource
    run_id: str
    master: str | None = None
    echo: Callable[[str], None] = print
    #: Why the run was made (a rerun's `--reason`): in every commit it makes.
    reason: str = ""

    @classmethod
    def open(cls, step: str, settings: str | Path | None = None, lake: Path | None = None,
             registry: Path | None = None, patterns: Sequence[str] | None = None,
             source: Path | None = None, master: str | None = None,
             echo: Callable[[str], None] = print) -> RunContext:
        """Settings (see `load_settings`) with the given overrides, the registry checked
        against the domain (its correlations too, so a night never stops halfway at a bad
        one), and the chosen patterns (default: all; a name given twice counts once)."""
        loaded = load_settings(settings, lake=lake)
        if registry is not None:
            loaded = dataclasses.replace(loaded, registry=Path(registry))
        silver = DistributionFiles(Path(source)) if source else LakeSilver(loaded)
        if not source:
            refuse_other_silver(loaded.lake_root, loaded.clock.label, loaded.gap_label)
        entries = load_registry(loaded.registry, silver.domain())
        unknown = [n for n in patterns or () if n not in entries]
        if unknown:
            raise ProbcepError(f"{loaded.registry}: no pattern(s) {unknown}; "
                               f"known: {list(entries)}")
        chosen = tuple(entries[n] for n in dict.fromkeys(patterns or entries))
        ctx = cls(loaded, chosen, silver, new_run_id(step), master, echo)
        ctx.correlations  # noqa: B018 (loads and checks them, once)
        return ctx

    @property
    def lake(self) -> Path:
        return self.settings.lake_root

    @property
    def clock(self) -> Clock:
        return self.settings.clock

    @property
    def domain(self) -> tuple[str, ...]:
        return self.source.domain()

    @property
    def exact(self) -> list[RegisteredPattern]:
        return [p for p in self.patterns if isinstance(p, RegisteredPattern)]

    @property
    def approximate(self) -> list[RegisteredApprox]:
        return [p for p in self.patterns if isinstance(p, RegisteredApprox)]

    @cached_property
    def correlations(self) -> list:
        """The registry's correlations whose live pattern this run groups (its
        `correlations:` section, docs/semantics.md §8)."""
        from probcep.config.correlations import load_correlations

        if not self.settings.registry.is_file():
            return []
        found = load_correlations(self.settings.registry, self.domain,
                                  load_registry(self.settings.registry, self.domain),
                                  self.settings.step)
        mine = {(p.name, p.version) for p in self.exact}
        return [c for c in found.values() if (c.live.name, c.live.version) in mine]

    @property
    def docs_dir(self) -> Path:
        """Where Great Expectations writes Data Docs."""
        return self.lake / "gx"

    @cached_property
    def spark(self):
        """The Spark session, started on first use (steps that need no Spark never pay
        for a JVM)."""
        from probcep.lake.expectations import import_meanwhile
        from probcep.lake.spark import spark_session

        import_meanwhile()  # every step that starts Spark validates with GX
        return spark_session(self.master or self.settings.spark_master)

    def for_day(self, day: dt.date) -> RunContext:
        """The same run with a run id naming the day (the days of a backfill)."""
        return self._child(run_id=f"{self.run_id}-{day.isoformat()}")

    def because(self, reason: str) -> RunContext:
        """The same run, its commits saying why it was made."""
        return self._child(reason=reason)

    def _child(self, **changes) -> RunContext:
        child = dataclasses.replace(self, **changes)
        for name in ("spark", "correlations"):  # one session, one reading of the registry
            if name in self.__dict__:
                child.__dict__[name] = self.__dict__[name]
        return child

    def commit_meta(self, **fields) -> dict:
        """A commit's metadata: the run, `fields`, and the run's reason if it has one."""
        return {"run_id": self.run_id, **fields,
                **({"rerun_reason": self.reason} if self.reason else {})}


def pattern_versions(patterns) -> str:
    """Commit metadata naming the pattern versions a write holds (`name=version,...`)."""
    return ",".join(f"{p.name}={p.version}" for p in patterns)
