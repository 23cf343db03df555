"""
### probcep vacuum

Weekly upkeep of the lake: Delta's VACUUM over every table (`probcep vacuum`,
`probcep.lake.vacuum`). Every replaced day leaves its old data files behind (a rerun, a
night replacing what live mode appended, the live state's buckets) and no commit deletes
them; this removes those that no table version of the last `retain_hours` needs. Files
a writer left uncommitted go too once older than the table's retention; a writer's files
not committed yet are younger and stay, so it is safe beside a running night or rerun as
long as the retention is longer than any step runs or any reader keeps an older version
(the default: each table's own, Delta's week unless set).

Runs each Sunday at 03:00 UTC, after Saturday's night has had three hours; no catchup
(a missed week is made up by the next). Trigger it by hand with the params below
(`dry_run` lists what would go and removes nothing). One task, **vacuum**, in the
worker's Python: no Spark. Its log has a line per table and the total; its XCom the
number of files and bytes per table. A param the form does not declare (a mistyped
`dry_run`), a lake not made yet (no table), or any other error `probcep vacuum`
would print as one line fails the task without a retry; an unexpected error is
retried once.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import CronTriggerTimetable, Param, dag, task

WEEKLY = CronTriggerTimetable("0 3 * * 0", timezone="UTC")

PARAMS = {
    "retain_hours": Param(None, type=["null", "integer"], minimum=0, maximum=10**6,
                          title="Retention (hours)",
                          description="keep what table versions this recent need; empty: "
                                      "each table's own retention (a week unless set); "
                                      "under it a reader of an older version may miss "
                                      "its files"),
    "dry_run": Param(False, type="boolean", title="Dry run",
                     description="count what would be removed, remove nothing"),
}


@dag(
    dag_id="probcep_vacuum",
    schedule=WEEKLY,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"owner": "probcep", "retries": 1, "retry_delay": dt.timedelta(minutes=10),
                  "execution_timeout": dt.timedelta(hours=2)},
    params=PARAMS,
    tags=["probcep", "maintenance"],
    doc_md=__doc__,
)
def probcep_vacuum():
    @task
    def vacuum(params=None, dag_run=None) -> dict:
        """`probcep vacuum` over the settings' lake; files and bytes removed per table."""
        from airflow.sdk.exceptions import AirflowFailException

        from probcep.config.settings import load_settings
        from probcep.errors import ProbcepError
        from probcep.lake.vacuum import report, vacuum_lake
        from probcep.pipeline.context import new_run_id

        # Airflow passes keys the form does not declare on unchecked: a mistyped
        # `dry_run` removed files for real (QA, 2026-11-28)
        unknown = sorted(set(getattr(dag_run, "conf", None) or {}) - set(PARAMS))
        if unknown:
            raise AirflowFailException(f"unknown param(s) {unknown}; known: "
                                       f"{', '.join(PARAMS)}; nothing vacuumed")
        lake = load_settings().lake_root
        hours, dry_run = params["retain_hours"], bool(params["dry_run"])
        try:
            done = vacuum_lake(lake, hours, dry_run, {"run_id": new_run_id("vacuum")})
        except ProbcepError as exc:  # a refusal would refuse again ten minutes later
            raise AirflowFailException(str(exc)) from exc
        print("\n".join(report(lake, done, hours, dry_run)))
        return {t.table: {"files": len(t.files), "bytes": t.bytes} for t in done}

    vacuum()


probcep_vacuum()
