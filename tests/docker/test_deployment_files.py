"""docker/: static checks only (no Docker engine runs here). The files parse, every service
refers to what exists, and paths and environment match what the code reads."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from probcep.config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
AIRFLOW_SERVICES = ("airflow-init", "airflow-apiserver", "airflow-scheduler",
                    "airflow-dag-processor", "airflow-triggerer")
#: PROBCEP_ variables the code reads besides one per setting.
OTHER_PROBCEP_VARS = {"PROBCEP_SETTINGS", "PROBCEP_HOME"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines()]
    return [tuple(ln.split(None, 1)) for ln in lines if ln and not ln.startswith("#")]


def env_pairs(args: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(args))


def dockerfile_env(dockerfile) -> dict[str, str]:
    env = {}
    for instruction, args in dockerfile:
        if instruction == "ENV":
            env.update(env_pairs(args))
    return env


def test_every_service_is_built_from_the_image_or_names_one(compose):
    services = compose["services"]
    assert {"postgres", "spark-master", "spark-worker", *AIRFLOW_SERVICES} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == ROOT, name
            assert (context / build["dockerfile"]).is_file(), name


def test_volumes_and_dependencies_refer_to_what_is_declared(compose):
    declared = set(compose["volumes"])
    services = compose["services"]
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source, _, target = volume.partition(":")
            assert source in declared, f"{name}: volume {source} is not declared"
            assert target.startswith("/"), name
        depends = service.get("depends_on", {})
        assert set(depends) <= set(services), name
    lake_users = [n for n in services if n.startswith(("airflow", "spark"))]
    for name in lake_users:
        assert "lake:/lake" in services[name]["volumes"], f"{name} does not share the lake"


def test_probcep_environment_names_settings_the_code_reads(compose, dockerfile):
    settings = {f"PROBCEP_{f.name.upper()}" for f in dataclasses.fields(Settings)}
    assert {"PROBCEP_LAKE_ROOT", "PROBCEP_LANDING_DIR"} <= settings
    envs = [dockerfile_env(dockerfile)] + [
        s.get("environment", {}) for s in compose["services"].values()]
    seen = set()
    for env in envs:
        for key in env:
            if key.startswith("PROBCEP_"):
                assert key in settings | OTHER_PROBCEP_VARS, f"{key} is read by nothing"
                seen.add(key)
    assert {"PROBCEP_LAKE_ROOT", "PROBCEP_LANDING_DIR"} <= seen
    for env in envs:
        for key in ("PROBCEP_LAKE_ROOT", "PROBCEP_LANDING_DIR"):
            if key in env:
                assert env[key] in ("/lake", "/landing")


def test_the_spark_connection_points_at_the_master_service(compose, monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    services = compose["services"]
    for name in AIRFLOW_SERVICES:
        env = services[name]["environment"]
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/probcep/dags"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].split("@")[1].startswith("postgres:")
    conn = services["airflow-scheduler"]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"]
    json.loads(conn)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", conn)
    master = SparkSubmitHook(conn_id="spark_default")._connection["master"]
    assert master == "spark://spark-master:7077"
    master_cmd = services["spark-master"]["command"]
    assert master_cmd[master_cmd.index("--host") + 1] == "spark-master"
    assert master_cmd[master_cmd.index("--port") + 1] == "7077"
    assert master in services["spark-worker"]["command"]


def test_dockerfile_copies_paths_that_exist_and_sets_what_the_dags_need(dockerfile):
    copies = [args.split() for instruction, args in dockerfile if instruction == "COPY"]
    assert copies
    for args in copies:
        for source in args[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: no such path"
    copied = {source.rstrip("/") for args in copies for source in args[:-1]}
    assert {"jobs", "dags", "src", "expectations"} <= copied
    installs = [args for instruction, args in dockerfile
                if instruction == "RUN" and "pip install" in args]
    assert any('".[lake,airflow]"' in args for args in installs)
    assert not any(" -e " in f" {args} " for args in installs)  # a wheel, not the checkout
    env = dockerfile_env(dockerfile)
    assert env["PROBCEP_HOME"] == "/opt/probcep"  # the DAGs find jobs/ under it
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == env["PROBCEP_HOME"] + "/dags"
    assert env["PYSPARK_PYTHON"].startswith(env["VIRTUAL_ENV"])
    assert dict(dockerfile)["FROM"].startswith("python:3.11")
    run = " ".join(args for instruction, args in dockerfile if instruction == "RUN")
    assert "openjdk-17" in run
    # Delta's jars with their dependencies, for the Spark that PySpark is
    assert "spark.jars.packages" in run
    assert "io.delta:delta-spark_${SPARK_MINOR}_${SCALA_BINARY}:${DELTA_VERSION}" in run
    assert "pyspark.__version__" in run and "spark.jars $(ls /opt/delta-jars/" in run
    assert "format('delta').save(" in run  # proved at build time


def test_pip_installs_the_project_and_pinned_extras_only(dockerfile):
    # the image resolves what constraints.txt resolves for CI, plus pinned drivers; a
    # package pinning a dependency against constraints.txt makes the build impossible
    # (delta-spark 4.4.1: importlib_metadata <= 8.7.1 against 10.2.0)
    pins = {line.split("==")[0].lower().replace("_", "-") for line in
            (ROOT / "constraints.txt").read_text().splitlines() if "==" in line}
    installs = [shlex.split(args) for instruction, args in dockerfile
                if instruction == "RUN" and "-c constraints.txt" in args]
    assert len(installs) == 1
    words = installs[0]
    requirements = words[words.index("constraints.txt") + 1:]
    assert requirements[0] == ".[lake,airflow]"
    for requirement in requirements[1:]:
        name, _, version = requirement.partition("==")
        assert version, f"{requirement}: not pinned"
        assert name.lower() not in pins, f"{name}: pinned twice"
        assert name.lower() != "delta-spark"


def test_the_clusters_cores_hold_live_mode_and_a_nights_parallel_steps(compose):
    conf = dict(line.split(None, 1) for line in (DOCKER / "spark-defaults.conf").read_text()
                .splitlines() if line.strip() and not line.startswith("#"))
    services = compose["services"]
    worker = services["spark-worker"]
    cores = int(worker["environment"]["SPARK_WORKER_CORES"])
    total = cores * worker["deploy"]["replicas"]
    per_app = int(conf["spark.cores.max"])
    assert int(conf["spark.executor.cores"]) <= cores
    live = services["probcep-live"]["environment"]["PYSPARK_SUBMIT_ARGS"].split()
    assert live[-1] == "pyspark-shell"
    live_cores = int(dict(c.split("=") for c in live[1:-1:2])["spark.cores.max"])
    nightly = (ROOT / "dags" / "probcep_nightly.py").read_text()
    parallel = int(re.search(r"^PARALLEL_SPARK_APPS = (\d+)$", nightly, re.M).group(1))
    # live mode's cores and the first parallel steps' leave the last a core at least
    assert live_cores + (parallel - 1) * per_app + 1 <= total


def test_live_mode_runs_probcep_itself_so_a_stop_reaches_its_handler(compose):
    live = compose["services"]["probcep-live"]
    assert live["command"][:2] == ["probcep", "live"]
    assert live["command"][live["command"].index("--master") + 1] == "spark://spark-master:7077"
    minutes = re.fullmatch(r"(\d+)m", live["stop_grace_period"])
    assert minutes and int(minutes.group(1)) >= 2


def test_airflow_services_share_keys_and_task_logs(compose):
    from cryptography.fernet import Fernet

    services = compose["services"]
    env = services["airflow-scheduler"]["environment"]
    Fernet(env["AIRFLOW__CORE__FERNET_KEY"])  # a valid key, or Airflow refuses it
    for name in AIRFLOW_SERVICES:
        other = services[name]["environment"]
        for key in ("AIRFLOW__API__SECRET_KEY", "AIRFLOW__CORE__FERNET_KEY",
                    "AIRFLOW__API_AUTH__JWT_SECRET"):
            assert other[key] == env[key], (name, key)
        if name != "airflow-init":
            assert "airflow-logs:/opt/airflow/logs" in services[name]["volumes"], name


def test_spark_defaults_turn_on_delta(dockerfile):
    conf = dict(line.split(None, 1) for line in (DOCKER / "spark-defaults.conf").read_text()
                .splitlines() if line.strip() and not line.startswith("#"))
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == \
        "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert dockerfile_env(dockerfile)["SPARK_CONF_DIR"] == "/opt/spark-conf"
