"""dags/: every DAG parses cheaply and has the structure the README describes."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DAG_FILES = sorted(p.name for p in (ROOT / "dags").glob("*.py"))


def test_every_dag_file_imports_without_errors(dagbag):
    assert DAG_FILES == ["probcep_nightly.py", "probcep_rerun.py", "probcep_vacuum.py"]
    assert dagbag["import_errors"] == {}
    assert set(dagbag["dags"]) == {"probcep_nightly", "probcep_rerun", "probcep_vacuum"}


@pytest.mark.parametrize("name", DAG_FILES)
def test_each_dag_file_parses_well_under_a_second(dagbag, name):
    assert dagbag["durations"][name] < 1.0


def test_parsing_imports_no_spark_pandas_gx_delta_or_probcep(dagbag):
    assert dagbag["heavy_imported"] == []


@pytest.mark.parametrize("dag_id", ["probcep_nightly", "probcep_rerun", "probcep_vacuum"])
def test_every_dag_has_docs_tags_owner_retries_and_timeouts(dagbag, dag_id):
    dag = dagbag["dags"][dag_id]
    assert dag["doc_md"] and dag_id.split("_")[1] in dag["doc_md"].lower()
    assert "probcep" in dag["tags"]
    assert dag["max_active_runs"] == 1
    for task_id, task in dag["tasks"].items():
        assert task["owner"] == "probcep", task_id
        assert task["execution_timeout"], task_id
    spark = [t for t in dag["tasks"].values() if t["operator"] == "SparkSubmitOperator"]
    assert bool(spark) == (dag_id != "probcep_vacuum")  # vacuum needs no Spark
    assert all(t["retries"] >= 1 for t in spark)


def test_spark_tasks_submit_jobs_that_exist_through_spark_default(dagbag):
    for dag in dagbag["dags"].values():
        for task_id, task in dag["tasks"].items():
            if task["operator"] != "SparkSubmitOperator":
                continue
            assert task["conn_id"] == "spark_default", task_id
            application = Path(task["application"])
            assert application.parent == ROOT / "jobs", task_id
            assert application.is_file(), f"{task_id}: {application} does not exist"


def test_nightly_runs_the_steps_in_order_with_one_mapped_group_per_pattern(dagbag):
    dag = dagbag["dags"]["probcep_nightly"]
    tasks = dag["tasks"]
    # the run of day D starts after D: see test_timetable.py
    assert dag["timetable"]["type"] == "CronDataIntervalTimetable"
    assert dag["timetable"]["summary"] == "0 0 * * *"
    upstream = {task_id: t["upstream"] for task_id, t in tasks.items()}
    assert upstream == {
        "wait_for_landing": [],
        "ingest": ["list_correlations", "list_patterns", "wait_for_landing"],
        "normalize": ["ingest"],
        "list_patterns": [],
        "group_args": ["list_patterns"],
        "group_day": ["group_args", "normalize"],
        "validate_gold": ["group_day"],
        "publish_alerts": ["validate_gold"],
        "list_correlations": [],
        "correlate_args": ["list_correlations"],
        "correlate_day": ["correlate_args", "validate_gold"],
    }
    assert tasks["group_day"]["mapped"] and tasks["group_args"]["mapped"]
    assert tasks["correlate_day"]["mapped"] and tasks["correlate_args"]["mapped"]
    assert tasks["wait_for_landing"]["timeout"] and tasks["wait_for_landing"]["timeout"] > 0
    steps = ("ingest", "normalize", "group_day", "validate_gold", "publish_alerts",
             "correlate_day")
    assert [Path(tasks[t]["application"]).stem for t in steps] == list(steps)


def test_a_night_runs_at_most_a_few_mapped_spark_applications_at_once(dagbag):
    # a standalone cluster's application holds its cores to its end: one pattern's
    # group_day per core would leave the next without an executor (docker/)
    tasks = dagbag["dags"]["probcep_nightly"]["tasks"]
    for name in ("group_day", "correlate_day"):
        assert tasks[name]["max_active_tis_per_dagrun"] == 2, name
    assert tasks["ingest"]["max_active_tis_per_dagrun"] is None


def test_only_the_group_tasks_depend_on_the_previous_night(dagbag):
    tasks = dagbag["dags"]["probcep_nightly"]["tasks"]
    assert {t for t, task in tasks.items() if task["depends_on_past"]} == {"group_day"}


def test_rerun_is_triggered_by_hand_with_validated_params(dagbag):
    dag = dagbag["dags"]["probcep_rerun"]
    assert dag["schedule"] is None
    params = dag["params"]
    assert set(params) == {"date_from", "date_to", "patterns", "reason"}
    for day in ("date_from", "date_to"):
        assert params[day]["type"] == "string" and params[day]["format"] == "date"
    assert params["patterns"]["type"] == "array"
    assert params["patterns"]["items"]["type"] == "string"
    assert params["reason"]["type"] == "string" and params["reason"]["minLength"] >= 1
    upstream = {task_id: t["upstream"] for task_id, t in dag["tasks"].items()}
    assert upstream == {
        "check_params": [],
        "alert_runs_before": ["check_params"],
        "rerun": ["alert_runs_before", "check_params"],
        "report_alert_changes": ["alert_runs_before", "rerun"],
    }


def test_vacuum_runs_weekly_after_saturdays_night_with_checked_params(dagbag):
    dag = dagbag["dags"]["probcep_vacuum"]
    table = dag["timetable"]
    assert (table["type"], table["summary"]) == ("CronTriggerTimetable", "0 3 * * 0")
    assert table["catchup"] is False
    runs = [r["run_after"] for r in table["fortnight"]]  # 2026-01-01 is a Thursday
    assert runs == ["2026-01-04T03:00:00+00:00", "2026-01-11T03:00:00+00:00"]
    assert {t: task["upstream"] for t, task in dag["tasks"].items()} == {"vacuum": []}
    params = dag["params"]
    assert params["retain_hours"]["type"] == ["null", "integer"]  # null: each table's own
    assert params["retain_hours"]["minimum"] == 0
    assert params["dry_run"]["type"] == "boolean"
