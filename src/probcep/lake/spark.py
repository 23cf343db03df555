"""How probcep starts Spark: local by default, any master by setting it.

Under `spark-submit` the master comes from spark-submit (`master=None` leaves it alone);
run directly, PySpark's default is `local[*]`.

PySpark starts its Python workers with `PYSPARK_PYTHON` (the `spark.pyspark.python`
setting is not read on this path), so it is pointed at this interpreter, whose
environment has probcep and the engine's dependencies.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

from probcep.errors import ProbcepError

#: The master URLs Spark accepts (its SparkContext and spark-submit), checked before a
#: JVM is started for them: `local[0]` or a typo is one line, not a gateway traceback.
MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,\s*([1-9]\d*|\*))?\])?"
                    r"|local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]"
                    r"|spark://\S+|yarn|k8s://\S+|mesos://\S+")


#: How long a standalone master may take to give the application its first executor:
#: with no worker free (none registered, too little memory or too few cores for one
#: executor) Spark waits for good, and says so only in a WARN line the session's ERROR
#: level hides (QA, 2026-11-28: a night printed nothing for minutes).
EXECUTOR_WAIT_SECONDS = 60.0
#: How often a standalone application's executors are counted while it runs.
EXECUTOR_POLL_SECONDS = 1.0

#: Spark's refusal of a driver or executor heap below its minimum (about 450 MiB):
#: `--driver-memory 64m` gave py4j's traceback of some 100 lines (QA, 2026-11-28).
_MEMORY_REFUSED = re.compile(r"\[INVALID_(?P<who>DRIVER|EXECUTOR)_MEMORY\] \w+ memory "
                             r"(?P<has>\d+) must be at least (?P<needs>\d+)")


def _memory_refused(exc: BaseException) -> str | None:
    """One line for Spark refusing to start in too small a heap, else None."""
    found = _MEMORY_REFUSED.search(str(exc))
    if found is None:
        return None
    has, needs = (int(found[k]) / 2**20 for k in ("has", "needs"))
    if found["who"] == "DRIVER":
        return (f"Spark did not start: the driver's memory ({has:.0f} MiB) is below "
                f"Spark's minimum of {needs:.0f} MiB (spark-submit's --driver-memory; run "
                f"directly, PYSPARK_SUBMIT_ARGS=\"--driver-memory 1g pyspark-shell\")")
    return (f"Spark did not start: an executor's memory ({has:.0f} MiB) is below "
            f"Spark's minimum of {needs:.0f} MiB (spark.executor.memory)")


#: Spark's loggers of a task's failure, off (see `spark_session`).
TASK_LOGGERS = ("org.apache.spark.executor.Executor",
                "org.apache.spark.scheduler.TaskSetManager",
                # a write's failed task ("Aborting task") and job ("Job aborted"): a
                # Parquet file broken past its footer is found by ingest's staging write
                "org.apache.spark.util.Utils",
                "org.apache.spark.sql.execution.datasources.FileFormatWriter",
                # "Mkdirs failed to create": the step's own line names the folder
                # (`probcep.lake.failures.refused`)
                "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter")


def spark_session(master: str | None = None, app: str = "probcep",
                  shuffle_partitions: int = 8):
    from pyspark.sql import SparkSession

    if master is not None and not MASTER.fullmatch(master):
        raise ProbcepError(f"Spark master {master!r} is not one Spark takes: local, "
                           f"local[N], local[*], spark://HOST:PORT, yarn or k8s://URL")
    if master is not None and master.startswith("spark://"):
        _reach(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    builder = (builder.appName(app)
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # staged Parquet is read back by delta-rs: plain microsecond timestamps
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"))
    before = _children()
    # PySpark's SparkContext takes Ctrl-C for its own handler (cancel the jobs, raise a
    # KeyboardInterrupt, which py4j logs as an error): the command's handler stays
    ctrl_c = (signal.getsignal(signal.SIGINT)
              if threading.current_thread() is threading.main_thread() else None)
    try:
        session = builder.getOrCreate()
    except BaseException as exc:
        # A JVM started for the session that no SparkContext holds yet is nobody's to
        # stop: a SIGTERM while it started (an Airflow timeout) left it running for good,
        # its gateway waiting for a Python that was gone (QA: 120 MB each)
        for pid in _children() - before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        refused = _memory_refused(exc)
        if refused is not None:
            raise ProbcepError(refused) from None
        if master is not None and master.startswith("spark://") and any(
                said in str(exc) for said in ("masters are unresponsive", "stopped SparkContext")):
            # a port that answers, not as a master: Spark gives up registering after a
            # minute and more, and stops the context its session was making
            raise ProbcepError(f"Spark master {master}: what answers there is not a Spark "
                               f"master (All masters are unresponsive); is it the master's "
                               f"port (7077 by default), not its web UI's (8080)?") from exc
        raise
    if ctrl_c is not None:
        signal.signal(signal.SIGINT, ctrl_c)
    session.sparkContext.setLogLevel("ERROR")
    # A failed task's error reaches the action that ran it, and the step says it: a file
    # set aside as unreadable on a night that succeeds, or the error's line. In the
    # driver's JVM (every task's, under local[N]) Spark's log printed it again first, as
    # some 100 lines of traces. (A cluster's executors log to their own files.)
    jvm = session.sparkContext._jvm
    for name in TASK_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            name, jvm.org.apache.logging.log4j.Level.OFF)
    master = session.sparkContext.master  # under spark-submit, the one it was given
    if master.startswith("spark://"):
        _await_executor(session, master)
        threading.Thread(target=_watch_executors, args=(session, master), daemon=True,
                         name="probcep-executors").start()
    return session


def _await_executor(session, master: str) -> None:
    """ProbcepError, the session stopped, when the standalone master gives no executor
    within `EXECUTOR_WAIT_SECONDS` (with dynamic allocation none is due before a job)."""
    conf = session.sparkContext.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return
    context = session.sparkContext._jsc.sc()
    deadline = time.monotonic() + EXECUTOR_WAIT_SECONDS
    while context.getExecutorMemoryStatus().size() < 2:  # the driver's is one
        if time.monotonic() > deadline:
            memory = conf.get("spark.executor.memory", "1g")
            session.stop()
            raise ProbcepError(
                f"Spark master {master}: no executor started within "
                f"{EXECUTOR_WAIT_SECONDS:.0f} s; are workers registered there, with a free "
                f"core and the memory an executor asks (spark.executor.memory {memory})?")
        time.sleep(0.5)


class ExecutorsLostError(ProbcepError):
    """Every executor of a standalone application was lost and none came back."""


#: Why the watchdog cancelled this process's Spark jobs, once it has (`_watch_executors`).
_lost: list[str] = []


def _watch_executors(session, master: str) -> None:
    """Cancel the application's jobs once a job has waited `EXECUTOR_WAIT_SECONDS` with
    no executor to run on: when every worker of a standalone cluster goes, Spark waits
    for new ones for good, and says so only in a WARN line (`executors_lost` gives the
    step its error). Ends with the session."""
    sc = session.sparkContext
    context = sc._jsc.sc()
    if sc.getConf().get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return
    since = None  # since when a job has waited with no executor
    try:
        while not context.isStopped():
            if (context.getExecutorMemoryStatus().size() >= 2  # the driver's is one
                    or not sc.statusTracker().getActiveJobsIds()):
                since = None
            else:
                since = time.monotonic() if since is None else since
            # once the loss is declared, a job the step starts after it is not waited for
            if since is not None and (_lost or time.monotonic() - since > EXECUTOR_WAIT_SECONDS):
                if not _lost:
                    _lost.append(
                        f"Spark master {master}: every executor was lost and none came back "
                        f"within {EXECUTOR_WAIT_SECONDS:.0f} s, so the step's Spark jobs "
                        f"were cancelled; what it committed stays, and it can run again "
                        f"once workers are back (are the workers running?)")
                sc.cancelAllJobs()
            time.sleep(EXECUTOR_POLL_SECONDS)
    except Exception:  # the session stopped, or the JVM went, under a call: nothing to watch
        return


@contextlib.contextmanager
def executors_lost():
    """Run the block; an error once the watchdog has cancelled this process's Spark jobs
    (`_watch_executors`) becomes its one line (a loss before the block is forgotten)."""
    _lost.clear()
    try:
        yield
    except ExecutorsLostError:
        raise
    except Exception as exc:
        if not _lost:
            raise
        raise ExecutorsLostError(_lost[0]) from exc


def _children() -> set[int]:
    """The pids of the processes this thread started (Linux; none known elsewhere)."""
    try:
        listed = Path(f"/proc/self/task/{threading.get_native_id()}/children").read_text()
    except OSError:
        return set()
    return {int(pid) for pid in listed.split()}


def _reach(master: str, timeout: float = 5.0) -> None:
    """A standalone master no host of which answers is one error now: Spark would start,
    retry registering for a minute and then fail the first job with a traceback."""
    import socket

    tried = []
    for place in master.removeprefix("spark://").split(","):
        host, _, port = place.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            tried.append(f"{place}: {exc}")
    raise ProbcepError(f"Spark master {master}: cannot connect ({'; '.join(tried)}); is the "
                       f"master running there?")


def literal(path) -> str:
    """`path` as Spark's file sources read it by name: they expand `*`, `?`, `[...]` and
    `{a,b}` like a shell, so a landing file named `a[1].csv` would read `a1.csv` instead
    (and `b*.csv` every b file); a backslash escapes each of them for Hadoop's glob."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", str(path))


def column_sum(columns):
    """The sum of `columns` (doubles) added in their order, as one flat expression: a
    chain of `+` one level per column overflowed the JVM's stack in Spark's analyzer
    at a domain of 300 symbols."""
    from pyspark.sql import functions as F

    return F.aggregate(F.array(*columns), F.lit(0.0), lambda total, x: total + x)
