"""A Spark master Spark would refuse is one line before any JVM starts."""

from __future__ import annotations

import pytest

from probcep.errors import ProbcepError
from probcep.lake.spark import MASTER, spark_session


@pytest.mark.parametrize("master", ["bogus", "local[0]", "local[]", "spark://", "local[2] "])
def test_a_master_spark_would_refuse_is_one_error(master):
    with pytest.raises(ProbcepError, match="is not one Spark takes"):
        spark_session(master)


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]",
                                    "local-cluster[2,1,1024]", "spark://127.0.0.1:7077",
                                    "spark://h1:7077,h2:7077", "yarn", "k8s://https://h:443"])
def test_masters_spark_takes_pass(master):
    assert MASTER.fullmatch(master)


def test_a_standalone_master_nobody_answers_at_is_one_error():
    import socket

    with socket.socket() as free:  # a port no one listens on once it is closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(ProbcepError, match=rf"Spark master spark://127.0.0.1:{port}: cannot "
                                           rf"connect \(127.0.0.1:{port}: .*refused"):
        spark_session(f"spark://127.0.0.1:{port}")  # before a JVM: not after its minute


INTERRUPTED_START = """
import sys
import pyspark.java_gateway as gateway
from probcep.lake.spark import spark_session

popen = gateway.Popen
def started(*args, **kwargs):
    print(popen(*args, **kwargs).pid, flush=True)
    raise KeyboardInterrupt  # where a SIGTERM's Terminated lands while the JVM starts
gateway.Popen = started
try:
    spark_session("local[1]")
except KeyboardInterrupt:
    sys.exit(0)
"""


def test_a_start_interrupted_leaves_no_jvm(tmp_path):
    """The JVM PySpark starts outlived a SIGTERM during its start for good (its gateway
    waits for a Python that is gone; QA, 2026-11-27: orphans of 120 MB each)."""
    import os
    import subprocess
    import sys
    import time

    out = tmp_path / "pid"
    with open(out, "w") as f:  # a file, not a pipe: a JVM left alive would hold a pipe
        subprocess.run([sys.executable, "-c", INTERRUPTED_START], stdout=f,
                       stderr=subprocess.DEVNULL, timeout=120, check=True)
    pid = int(out.read_text())
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


class _Application:
    """What `_watch_executors` asks of a session: executors, jobs, conf, stopped."""

    def __init__(self, executors: list[int], jobs: str):
        self.executors = executors  # counts per poll, the driver's included
        self.jobs = list(jobs)  # per poll: "y" a job is running, "n" none
        self.cancelled = 0
        self.sparkContext = self
        self._jsc = self

    def sc(self):
        return self

    def getConf(self):
        return {}

    def isStopped(self) -> bool:
        return not self.executors

    def getExecutorMemoryStatus(self):
        count = self.executors.pop(0)
        running = [7] if self.jobs.pop(0) == "y" else []
        self.tracker = type("Tracker", (), {"getActiveJobsIds": lambda _: running})()
        return type("Status", (), {"size": lambda _: count})()

    def statusTracker(self):
        return self.tracker

    def cancelAllJobs(self) -> None:
        self.cancelled += 1


@pytest.mark.parametrize("executors, jobs, cancels", [
    ([3, 3, 3, 3, 3, 3], "yyyyyy", 0),  # executors all along
    ([3, 1, 1, 3, 1, 1, 3], "yyyyyyy", 0),  # lost, and back before the wait is over
    ([3, 1, 1, 1, 1, 1], "nnnnnn", 0),  # none, but no job waits for one
    ([3, 1, 1, 1, 1, 1], "yyyyyy", 3),  # none for longer than the wait while a job waits
    ([3, 1, 1, 1, 1, 1, 1], "yynyyyy", 2),  # the wait counts from the job that waits
    ([3, 1, 1, 1, 1, 1, 1], "yyyynyy", 3),  # once lost, a later job is not waited for
])
def test_a_standalone_application_without_executors_has_its_jobs_cancelled(
        monkeypatch, executors, jobs, cancels):
    """Every worker gone mid-run made Spark wait for good, silently (QA, 2026-11-28);
    `tests/pipeline/test_cluster_night.py` kills a real cluster's workers (soak)."""
    import probcep.lake.spark as spark

    class Clock:  # a poll a second; the wait, a second and a half
        now = 0.0

        def monotonic(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds

    monkeypatch.setattr(spark, "time", Clock())
    monkeypatch.setattr(spark, "EXECUTOR_WAIT_SECONDS", 1.5)
    monkeypatch.setattr(spark, "_lost", [])
    application = _Application(executors, jobs)
    with pytest.raises(RuntimeError) if not cancels else \
            pytest.raises(spark.ExecutorsLostError, match="every executor was lost"):
        with spark.executors_lost():  # the command's block, the watchdog beside it
            spark._watch_executors(application, "spark://h:7077")
            raise RuntimeError("Job 7 cancelled as part of cancellation of all jobs")
    assert application.cancelled == cancels
    with pytest.raises(RuntimeError):  # the next command does not inherit the loss
        with spark.executors_lost():
            raise RuntimeError("another error")


def test_the_commands_ctrl_c_handler_outlives_the_spark_context_start(spark, monkeypatch):
    """PySpark's SparkContext takes SIGINT for its own handler, which calls into the JVM
    from inside a py4j call and raises a KeyboardInterrupt py4j logs: some 50 lines of
    traces before a Ctrl-C'd step's one line (QA, 2026-11-28)."""
    import signal

    from pyspark.sql import SparkSession

    start = SparkSession.Builder.getOrCreate

    def pyspark_like(self):
        signal.signal(signal.SIGINT, lambda *a: None)  # as SparkContext._do_init does
        return start(self)

    def ours(signum, frame):
        raise AssertionError("not called")

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", pyspark_like)
    before = signal.signal(signal.SIGINT, ours)
    try:
        assert spark_session("local[2]", "probcep-tests", shuffle_partitions=4) is spark
        assert signal.getsignal(signal.SIGINT) is ours
    finally:
        signal.signal(signal.SIGINT, before)


#: What PySpark raised for `PYSPARK_SUBMIT_ARGS="--driver-memory 64m pyspark-shell"`
#: (QA, 2026-11-28; a Py4JJavaError, some 100 lines with its Java trace).
DRIVER_MEMORY_REFUSED = """An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.
: org.apache.spark.SparkIllegalArgumentException: [INVALID_DRIVER_MEMORY] System memory 67108864 must be at least 471859200.
Please increase heap size using the --driver-memory option or "spark.driver.memory" in Spark configuration. SQLSTATE: F0000
\tat org.apache.spark.memory.UnifiedMemoryManager$.getMaxMemory(UnifiedMemoryManager.scala:473)
"""  # noqa: E501


def test_too_little_driver_memory_is_one_line(monkeypatch):
    from pyspark.sql import SparkSession

    def refuse(self):
        raise RuntimeError(DRIVER_MEMORY_REFUSED)

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", refuse)
    with pytest.raises(ProbcepError) as raised:
        spark_session("local[2]")
    assert str(raised.value) == (
        "Spark did not start: the driver's memory (64 MiB) is below Spark's minimum of "
        "450 MiB (spark-submit's --driver-memory; run directly, "
        "PYSPARK_SUBMIT_ARGS=\"--driver-memory 1g pyspark-shell\")")
