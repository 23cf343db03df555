"""Load dags/ in a DagBag and write what the tests check to a JSON file.

Run in a fresh interpreter (by conftest.py) with AIRFLOW_HOME pointing at a temporary
folder, so that nothing from the developer's Airflow leaks in and the parse is timed cold.
For a DAG with a schedule it also writes the runs its timetable gives, as the scheduler
computes them (through the serialized DAG), and the day the Spark steps get with
`--date` for those runs: no database is needed for either.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time

HEAVY = ("pyspark", "pandas", "great_expectations", "deltalake", "probcep", "numba")
#: The sample's days (a backfill), when the scheduler looks for the run after the first
#: (just after the second day ended), and when the DAG is unpaused (catchup=False): the
#: morning after the last day.
SAMPLE = (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 3, tzinfo=dt.UTC))
SECOND_NIGHT = dt.datetime(2026, 1, 3, 0, 5, tzinfo=dt.UTC)
UNPAUSED_AT = dt.datetime(2026, 1, 4, 9, 30, tzinfo=dt.UTC)


def describe(dag) -> dict:
    tasks = {}
    for t in dag.tasks:
        tasks[t.task_id] = {
            "type": type(t).__name__,
            "operator": getattr(t, "operator_class", type(t)).__name__
            if not isinstance(getattr(t, "operator_class", None), dict)
            else t.operator_class["task_type"],
            "mapped": type(t).__name__.endswith("MappedOperator"),
            "upstream": sorted(t.upstream_task_ids),
            "depends_on_past": bool(t.depends_on_past),
            "owner": t.owner,
            "retries": t.retries,
            "execution_timeout": t.execution_timeout.total_seconds()
            if t.execution_timeout else None,
            "application": (t.partial_kwargs.get("application") if hasattr(t, "partial_kwargs")
                            else getattr(t, "application", None)),
            "conn_id": (t.partial_kwargs.get("conn_id") if hasattr(t, "partial_kwargs")
                        else getattr(t, "_conn_id", None)),
            "timeout": getattr(t, "timeout", None) if not hasattr(t, "partial_kwargs")
            else t.partial_kwargs.get("timeout"),
            "max_active_tis_per_dagrun": (
                t.partial_kwargs.get("max_active_tis_per_dagrun")
                if hasattr(t, "partial_kwargs") else t.max_active_tis_per_dagrun),
        }
    return {
        "tags": sorted(dag.tags),
        "doc_md": dag.doc_md,
        "schedule": None if dag.schedule is None else str(dag.schedule),
        "max_active_runs": dag.max_active_runs,
        "params": {k: dag.params.get_param(k).schema for k in dag.params},
        "tasks": tasks,
        "timetable": timetable(dag),
    }


def iso(value) -> str | None:
    return None if value is None else value.isoformat()


def run_info(info) -> dict | None:
    """A DagRunInfo as the scheduler would create the run."""
    if info is None:
        return None
    interval = info.data_interval
    return {"logical_date": iso(info.logical_date), "run_after": iso(info.run_after),
            "start": iso(interval and interval.start), "end": iso(interval and interval.end)}


def rendered_day(dag, logical_date, run_after, data_interval=None) -> dict:
    """The `--date` each plain Spark step's arguments render to for a run with this
    logical date (None: triggered without one), given the context keys Airflow gives."""
    from types import SimpleNamespace

    table = dag.timetable
    context = {"dag_run": SimpleNamespace(logical_date=logical_date, run_after=run_after)}
    if logical_date is not None:
        from airflow.serialization.encoders import coerce_to_core_timetable

        interval = coerce_to_core_timetable(table).infer_manual_data_interval(
            run_after=logical_date) if data_interval is None else data_interval
        context.update(logical_date=logical_date, ds=logical_date.strftime("%Y-%m-%d"),
                       data_interval_start=interval.start, data_interval_end=interval.end)
    out = {}
    for t in dag.tasks:
        args = getattr(t, "application_args", None)
        if isinstance(args, list) and "--date" in args:
            rendered = t.render_template(args, context, dag.get_template_env())
            out[t.task_id] = rendered[rendered.index("--date") + 1]
    return out


def timetable(dag) -> dict | None:
    """The runs the DAG's timetable gives: the sample's days (a backfill), the run after
    the first one, the first run when unpaused at UNPAUSED_AT, the intervals Airflow
    infers for manual runs (`dags test D`, `dags trigger` now), and the days rendered."""
    from unittest import mock

    from airflow.serialization.serialized_objects import DagSerialization

    scheduler = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    table = scheduler.timetable
    out = {"type": type(table).__name__, "summary": table.summary,
           "periodic": table.periodic, "catchup": scheduler.catchup}
    if not table.periodic:
        return out
    backfill = list(scheduler.iter_dagrun_infos_between(*SAMPLE))
    out["backfill"] = [run_info(i) for i in backfill]
    out["fortnight"] = [run_info(i) for i in scheduler.iter_dagrun_infos_between(
        SAMPLE[0], SAMPLE[0] + dt.timedelta(days=14))]
    if not backfill:  # a weekly DAG has no run on the sample's days
        return out
    now = "airflow.timetables.interval.utcnow"  # what catchup=False skips to
    with mock.patch(now, return_value=SECOND_NIGHT):
        out["after_first"] = {"at": iso(SECOND_NIGHT), "run": run_info(
            scheduler.next_dagrun_info(last_automated_run_info=backfill[0]))}
    with mock.patch(now, return_value=UNPAUSED_AT):
        out["unpaused"] = {"at": iso(UNPAUSED_AT), "run": run_info(
            scheduler.next_dagrun_info(last_automated_run_info=None))}
    manual = {}
    for name, run_after in (("dags_test_2026-01-01", SAMPLE[0]),
                            ("at_unpause_time", UNPAUSED_AT)):
        interval = table.infer_manual_data_interval(run_after=run_after)
        manual[name] = {"run_after": iso(run_after), "start": iso(interval.start),
                        "end": iso(interval.end)}
    out["manual"] = manual
    out["rendered"] = {
        "scheduled": {i["logical_date"]: rendered_day(dag, b.logical_date, b.run_after,
                                                      b.data_interval)
                      for i, b in zip(out["backfill"], backfill, strict=True)},
        # `airflow dags test probcep_nightly 2026-01-01`: logical date 2026-01-01
        "dags_test_2026-01-01": rendered_day(dag, SAMPLE[0], UNPAUSED_AT),
        "no_logical_date": rendered_day(dag, None, UNPAUSED_AT),
    }
    return out


def main(folder: str, out: str) -> None:
    before = set(sys.modules)
    start = time.perf_counter()
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(folder)
    total = time.perf_counter() - start
    result = {
        "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
        "durations": {s.file: s.duration.total_seconds() for s in bag.dagbag_stats},
        "total_seconds": total,
        "heavy_imported": sorted(m for m in set(sys.modules) - before
                                 if m.split(".")[0] in HEAVY),
        "dags": {dag_id: describe(dag) for dag_id, dag in bag.dags.items()},
    }
    with open(out, "w") as f:
        json.dump(result, f)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
