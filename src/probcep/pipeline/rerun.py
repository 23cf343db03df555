"""`rerun`: recompute days after a data fix, and record which alerts changed.

The fixed days are ingested and normalized again (late readings that landed in a later
day's folder are picked up: normalizing a day reads every batch ingested on or after
it). Grouping restarts from the states saved before the first fixed day and walks every
processed day in order, replacing groups, states and alerts; past the fixed range it
stops at the first day whose recomputed states equal the stored ones, since every later
day would come out the same. A rerun of unchanged data changes no gold rows. That test
needs the stored states of later days to be those of the data before the fix: a rerun
that died on its walk left the new states of some days and the old ones after them, so a
rerun leaves a mark in `_reruns/` until it ends, and while an earlier rerun's mark is
there, the walk does not stop early (it recomputes every later processed day).
Approximate entries walk the same way, since each day starts from the history the day
before learned (`_rerun_approx`). Correlations are recomputed for the regrouped days and
for the later nights whose archive range reaches into the fixed days
(`correlation_days`), with their alert changes.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from probcep.config.registry import load_registry
from probcep.lake.tables import APPROX_HISTORY, CORRELATIONS, GROUPS, STATES, same_rows
from probcep.pipeline.approx_day import approx_day
from probcep.pipeline.context import LakeSilver, RunContext
from probcep.pipeline.correlate_day import correlate_day
from probcep.pipeline.group_day import (
    PROCESSED,
    GroupResult,
    group_exact,
    previous_states,
)
from probcep.pipeline.publish_alerts import AlertChanges, publish_alerts
from probcep.pipeline.run import days_between

#: The lake's folder of marks of reruns in progress (`<run id>.json`).
RERUN_MARKS = "_reruns"


@dataclass(frozen=True)
class RerunDay:
    day: dt.date
    result: GroupResult
    alerts: AlertChanges


def days_with_states(ctx: RunContext, since: dt.date) -> list[dt.date]:
    """Days >= since holding state rows (states, or "day processed" rows) of the run's
    exact patterns by name, of any version: a new version rerun from its first day has
    none of its own and must walk the days the old one grouped (docs/pipeline.md,
    "Versions"), so this is not `group_day.processed_days`, which counts versions."""
    rows = STATES.read(ctx.lake, filters=[("batch_date", ">=", since),
                                          ("pattern", "in", [p.name for p in ctx.exact])],
                       columns=["batch_date"])
    return sorted(set(rows["batch_date"].to_pylist()))


def unregistered(ctx: RunContext, since: dt.date) -> list[str]:
    """Patterns and correlations with rows on `since` or later that the registry
    no longer names (removed, or renamed): a rerun leaves those rows as they were."""
    from probcep.config.correlations import load_correlations

    patterns, correlations = {}, {}
    if ctx.settings.registry.is_file():
        patterns = load_registry(ctx.settings.registry, ctx.domain)
        correlations = load_correlations(ctx.settings.registry, ctx.domain, patterns,
                                         ctx.settings.step)
    found = set(STATES.read(ctx.lake, [("batch_date", ">=", since),
                                       ("stream_id", "=", PROCESSED)],
                            columns=["pattern"])["pattern"].to_pylist())
    found |= set(APPROX_HISTORY.read(ctx.lake, [("batch_date", ">=", since)],
                                     columns=["pattern"])["pattern"].to_pylist())
    named = set(CORRELATIONS.read(ctx.lake, [("batch_date", ">=", since)],
                                  columns=["correlation"])["correlation"].to_pylist())
    return sorted(found - set(patterns)) + [f"correlation {c}" for c in
                                            sorted(named - set(correlations))]


def unfinished_reruns(lake: Path) -> list[dict]:
    """The marks of reruns that began and did not end (killed, or failed)."""
    folder = Path(lake) / RERUN_MARKS
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] \
        if folder.is_dir() else []


def rerun_days(ctx: RunContext, first: dt.date, last: dt.date,
               reason: str = "") -> list[RerunDay]:
    """After a fix to first..last: recompute from the states before `first`; every
    commit of the rerun carries `reason`."""
    ctx = ctx.because(reason)
    earlier = unfinished_reruns(ctx.lake)
    for mark in earlier:
        ctx.echo(f"an earlier rerun ({mark['run_id']}, {mark['first']}..{mark['last']}) did "
                 "not finish: every later processed day is recomputed (the alert changes it "
                 "committed stay in gold/alert_changes under its id)")
    fixed = days_between(first, last)
    _prepare(ctx, fixed)
    left = unregistered(ctx, first)
    if left:
        ctx.echo(f"warning: {', '.join(left)} not in the registry (taken out, or never in "
                 f"it, as the demo's correlation `revisit`): their rows of {first} and later "
                 "stay as they were, alerts included (docs/pipeline.md §4 says how to retire "
                 "them)")
    # marked only now: a rerun refused by its checks or its landing files changed no
    # state, and a mark of a day that cannot be rerun yet (today) would stay for good
    folder = Path(ctx.lake) / RERUN_MARKS
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / f"{ctx.run_id}.json"
    names = sorted(p.name for p in ctx.patterns)
    mine.write_text(json.dumps({"run_id": ctx.run_id, "first": first.isoformat(),
                                "last": last.isoformat(), "reason": reason,
                                "patterns": names}))
    done = _rerun(ctx, fixed, last, stop_early=not earlier)
    mine.unlink()
    for mark in earlier:  # repaired when this rerun fixed at least its days and patterns
        if (first.isoformat() <= mark["first"] and mark["last"] <= last.isoformat()
                and set(mark.get("patterns", names)) <= set(names)):
            (folder / f"{mark['run_id']}.json").unlink(missing_ok=True)
        else:
            ctx.echo(f"the earlier rerun {mark['run_id']} fixed {mark['first']}.."
                     f"{mark['last']} for {', '.join(mark.get('patterns', []))}, more than "
                     "this one's days or patterns: run it again")
    return done


def _prepare(ctx: RunContext, fixed: list[dt.date]) -> None:
    """Silver of the fixed days, again from their landing files."""
    ctx.source.prepare(ctx, fixed)
    if isinstance(ctx.source, LakeSilver):  # silver of the fixed days is new for every
        # pattern, but only the chosen ones are regrouped
        left = sorted(set(load_registry(ctx.settings.registry, ctx.domain))
                      - {p.name for p in ctx.patterns})
        if left:
            ctx.echo(f"warning: {', '.join(left)} not regrouped: their groups and alerts "
                     f"of {fixed[0]} and later stay as made from the silver this rerun "
                     "replaced (rerun without --pattern to include them)")


def _rerun(ctx: RunContext, fixed: list[dt.date], last: dt.date,
           stop_early: bool) -> list[RerunDay]:
    first = fixed[0]
    done = []
    if ctx.exact:
        days = sorted(set(days_with_states(ctx, first)) | set(fixed))
        states = previous_states(ctx, first)
        names = [p.name for p in ctx.exact]
        while days:
            day = days.pop(0)
            stored = STATES.read(ctx.lake, STATES.day_filter(day, {"pattern": names}))
            result, _, new_states = group_exact(ctx, day, states=states)
            done.append(RerunDay(day, result, publish_alerts(ctx, day)))
            ctx.echo(f"{day}: recomputed, groups "
                     f"{'replaced' if result.groups_written else 'unchanged'}, alerts "
                     f"+{done[-1].alerts.added} -{done[-1].alerts.retracted}")
            if stop_early and day > last and same_rows(new_states, stored):
                break
            states = new_states.filter(pc.not_equal(new_states["stream_id"], PROCESSED))
            # a night of a later day may have grouped it from the states replaced here,
            # after the list was made (`group_exact`): listed again, it is walked too
            days = sorted(set(days) | set(days_with_states(ctx, day + dt.timedelta(days=1))))
    regrouped = [d.day for d in done]
    if ctx.approximate:
        _rerun_approx(ctx, fixed, regrouped, last, stop_early)
    for day in correlation_days(ctx, regrouped + fixed, last):
        for report in correlate_day(ctx, day):
            ctx.echo(report.line())
    return done


def _rerun_approx(ctx: RunContext, fixed: list[dt.date], regrouped: list[dt.date],
                  last: dt.date, stop_early: bool) -> None:
    """Approximate entries walk as exact patterns do: each day starts from the history
    the day before it learned, so a fixed day (or a new version) reaches every later day
    the entries matched, up to the first one after the fixed range whose rows and history
    come out as stored (a silent day learns nothing, so it cannot end the walk). The
    days are listed again after each one, as `_rerun` does: a night may have matched a
    later day from the history replaced here after the list was made."""
    days = sorted(set(fixed) | set(regrouped) | set(matched_days(ctx, fixed[0])))
    while days:
        day = days.pop(0)
        found = approx_day(ctx, day)
        ctx.echo(f"{day}: approximate entries recomputed, {found['matches']} match classes, "
                 f"rows {'replaced' if found['changed'] else 'unchanged'}")
        if stop_early and day > last and not found["changed"] and not found["silent"]:
            break
        days = sorted(set(days) | set(matched_days(ctx, day + dt.timedelta(days=1))))


def matched_days(ctx: RunContext, since: dt.date) -> list[dt.date]:
    """The days from `since` on whose history the run's approximate entries saved."""
    return APPROX_HISTORY.read(ctx.lake, [("batch_date", ">=", since),
                                          ("pattern", "in", [e.name for e in ctx.approximate])],
                               columns=["batch_date"])["batch_date"].to_pylist()


