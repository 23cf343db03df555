"""probcep_vacuum's one task vacuums the settings' lake as `probcep vacuum` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from probcep.errors import ProbcepWarning
from probcep.lake.tables import GROUPS
from tests.dags.conftest import dag_module
from tests.lake.test_vacuum import DAY, data_files, groups

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def vacuum_task(tmp_path_factory):
    """The DAG's `vacuum` task (Airflow configured under a temporary home)."""
    module = dag_module(tmp_path_factory, "probcep_vacuum")
    return module.probcep_vacuum().get_task("vacuum").python_callable


def test_the_task_removes_what_replaced_days_left_and_reports_it(vacuum_task, tmp_path,
                                                                 monkeypatch, capsys):
    lake = tmp_path / "lake"
    for rnd in range(3):
        GROUPS.replace_day(lake, DAY, groups(rnd), {"run_id": f"r{rnd}"}, pattern=["room_visit"])
    path = GROUPS.path(lake)
    before = data_files(path)
    monkeypatch.setenv("PROBCEP_LAKE_ROOT", str(lake))

    with pytest.warns(ProbcepWarning, match="a retention of 0 h"):
        dry = vacuum_task(params={"retain_hours": 0, "dry_run": True})
    assert data_files(path) == before
    assert dry["gold/groups"]["files"] == len(before) - 1  # all but the current file
    assert "gold/groups: would remove" in capsys.readouterr().out

    kept = vacuum_task(params={"retain_hours": None, "dry_run": False})  # the tables' own
    assert kept["gold/groups"]["files"] == 0 and data_files(path) == before

    with pytest.warns(ProbcepWarning):
        done = vacuum_task(params={"retain_hours": 0, "dry_run": False})
    assert done == dry and len(data_files(path)) == 1
    assert GROUPS.read(lake).sort_by("t_start").equals(groups(2))
    assert f"{lake}: removed {len(before) - 1} files" in capsys.readouterr().out


def test_a_mistyped_param_or_a_refusal_fails_the_task_without_a_retry(vacuum_task, tmp_path,
                                                                      monkeypatch):
    """QA, 2026-11-28: `{"dryrun": true}` ran a real vacuum (Airflow passes keys the form
    does not declare on), and "not a lake" was retried ten minutes later."""
    from airflow.sdk.exceptions import AirflowFailException

    lake = tmp_path / "lake"
    GROUPS.replace_day(lake, DAY, groups(0), {"run_id": "r0"}, pattern=["room_visit"])
    GROUPS.replace_day(lake, DAY, groups(1), {"run_id": "r1"}, pattern=["room_visit"])
    before = data_files(GROUPS.path(lake))
    monkeypatch.setenv("PROBCEP_LAKE_ROOT", str(lake))
    run = type("DagRun", (), {"conf": {"dryrun": True, "retain_hours": 0}})()
    with pytest.raises(AirflowFailException, match=r"unknown param\(s\) \['dryrun'\]; known: "
                                                   r"retain_hours, dry_run; nothing vacuumed"):
        vacuum_task(params={"retain_hours": 0, "dry_run": False}, dag_run=run)
    assert data_files(GROUPS.path(lake)) == before

    monkeypatch.setenv("PROBCEP_LAKE_ROOT", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AirflowFailException, match="holds none of the lake's tables"):
        vacuum_task(params={"retain_hours": None, "dry_run": True})
