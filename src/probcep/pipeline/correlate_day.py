"""`correlate`: join a day's gold groups of each correlation's live pattern with its
archive pattern over the lookback range of the same stream (docs/semantics.md §8), and
replace that day's correlation rows and correlation alerts.

The archive is silver at the Delta version pinned when the step starts (recorded on
every row, so `DeltaTable(version=...)` reproduces the read), read by stream and time
range through the plan of the correlation's strategy; the rows do not depend on the
strategy. For `auto` with an archive window, the statistics table
(`state/archive_stats`) bounds P_A(R) per stream and day so that groups that cannot
reach τ_C are dropped before any silver is read; missing days are computed and stored.
Like `group-day`, the day's rows are replaced in one commit per table: a rerun gives the
same rows, and a killed run leaves no partial commit. Live mode computes the rows of
the groups each micro-batch makes final through the same `correlate_groups`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.config.correlations import RegisteredCorrelation
from probcep.engine.correlate import Correlated, dense_rows
from probcep.engine.grouping import Group
from probcep.engine.read_plans import ArchiveStats, correlate, match_ends
from probcep.engine.transducer import Transducer
from probcep.lake.archive import SilverArchive, StreamStarts
from probcep.lake.tables import (
    ARCHIVE_STATS,
    CORRELATION_ALERT_CHANGES,
    CORRELATION_ALERTS,
    CORRELATIONS,
    GROUPS,
    SILVER,
    commit_once,
)
from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import refuse_ungrouped
from probcep.pipeline.publish_alerts import anti_join

#: The stream id of a statistics row for a stream silent all day.
SILENT = ""


@dataclass(frozen=True)
class CorrelateReport:
    day: dt.date
    correlation: str
    groups: int
    rows: int
    rows_read: int
    alerts_added: int
    alerts_retracted: int

    def line(self) -> str:
        return (f"{self.day}: correlation {self.correlation}: {self.rows} rows from "
                f"{self.groups} live groups ({self.rows_read} silver rows read), alerts "
                f"+{self.alerts_added} -{self.alerts_retracted}")


def correlate_day(ctx: RunContext, day: dt.date,
                  correlations: list[RegisteredCorrelation] | None = None
                  ) -> list[CorrelateReport]:
    """Every correlation of the run (default: those whose live pattern it groups)."""
    version = ctx.source.version()  # the archive is silver as it is now, whatever lands later
    chosen = ctx.correlations if correlations is None else correlations
    # its rows and alerts would be emptied, and the step would look done
    refuse_ungrouped(ctx, day, "no correlation to compute",
                     list({(c.live.name, c.live.version): c.live for c in chosen}.values()))
    lo, end = ctx.clock.day_range(day)
    computed = [correlate_groups(ctx, day, c, live_groups(ctx, day, c), version, (lo, end - 1))
                for c in chosen]
    if computed:  # one validation for the day's rows of every correlation
        check_correlations(pa.concat_tables([t for t, _ in computed]).to_pandas(),
                           day=day.isoformat(), run_id=ctx.run_id)
    reports = []
    for c, (table, report) in zip(chosen, computed):
        meta = ctx.commit_meta(batch_date=day.isoformat(), correlation=c.name,
                               correlation_version=c.version, strategy=c.strategy,
                               silver_version="" if version is None else version)
        CORRELATIONS.replace_day(ctx.lake, day, table, meta, correlation=[c.name])
        added, retracted = publish_correlation_alerts(ctx, day, c, table)
        reports.append(dataclasses.replace(report, alerts_added=added,
                                           alerts_retracted=retracted))
    return reports


def live_groups(ctx: RunContext, day: dt.date, c: RegisteredCorrelation) -> dict[str, list]:
    """The day's gold groups of the correlation's live pattern, by stream."""
    return groups_by_stream(GROUPS.read(ctx.lake, GROUPS.day_filter(
        day, {"pattern": [c.live.name]})), c)


def groups_by_stream(rows: pa.Table, c: RegisteredCorrelation) -> dict[str, list[Group]]:
    """The groups (GROUPS rows) of the correlation's live pattern and version, by stream."""
    rows = rows.filter(pc.and_(pc.equal(rows["pattern"], c.live.name),
                               pc.equal(rows["pattern_version"], c.live.version)))
    groups: dict[str, list[Group]] = {}
    for r in rows.to_pylist():
        groups.setdefault(r["stream_id"], []).append(Group(
            r["t_start"], r["t_first"], r["t_end"], r["probability"], r["n_matches"],
            r["max_match_probability"]))
    return groups


