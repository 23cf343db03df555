"""
### probcep nightly

One night of the probcep pipeline for one UTC day D, run after D has ended: the timetable
is `CronDataIntervalTimetable("0 0 * * *", UTC)`, so the run of day D has the logical
date D 00:00, the data interval [D 00:00, D+1 00:00) and starts at D+1 00:00 UTC. Every
step gets `--date D`: the UTC day of the run's logical date (a run triggered by hand with
logical date D processes D; one without a logical date, the last day that had ended).

1. **wait_for_landing**: wait until `<landing_dir>/D/` is complete: `D/_COMPLETE` exists
   (whoever delivers the day's files writes it last) or the next day's folder `D+1/`
   does. The day is due complete by D+1 06:00 UTC: the sensor fails then (at once, for
   a late run of a day still incomplete, or a day not begun), naming the folder. A
   complete day without data files goes on to ingest, which takes it as silence or
   refuses it (`missing_day`).
2. **ingest**: landing files into `bronze/readings` (bad rows to `bronze/quarantine`),
   once the registry has been read (a bad one fails the night first).
3. **normalize**: bronze into `silver/distributions`, validated by the silver
   expectations (the night stops here when they fail).
4. **list_patterns**: the names registered in `patterns.yaml`.
5. **group_day**: one mapped task per registered pattern; each resumes from the engine state
   the previous night saved, so these tasks `depends_on_past` and the DAG runs one day
   at a time: a backfill (`airflow backfill create … --max-active-runs 1`) gives the rows
   the nights would have.
6. **validate_gold**: the day's `gold/groups` against the gold expectations.
7. **publish_alerts**: `gold/alerts` for the day, changes to `gold/alert_changes`.
8. **correlate_day**: one mapped task per registered correlation (the registry's
   `correlations:`, listed by **list_correlations**), once the gold groups it joins are
   validated: `gold/correlations` and `gold/correlation_alerts` for the day, reading
   silver's archive at the version pinned when it starts (docs/semantics.md §8).

Unpaused with `catchup=False`, the DAG at once runs the last day that has ended, then one
day each midnight UTC. Each Spark step is `jobs/<task>.py`, the `probcep` verb of the same
name, submitted through the `spark_default` connection (`local[*]` on one machine,
`spark://…` on the cluster). Settings come from `PROBCEP_SETTINGS` (else `./probcep.yaml`,
else the packaged defaults) and `PROBCEP_<KEY>` in the worker's environment.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import CronDataIntervalTimetable, dag, task

#: Where `jobs/` lives: the repository root, or PROBCEP_HOME in a deployment.
PROJECT = Path(os.environ.get("PROBCEP_HOME") or Path(__file__).resolve().parents[1])
#: Written last into `<landing_dir>/<day>/` by whoever delivers the day's files.
COMPLETE_MARKER = "_COMPLETE"
#: How long after the day's end its landing folder may still be incomplete.
LANDING_TIMEOUT = dt.timedelta(hours=6)
#: The run of day D: data interval [D 00:00, D+1 00:00) UTC, started at D+1 00:00 UTC.
NIGHTLY = CronDataIntervalTimetable("0 0 * * *", timezone="UTC")

DEFAULT_ARGS = {
    "owner": "probcep",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=5),
    "execution_timeout": dt.timedelta(hours=2),
}


class LandingError(Exception):
    """A landing folder that will not become a day to ingest."""


def run_day(dag_run) -> str:
    """The day (YYYY-MM-DD, UTC) a DAG run processes: its logical date's day (the start
    of a scheduled run's data interval); without a logical date (a run triggered with
    none), the last day that had ended when the run was due."""
    logical = getattr(dag_run, "logical_date", None)
    if logical is not None:
        return logical.astimezone(dt.UTC).date().isoformat()
    return (dag_run.run_after.astimezone(dt.UTC).date() - dt.timedelta(days=1)).isoformat()


def landing_complete(landing_dir: Path, day: str) -> bool:
    """Whether `<landing_dir>/<day>/` is complete: it holds `_COMPLETE`, or the next
    day's folder exists (deliveries went on to the next day)."""
    following = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
    return ((landing_dir / day / COMPLETE_MARKER).is_file()
            or (landing_dir / following).is_dir())


def landing_deadline(day: str) -> dt.datetime:
    """When the day's folder must be complete: LANDING_TIMEOUT after the day's end."""
    end = dt.datetime.combine(dt.date.fromisoformat(day) + dt.timedelta(days=1), dt.time(),
                              dt.UTC)
    return end + LANDING_TIMEOUT


def check_landing(landing_dir: Path, day: str, now: dt.datetime) -> list[str] | None:
    """The landing sensor's rule: once the day's folder is complete, the names of its data
    files (none: ingest decides, by the `missing_day` setting, whether that is a day of
    silence); None while it may still become complete; LandingError when it is still
    incomplete after the deadline."""
    folder = landing_dir / day
    if dt.date.fromisoformat(day) > now.date():  # a typo's year would hold the DAG's one
        raise LandingError(f"{day} has not begun (today is {now.date()}, UTC)")  # slot 6 h
    if not landing_dir.is_dir():  # a mistyped root would be waited for until the deadline
        raise LandingError(f"{landing_dir}: no such landing folder (landing_dir of the "
                           "settings, or PROBCEP_LANDING_DIR)")
    if not landing_complete(landing_dir, day):
        if now >= landing_deadline(day) and not folder.exists():
            # past its deadline, a day that never got a folder is for ingest to take as
            # silence (or refuse: `missing_day`), as `probcep run` does in a backfill
            return []
        if now >= landing_deadline(day):
            raise LandingError(
                f"{folder} is not complete at {now:%Y-%m-%d %H:%M} UTC, past its deadline "
                f"{landing_deadline(day):%Y-%m-%d %H:%M} UTC: neither {folder / COMPLETE_MARKER}"
                f" nor the next day's folder exists")
        return None
    from probcep.pipeline.landing import data_files, file_format  # ingest's own rules

    if not folder.is_dir():  # complete by the next day's folder: a day of silence
        return []
    return [p.name for p in data_files(folder) if file_format(p)[0] is not None]


