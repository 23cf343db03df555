"""
### probcep nightly

One night of the probcep pipeline over the DAG run's data interval (one UTC day):

1. **wait_for_landing**: wait until `<landing_dir>/<YYYY-MM-DD>/` holds csv, jsonl or
   parquet files; fails after 6 hours naming the folder it waited on.
2. **ingest**: landing files into `bronze/readings` (bad rows to `bronze/quarantine`).
3. **normalize**: bronze into `silver/distributions`, validated by the silver
   expectations (the night stops here when they fail).
4. **list_patterns**: the names registered in `patterns.yaml`.
5. **group_day**: one mapped task per registered pattern; each resumes from the engine state
   the previous night saved, so these tasks `depends_on_past` and the DAG runs one day
   at a time: a backfill (`airflow backfill create`) gives the rows the nights would have.
6. **validate_gold**: the day's `gold/groups` against the gold expectations.
7. **publish_alerts**: `gold/alerts` for the day, changes to `gold/alert_changes`.

Each Spark step is `jobs/<task>.py`, the `probcep` verb of the same name, submitted
through the `spark_default` connection (`local[*]` on one machine, `spark://…` on the
cluster). Settings come from `PROBCEP_SETTINGS` (else `./probcep.yaml`, else the
packaged defaults) and `PROBCEP_<KEY>` in the worker's environment.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import dag, task

#: Where `jobs/` lives: the repository root, or PROBCEP_HOME in a deployment.
PROJECT = Path(os.environ.get("PROBCEP_HOME") or Path(__file__).resolve().parents[1])
LANDING_SUFFIXES = (".csv", ".jsonl", ".parquet")
LANDING_TIMEOUT = dt.timedelta(hours=6)

DEFAULT_ARGS = {
    "owner": "probcep",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=5),
    "execution_timeout": dt.timedelta(hours=2),
}


def job(name: str) -> str:
    return str(PROJECT / "jobs" / f"{name}.py")


def spark_job(name: str, **kwargs) -> SparkSubmitOperator:
    """The step `name` (task id and `jobs/<name>.py`) for the run's day."""
    return SparkSubmitOperator(
        task_id=name, application=job(name), conn_id="spark_default",
        name=f"probcep-{name}-{{{{ ds }}}}", application_args=["--date", "{{ ds }}"],
        **kwargs)


@dag(
    dag_id="probcep_nightly",
    schedule="@daily",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["probcep", "nightly"],
    doc_md=__doc__,
)
def probcep_nightly():
    @task.sensor(poke_interval=300, timeout=LANDING_TIMEOUT.total_seconds(),
                 mode="reschedule", retries=0)
    def wait_for_landing(ds=None):
        """Done once the day's landing folder holds at least one data file."""
        from airflow.sdk import PokeReturnValue

        from probcep.config.settings import load_settings

        folder = load_settings().landing_dir / ds
        files = sorted(p.name for p in folder.glob("*") if p.suffix in LANDING_SUFFIXES)
        if not files:
            print(f"no landing files yet in {folder} (waiting up to {LANDING_TIMEOUT})")
        return PokeReturnValue(is_done=bool(files), xcom_value=files)

    @task(retries=0)
    def list_patterns() -> list[str]:
        """The names of the registered patterns (patterns.yaml), sorted."""
        import yaml

        from probcep.config.settings import load_settings

        path = load_settings().registry
        names = sorted((yaml.safe_load(path.read_text()) or {}).get("patterns") or {})
        if not names:
            raise ValueError(f"{path}: no patterns registered")
        return names

    @task(retries=0)
    def group_args(name: str, ds=None) -> list[str]:
        return ["--date", ds, "--pattern", name]

    ingest = spark_job("ingest")
    normalize = spark_job("normalize")
    group_day = SparkSubmitOperator.partial(
        task_id="group_day", application=job("group_day"), conn_id="spark_default",
        name="probcep-group_day", depends_on_past=True,
    ).expand(application_args=group_args.expand(name=list_patterns()))
    validate_gold = spark_job("validate_gold")
    publish_alerts = spark_job("publish_alerts")

    wait_for_landing() >> ingest >> normalize >> group_day >> validate_gold >> publish_alerts


probcep_nightly()
