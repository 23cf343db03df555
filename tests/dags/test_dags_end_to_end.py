"""The DAGs run for real: `airflow dags test` on a temporary AIRFLOW_HOME (SQLite) and a
temporary lake, submitting the jobs to local Spark through `spark_default`.

Three nights of the bundled sample day after day (what `airflow backfill create` runs, one
run at a time) must give the gold rows of `probcep run --from … --to …`; then a day is
changed and the rerun DAG must give the rows of `probcep rerun` and report the alert
changes it made. One pattern is registered, to keep the number of Spark submits down.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.dags.conftest import ROOT, airflow_env

pytestmark = pytest.mark.slow
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")
BIN = Path(sys.executable).parent


def run(cmd, env, timeout=600) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=env["AIRFLOW_HOME"])
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    return output


def gold(lake: Path, table: str):
    from deltalake import DeltaTable

    frame = DeltaTable(str(lake / "gold" / table)).to_pandas()
    frame = frame.drop(columns=[c for c in ("run_id",) if c in frame])
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    pytest.importorskip("airflow.providers.apache.spark")
    pytest.importorskip("deltalake")
    base = tmp_path_factory.mktemp("airflow_e2e")
    landing = base / "landing"
    for day in DAYS:
        shutil.copytree(ROOT / "data" / "sample" / "landing" / day, landing / day)
    registry = yaml.safe_load((ROOT / "patterns.yaml").read_text())
    registry["patterns"] = {"room_visit": registry["patterns"]["room_visit"]}
    (base / "patterns.yaml").write_text(yaml.safe_dump(registry))
    (base / "home").mkdir()
    common = {
        "PROBCEP_LANDING_DIR": str(landing),
        "PROBCEP_REGISTRY": str(base / "patterns.yaml"),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    env = airflow_env(base / "home", PROBCEP_LAKE_ROOT=str(base / "lake_airflow"), **common)
    cli_env = {**env, "PROBCEP_LAKE_ROOT": str(base / "lake_cli")}
    run([str(BIN / "airflow"), "db", "migrate"], env)
    return {"base": base, "landing": landing, "env": env, "cli_env": cli_env}


def nightly(world, day: str) -> str:
    out = run([str(BIN / "airflow"), "dags", "test", "probcep_nightly", day], world["env"])
    assert re.search(r"Marking run <DagRun probcep_nightly @ " + day + r".*successful", out), \
        out[-5000:]
    return out


def test_three_nights_through_airflow_give_the_rows_of_probcep_run(world):
    logs = [nightly(world, day) for day in DAYS]
    assert "bronze" in logs[0] and "silver" in logs[0] and "alerts added" in logs[0]
    run([sys.executable, "-m", "probcep.cli", "run", "--from", DAYS[0], "--to", DAYS[-1]],
        world["cli_env"])
    lake, cli = world["base"] / "lake_airflow", world["base"] / "lake_cli"
    groups = gold(lake, "groups")
    assert sorted(groups["batch_date"].astype(str).unique()) == list(DAYS)
    assert set(groups["pattern"]) == {"room_visit"}
    assert len(groups) > 0 and len(gold(lake, "alerts")) > 0
    assert groups.equals(gold(cli, "groups"))
    assert gold(lake, "alerts").equals(gold(cli, "alerts"))
    for table in ("bronze/readings", "bronze/quarantine", "silver/distributions"):
        assert (lake / table / "_delta_log").is_dir(), table


def test_the_rerun_dag_recomputes_a_changed_day_and_reports_alert_changes(world):
    if not (world["base"] / "lake_airflow" / "gold" / "groups").is_dir():
        pytest.fail("needs the nights of the previous test")
    readings = world["landing"] / DAYS[1] / "readings.csv"
    lines = readings.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln.startswith("person-0,") and ",Room," in ln)]
    assert len(kept) < len(lines)
    readings.write_text("".join(kept))

    conf = {"date_from": DAYS[1], "date_to": DAYS[1], "patterns": ["room_visit"],
            "reason": "reader relabelled"}
    out = run([str(BIN / "airflow"), "dags", "test", "probcep_rerun", "-c", json.dumps(conf)],
              world["env"])
    assert re.search(r"Marking run <DagRun probcep_rerun.*successful", out), out[-5000:]
    report = re.search(r"rerun \[([^\]]*)\]: alerts added (\d+), retracted (\d+)", out)
    assert report, out[-5000:]
    added, retracted = int(report[2]), int(report[3])
    assert retracted > 0  # person-0's room visits of that day are gone

    run([sys.executable, "-m", "probcep.cli", "rerun", "--from", DAYS[1], "--to", DAYS[1],
         "--reason", "reader relabelled"], world["cli_env"])
    lake, cli = world["base"] / "lake_airflow", world["base"] / "lake_cli"
    assert gold(lake, "groups").equals(gold(cli, "groups"))
    assert gold(lake, "alerts").equals(gold(cli, "alerts"))
    changes = gold(lake, "alert_changes")
    mine = changes[changes["changed_by_run"].isin(run_ids(report[1]))]
    assert (mine["change"] == "added").sum() == added
    assert (mine["change"] == "retracted").sum() == retracted


def run_ids(text: str) -> list[str]:
    return [r.strip().strip("'\"") for r in text.split(",") if r.strip()]


def test_a_bad_rerun_request_fails_before_any_spark_work(world):
    conf = {"date_from": DAYS[2], "date_to": DAYS[0], "patterns": [], "reason": "backwards"}
    done = subprocess.run([str(BIN / "airflow"), "dags", "test", "probcep_rerun", "-c",
                           json.dumps(conf)], env=world["env"], capture_output=True, text=True,
                          timeout=300, cwd=world["env"]["AIRFLOW_HOME"])
    out = done.stdout + done.stderr
    assert "date_to 2026-01-01 is before date_from 2026-01-03" in out
    assert "Spark-Submit cmd" not in out
