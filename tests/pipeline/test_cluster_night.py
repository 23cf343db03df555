"""A night on a real Spark cluster: a standalone master and two workers on 127.0.0.1,
started from the installed pyspark, give exactly the tables of `local[2]`.

The workers are started with this test's environment, so the executors' Python workers
import probcep from the same sources (PYTHONPATH) and run the same interpreter
(PYSPARK_PYTHON, set by `probcep.lake.spark`). The nights run as `probcep run`
subprocesses: the test process has its own local session already."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from probcep.demo.sample import generate_landing
from probcep.lake.delta import STAGING
from probcep.lake.tables import CATALOG, RUN_COLUMNS, same_rows

pytestmark = [pytest.mark.slow, pytest.mark.soak]
ROOT = Path(__file__).resolve().parents[2]
DAY = "2026-01-01"
START_SECONDS = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment() -> dict[str, str]:
    import pyspark

    home = str(Path(pyspark.__file__).parent)
    source = str(ROOT / "src")
    paths = [source, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, "SPARK_HOME": home, "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "SPARK_LOCAL_IP": "127.0.0.1"}


@dataclass(frozen=True)
class Cluster:
    url: str  # spark://127.0.0.1:<port>
    ui: str  # the master's web UI, whose /json/ lists workers and applications
    workers: list  # their processes, each leading a process group with its executors


@contextmanager
def standalone_cluster(tmp_path: Path, workers: int = 2):
    """A master with `workers` one-core, 1 GiB workers (their logs and work folders under
    `tmp_path`); stopped afterwards, whatever happened."""
    env = environment()
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    procs = []

    def start(name, *args):
        out = open(logs / f"{name}.log", "w")
        procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", str(ui))
        for k in range(workers):
            start(f"worker{k}", "org.apache.spark.deploy.worker.Worker", url,
                  "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                  "--webui-port", str(free_port()), "--work-dir", str(tmp_path / f"work{k}"))
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    if json.load(r).get("aliveworkers", 0) >= workers:
                        break
            except OSError:
                pass
            dead = [p.args[1] for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not start ({dead or 'timeout'}): "
                            + " | ".join((logs / f).read_text()[-800:]
                                         for f in sorted(os.listdir(logs))))
            time.sleep(1)
        yield Cluster(url, f"http://127.0.0.1:{ui}", procs[1:])
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def cluster(tmp_path):
    with standalone_cluster(tmp_path) as running:
        yield running.url


def night(master: str, lake: Path, landing: Path) -> None:
    env = {**environment(), "PROBCEP_LANDING_DIR": str(landing),
           # executors of at most 512 MiB on the 1 GiB workers
           "PYSPARK_SUBMIT_ARGS": "--conf spark.executor.memory=512m pyspark-shell"}
    done = subprocess.run([sys.executable, "-m", "probcep", "run", "--date", DAY,
                           "--master", master, "--lake", str(lake)],
                          cwd=lake.parent, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    """One day's landing files, shared: the lakes keep the files' paths."""
    return generate_landing(tmp_path_factory.mktemp("cluster") / "landing", days=1,
                            streams=2, sensors=1)


@pytest.fixture(scope="module")
def local_lake(landing) -> Path:
    """The night of `landing` on `local[2]`, the tables the others must equal."""
    lake = landing.parent / "local"
    night("local[2]", lake, landing)
    return lake


def test_a_night_on_a_standalone_cluster_gives_the_tables_of_local(landing, local_lake,
                                                                    cluster, tmp_path):
    night(cluster, tmp_path / "on-cluster", landing)
    for table in CATALOG:
        here, there = (table.read(local_lake) if table.exists(local_lake)
                       else None), (table.read(tmp_path / "on-cluster")
                                    if table.exists(tmp_path / "on-cluster") else None)
        assert (here is None) == (there is None), table.name
        if here is not None:
            assert here.num_rows or table.name.startswith("gold/alert"), table.name
            assert same_rows(here, there, ignore=(*RUN_COLUMNS, "changed_by_run")), table.name


#: `probcep` with a short wait for executors (`probcep.lake.spark.EXECUTOR_WAIT_SECONDS`).
IMPATIENT = ("import sys, probcep.lake.spark as spark; spark.EXECUTOR_WAIT_SECONDS = 5; "
             "from probcep.cli import entry; entry(sys.argv[1:])")


def test_a_master_without_workers_and_a_port_not_a_masters_are_one_line(tmp_path):
    """QA, 2026-11-28: a master with no worker free made a night wait for good, printing
    nothing (Spark's one WARN line is below the session's level); a port that answers but
    is no master's (the web UI's, say) ended in a traceback and some 260 lines, exit 1."""
    import http.server
    import threading

    def run(master):
        return subprocess.run([sys.executable, "-c", IMPATIENT, "run", "--date", DAY,
                               "--master", master, "--lake", str(tmp_path / "lake")],
                              env={**environment(), "PROBCEP_LANDING_DIR": str(landing)},
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)

    landing = generate_landing(tmp_path / "landing", days=1, streams=2, sensors=1)
    with standalone_cluster(tmp_path, workers=0) as running:
        url = running.url
        done = run(url)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines()[-1] == (
        f"probcep run: error: Spark master {url}: no executor started within 5 s; are "
        f"workers registered there, with a free core and the memory an executor asks "
        f"(spark.executor.memory 1g)?")
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        done = run(f"spark://127.0.0.1:{web.server_address[1]}")
    finally:
        web.shutdown()
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines()[-1].endswith(
        "is not a Spark master (All masters are unresponsive); is it the master's port "
        "(7077 by default), not its web UI's (8080)?")
    assert "Traceback" not in done.stderr


def test_every_worker_lost_mid_night_is_one_line_and_loses_nothing(tmp_path, landing,
                                                                   local_lake):
    """QA, 2026-11-28: with every worker gone mid-run, Spark waited for new ones for
    good, printing nothing. The night now ends with one line once it has had no executor
    for `EXECUTOR_WAIT_SECONDS` (5 s here), and running it again on `local[2]` gives the
    tables of a night that was never interrupted."""
    lake = tmp_path / "lake"
    env = {**environment(), "PROBCEP_LANDING_DIR": str(landing),
           "PYSPARK_SUBMIT_ARGS": "--conf spark.executor.memory=512m pyspark-shell"}
    with standalone_cluster(tmp_path) as running:
        started = subprocess.Popen([sys.executable, "-c", IMPATIENT, "run", "--date", DAY,
                                    "--master", running.url, "--lake", str(lake)],
                                   env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_SECONDS
        # the executors write the night's first staged files: it has its executors
        while (started.poll() is None and time.monotonic() < deadline
               and not any(lake.glob(f"**/{STAGING}/*"))):
            time.sleep(0.2)
        assert started.poll() is None, "the night ended before its workers could be killed"
        for worker in running.workers:  # a worker and its executors: one process group
            os.killpg(worker.pid, signal.SIGKILL)
        _, err = started.communicate(timeout=600)
    assert started.returncode == 2, err[-3000:]
    assert err.splitlines()[-1] == (
        f"probcep run: error: Spark master {running.url}: every executor was lost and none "
        f"came back within 5 s, so the step's Spark jobs were cancelled; what it committed "
        f"stays, and it can run again once workers are back (are the workers running?)")
    assert "Traceback" not in err
    night("local[2]", lake, landing)
    for table in CATALOG:
        if table.exists(lake) or table.exists(local_lake):
            assert same_rows(table.read(lake), table.read(local_lake),
                             ignore=(*RUN_COLUMNS, "changed_by_run")), table.name