def correlate_groups(ctx: RunContext, day: dt.date, c: RegisteredCorrelation,
                     groups: dict[str, list[Group]], version: int | None,
                     span: tuple[int, int], stats: bool = True,
                     first_ts: StreamStarts | None = None) -> tuple[pa.Table, CorrelateReport]:
    """The rows of one correlation (not yet written, with `day` as their batch date) for
    live groups by stream, the archive being silver at `version`; `span` is the timesteps
    the groups come from (what `active` reads ahead for). The night and live mode both
    come here, so their rows agree. `stats`: let `auto` read and store the statistics
    (live mode does not: silver's version moves every micro-batch, and the statistics
    are kept per version; pruning never changes a row). `first_ts`: streams' first
    timesteps kept from earlier calls (live mode's micro-batches)."""
    corr = c.correlation
    starts = [g.t_start for gs in groups.values() for g in gs]
    horizon = min([span[0], *starts]) - corr.lookback
    first = ctx.source.first_day(version)
    if first is not None:  # no stream's timeline starts before silver's first day, so
        # no range reaches further (a lookback of years needs no days before the archive)
        horizon = max(horizon, ctx.clock.day_range(first)[0])
    archive = SilverArchive(archive_files(ctx, version), ctx.clock, ctx.domain,
                            ctx.source.silence(), horizon, max([span[1], *starts]) - corr.gap,
                            starts=first_ts)
    found = None
    if stats and c.strategy == "auto" and corr.window is not None and corr.min_probability > 0:
        found = archive_stats(ctx, c, archive, version, sorted(groups))
    rows = correlate(corr, Transducer(corr.dfa, corr.window), groups, archive, c.strategy,
                     span, found)
    table = correlation_rows(rows, c, day, ctx, version)
    return table, CorrelateReport(day, c.name, len(starts), table.num_rows, archive.rows_read,
                                  0, 0)


def archive_files(ctx: RunContext, version: int | None):
    """A day's silver files at the pinned version (the source's own files when silver is
    not a Delta table). The table's log is read once, not once a day: finding a stream's
    first reading walks back day by day."""
    if version is None:
        return ctx.source.files
    listed = SILVER.file_lister(ctx.lake, version)

    def files_of_day(d: dt.date) -> list[str]:
        return listed([("date", "=", d.isoformat())])
    return files_of_day


def check_correlations(frame, docs_dir=None, *, day: str | None = None,
                       run_id: str | None = None):
    """Validate gold.correlations rows (pandas) with the correlation suite, after adding
    the column it bounds: how far `probability` is from the product of its parts."""
    from probcep.lake.expectations import CORRELATIONS_SUITE, validate

    archive = np.where(frame["mode"] == "exists", frame["archive_probability"],
                       1.0 - frame["archive_probability"])
    frame = frame.assign(product_error=np.abs(
        frame["probability"] - frame["live_probability"] * archive))
    return validate(frame, CORRELATIONS_SUITE, docs_dir=docs_dir, day=day, run_id=run_id)


def correlation_rows(rows: list[Correlated], c: RegisteredCorrelation, day: dt.date,
                     ctx: RunContext, version: int | None) -> pa.Table:
    n = len(rows)
    dicts = [r.as_dict() for r in rows]
    data = {k: [d[k] for d in dicts] for k in (
        "stream_id", "t_start", "t_first", "t_end", "n_matches", "max_match_probability",
        "live_probability", "archive_probability", "r_lo", "r_hi", "probability")}
    clock = ctx.clock
    table = pa.table({
        "correlation": [c.name] * n, "correlation_version": [c.version] * n,
        "live_pattern": [c.live.name] * n, "live_version": [c.live.version] * n,
        **{k: pa.array(v, pa.int64() if k in ("t_start", "t_first", "t_end", "n_matches",
                                               "r_lo", "r_hi") else None)
           if k != "stream_id" else pa.array(v, pa.string()) for k, v in data.items()},
        "silver_version": pa.array([version] * n, pa.int64()),
        "mode": [c.correlation.mode] * n, "strategy": [c.strategy] * n,
        "batch_date": pa.array([day] * n, pa.date32()),
        "run_id": pa.array([ctx.run_id] * n, pa.string()),
    })
    for name in ("start", "first", "end"):
        table = table.append_column(f"ts_{name}", clock.times(table[f"t_{name}"]))
    return table.select(CORRELATIONS.schema.names).cast(CORRELATIONS.schema)


#: Days of archive statistics stored per commit: a long lookback over an archive fills
#: its cache in a few commits (one a day took minutes over years of silver).
STATS_DAYS_PER_COMMIT = 366