def correlation_days(ctx: RunContext, regrouped: list[dt.date], last: dt.date) -> list[dt.date]:
    """The days whose correlations a rerun recomputes: those regrouped, and the later
    days holding a group of a correlation's live pattern whose archive range,
    [t_start - lookback, t_start - gap], can reach into the fixed days. Found from the
    groups, not from the correlation rows: a day whose groups all fell below
    `min_probability` has none, and a group of a pattern without a window may start
    days before its night. A day that no night (nor live mode's day end) has grouped yet
    is left out, with a line: live mode's groups of the day in progress are there, and
    its night computes their correlations from the fixed archive."""
    if not ctx.correlations:
        return []
    end = ctx.clock.day_range(last)[1]  # the first timestep after the fixed days
    days = set(regrouped)
    for c in ctx.correlations:
        reaching = set(GROUPS.read(ctx.lake, [
            ("batch_date", ">", last), ("pattern", "=", c.live.name),
            ("pattern_version", "=", c.live.version),
            ("t_start", "<", end + c.correlation.lookback)], columns=["batch_date"]
        )["batch_date"].to_pylist())
        grouped = set(grouped_days(ctx, c.live, last)) if reaching else set()
        days.update(reaching & grouped)
        for day in sorted(reaching - grouped - days):
            ctx.echo(f"{day}: correlation {c.name} not recomputed: {c.live.name} not grouped "
                     "by a night yet (live mode's day); its night computes it")
    return sorted(days)


def grouped_days(ctx: RunContext, pattern, after: dt.date) -> list[dt.date]:
    """The days after `after` with a "day processed" row of this pattern version."""
    rows = STATES.read(ctx.lake, [("batch_date", ">", after), ("pattern", "=", pattern.name),
                                  ("pattern_version", "=", pattern.version),
                                  ("stream_id", "=", PROCESSED)], columns=["batch_date"])
    return rows["batch_date"].to_pylist()
