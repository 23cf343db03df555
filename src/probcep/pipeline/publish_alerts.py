"""`publish-alerts`: a day's groups at or above their pattern's alert threshold become the
day's alerts, and what a run added or retracted is appended to `gold/alert_changes`.

Downstream alerting reads `gold/alerts`; after a rerun it finds which alerts appeared and
which were retracted under the rerun's id (`changed_by_run`).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from probcep.lake.tables import ALERT_CHANGES, ALERTS, commit_once
from probcep.pipeline.context import RunContext, pattern_versions
from probcep.pipeline.group_day import day_groups, refuse_ungrouped


@dataclass(frozen=True)
class AlertChanges:
    added: int
    retracted: int


def publish_alerts(ctx: RunContext, day: dt.date) -> AlertChanges:
    """Replace the day's alerts of the run's exact patterns by the day's groups at or
    above their alert threshold; record the changes."""
    refuse_ungrouped(ctx, day, "nothing to publish")  # its alerts would be retracted
    patterns = ctx.exact
    names = [p.name for p in patterns]
    alerts = alerts_of(day_groups(ctx, day), patterns)
    # The day's alert slice is held from reading the alerts to the last commit: a second
    # run at once then reads the first's alerts and finds nothing to change (both read
    # first, and both reported the same changes, recorded under one run only).
    with ALERTS.lock(ctx.lake, day, pattern=names):
        version = ALERTS.version(ctx.lake)
        before = ALERTS.read(ctx.lake, ALERTS.day_filter(day, {"pattern": names}), version)
        added = anti_join(alerts, before)
        retracted = anti_join(before, alerts)
        meta = ctx.commit_meta(batch_date=day.isoformat(),
                               pattern_versions=pattern_versions(patterns),
                               added=added.num_rows, retracted=retracted.num_rows)
        if added.num_rows or retracted.num_rows:
            # The changes first, as the Delta transaction (day, patterns) at the alerts'
            # version they were computed from: killed before the alerts' commit, the step run
            # again finds the same alerts, skips this commit and makes the other. (Alerts
            # first lost the changes for good: run again, it found nothing to change.)
            commit_once(ALERT_CHANGES, lake=ctx.lake, rows=pa.concat_tables([
                _change(added, "added", ctx.run_id), _change(retracted, "retracted", ctx.run_id)]),
                metadata=meta, app_id=f"probcep-alert-changes-{day}-{','.join(sorted(names))}",
                version=0 if version is None else version + 1)
        ALERTS.replace_day(ctx.lake, day, alerts, meta, pattern=names)
    return AlertChanges(added=added.num_rows, retracted=retracted.num_rows)


def alerts_of(groups: pa.Table, patterns) -> pa.Table:
    """The groups at or above their pattern's alert threshold, as alert rows (live mode
    appends these for the groups each micro-batch makes final)."""
    keep = []
    for p in patterns:
        mine = groups.filter(pc.and_(pc.equal(groups["pattern"], p.name),
                                     pc.greater_equal(groups["probability"],
                                                      p.alert_threshold)))
        keep.append(mine.append_column("alert_threshold",
                                       pa.array([p.alert_threshold] * mine.num_rows,
                                                pa.float64())))
    return pa.concat_tables(keep).cast(ALERTS.schema) if keep else \
        ALERTS.schema.empty_table()


#: What tells an alert apart: every column but the run that wrote it. (Group key and
#: probability alone missed a rerun that changed only an alert's n_matches: gold/alerts
#: held the new value, and a reader of the changes kept the old; QA, 2026-11-28.)
SAME_ALERT_BUT = ("run_id",)


#: A probability that moved by less than this share of itself is no change: the engine
#: is exact to 1e-12 (docs/semantics.md), and another release's arithmetic moves the last
#: bits; compared bit for bit, an upgrade retracted and added every alert again (QA,
#: 2026-11-28: `+3 -3` on a rerun of an unchanged day).
SAME_WITHIN = 1e-12


def anti_join(a: pa.Table, b: pa.Table, but=SAME_ALERT_BUT) -> pa.Table:
    """Rows of `a` not in `b`, compared on every column but `but` (null t_first included,
    which an Arrow join would never match); floats within `SAME_WITHIN` of each other
    count as the same."""
    names = [c for c in a.schema.names if c not in but]
    floats = [c for c in names if pa.types.is_floating(a.schema.field(c).type)]
    exact = [c for c in names if c not in floats]
    seen: dict[tuple, list[tuple]] = {}
    for key, values in zip(_rows(b, exact), _rows(b, floats)):
        seen.setdefault(key, []).append(values)

    def found(key, values) -> bool:
        return any(all(x == y or (x is not None and y is not None
                                  and math.isclose(x, y, rel_tol=SAME_WITHIN, abs_tol=0.0))
                       for x, y in zip(values, other)) for other in seen.get(key, ()))

    mask = [not found(k, v) for k, v in zip(_rows(a, exact), _rows(a, floats))]
    return a.filter(pa.array(mask, pa.bool_()))


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return list(zip(*(table[c].to_pylist() for c in columns))) if columns else \
        [()] * table.num_rows


def _change(rows: pa.Table, change: str, run_id: str) -> pa.Table:
    n = rows.num_rows
    return pa.table({"change": pa.array([change] * n, pa.string()),
                     "changed_by_run": pa.array([run_id] * n, pa.string()),
                     **{name: rows[name] for name in rows.schema.names}}
                    ).cast(ALERT_CHANGES.schema)