def archive_stats(ctx: RunContext, c: RegisteredCorrelation, archive: SilverArchive,
                  version: int | None, streams: list[str]) -> ArchiveStats:
    """The statistics of every day the night's ranges touch, computing and storing the
    days the table does not hold yet (for this correlation version and silver version)."""
    corr = c.correlation
    days = archive.days(archive.horizon, archive.end)
    stored = ARCHIVE_STATS.read(ctx.lake, [("correlation", "=", c.name),
                                           ("date", ">=", days[0]), ("date", "<=", days[-1])])
    stored = stored.filter(pc.and_(pc.equal(stored["correlation_version"], c.version),
                                   _same_version(stored["silver_version"], version)))
    have = {(r["stream_id"], r["date"]): r["expected_matches"] for r in stored.to_pylist()}
    known_days = {d for _, d in have}
    missing = [day for day in days if day not in known_days]
    silent = None  # a silent day's count: the same for every day
    for k in range(0, len(missing), STATS_DAYS_PER_COMMIT):
        chunk, rows = missing[k:k + STATS_DAYS_PER_COMMIT], []
        for day in chunk:
            counts = day_stats(archive, corr, day, silent)
            silent = counts[SILENT]
            rows += [(sid, day, v) for sid, v in counts.items()]
            have.update({(sid, day): v for sid, v in counts.items()})
        n = len(rows)
        sids, dates, values = zip(*rows)
        ARCHIVE_STATS.replace_days(ctx.lake, chunk, pa.table({
            "correlation": [c.name] * n, "correlation_version": [c.version] * n,
            "stream_id": list(sids), "date": pa.array(dates, pa.date32()),
            "expected_matches": list(values),
            "silver_version": pa.array([version] * n, pa.int64()),
            "run_id": [ctx.run_id] * n}).cast(ARCHIVE_STATS.schema),
            ctx.commit_meta(correlation=c.name), correlation=[c.name])
    first, last = ctx.clock.day_range(days[0])[0], ctx.clock.day_range(days[-1])[1] - 1
    counts = {}
    for sid in streams:
        for k, day in enumerate(days):
            value = have.get((sid, day), have.get((SILENT, day)))
            counts[(sid, k)] = float("inf") if value is None else value
    return ArchiveStats(ctx.settings.steps_per_day(), counts,
                        {sid: (first, last) for sid in streams}, offset=first)


def day_stats(archive: SilverArchive, corr, day: dt.date,
              silent: float | None = None) -> dict[str, float]:
    """Expected archive matches ending on `day` per stream heard in the window before or
    on it, and (stream id SILENT) for a stream silent throughout (`silent`, when known:
    every day has as many timesteps)."""
    lo, end = archive.clock.day_range(day)
    pre = lo - (corr.window - 1)
    if silent is None:
        ahead = np.tile(np.asarray(archive.silence, np.float64), (end - pre, 1))
        silent = float(match_ends(corr.dfa, corr.window, ahead)[0][lo - pre:].sum())
    out = {SILENT: silent}
    for sid in sorted({s for d in archive.days(pre, end - 1) for s in archive._first_of_day(d)}):
        # from `pre` with silence before a stream's first reading: counts more matches
        # than the stream can hold, never fewer, so the bound stays sound
        t, probs = archive.read(sid, pre, end - 1)
        ends, _ = match_ends(corr.dfa, corr.window,
                             dense_rows(t, probs, pre, end - 1, archive.silence))
        out[sid] = float(ends[lo - pre:].sum())
    return out


def _same_version(column, version):
    return pc.is_null(column) if version is None else pc.equal(column, version)


def publish_correlation_alerts(ctx: RunContext, day: dt.date, c: RegisteredCorrelation,
                               rows: pa.Table) -> tuple[int, int]:
    """The day's rows at or above the correlation's alert threshold replace its alerts;
    what was added or retracted is appended to the changes, as for `gold/alerts`."""
    alerts = alert_rows(rows, c)
    version = CORRELATION_ALERTS.version(ctx.lake)
    before = CORRELATION_ALERTS.read(ctx.lake, CORRELATION_ALERTS.day_filter(
        day, {"correlation": [c.name]}), version)
    added = anti_join(alerts, before, SAME_ALERT_BUT)
    retracted = anti_join(before, alerts, SAME_ALERT_BUT)
    meta = ctx.commit_meta(batch_date=day.isoformat(), correlation=c.name,
                           added=added.num_rows, retracted=retracted.num_rows)
    if added.num_rows or retracted.num_rows:  # the changes first, as `publish_alerts`
        commit_once(CORRELATION_ALERT_CHANGES, ctx.lake, pa.concat_tables(
            [_change(added, "added", ctx.run_id), _change(retracted, "retracted", ctx.run_id)]),
            meta, f"probcep-correlation-alert-changes-{day}-{c.name}",
            0 if version is None else version + 1)
    CORRELATION_ALERTS.replace_day(ctx.lake, day, alerts, meta, correlation=[c.name])
    return added.num_rows, retracted.num_rows


def alert_rows(rows: pa.Table, c: RegisteredCorrelation) -> pa.Table:
    """The correlation rows at or above the correlation's alert threshold, as alerts."""
    keep = rows.filter(pc.greater_equal(rows["probability"], c.alert_threshold))
    return keep.append_column("alert_threshold", pa.array(
        [c.alert_threshold] * keep.num_rows, pa.float64())).cast(CORRELATION_ALERTS.schema)


#: What tells a correlation alert apart: every column but the run that wrote it, the
#: silver version it read and the read strategy it took, which change with no number.
SAME_ALERT_BUT = ("run_id", "silver_version", "strategy")


def _change(rows: pa.Table, change: str, run_id: str) -> pa.Table:
    n = rows.num_rows
    return pa.table({"change": pa.array([change] * n, pa.string()),
                     "changed_by_run": pa.array([run_id] * n, pa.string()),
                     **{name: rows[name] for name in rows.schema.names}}
                    ).cast(CORRELATION_ALERT_CHANGES.schema)
