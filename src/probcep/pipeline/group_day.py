"""`group-day`: group a day of silver for the run's patterns and replace that day's gold rows.

Exact patterns resume from the engine states saved after the previous processed day, run
per stream on Spark's executors (`group_tasks`), and the day's groups, then its states,
replace what those two tables held for that day and those patterns (one commit each).
Because a day always resumes from the state saved *before* it, running it again, after
a crash or on purpose, gives the same rows: nothing is duplicated, and a killed run
leaves no visible partial commit. The day's groups are checked against the gold suite
before they are committed; approximate patterns run after the exact ones (`approx_day`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.config.clock import Clock
from probcep.config.registry import RegisteredPattern
from probcep.errors import InputError, ProbcepError, warn
from probcep.lake.delta import staging_folder
from probcep.lake.expectations import GOLD_SUITE, validate
from probcep.lake.failures import writing
from probcep.lake.tables import GROUPS, STATES
from probcep.pipeline.context import RunContext, pattern_versions
from probcep.pipeline.group_tasks import run_grouping


@dataclass(frozen=True)
class GroupResult:
    """What grouping one day wrote."""

    groups: int
    #: the streams those groups are of (streams with none, or with runs still open at the
    #: day's end, are not counted: "over 81 streams" read as if 19,919 were dropped)
    streams: int
    groups_written: bool
    states_written: bool


@dataclass(frozen=True)
class GroupDayReport:
    day: dt.date
    result: GroupResult
    approx_matches: int | None  # None: no approximate pattern ran
    grouped_after: tuple[dt.date, ...] = ()  # later days grouped before this one

    def line(self) -> str:
        line = (f"{self.day}: {self.result.groups} groups final over {self.result.streams} "
                f"streams (validated)" + ("" if self.approx_matches is None else
                                          f", approximate match classes {self.approx_matches}"))
        warning = self.warning()
        return line + ("" if warning is None else f"\nwarning: {warning}")

    def warning(self) -> str | None:
        """What grouping this day after later days left wrong there, if it did."""
        if not self.grouped_after:
            return None
        later = self.grouped_after
        return (f"{later[0]}" + (f" and {len(later) - 1} later days were" if len(later) > 1
                                 else " was") +
                f" grouped before {self.day}, without its readings (a group running into "
                f"them from {self.day} is missing there, and a correlation reading "
                f"{self.day} read it as it was then): `probcep rerun --from {self.day} "
                f"--to {self.day}` recomputes them")


def group_day(ctx: RunContext, day: dt.date) -> GroupDayReport:
    """The exact patterns (groups checked against the gold suite), then the approximate."""
    from probcep.pipeline.approx_day import approx_day

    why = ctx.source.unready(day)
    if why:  # grouped, the day would be silent or stale, and the next resume from it
        raise ProbcepError(why)
    result, later = GroupResult(0, 0, False, False), ()
    if ctx.exact:
        later = grouped_after(ctx, day)
        result, _, _ = group_exact(ctx, day)
        if not result.states_written:  # the states the later days resumed from stand
            later = ()
    found = approx_day(ctx, day)["matches"] if ctx.approximate else None
    return GroupDayReport(day, result, found, later)


def grouped_after(ctx: RunContext, day: dt.date) -> tuple[dt.date, ...]:
    """Days after `day` on which the run's exact pattern versions were already grouped:
    each resumed from states saved before `day` was, so they lack its readings."""
    later = processed_days(ctx.lake, ctx.exact, [("batch_date", ">", day)])
    return tuple(sorted(set().union(*later.values())))


def refuse_ungrouped(ctx: RunContext, day: dt.date, nothing: str,
                     patterns: list[RegisteredPattern] | None = None) -> None:
    """ProbcepError when a pattern version (default: the run's exact ones) was never
    grouped on `day` (no "day processed" row): the day holds no groups of theirs, not even
    none, and a step that read them would look done having done `nothing` (its
    message: "nothing to publish")."""
    wanted = ctx.exact if patterns is None else patterns
    done = processed_days(ctx.lake, wanted, [("batch_date", "=", day)])
    missing = [p for p in wanted if (p.name, p.version) not in done]
    if missing:
        names = ", ".join(f"{p.name} (version {p.version})" for p in missing)
        raise ProbcepError(f"{day}: not grouped for {names}: {nothing}; run "
                           f"`probcep group-day --date {day}` first")


#: The `stream_id` of a pattern version's "day processed" row in the state table: a quiet
#: stream saves no state, so a day on which every stream was quiet is known by this row
#: alone (ingest refuses blank stream ids, so no stream has it).
PROCESSED = ""


def processed_days(lake, patterns: list[RegisteredPattern], filters=None
                   ) -> dict[tuple[str, str], set[dt.date]]:
    """Per (name, version) of these patterns, the days whose "day processed" row
    `state/engine` holds: the one record by which nights, reruns and live mode agree on
    which days are done. `filters` (on `batch_date`, with `datetime.date` values: Arrow
    compares no date with a string) prune the table's files by their
    statistics and then its rows: the table is not partitioned, so a file live mode wrote
    for several days holds days outside them (QA, 2026-11-28)."""
    import pyarrow.parquet as pq

    wanted = {(p.name, p.version) for p in patterns}
    days: dict[tuple[str, str], set[dt.date]] = {}
    where = pc.field("stream_id") == PROCESSED
    if filters:
        where = where & pq.filters_to_expression(filters)
    for part in STATES.scan(lake, filters, where,
                            ["pattern", "pattern_version", "stream_id", "batch_date"]):
        for name, version, day in zip(*(part.column(c).to_pylist()
                                        for c in ("pattern", "pattern_version",
                                                  "batch_date"))):
            if (name, version) in wanted:
                days.setdefault((name, version), set()).add(day)
    return days


def previous_states(ctx: RunContext, day: dt.date, last: dict | None = None) -> pa.Table:
    """For each exact pattern version, the states saved after its latest processed day
    before `day` (streams absent there were quiet: they start afresh). `last`: the
    `latest_processed` days, if already known."""
    return pa.Table.from_batches(list(saved_states(ctx.lake, ctx.exact, day, ctx.source,
                                                   last=last)), STATES.schema)


def latest_processed(lake, patterns: list[RegisteredPattern], day: dt.date
                     ) -> dict[tuple[str, str], dt.date]:
    """Per (name, version) of these patterns, its latest processed day before `day`: the
    day a night of `day` resumes from."""
    return {key: max(days) for key, days
            in processed_days(lake, patterns, [("batch_date", "<", day)]).items()}


def saved_states(lake, patterns: list[RegisteredPattern], day: dt.date, source,
                 batch_rows: int = 8192, last: dict | None = None
                 ) -> Iterator[pa.RecordBatch]:
    """`previous_states` a batch of rows at a time: what passes through memory at once is
    a batch, however many streams or days the state table holds. Each pattern version's
    latest day is found from its "day processed" rows alone, which every saved day has.

    A version whose latest day is followed by days of sparse silver (`source`, a
    `SilverSource`) that it never grouped starts empty, with a warning, as a new version
    does: resumed, it would take those days for silence (a registry change undone after
    a night: the night's readings were not the old version's)."""
    unready: dict[dt.date, list[tuple[dt.date, str]]] = {}  # by last day grouped
    last = latest_processed(lake, patterns, day) if last is None else last
    for p in patterns:
        when = last.get((p.name, p.version))
        missed = []
        yesterday = day - dt.timedelta(days=1)
        if when is not None and when < yesterday and source.silence() is not None:
            # gap-free sources have no silence to take the days for: group-day refuses
            # the gap (`_continues`); a version grouped yesterday reads no silver log
            missed = source.days_with_rows(when + dt.timedelta(days=1), yesterday)
        if missed:
            warn(
                f"{p.name} (version {p.version}) was last grouped on {when}; {missed[0]}"
                + (f" and {len(missed) - 1} more days hold" if len(missed) > 1 else " holds")
                + f" readings it never grouped, so it starts from an empty state on "
                f"{day}, as a new version does (`probcep rerun --from {missed[0]} --to "
                f"{day}` groups them under it)")
        elif when is not None:
            if when < yesterday and source.silence() is not None and when not in unready:
                between = (when + dt.timedelta(days=k) for k in range(1, (day - when).days))
                unready[when] = [(d, why) for d in between if (why := source.unready(d))]
            skipped = unready.get(when)
            if skipped:  # days whose nights did not run (a DAG unpaused after days down)
                (first, why), more = skipped[0], len(skipped) - 1
                days, it, it_is = (f"{first} and {more} more days are", "them", "they are") \
                    if more else (f"{first} is", "it", "it is")
                warn(f"{p.name} (version {p.version}) was last grouped on {when}; {days} not "
                     f"ready ({why}), so {day} takes {it} for silence: once {it_is} run, "
                     f"`probcep rerun --from {first} --to {day}` regroups from {it}")
            yield from STATES.scan(
                lake, [("batch_date", "=", when)], (pc.field("pattern") == p.name)
                & (pc.field("pattern_version") == p.version)
                & (pc.field("batch_date") == pa.scalar(when, pa.date32()))
                & (pc.field("stream_id") != PROCESSED), batch_rows=batch_rows)


def group_exact(ctx: RunContext, day: dt.date, states: pa.Table | None = None
                ) -> tuple[GroupResult, pa.Table, pa.Table]:
    """Group one day of silver for the exact patterns and replace that day's gold rows.

    Returns the result summary, the day's group rows and the new state rows. `states`
    overrides the saved states to resume from (reruns pass their own). The groups pass
    the gold suite before anything is committed: groups that fail are never published,
    and the day's earlier groups and states stay as they were.

    A night resumes from an earlier day's states, which a rerun of that day may replace
    while the night runs (docs/pipeline.md §11: steps of different days run at once).
    So once its commits are in, the night looks again at the day it resumed from and,
    if a rerun replaced it meanwhile, groups its day again from the new states. A rerun
    that replaced them after that look finds the night's day processed and regroups it
    itself (`rerun._rerun` lists the days after each one it walks).
    """
    patterns = ctx.exact
    names = [p.name for p in patterns]
    read = {"silver_version": v} if (v := ctx.source.version()) is not None else {}
    # one run at a time per day and pattern, from staging through both commits
    with GROUPS.lock(ctx.lake, day, pattern=names), STATES.lock(ctx.lake, day, pattern=names):
        for _ in range(RESUME_ATTEMPTS):
            resumed, prev = None, states
            if states is None:
                resumed = resumed_from(ctx.lake, patterns, day)  # one scan: days and runs
                last = {(name, version): when for name, version, when, _ in resumed}
                since = min(last.values(), default=None)
                prev = previous_states(ctx, day, last)
            # a full disk in a task's staged file reaches the driver as the text of the
            # executor's traceback, which names no file: the staging folder names the table
            with staging_folder(GROUPS.path(ctx.lake)) as staging, writing(staging):
                silence, files = ctx.source.silence(), ctx.source.files(day)
                if silence is None:
                    _continues(prev, ctx.clock, day)
                out = run_grouping(ctx.spark if files else None, files, prev, patterns,
                                   ctx.domain, staging, final=False,
                                   silence=None if silence is None else np.array(silence),
                                   until=ctx.clock.day_range(day)[1])
            groups, new_states = split_output(out, day, ctx.run_id, ctx.clock, patterns)
            validate(groups.to_pandas(), GOLD_SUITE)
            meta = ctx.commit_meta(batch_date=day.isoformat(),
                                   pattern_versions=pattern_versions(patterns), **read)
            wrote_groups = GROUPS.replace_day(ctx.lake, day, groups, meta, pattern=names)
            wrote_states = STATES.replace_day(ctx.lake, day, new_states, meta, pattern=names)
            if resumed is None or resumed_from(ctx.lake, patterns, day, since) == resumed:
                break
            ctx.echo(f"{day}: the states it resumed from were replaced while it ran (a "
                     "rerun of an earlier day): grouping it again from the new ones")
        else:
            raise ProbcepError(f"{day}: the states it resumes from were replaced "
                               f"{RESUME_ATTEMPTS} times while it ran (by a rerun of an "
                               "earlier day): run it again once the rerun is done")
    result = GroupResult(groups=groups.num_rows,
                         streams=len(set(groups["stream_id"].to_pylist())),
                         groups_written=wrote_groups, states_written=wrote_states)
    return result, groups, new_states


#: How often a night groups its day when reruns keep replacing the states it resumes from.
RESUME_ATTEMPTS = 3


def resumed_from(lake, patterns: list[RegisteredPattern], day: dt.date,
                 since: dt.date | None = None) -> frozenset:
    """Per pattern version, its latest processed day before `day` (and from `since`, if
    given) with the run that wrote it: what a night of `day` resumes from, which a rerun
    of that day changes. Only the files reaching those days are read."""
    import pyarrow.parquet as pq

    days = [("batch_date", "<", day)] + ([] if since is None else [("batch_date", ">=", since)])
    return latest_runs(STATES.scan(lake, days, (pc.field("stream_id") == PROCESSED)
                                   & pq.filters_to_expression(days),
                                   [*RUN_KEYS, "stream_id"]),
                       patterns)


#: The columns that say which run wrote a pattern version's day.
RUN_KEYS = ("pattern", "pattern_version", "batch_date", "run_id")


def latest_runs(parts, patterns) -> frozenset:
    """Per version of `patterns`, its latest day in the tables `parts` (columns
    RUN_KEYS) and the run that wrote it, as (name, version, day, run_id)."""
    wanted = {(p.name, p.version) for p in patterns}
    latest: dict[tuple[str, str], tuple[dt.date, str]] = {}
    for part in parts:
        for name, version, when, run in zip(*(part.column(c).to_pylist() for c in RUN_KEYS)):
            key = (name, version)
            if key in wanted and (key not in latest or when > latest[key][0]):
                latest[key] = (when, run)
    return frozenset((*key, *found) for key, found in latest.items())


def _continues(states: pa.Table, clock: Clock, day: dt.date) -> None:
    """Gap-free distributions have no silence to step over: a stream whose saved state
    stops before the day starts (a day skipped, or a file that ended early) is refused
    here, with its times, rather than by the engine on an executor."""
    first = clock.day_range(day)[0]
    behind = states.filter(pc.less(states["next_t"], first))
    if behind.num_rows:
        sid, t = behind["stream_id"][0].as_py(), behind["next_t"][0].as_py()
        raise InputError(
            f"stream {sid!r}: grouping stopped at {clock.time(t):%Y-%m-%d %H:%M:%S} UTC "
            f"(t={t}) and {day} starts at {clock.time(first):%Y-%m-%d %H:%M:%S} (t={first}): "
            f"distribution files have no silence to fill the gap, so their days are "
            f"grouped in order from {clock.day_of(t)}, each file holding every timestep "
            f"of its day")


def split_output(out: pa.Table, day: dt.date, run_id: str, clock: Clock,
                 patterns: list[RegisteredPattern]):
    """The tasks' mixed output as (group rows, state rows) in the catalog's schemas, the
    state rows with one "day processed" row per pattern version."""
    g = out.filter(pc.equal(out["kind"], "group"))
    s = out.filter(pc.equal(out["kind"], "state"))
    n = g.num_rows
    groups = pa.table({
        "pattern": g["pattern"], "pattern_version": g["pattern_version"],
        "stream_id": g["stream_id"],
        "t_start": g["t_start"], "t_first": g["t_first"], "t_end": g["t_end"],
        "ts_start": clock.times(g["t_start"]), "ts_first": clock.times(g["t_first"]),
        "ts_end": clock.times(g["t_end"]),
        "probability": g["probability"], "n_matches": g["n_matches"],
        "max_match_probability": g["max_match_probability"],
        "batch_date": pa.array([day] * n, pa.date32()),
        "run_id": pa.array([run_id] * n, pa.string()),
    }).cast(GROUPS.schema)
    return _ordered(groups), _ordered(state_rows(s, day, run_id, patterns))


def state_rows(s: pa.Table, day: dt.date, run_id: str,
               processed: list[RegisteredPattern] = ()) -> pa.Table:
    """The tasks' state rows (kind "state") in the state table's schema, with a "day
    processed" row for each pattern version of `processed`."""
    s = pa.concat_tables([s.select(["pattern", "pattern_version", "stream_id", "next_t",
                                    "state"]).cast(_STATE_OUT),
                          pa.table({"pattern": [p.name for p in processed],
                                    "pattern_version": [p.version for p in processed],
                                    "stream_id": [PROCESSED] * len(processed),
                                    "next_t": pa.nulls(len(processed), pa.int64()),
                                    "state": pa.nulls(len(processed), pa.binary())},
                                   schema=_STATE_OUT)])
    m = s.num_rows
    return pa.table({
        "pattern": s["pattern"], "pattern_version": s["pattern_version"],
        "stream_id": s["stream_id"], "batch_date": pa.array([day] * m, pa.date32()),
        "next_t": s["next_t"], "state": s["state"],
        "run_id": pa.array([run_id] * m, pa.string()),
    }).cast(STATES.schema)


_STATE_OUT = pa.schema([("pattern", pa.string()), ("pattern_version", pa.string()),
                        ("stream_id", pa.string()), ("next_t", pa.int64()),
                        ("state", pa.binary())])


def _ordered(table: pa.Table) -> pa.Table:
    keys = [k for k in ("pattern", "stream_id", "t_start", "t_first") if k in table.schema.names]
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys]))


def day_groups(ctx: RunContext, day: dt.date, patterns: list[RegisteredPattern] | None = None):
    """The groups stored for these patterns (default: the run's exact ones) and this day."""
    names = [p.name for p in (ctx.exact if patterns is None else patterns)]
    return GROUPS.read(ctx.lake, GROUPS.day_filter(day, {"pattern": names}))