#: Mapped Spark steps of one night at once (a pattern's group_day, a correlation's
#: correlate_day): on a standalone cluster each application holds its cores until it
#: ends, and one that gets none gives up after a minute (docker/spark-defaults.conf).
PARALLEL_SPARK_APPS = 2

#: The run's day in templates (`run_day`, a macro of the DAG).
DAY = "{{ run_day(dag_run) }}"


def job(name: str) -> str:
    return str(PROJECT / "jobs" / f"{name}.py")


def spark_job(name: str, **kwargs) -> SparkSubmitOperator:
    """The step `name` (task id and `jobs/<name>.py`) for the run's day."""
    return SparkSubmitOperator(
        task_id=name, application=job(name), conn_id="spark_default",
        name=f"probcep-{name}-{DAY}", application_args=["--date", DAY], **kwargs)


@dag(
    dag_id="probcep_nightly",
    schedule=NIGHTLY,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    user_defined_macros={"run_day": run_day},
    tags=["probcep", "nightly"],
    doc_md=__doc__,
)
def probcep_nightly():
    @task.sensor(poke_interval=300, timeout=LANDING_TIMEOUT.total_seconds(),
                 mode="reschedule", retries=0)
    def wait_for_landing(dag_run=None):
        """Done once the day's landing folder is complete (`_COMPLETE` or the next day's
        folder); fails when it is still incomplete LANDING_TIMEOUT after the day's end."""
        from airflow.sdk import PokeReturnValue

        from probcep.config.settings import load_settings

        day = run_day(dag_run)
        landing_dir = load_settings().landing_dir
        files = check_landing(landing_dir, day, dt.datetime.now(dt.UTC))
        if files is None:
            print(f"{landing_dir / day} not complete yet: waiting for its {COMPLETE_MARKER} "
                  f"or the next day's folder, until {landing_deadline(day):%Y-%m-%d %H:%M} UTC")
        elif not files:
            found = ("is complete, with no file of a format ingest reads" if
                     (landing_dir / day).exists() else "has no landing folder, past its "
                     f"deadline {landing_deadline(day):%Y-%m-%d %H:%M} UTC")
            print(f"{landing_dir / day} {found}: ingest takes it as a day of silence, or "
                  "refuses it (setting missing_day; a file it cannot read is quarantined)")
        return PokeReturnValue(is_done=files is not None, xcom_value=files)

    @task(retries=0)
    def list_patterns() -> list[str]:
        """The names of the registered patterns (patterns.yaml), sorted, checked as the
        steps check them (a bad registry fails here, naming its file and line, not after
        ingest and normalize)."""
        from probcep.config.registry import load_registry
        from probcep.config.settings import load_settings

        s = load_settings()
        return sorted(load_registry(s.registry, s.silver_domain))

    @task(retries=0)
    def group_args(name: str, dag_run=None) -> list[str]:
        return ["--date", run_day(dag_run), "--pattern", name]

    @task(retries=0)
    def list_correlations() -> list[str]:
        """The names of the registered correlations (patterns.yaml), sorted (maybe none),
        checked as `correlate-day` checks them."""
        from probcep.config.correlations import load_correlations
        from probcep.config.registry import load_registry
        from probcep.config.settings import load_settings

        s = load_settings()
        return sorted(load_correlations(s.registry, s.silver_domain,
                                        load_registry(s.registry, s.silver_domain), s.step))

    @task(retries=0)
    def correlate_args(name: str, dag_run=None) -> list[str]:
        return ["--date", run_day(dag_run), "--correlation", name]

    patterns, correlations = list_patterns(), list_correlations()
    ingest = spark_job("ingest")
    normalize = spark_job("normalize")
    group_day = SparkSubmitOperator.partial(
        task_id="group_day", application=job("group_day"), conn_id="spark_default",
        name="probcep-group_day", depends_on_past=True,
        max_active_tis_per_dagrun=PARALLEL_SPARK_APPS,
    ).expand(application_args=group_args.expand(name=patterns))
    validate_gold = spark_job("validate_gold")
    publish_alerts = spark_job("publish_alerts")

    correlate_day = SparkSubmitOperator.partial(
        task_id="correlate_day", application=job("correlate_day"), conn_id="spark_default",
        name="probcep-correlate_day", max_active_tis_per_dagrun=PARALLEL_SPARK_APPS,
    ).expand(application_args=correlate_args.expand(name=correlations))

    # a bad registry fails the night before ingest, not after three tries of each step
    [wait_for_landing(), patterns, correlations] >> ingest
    ingest >> normalize >> group_day >> validate_gold >> publish_alerts
    validate_gold >> correlate_day


probcep_nightly()
