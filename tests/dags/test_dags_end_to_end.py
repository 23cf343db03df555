"""The DAGs run for real: `airflow dags test` on a temporary AIRFLOW_HOME (SQLite) and a
temporary lake, submitting the jobs to local Spark through `spark_default`.

Two nights of the bundled sample, day after day (what `airflow backfill create`
runs, one run at a time), must give the gold rows of `probcep run --from … --to …`; a
visit that crosses the first midnight is added to the sample, so the second night only
finds it by resuming the engine state the first night saved. Then the first day is
changed and the rerun DAG must give the rows of `probcep rerun` (which walks on into the
second day) and report the alert changes it made. One pattern is registered, to keep
the number of Spark submits down.

The DAG runs are one chain (each night needs the one before). The `probcep` reference
runs (on their own copy of the landing folder and their own lake) and the bad-request
DAG run (on a copy of the migrated Airflow home) do not depend on it, so they run beside
it in a background thread: the machine has two cores and each Spark submit keeps about
one of them busy. The JVMs run with the C1 compiler only, which makes the short jobs
start faster and changes nothing they compute.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.dags.conftest import airflow_env

pytestmark = [pytest.mark.slow, pytest.mark.soak]
DAYS = ("2026-01-01", "2026-01-02")  # two nights: the midnight visit spans them
CHANGED = DAYS[0]  # the rerun recomputes it, then walks on into DAYS[1]
BIN = Path(sys.executable).parent
#: The bundled sample and registry, found without importing probcep at collection time.
PACKAGE = Path(__file__).resolve().parents[2] / "src" / "probcep"
SAMPLE = PACKAGE / "demo" / "landing"
REGISTRY = PACKAGE / "config" / "patterns.yaml"
#: A stream seen only around midnight: Door, Room, Room (day 1), Room, Door (day 2).
MIDNIGHT_VISIT = {
    DAYS[0]: [("23:57:10", "Door"), ("23:58:10", "Room"), ("23:59:10", "Room")],
    DAYS[1]: [("00:00:10", "Room"), ("00:01:10", "Door")],
}
MIDNIGHT_STREAM = "person-9"
SPARK_SUBMIT_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


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


def make_landing(landing: Path) -> None:
    """The sample's days, plus the midnight visit of MIDNIGHT_STREAM, each folder closed
    by its `_COMPLETE` marker (written last, as a delivery does: the nightly DAG's sensor
    waits for it, or for the next day's folder)."""
    for day in DAYS:
        shutil.copytree(SAMPLE / day, landing / day)
        with (landing / day / "readings.csv").open("a") as f:
            for clock, symbol in MIDNIGHT_VISIT.get(day, []):
                f.write(f"{MIDNIGHT_STREAM},reader-0,{day}T{clock},{symbol},0.95\n")
        (landing / day / "_COMPLETE").touch()


def change_day(landing: Path) -> int:
    """The data fix: person-0's Room readings of CHANGED are dropped. Lines removed."""
    readings = landing / CHANGED / "readings.csv"
    lines = readings.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln.startswith("person-0,") and ",Room," in ln)]
    readings.write_text("".join(kept))
    return len(lines) - len(kept)


def reference_run(env) -> dict:
    """`probcep run` over DAYS; its gold tables, read before the reference rerun."""
    run([sys.executable, "-m", "probcep", "run", "--from", DAYS[0], "--to", DAYS[-1]],
        env)
    lake = Path(env["PROBCEP_LAKE_ROOT"])
    return {t: gold(lake, t) for t in ("groups", "alerts")}


def reference_rerun(env) -> dict:
    """`probcep rerun` of CHANGED after the same fix, on the reference lake."""
    assert change_day(Path(env["PROBCEP_LANDING_DIR"])) > 0
    out = run([sys.executable, "-m", "probcep", "rerun", "--from", CHANGED, "--to",
               CHANGED, "--reason", "reader relabelled"], env)
    lake = Path(env["PROBCEP_LAKE_ROOT"])
    return {"out": out, **{t: gold(lake, t) for t in ("groups", "alerts")}}


