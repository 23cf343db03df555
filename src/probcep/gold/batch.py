"""One night's gold work: group a day of silver for some patterns, then publish alerts.

`group_day` reads the engine states saved after the previous processed day, runs the
patterns per stream on the executors, and replaces the day's groups and states (one
commit each, groups first). Because it always resumes from the state saved *before* the
day, running it again for the same day, after a crash or on purpose, gives the same
rows: nothing is duplicated, and a partial run leaves no visible partial commit.

`publish_alerts` turns a day's groups into alerts with each pattern's threshold and
records, per run, which alerts appeared and which were retracted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.gold import tables as T
from probcep.gold.grouping import run_grouping
from probcep.lake.delta import staging_folder
from probcep.registry import RegisteredPattern


@dataclass(frozen=True)
class Clock:
    """Maps integer timesteps to wall-clock time: ts = epoch + t * step."""

    epoch: dt.datetime
    step: dt.timedelta

    def times(self, t: pa.Array) -> pa.Array:
        t = np.asarray(t.to_numpy(zero_copy_only=False), dtype="float64")
        mask = np.isnan(t)
        micros = (np.nan_to_num(t) * (self.step / dt.timedelta(microseconds=1))).astype("int64")
        base = int(self.epoch.replace(tzinfo=dt.UTC).timestamp() * 1_000_000)
        return pa.array(base + micros, pa.timestamp("us", tz="UTC"), mask=mask)


@dataclass(frozen=True)
class DayResult:
    groups: int
    streams: int
    groups_written: bool
    states_written: bool


def previous_states(lake_root, patterns: list[RegisteredPattern], day: dt.date) -> pa.Table:
    """For each pattern version, the states saved after its latest processed day < day."""
    rows = T.read_rows(T.table_path(lake_root, T.STATES), T.STATE_SCHEMA,
                       filters=[("batch_date", "<", day)])
    keep = []
    for p in patterns:
        mine = rows.filter(pc.and_(pc.equal(rows["pattern"], p.name),
                                   pc.equal(rows["pattern_version"], p.version)))
        if mine.num_rows:
            last = pc.max(mine["batch_date"])
            keep.append(mine.filter(pc.equal(mine["batch_date"], last)))
    return pa.concat_tables(keep) if keep else T.STATE_SCHEMA.empty_table()


def group_day(spark, silver: list[str], lake_root, patterns: list[RegisteredPattern], domain,
              day: dt.date, run_id: str, clock: Clock, metadata: dict | None = None,
              states: pa.Table | None = None) -> tuple[DayResult, pa.Table, pa.Table]:
    """Group one day of silver (its Parquet files) and replace that day's gold rows.

    Returns the result summary, the day's group rows and the new state rows.
    `states` overrides the saved states to resume from (reruns pass their own).
    """
    prev = previous_states(lake_root, patterns, day) if states is None else states
    with staging_folder(T.table_path(lake_root, T.GROUPS)) as staging:
        out = run_grouping(spark, silver, prev, patterns, domain, staging, final=False)
    groups, new_states = split_output(out, day, run_id, clock)
    meta = {"run_id": run_id, "batch_date": day.isoformat(),
            "pattern_versions": ",".join(f"{p.name}={p.version}" for p in patterns),
            **(metadata or {})}
    names = [p.name for p in patterns]
    predicate = f"batch_date = '{day.isoformat()}' AND {T.sql_in('pattern', names)}"
    day_filter = [("batch_date", "=", day), ("pattern", "in", names)]
    g_path = T.table_path(lake_root, T.GROUPS)
    s_path = T.table_path(lake_root, T.STATES)
    wrote_groups = T.replace_rows(g_path, groups, predicate,
                                  T.read_rows(g_path, T.GROUP_SCHEMA, day_filter), meta)
    wrote_states = T.replace_rows(s_path, new_states, predicate,
                                  T.read_rows(s_path, T.STATE_SCHEMA, day_filter), meta)
    result = DayResult(groups=groups.num_rows,
                       streams=len(set(new_states["stream_id"].to_pylist())),
                       groups_written=wrote_groups, states_written=wrote_states)
    return result, groups, new_states


def split_output(out: pa.Table, day: dt.date, run_id: str, clock: Clock):
    """Spark's mixed output as (group rows, state rows) in the gold schemas."""
    g = out.filter(pc.equal(out["kind"], "group"))
    s = out.filter(pc.equal(out["kind"], "state"))
    n, m = g.num_rows, s.num_rows
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
    }).cast(T.GROUP_SCHEMA)
    states = pa.table({
        "pattern": s["pattern"], "pattern_version": s["pattern_version"],
        "stream_id": s["stream_id"], "batch_date": pa.array([day] * m, pa.date32()),
        "next_t": s["next_t"], "state": s["state"],
        "run_id": pa.array([run_id] * m, pa.string()),
    }).cast(T.STATE_SCHEMA)
    return _ordered(groups), _ordered(states)


def _ordered(table: pa.Table) -> pa.Table:
    keys = [k for k in ("pattern", "stream_id", "t_start", "t_first") if k in table.schema.names]
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys]))


