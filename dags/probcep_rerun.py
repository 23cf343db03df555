"""
### probcep rerun

Recompute days after a data fix (late or corrected files in the landing folders):
re-ingest and re-normalize the fixed days, recompute groups, engine states and alerts
from the states saved before `date_from`, stop once the states agree with the stored
ones again, and report the alerts added and retracted.

Trigger it by hand with the params below (the form checks them; `date_to` must not be
before `date_from`). Leave `patterns` empty for every registered pattern.
Tasks: **check_params** → **alert_runs_before** → **rerun** (`jobs/rerun.py` through
`spark_default`) → **report_alert_changes** (reads `gold/alert_changes` for the rows the
rerun added; its XCom holds the counts and the rerun's id, which a rerun that changed no
alert leaves nowhere but in the `rerun` task's log).

Do not run it while the nightly DAG is grouping: both write the same gold rows.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param, dag, task

PROJECT = Path(os.environ.get("PROBCEP_HOME") or Path(__file__).resolve().parents[1])
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"

#: The longest range `check_params` passes: longer is a backfill, or a mistyped year.
MAX_DAYS = 92

DEFAULT_ARGS = {
    "owner": "probcep",
    "retries": 1,
    "retry_delay": dt.timedelta(minutes=5),
    "execution_timeout": dt.timedelta(hours=4),
}

PARAMS = {
    "date_from": Param(type="string", format="date", pattern=DATE_PATTERN,
                       title="First fixed day", description="YYYY-MM-DD"),
    "date_to": Param(type="string", format="date", pattern=DATE_PATTERN,
                     title="Last fixed day", description="YYYY-MM-DD, not before the first"),
    "patterns": Param([], type="array", items={"type": "string", "minLength": 1},
                      uniqueItems=True, title="Patterns",
                      description="registered pattern names; empty: all"),
    "reason": Param(type="string", minLength=3, maxLength=500, title="Reason",
                    description="why the days are rerun (kept in the Delta commit metadata)"),
}


@dag(
    dag_id="probcep_rerun",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=PARAMS,
    tags=["probcep", "rerun"],
    doc_md=__doc__,
)
def probcep_rerun():
    @task(retries=0)
    def check_params(params=None, dag_run=None) -> list[str]:
        """The rerun job's arguments, after the checks the form cannot make."""
        # Airflow passes keys the form does not declare on unchecked: a mistyped
        # `pattern` would rerun every pattern (QA, 2026-11-27)
        unknown_keys = sorted(set(getattr(dag_run, "conf", None) or {}) - set(PARAMS))
        if unknown_keys:
            raise ValueError(f"unknown param(s) {unknown_keys}; known: {', '.join(PARAMS)}")
        first = dt.date.fromisoformat(params["date_from"])
        last = dt.date.fromisoformat(params["date_to"])
        if last < first:
            raise ValueError(f"date_to {last} is before date_from {first}")
        today = dt.datetime.now(dt.UTC).date()
        if last > today:  # the job would refuse it, after a spark-submit and a retry
            raise ValueError(f"date_to {last} has not begun (today is {today}, UTC)")
        days = (last - first).days + 1
        if days > MAX_DAYS:  # a mistyped year: hours of days of silence, then a retry
            raise ValueError(f"{days} days from {first} to {last}: a rerun after a data fix "
                             f"takes at most {MAX_DAYS}; trigger several, or run "
                             f"`probcep rerun --from {first} --to {last}` by hand")
        from probcep.config.correlations import load_correlations
        from probcep.config.registry import load_registry
        from probcep.config.settings import load_settings
        from probcep.pipeline.landing import data_files

        s = load_settings()  # the registry checked as the job will, for all patterns too
        folder = s.landing_dir / today.isoformat()
        if last == today and not (folder.is_dir() and data_files(folder)):  # as the job
            raise ValueError(f"date_to {last} is today, and its landing folder {folder} "
                             f"holds no data file: the day has not ended, so it is no day "
                             f"of silence yet")  # would, after a spark-submit and a retry
        known = load_registry(s.registry, s.silver_domain)
        load_correlations(s.registry, s.silver_domain, known, s.step)
        patterns = list(params.get("patterns") or [])
        unknown = [p for p in patterns if p not in known]
        if unknown:
            raise ValueError(f"{s.registry}: no pattern(s) {unknown}; known: {sorted(known)}")
        args = ["--from", first.isoformat(), "--to", last.isoformat(),
                "--reason", params["reason"]]
        for name in patterns:
            args += ["--pattern", name]
        return args

    @task(retries=0)
    def alert_runs_before() -> list[str]:
        """The run ids already in gold/alert_changes, to tell this rerun's rows apart."""
        return sorted(_alert_changes()["changed_by_run"].unique().tolist())

    @task(retries=0)
    def report_alert_changes(before: list[str]) -> dict:
        """The alerts the rerun added and retracted (gold/alert_changes)."""
        frame = _alert_changes()
        new = frame[~frame["changed_by_run"].isin(before)
                    & frame["changed_by_run"].str.startswith("rerun")]
        report = {"runs": sorted(new["changed_by_run"].unique().tolist()),
                  "added": int((new["change"] == "added").sum()),
                  "retracted": int((new["change"] == "retracted").sum())}
        print(f"rerun {report['runs'] or '(no alert changes)'}: alerts added "
              f"{report['added']}, retracted {report['retracted']}")
        return report

    job_args = check_params()
    before = alert_runs_before()
    rerun = SparkSubmitOperator(
        task_id="rerun", application=str(PROJECT / "jobs" / "rerun.py"),
        conn_id="spark_default", name="probcep-rerun", application_args=job_args)
    job_args >> before >> rerun >> report_alert_changes(before)


def _alert_changes():
    """gold/alert_changes as a pandas frame (empty when the table does not exist yet)."""
    from probcep.config.settings import load_settings
    from probcep.lake.tables import ALERT_CHANGES

    rows = ALERT_CHANGES.read(load_settings().lake_root)
    return rows.select(["change", "changed_by_run"]).to_pandas()


probcep_rerun()