def bad_request(env) -> subprocess.CompletedProcess:
    conf = {"date_from": DAYS[1], "date_to": DAYS[0], "patterns": [], "reason": "backwards"}
    return subprocess.run([str(BIN / "airflow"), "dags", "test", "probcep_rerun", "-c",
                           json.dumps(conf)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=env["AIRFLOW_HOME"])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("airflow_e2e")
    make_landing(base / "landing")
    make_landing(base / "landing_cli")
    registry = yaml.safe_load(REGISTRY.read_text())
    registry["patterns"] = {"room_visit": registry["patterns"]["room_visit"]}
    (base / "patterns.yaml").write_text(yaml.safe_dump(registry))
    (base / "home").mkdir()
    common = {
        "PROBCEP_REGISTRY": str(base / "patterns.yaml"),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "SPARK_SUBMIT_OPTS": SPARK_SUBMIT_OPTS,
    }
    env = airflow_env(base / "home", PROBCEP_LAKE_ROOT=str(base / "lake_airflow"),
                      PROBCEP_LANDING_DIR=str(base / "landing"), **common)
    run([str(BIN / "airflow"), "db", "migrate"], env)
    shutil.copytree(base / "home", base / "home_bad")
    cli_env = {**env, "PROBCEP_LAKE_ROOT": str(base / "lake_cli"),
               "PROBCEP_LANDING_DIR": str(base / "landing_cli")}
    bad_env = airflow_env(base / "home_bad", PROBCEP_LAKE_ROOT=str(base / "lake_bad"),
                          PROBCEP_LANDING_DIR=str(base / "landing_cli"), **common)
    pool = ThreadPoolExecutor(max_workers=1)  # in this order, beside the DAG runs
    background = {"run": pool.submit(reference_run, cli_env),
                  "rerun": pool.submit(reference_rerun, cli_env),
                  "bad": pool.submit(bad_request, bad_env)}
    yield {"base": base, "landing": base / "landing", "env": env, "background": background}
    pool.shutdown(wait=True, cancel_futures=True)


def nightly(world, day: str) -> str:
    out = run([str(BIN / "airflow"), "dags", "test", "probcep_nightly", day], world["env"])
    assert re.search(r"Marking run <DagRun probcep_nightly @ " + day + r".*successful", out), \
        out[-5000:]
    return out


def test_nights_through_airflow_give_the_rows_of_probcep_run(world):
    logs = [nightly(world, day) for day in DAYS]
    assert "bronze" in logs[0] and "silver" in logs[0] and "alerts added" in logs[0]
    lake = world["base"] / "lake_airflow"
    groups, alerts = gold(lake, "groups"), gold(lake, "alerts")
    assert sorted(groups["batch_date"].astype(str).unique()) == list(DAYS)
    assert set(groups["pattern"]) == {"room_visit"}
    assert len(groups) > 0 and len(alerts) > 0
    # the second night found the visit begun the first night: it resumed that state
    crossing = groups[(groups["stream_id"] == MIDNIGHT_STREAM)
                      & (groups["ts_start"].dt.strftime("%Y-%m-%d") == DAYS[0])
                      & (groups["ts_end"].dt.strftime("%Y-%m-%d") == DAYS[1])]
    assert len(crossing) == 1, groups[groups["stream_id"] == MIDNIGHT_STREAM]
    assert crossing["batch_date"].astype(str).tolist() == [DAYS[1]]
    assert (alerts["stream_id"] == MIDNIGHT_STREAM).any()
    reference = world["background"]["run"].result(timeout=600)
    assert groups.equals(reference["groups"])
    assert alerts.equals(reference["alerts"])
    for table in ("bronze/readings", "bronze/quarantine", "silver/distributions"):
        assert (lake / table / "_delta_log").is_dir(), table


def test_the_rerun_dag_recomputes_a_changed_day_and_reports_alert_changes(world):
    if not (world["base"] / "lake_airflow" / "gold" / "groups").is_dir():
        pytest.fail("needs the nights of the previous test")
    assert change_day(world["landing"]) > 0

    conf = {"date_from": CHANGED, "date_to": CHANGED, "patterns": ["room_visit"],
            "reason": "reader relabelled"}
    out = run([str(BIN / "airflow"), "dags", "test", "probcep_rerun", "-c", json.dumps(conf)],
              world["env"])
    assert re.search(r"Marking run <DagRun probcep_rerun.*successful", out), out[-5000:]
    report = re.search(r"rerun \[([^\]]*)\]: alerts added (\d+), retracted (\d+)", out)
    assert report, out[-5000:]
    added, retracted = int(report[2]), int(report[3])
    assert retracted > 0  # person-0's room visits of that day are gone

    reference = world["background"]["rerun"].result(timeout=600)
    assert "2 days recomputed" in reference["out"]  # the fixed day, then the next one
    lake = world["base"] / "lake_airflow"
    assert gold(lake, "groups").equals(reference["groups"])
    assert gold(lake, "alerts").equals(reference["alerts"])
    changes = gold(lake, "alert_changes")
    mine = changes[changes["changed_by_run"].isin(run_ids(report[1]))]
    assert len(run_ids(report[1])) == 1 and len(mine) == added + retracted
    assert (mine["change"] == "added").sum() == added
    assert (mine["change"] == "retracted").sum() == retracted


def run_ids(text: str) -> list[str]:
    return [r.strip().strip("'\"") for r in text.split(",") if r.strip()]


def test_a_bad_rerun_request_fails_before_any_spark_work(world):
    done = world["background"]["bad"].result(timeout=600)
    out = done.stdout + done.stderr
    assert "date_to 2026-01-01 is before date_from 2026-01-02" in out, out[-5000:]
    assert "Spark-Submit cmd" not in out
    assert not (world["base"] / "lake_bad").exists()