@dataclass(frozen=True)
class AlertChanges:
    added: int
    retracted: int


def publish_alerts(lake_root, patterns: list[RegisteredPattern], day: dt.date,
                   run_id: str) -> AlertChanges:
    """Replace the day's alerts by the day's groups at or above their alert threshold."""
    names = [p.name for p in patterns]
    day_filter = [("batch_date", "=", day), ("pattern", "in", names)]
    groups = T.read_rows(T.table_path(lake_root, T.GROUPS), T.GROUP_SCHEMA, day_filter)
    keep = []
    for p in patterns:
        mine = groups.filter(pc.and_(pc.equal(groups["pattern"], p.name),
                                     pc.greater_equal(groups["probability"],
                                                      p.alert_threshold)))
        keep.append(mine.append_column("alert_threshold",
                                       pa.array([p.alert_threshold] * mine.num_rows,
                                                pa.float64())))
    alerts = pa.concat_tables(keep).cast(T.ALERT_SCHEMA) if keep else \
        T.ALERT_SCHEMA.empty_table()
    a_path = T.table_path(lake_root, T.ALERTS)
    before = T.read_rows(a_path, T.ALERT_SCHEMA, day_filter)
    added = _anti_join(alerts, before)
    retracted = _anti_join(before, alerts)
    predicate = f"batch_date = '{day.isoformat()}' AND {T.sql_in('pattern', names)}"
    meta = {"run_id": run_id, "batch_date": day.isoformat(),
            "added": added.num_rows, "retracted": retracted.num_rows}
    T.replace_rows(a_path, alerts, predicate, before, meta)
    if added.num_rows or retracted.num_rows:
        changes = pa.concat_tables([_change(added, "added", run_id),
                                    _change(retracted, "retracted", run_id)])
        T.append_rows(T.table_path(lake_root, T.ALERT_CHANGES), changes, meta)
    return AlertChanges(added=added.num_rows, retracted=retracted.num_rows)


def _anti_join(a: pa.Table, b: pa.Table) -> pa.Table:
    """Rows of `a` whose group key and probability are not in `b` (null t_first included,
    which an Arrow join would never match)."""
    seen = set(_keys(b))
    mask = pa.array([k not in seen for k in _keys(a)], pa.bool_())
    return a.filter(mask)


def _keys(table: pa.Table):
    columns = [table[c].to_pylist() for c in (*T.GROUP_KEY, "probability")]
    return list(zip(*columns))


def _change(rows: pa.Table, change: str, run_id: str) -> pa.Table:
    n = rows.num_rows
    return pa.table({"change": pa.array([change] * n, pa.string()),
                     "changed_by_run": pa.array([run_id] * n, pa.string()),
                     **{name: rows[name] for name in rows.schema.names}}
                    ).cast(T.ALERT_CHANGE_SCHEMA)


@dataclass(frozen=True)
class RerunDay:
    day: dt.date
    result: DayResult
    alerts: AlertChanges


def processed_days(lake_root, patterns: list[RegisteredPattern], since: dt.date):
    """Days >= since for which some of these patterns have saved states, in order."""
    rows = T.read_rows(T.table_path(lake_root, T.STATES), T.STATE_SCHEMA,
                       filters=[("batch_date", ">=", since),
                                ("pattern", "in", [p.name for p in patterns])])
    return sorted(set(rows["batch_date"].to_pylist()))


def rerun_days(spark, silver_files, lake_root, patterns: list[RegisteredPattern], domain,
               first: dt.date, last: dt.date, run_id: str, clock: Clock,
               metadata: dict | None = None) -> list[RerunDay]:
    """Recompute groups, states and alerts from `first` on, after a fix to first..last.

    Starts from the states saved before `first` and walks every processed day in order;
    past `last` it stops at the first day whose recomputed states equal the stored ones,
    since everything after it would come out the same. `silver_files(day)` gives a day's
    silver as Parquet files.
    """
    days = sorted(set(processed_days(lake_root, patterns, first))
                  | {first + dt.timedelta(d) for d in range((last - first).days + 1)})
    states = previous_states(lake_root, patterns, first)
    s_path = T.table_path(lake_root, T.STATES)
    done = []
    for day in days:
        names = [p.name for p in patterns]
        stored = T.read_rows(s_path, T.STATE_SCHEMA,
                             [("batch_date", "=", day), ("pattern", "in", names)])
        result, _, new_states = group_day(spark, silver_files(day), lake_root, patterns,
                                          domain, day, run_id, clock, metadata, states=states)
        done.append(RerunDay(day, result, publish_alerts(lake_root, patterns, day, run_id)))
        if day > last and T.same_rows(new_states, stored):
            break
        states = new_states
    return done


def read_day_groups(lake_root, patterns: list[RegisteredPattern], day: dt.date) -> pa.Table:
    """The groups stored for these patterns and this day."""
    return T.read_rows(T.table_path(lake_root, T.GROUPS), T.GROUP_SCHEMA,
                       [("batch_date", "=", day), ("pattern", "in", [p.name for p in patterns])])
