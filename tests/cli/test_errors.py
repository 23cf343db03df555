"""Every expected failure of a `probcep` verb or a `jobs/` entry point ends with one line
on stderr naming what and where, and exit code 2; a bug keeps its traceback (exit 1).

Some cases run as real processes, as spark-submit and Airflow run them (started at
once, to keep the suite short); the rest call `probcep.cli.main` in the test's process.
None starts Spark: each refusal comes before it.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from probcep.cli import RAISE_AGAIN_SECONDS, main
from probcep.config import settings
from probcep.errors import DiskFullError, RefusedError
from probcep.lake.failures import refused, writing
from probcep.lake.tables import ALERT_CHANGES, ALERTS, GROUPS, UTC_MICROS

ROOT = Path(__file__).resolve().parents[2]
DAY = dt.date(2026, 1, 2)
REGISTRY = Path(settings.__file__).with_name("patterns.yaml")
STREAMS = pd.DataFrame({"stream_id": ["s1"] * 3, "t": [1, 2, 3], "a": [0.5, 0.2, 1.0],
                        "b": [0.5, 0.8, 0.0]})
EVENTS = pd.DataFrame({"stream_id": ["s1", "s1"], "tag": [1, 2], "symbol": ["a", "b"]})


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def truncated_parquet(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_parquet(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])  # a copy cut short: no footer
    return path


def undecodable_csv(frame: pd.DataFrame, path: Path) -> Path:
    text = frame.to_csv(index=False).encode()
    path.write_bytes(text.replace(b"s1", b"\xff\xfe", 1))  # not UTF-8
    return path


# --- real processes -----------------------------------------------------------------

CLOSED = object()  # a case's stdout: a pipe nobody reads
BUG = """
import sys
import probcep.cli.group as group

def run(args):  # a bug in a verb
    return {}["missing"]

group.run = run
from probcep.cli import main
sys.exit(main(["group", sys.argv[1], "--pattern", "a", "--policy", "single"]))
"""


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    """The real-process cases, started at once: name -> (exit code, stdout, stderr)."""
    tmp = tmp_path_factory.mktemp("processes")
    landing = tmp / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    (landing / "_COMPLETE").touch()  # a marker, no readings (other files are quarantined)
    STREAMS.to_csv(tmp / "streams.csv", index=False)
    (tmp / "lake-file").write_text("a file where the lake should be")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBCEP_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    refuse = {**env, "PROBCEP_LANDING_DIR": str(tmp / "landing"),
              "PROBCEP_MISSING_DAY": "refuse"}
    broken = tmp / "landing-broken" / DAY.isoformat()  # a good and a broken Parquet file
    broken.mkdir(parents=True)
    good = pd.DataFrame({"stream_id": ["p"] * 40, "symbol": ["Door"] * 40, "score": 0.5,
                         "ts": pd.date_range(DAY.isoformat(), periods=40, freq="min")})
    good.to_parquet(broken / "good.parquet")
    whole = (broken / "good.parquet").read_bytes()
    (broken / "broken.parquet").write_bytes(whole[:4] + b"\xff" * 24 + whole[28:])
    python = [sys.executable]
    cases = {
        "broken parquet, ingest": (python + ["-m", "probcep", "ingest", "--date",
                                             DAY.isoformat(), "--lake", tmp / "lake-broken"],
                                   {**env, "PROBCEP_LANDING_DIR": str(tmp / "landing-broken"),
                                    "PROBCEP_SPARK_MASTER": "local[1]"}, None),
        "no landing files": (python + ["-m", "probcep", "ingest", "--date", DAY.isoformat(),
                                       "--lake", tmp / "lake"], refuse, None),
        "full disk": (python + ["-m", "probcep", "group", tmp / "streams.csv", "--pattern",
                                "a", "--policy", "single"], env, "/dev/full"),
        "unwritable lake": (python + [ROOT / "jobs" / "group_day.py", "--date",
                                      DAY.isoformat(), "--lake", tmp / "lake-file"], env, None),
        "bug": (python + ["-c", BUG, tmp / "streams.csv"], env, None),
        # the reader of the output has gone before the first line (`| head -0`)
        "closed pipe, group": (python + ["-m", "probcep", "group", tmp / "streams.csv",
                                         "--pattern", "a", "--policy", "single"], env, CLOSED),
        "closed pipe, correlate": (python + [
            "-m", "probcep", "correlate", "--live-pattern", "a", "--policy", "single",
            "--archive-pattern", "b", "--lookback", "2", tmp / "streams.csv"], env, CLOSED),
    }
    started = {}
    for name, (argv, environ, stdout) in cases.items():
        out = open(stdout, "w") if stdout not in (None, CLOSED) else subprocess.PIPE  # noqa: SIM115
        started[name] = child = subprocess.Popen(
            [str(a) for a in argv], cwd=tmp, env=environ, stdout=out, stderr=subprocess.PIPE,
            text=True)
        if stdout is CLOSED:
            child.stdout.close()
            child.stdout = None
    results = {}
    for name, child in started.items():
        out, err = child.communicate(timeout=300)  # the ingest starts Spark and GX
        results[name] = (child.returncode, out, err)
    return tmp, results


@pytest.mark.parametrize("case,message", [
    ("no landing files", "probcep ingest: error: no landing files for 2026-01-02 in {tmp}/"
                         "landing/2026-01-02 (expected .csv, .json, .jsonl, .ndjson, .parquet)"),
    ("full disk", "probcep group: error: no space left on device writing <stdout>"),
    ("unwritable lake", "probcep group-day: error: cannot write the lake root: {tmp}/lake-file "
                        "is a file, not a folder; checked before any work, nothing was done"),
])
def test_a_process_ends_with_one_line_and_exit_code_2(processes, case, message):
    tmp, results = processes
    code, _, err = results[case]
    assert code == 2, err
    assert one_line(err).startswith(message.format(tmp=tmp))


@pytest.mark.parametrize("case", ["closed pipe, group", "closed pipe, correlate"])
def test_a_closed_output_pipe_ends_quietly(processes, case):
    code, _, err = processes[1][case]
    assert (code, err) == (0, "")


def test_a_file_set_aside_by_the_staging_write_is_said_by_the_step_alone(processes):
    """A Parquet file broken past its footer is found by ingest's staging write: the
    night succeeds, quarantining it, and Spark's log does not print the write's failed
    task and job (QA, 2026-11-27: 546 lines of ERROR traces)."""
    code, out, err = processes[1]["broken parquet, ingest"]
    assert code == 0, err
    assert "quarantine 1 (unreadable file: broken or truncated file: 1)" in out
    assert " ERROR " not in err and "\tat org.apache" not in err, err


def test_a_bug_in_a_process_keeps_its_traceback_and_exit_code_1(processes):
    code, _, err = processes[1]["bug"]
    assert code == 1
    assert err.startswith("Traceback (most recent call last):")
    assert err.rstrip().endswith("KeyError: 'missing'")


def test_a_bug_in_process_is_not_swallowed(monkeypatch, tmp_path):
    import probcep.cli.group as group

    def run(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(group, "run", run)
    with pytest.raises(ZeroDivisionError):
        main(["group", str(tmp_path / "x.csv"), "--pattern", "a", "--policy", "single"])


# --- unreadable input files -------------------------------------------------------------

@pytest.mark.parametrize("verb,frame,options", [
    ("group", STREAMS, ["--pattern", "a b", "--policy", "single"]),
    ("approx", EVENTS, ["--pattern", "a b", "--max-errors", "0", "--window", "3"]),
])
@pytest.mark.parametrize("spoil,says", [
    (truncated_parquet, "cannot read as parquet: "),
    (undecodable_csv, "line 2: bytes that are not UTF-8 text"),  # the row of s1
])
def test_an_unreadable_file_is_named(tmp_path, capsys, verb, frame, options, spoil, says):
    path = spoil(frame, tmp_path / ("in.parquet" if spoil is truncated_parquet else "in.csv"))
    code, out, err = cli(capsys, verb, path, *options)
    assert code == 2 and out == ""
    assert one_line(err).startswith(f"probcep {verb}: error: {path}: {says}")


# --- t outside int64 ----------------------------------------------------------------------

MAX, MIN = 2 ** 63 - 1, -(2 ** 63)


@pytest.mark.parametrize("t", [MAX + 1, MIN - 1, 10 ** 20, "1e300"])
def test_t_outside_int64_is_refused(tmp_path, capsys, t):
    path = tmp_path / "far.csv"
    path.write_text(f"stream_id,t,a,b\ns1,{t},0.5,0.5\n")
    code, out, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single")
    assert code == 2 and out == ""
    shown = "1e+300" if t == "1e300" else t
    assert one_line(err) == (f"probcep group: error: {path}: stream 's1': t={shown} is "
                             f"outside the 64-bit integer range")


@pytest.mark.parametrize("tag", [MAX + 1, MIN - 1])
def test_a_tag_outside_int64_is_refused(tmp_path, capsys, tag):
    path = tmp_path / "far.csv"
    path.write_text(f"stream_id,tag,symbol\ns1,1,a\ns1,{tag},b\n")
    code, out, err = cli(capsys, "approx", path, "--pattern", "a", "--max-errors", "0",
                         "--window", "3")
    assert code == 2 and out == ""
    assert one_line(err).endswith(f"{path}: line 3: tag {tag} is outside the 64-bit integer "
                                  f"range")


def test_the_ends_of_int64_are_times_like_any_other(tmp_path, capsys):
    import json

    path = tmp_path / "ends.csv"
    path.write_text(f"stream_id,t,a,b\nlo,{MIN},1.0,0.0\nlo,{MIN + 1},0.0,1.0\n"
                    f"hi,{MAX - 1},1.0,0.0\nhi,{MAX},0.0,1.0\n")
    code, out, err = cli(capsys, "group", path, "--pattern", "a b", "--policy", "single")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["stream_id"], r["t_start"], r["t_end"]) for r in rows] == [
        ("hi", MAX - 1, MAX), ("lo", MIN, MIN + 1)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_t_does_not_wrap_from_the_top_of_int64_to_its_bottom(tmp_path, capsys, suffix):
    path = tmp_path / f"wrap{suffix}"
    frame = pd.DataFrame({"stream_id": ["w", "w"], "t": [MAX, MIN], "a": [1.0, 0.0],
                          "b": [0.0, 1.0]})
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    code, out, err = cli(capsys, "group", path, "--pattern", "a b", "--policy", "single")
    assert (code, out) == (2, "")
    assert one_line(err) == (f"probcep group: error: {path}: stream 'w': gap in t after "
                             f"t={MIN} (next is t={MAX})")


# --- a full disk ----------------------------------------------------------------------------

def test_a_full_output_file_is_named(tmp_path, capsys):
    path = tmp_path / "streams.csv"
    STREAMS.to_csv(path, index=False)
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                       "-o", "/dev/full")  # every write to it fails with ENOSPC
    assert code == 2
    assert one_line(err) == "probcep group: error: no space left on device writing /dev/full"


@pytest.mark.parametrize("argv", [
    ["group", "{streams}", "--pattern", "a", "--policy", "single", "-o", "{out}"],
    ["group", "{streams}", "--pattern", "a", "--policy", "single", "--save-state", "{out}"],
    ["correlate", "--live-pattern", "a", "--policy", "single", "--archive-pattern", "b",
     "--lookback", "2", "{streams}", "-o", "{out}"],
    ["plot", "--stream", "s1", "--pattern", "a", "{streams}", "-o", "{out}"],
    ["slice", "--stream", "s1", "--start", "2026-01-01", "--end", "2026-01-02", "-o", "{out}"],
    ["evaluate", "--episodes", "{streams}", "--sweep", "--plot", "{out}"],
])
@pytest.mark.parametrize("where,says", [
    ("missing/out", "cannot write {out}: folder {tmp}/missing does not exist"),
    (".", "cannot write {out}: it is a folder"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, argv,
                                                                     where, says):
    streams = tmp_path / "streams.csv"
    STREAMS.to_csv(streams, index=False)
    out = tmp_path / where
    code, stdout, err = cli(capsys, *[a.format(streams=streams, out=out) for a in argv])
    assert (code, stdout) == (2, "")
    assert one_line(err) == f"probcep {argv[0]}: error: " + says.format(out=out, tmp=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streams.csv"]


def _grouped(lake: Path) -> None:
    """The day grouped for every pattern of the registry, as group-day leaves it."""
    from probcep.lake.tables import STATES
    from probcep.pipeline.context import RunContext
    from probcep.pipeline.group_day import state_rows

    patterns = RunContext.open("group-day", lake=lake, registry=REGISTRY).exact
    GROUPS.replace_day(lake, DAY, _groups_of_the_day(), {"run_id": "night"},
                       pattern=["room_visit"])
    STATES.replace_day(lake, DAY, state_rows(pa.table({
        c: pa.array([], t) for c, t in (("pattern", pa.string()),
                                         ("pattern_version", pa.string()),
                                         ("stream_id", pa.string()), ("next_t", pa.int64()),
                                         ("state", pa.binary()))}), DAY, "night", patterns),
        {"run_id": "night"})


def test_publishing_a_day_never_grouped_is_refused(tmp_path, capsys):
    """Nothing to publish is not "no alerts": a green step there would hide a night
    whose grouping never ran (an out-of-order retry)."""
    lake = tmp_path / "lake"
    code, out, err = cli(capsys, "publish-alerts", "--date", DAY, "--lake", lake,
                         "--registry", REGISTRY, "--pattern", "room_visit")
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"probcep publish-alerts: error: {DAY}: not grouped "
                                    f"for room_visit (version ")
    assert one_line(err).endswith(f"run `probcep group-day --date {DAY}` first")
    assert not ALERTS.exists(lake)
    _grouped(lake)
    assert cli(capsys, "publish-alerts", "--date", DAY, "--lake", lake, "--registry",
               REGISTRY, "--pattern", "room_visit")[0] == 0
    assert ALERTS.read(lake).num_rows == 2


def _groups_of_the_day(n: int = 2) -> pa.Table:
    ts = pa.array([dt.datetime(2026, 1, 2, tzinfo=dt.UTC)] * n, UTC_MICROS)
    t = pa.array(range(n), pa.int64())
    return pa.table({
        "pattern": ["room_visit"] * n, "pattern_version": ["v"] * n,
        "stream_id": [f"s{i}" for i in range(n)], "t_start": t, "t_first": t, "t_end": t,
        "ts_start": ts, "ts_first": ts, "ts_end": ts, "probability": [0.9] * n,
        "n_matches": [1] * n, "max_match_probability": [0.9] * n,
        "batch_date": pa.array([DAY] * n, pa.date32()), "run_id": ["night"] * n,
    }, schema=GROUPS.schema)


@pytest.mark.parametrize("failure", [
    OSError(errno.ENOSPC, "No space left on device"),
    # what delta-rs 1.6 raises on a full disk (no errno, no file)
    "Failed to parse parquet: External: Generic LocalFileSystem error: Unable to copy data "
    "to file: No space left on device (os error 28)",
])
def test_a_full_disk_in_a_step_is_one_line_naming_the_table(tmp_path, capsys, monkeypatch,
                                                            failure):
    import deltalake
    from deltalake.exceptions import DeltaError

    lake = tmp_path / "lake"
    _grouped(lake)

    def full(*args, **kwargs):
        raise failure if isinstance(failure, OSError) else DeltaError(failure)

    monkeypatch.setattr(deltalake, "write_deltalake", full)
    code, out, err = cli(capsys, "publish-alerts", "--date", DAY, "--lake", lake,
                         "--registry", REGISTRY)
    assert code == 2 and out == ""
    assert one_line(err) == (f"probcep publish-alerts: error: no space left on device "
                             f"writing {ALERT_CHANGES.path(lake)}")  # the first commit
    assert not ALERTS.exists(lake) and not ALERT_CHANGES.exists(lake)


SPARK_FULL = """An error occurred while calling o45.parquet.
: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to \
file:/lake/bronze/_staging-readings-12a4/part-00000-e635.snappy.parquet. SQLSTATE: 58030
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(...)
Caused by: java.io.IOException: No space left on device
"""


@pytest.mark.parametrize("failure,named", [
    (OSError(errno.ENOSPC, "No space left on device"), "/lake/gold/groups"),
    (OSError(errno.ENOSPC, "No space left on device", "/tmp/spill-1"), "/tmp/spill-1"),
    (RuntimeError(SPARK_FULL), "/lake/bronze/_staging-readings-12a4/part-00000-e635.snappy"
                               ".parquet"),
])
def test_a_full_disk_names_the_file_the_error_names_else_the_target(failure, named):
    with pytest.raises(DiskFullError) as full:
        with writing("/lake/gold/groups"):
            raise failure
    assert str(full.value) == f"no space left on device writing {named}"
    assert full.value.__cause__ is failure


def test_other_write_errors_pass_unchanged():
    refused = OSError(errno.EACCES, "Permission denied", "/lake")
    with pytest.raises(OSError) as raised:
        with writing("/lake"):
            raise refused
    assert raised.value is refused


SPARK_MKDIRS = """An error occurred while calling o875.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 7.0 \
failed 1 times: java.io.IOException: Mkdirs failed to create file:{staging}/32ec-ed1a/\
_day=2026-01-01/_temporary/0/_temporary/attempt_2026_0007_m_000000_5 (exists=false, \
cwd=file:/work)
"""
#: delta-rs's commit into an immutable `_delta_log` (deltalake 1.x)
RUST_REFUSED = """Generic LocalFileSystem error
  \u21b3 Unable to open file /lake/b/_delta_log/00000000000000000004.json#1
  \u21b3 Operation not permitted (os error 1)
"""
#: pyarrow's LocalFileSystem.create_dir: the path in the message alone
ARROW_REFUSED = PermissionError(errno.EPERM, "Cannot create directory '/lake/g/_staging/ab'. "
                                             "Detail: [errno 1] Operation not permitted")


@pytest.mark.parametrize("failure,says", [
    (PermissionError(errno.EACCES, "Permission denied", "/lake/gold"),
     "permission denied: /lake/gold"),
    (OSError(errno.EROFS, "Read-only file system", "/lake/x.parquet"),
     "read-only file system: /lake/x.parquet"),
    (ARROW_REFUSED, "operation not permitted: /lake/g/_staging/ab"),
    (OSError(RUST_REFUSED), "operation not permitted: /lake/b/_delta_log/00000000000000000004"
                            ".json"),
    (RuntimeError("Failed to parse parquet: External: Generic LocalFileSystem error: Unable "
                  "to open file /lake/s/part-1.parquet#1: Permission denied (os error 13)"),
     "permission denied: /lake/s/part-1.parquet"),
    (RuntimeError(SPARK_MKDIRS), "the file system refused to create a folder in {staging}"),
    # Structured Streaming's checkpoint; Python's own error as live's micro-batch raised it
    (RuntimeError("java.io.IOException: mkdir of file:{staging}/ck/offsets failed"),
     "the file system refused to create a folder in {staging}"),
    (RuntimeError("  File \"probcep/pipeline/live_states.py\", line 327, in _new_file\n"
                  "PermissionError: [Errno 1] Operation not permitted: '/lake/state/live/"
                  "bucket=82'\n SQLSTATE: 39000"),
     "operation not permitted: /lake/state/live/bucket=82"),
    (RuntimeError("java.io.FileNotFoundException: /lake/s/part-0.parquet (Permission denied)"),
     "permission denied: /lake/s/part-0.parquet"),
    (RuntimeError("java.nio.file.AccessDeniedException: /lake/s"), "permission denied: /lake/s"),
    # the checkpoint made immutable while live ran (QA, 2026-11-27: exit 1)
    (RuntimeError("[STREAM_FAILED] Query [id = b2aa] terminated with exception: "
                  "/lake/_live/checkpoint/offsets/.6.0aa0.tmp (Operation not permitted) "
                  "SQLSTATE: XXKST"),
     "operation not permitted: /lake/_live/checkpoint/offsets/.6.0aa0.tmp"),
])
def test_a_refusing_file_system_is_one_line_naming_where(tmp_path, failure, says):
    """Hadoop names the deepest folder of its write: the line names the nearest that
    exists, where the refused one was to be made."""
    staging = tmp_path / "bronze" / "_staging"
    staging.mkdir(parents=True)
    if isinstance(failure, RuntimeError):
        failure = RuntimeError(str(failure).format(staging=staging))
    with pytest.raises(RefusedError) as raised:
        with refused():
            raise failure
    assert str(raised.value) == says.format(staging=staging)
    assert raised.value.__cause__ is failure


def test_a_delta_commit_the_file_system_refuses_is_one_line(tmp_path):
    """delta-rs says it in Rust's words, with no errno (QA, 2026-11-27: exit 1)."""
    from deltalake import write_deltalake

    rows = pa.table({"x": [1, 2]})
    write_deltalake(str(tmp_path / "t"), rows)
    log = tmp_path / "t" / "_delta_log"
    if subprocess.run(["chattr", "+i", str(log)], capture_output=True).returncode:
        pytest.skip("no chattr +i here")
    try:
        with pytest.raises(RefusedError) as raised, refused():
            write_deltalake(str(tmp_path / "t"), rows, mode="append")
    finally:
        subprocess.run(["chattr", "-i", str(log)], check=True)
    assert re.fullmatch(rf"operation not permitted: {log}/\S+\.json", str(raised.value))


@pytest.mark.parametrize("failure", [FileNotFoundError(errno.ENOENT, "No such file", "/x"),
                                     RuntimeError("Permission to proceed")])
def test_other_errors_are_no_refusal(failure):
    with pytest.raises(type(failure)) as raised:
        with refused():
            raise failure
    assert raised.value is failure


# --- a probcep error raised in a Spark executor ----------------------------------------------

#: How a Spark executor's InputError reaches the driver (PySpark 4.2's PythonException text,
#: shortened): a traceback, the error last.
EXECUTOR = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "probcep/engine/grouping.py", line 152, in feed_columns
    raise InputError(f"stream continues at t={self.next_t}, block starts at t={t0}")
probcep.errors.InputError: stream continues at t=100, block starts at t=101

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "probcep/pipeline/group_tasks.py", line 110, in advance_matcher
    raise InputError(f"stream {sid!r}: {exc}") from exc
probcep.errors.InputError: stream 'person-0': stream continues at t=100, block starts at t=101
"""


def test_a_probcep_error_in_a_spark_executor_is_one_line(tmp_path, capsys, monkeypatch):
    import probcep.cli.group as group

    def run(args):  # as run_grouping's collect() raises it on the driver
        raise RuntimeError(EXECUTOR)

    monkeypatch.setattr(group, "run", run)
    code, _, err = cli(capsys, "group", tmp_path / "x.csv", "--pattern", "a", "--policy",
                       "single")
    assert code == 2
    assert one_line(err) == ("probcep group: error: stream 'person-0': stream continues at "
                             "t=100, block starts at t=101")


def test_another_error_in_a_spark_executor_keeps_its_traceback(tmp_path, monkeypatch):
    import probcep.cli.group as group

    text = EXECUTOR.replace("probcep.errors.InputError", "ZeroDivisionError")

    def run(args):
        raise RuntimeError(text)

    monkeypatch.setattr(group, "run", run)
    with pytest.raises(RuntimeError):
        main(["group", str(tmp_path / "x.csv"), "--pattern", "a", "--policy", "single"])


# --- an unwritable lake, refused before any work --------------------------------------------

def _no_spark(monkeypatch):
    from probcep.lake import spark

    def refuse(*args, **kwargs):
        raise AssertionError("Spark started before the lake was checked")

    monkeypatch.setattr(spark, "spark_session", refuse)


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


@pytest.mark.parametrize("step,blocked,message", [
    ("ingest", "", "cannot write the lake root: {lake} is a file, not a folder"),
    ("group-day", "gold", "cannot write gold/groups: {lake}/gold is a file, not a folder"),
    ("publish-alerts", "gold/alerts", "cannot write gold/alerts: {lake}/gold/alerts is a file"),
    ("ingest", "bronze/quarantine/_delta_log",
     "cannot write bronze/quarantine: {lake}/bronze/quarantine/_delta_log is a file"),
    ("group-day", "state/_locks", "cannot write state/engine: {lake}/state/_locks is a file"),
    ("normalize", "gx", "cannot write {lake}/gx: {lake}/gx is a file"),
])
def test_an_unwritable_lake_is_refused_before_any_work(tmp_path, capsys, monkeypatch, step,
                                                        blocked, message):
    """A file where a folder must be: refused whoever runs the test (root writes into
    a read-only folder, but not into a file)."""
    _no_spark(monkeypatch)
    lake = tmp_path / "lake"
    (lake / blocked).parent.mkdir(parents=True, exist_ok=True)
    (lake / blocked).write_text("in the way")
    before = _files(tmp_path)
    code, out, err = cli(capsys, step, "--date", DAY, "--lake", lake, "--registry", REGISTRY)
    assert code == 2 and out == ""
    assert one_line(err).startswith(f"probcep {step}: error: {message.format(lake=lake)}")
    assert err.rstrip().endswith("checked before any work, nothing was done")
    assert _files(tmp_path) == before  # nothing created, nothing written


@pytest.mark.parametrize("blocked", ["_live/checkpoint", "state/live", "state/live_status"])
def test_live_checks_its_checkpoint_and_state_before_any_work(tmp_path, capsys, monkeypatch,
                                                              blocked):
    """QA, 2026-11-27: found only after Spark started (a traceback, exit 1), `state/live`
    after bronze's commit."""
    _no_spark(monkeypatch)
    lake = tmp_path / "lake"
    (lake / blocked).parent.mkdir(parents=True, exist_ok=True)
    (lake / blocked).write_text("in the way")
    code, out, err = cli(capsys, "live", "--once", "--lake", lake, "--registry", REGISTRY)
    what = f"{lake}/{blocked}" if blocked.startswith("_") else blocked
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"probcep live: error: cannot write {what}: {lake}/"
                                    f"{blocked} is a file, not a folder; checked before")


def test_the_demo_checks_its_lake_before_any_work(tmp_path, capsys, monkeypatch):
    _no_spark(monkeypatch)
    (tmp_path / "lake").write_text("in the way")
    code, _, err = cli(capsys, "demo", "--lake", tmp_path / "lake", "--fresh")
    assert code == 2
    assert one_line(err).startswith(f"probcep demo: error: cannot write the lake root: "
                                    f"{tmp_path}/lake is a file, not a folder")
    assert (tmp_path / "lake").read_text() == "in the way"  # not removed by --fresh


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only folder")
def test_a_read_only_lake_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    _no_spark(monkeypatch)
    lake = tmp_path / "lake"
    (lake / "gold" / "groups").mkdir(parents=True)
    (lake / "gold" / "groups").chmod(0o555)
    try:
        code, _, err = cli(capsys, "group-day", "--date", DAY, "--lake", lake,
                           "--registry", REGISTRY)
    finally:
        (lake / "gold" / "groups").chmod(0o755)
    assert code == 2
    assert one_line(err).startswith(f"probcep group-day: error: cannot write gold/groups: "
                                    f"{lake}/gold/groups is not writable")


# --- the registry -----------------------------------------------------------------------------

ENTRY = "patterns:\n  good:\n    pattern: Door\n    policy: single\n  bad:\n"


@pytest.mark.parametrize("field,value,expected,line", [
    ("window", "ten", "a positive integer, got 'ten' (text)", 8),
    ("threshold", "high", "a number in [0, 1], got 'high' (text)", 8),
    ("policy", "3", "one of 'single', 'complete', got 3 (an integer)", 7),
    ("pattern", "5", "text, such as 'Door Room+ Door', got 5 (an integer)", 6),
    ("alert_threshold", "1.5", "a number in [0, 1], got 1.5 (a decimal number)", 8),
    ("window", "yes", "a positive integer, got True (a boolean)", 8),
])
def test_a_registry_value_of_the_wrong_type_names_entry_field_value_and_type(
        tmp_path, capsys, monkeypatch, field, value, expected, line):
    _no_spark(monkeypatch)
    fields = {"pattern": "Door Room+ Door", "policy": "single", field: value}
    path = tmp_path / "patterns.yaml"
    path.write_text(ENTRY + "".join(f"    {k}: {v}\n" for k, v in fields.items()))
    code, _, err = cli(capsys, "group-day", "--date", DAY, "--lake", tmp_path / "lake",
                       "--registry", path)
    assert code == 2
    assert one_line(err) == (f"probcep group-day: error: {path}, line {line}: entry 'bad': "
                             f"{field} must be {expected}")


def test_a_registry_name_given_twice_is_one_line_with_its_line(tmp_path, capsys):
    path = tmp_path / "patterns.yaml"
    path.write_text(ENTRY + "    pattern: Room\n    policy: single\n"
                    "  good:\n    pattern: Hallway\n    policy: single\n")
    code, _, err = cli(capsys, "run", "--date", DAY, "--lake", tmp_path / "lake",
                       "--registry", path)
    assert code == 2
    assert one_line(err) == (f"probcep run: error: {path}, line 8: cannot read the patterns "
                             f"registry: 'good' is named twice")


# --- an output file is written whole or not at all -----------------------------------

def _fails_halfway(monkeypatch, module, name):
    """Make `module.name(x, where, ...)` write a few bytes to `where`, then find the disk
    full: the earlier output must survive it."""
    def write(_, where, *args, **kwargs):
        Path(where).write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(module, name, write)


@pytest.mark.parametrize("verb,frame,options,suffix", [
    ("group", STREAMS, ["--pattern", "a", "--policy", "single"], ".parquet"),
    ("approx", EVENTS, ["--pattern", "a b", "--max-errors", "0", "--window", "3"], ".parquet"),
    ("plot", STREAMS, ["--stream", "s1", "--pattern", "a", "--window", "2"], ".png"),
])
def test_an_output_that_fails_halfway_leaves_the_earlier_file(tmp_path, capsys, monkeypatch,
                                                               verb, frame, options, suffix):
    import matplotlib.figure
    import pyarrow.parquet as pq

    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / f"out{suffix}"
    out.write_bytes(b"the earlier output")
    if suffix == ".png":
        _fails_halfway(monkeypatch, matplotlib.figure.Figure, "savefig")
    else:
        _fails_halfway(monkeypatch, pq, "write_table")
    code, _, err = cli(capsys, verb, path, *options, "-o", out)
    assert code == 2
    assert one_line(err).startswith(f"probcep {verb}: error: no space left on device")
    assert out.read_bytes() == b"the earlier output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", out.name]


@pytest.mark.parametrize("name", ["plot.xyz", "plot"])
def test_an_image_needs_an_extension_naming_its_format(tmp_path, capsys, name):
    path = tmp_path / "streams.csv"
    STREAMS.to_csv(path, index=False)
    code, _, err = cli(capsys, "plot", path, "--stream", "s1", "--pattern", "a", "-o",
                       tmp_path / name)
    assert code == 2
    assert one_line(err).startswith(f"probcep plot: error: cannot write {tmp_path / name}: "
                                    "its extension names no image format matplotlib writes "
                                    "(")
    assert ".png" in err and ".svg" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streams.csv"]


@pytest.mark.parametrize("verb,options", [
    ("group", ["--pattern", "a", "--policy", "single"]),
    ("correlate", ["--live-pattern", "a", "--policy", "single", "--archive-pattern", "b",
                   "--lookback", "2"]),
])
def test_a_window_past_the_limit_is_one_line(tmp_path, capsys, verb, options):
    path = tmp_path / "streams.csv"
    STREAMS.to_csv(path, index=False)
    code, _, err = cli(capsys, verb, path, *options, "--window", "99999999999999999999999")
    assert code == 2
    assert one_line(err).endswith("is more than the limit of 1,099,511,627,776 timesteps "
                                  "(MAX_WINDOW)")


@pytest.mark.parametrize("option,value,says", [
    ("--window", "0", "--window must be in 1..9223372036854775807, got 0"),
    ("--budget", "nan", "--budget must be a number in 0..1e+15, got nan"),
    ("--budget", "-3", "--budget must be a number in 0..1e+15, got -3.0"),
    # its credit cap, the budget times the burst, would overflow to infinity
    ("--budget", "1e308", "--budget must be a number in 0..1e+15, got 1e+308"),
    ("--burst", "0", "--burst must be a number in 1..1e+15, got 0.0"),
    ("--max-matches", "-1", "--max-matches must be >= 0, got -1"),
    # int64 sums of the errors would overflow (a traceback, or negative errors below it)
    ("--max-errors", str(2 ** 62), "--max-errors must be in 0..1152921504606846976, got "
     "4611686018427387904"),
])
def test_approx_options_out_of_range_are_one_line(tmp_path, capsys, option, value, says):
    path = tmp_path / "events.csv"
    EVENTS.to_csv(path, index=False)
    argv = {"--pattern": "a b", "--max-errors": "0", "--window": "3", option: value}
    code, _, err = cli(capsys, "approx", path, *[x for kv in argv.items() for x in kv])
    assert code == 2
    assert one_line(err) == f"probcep approx: error: {says}"


def test_max_matches_counts_matches_not_bundle_lines(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("stream_id,tag,symbol\n" + "".join(
        f"s,{i + 1},{c}\n" for i, c in enumerate("aeebceaeecdaebd")) + "t2,100,e\n")
    argv = ["approx", path, "--pattern", "a ( b | c ) d b", "--max-errors", "2", "--window",
            "5", "--bundles", "--max-matches"]
    code, out, _ = cli(capsys, *argv, 13)  # 13 matches, and a bundle line
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and sum(x["type"] == "match" for x in lines) == 13 < len(lines)
    code, _, err = cli(capsys, *argv, 12)
    assert code == 2 and "more than 12 matches" in one_line(err)


def test_max_matches_stops_the_run_where_it_is_passed(tmp_path, capsys):
    """`a a+` over n events has about 2^n matches: the run stops at the event that passes
    the limit (event 16, the 17th), not after the whole stream (quadratic time and memory)."""
    path = tmp_path / "events.csv"
    path.write_text("stream_id,tag,symbol\n" + "".join(f"s,{i},a\n" for i in range(3000)))
    code, _, err = cli(capsys, "approx", path, "--pattern", "a a+", "--max-errors", "0",
                       "--window", "3000", "--max-matches", "100000")
    assert code == 2
    assert one_line(err) == (f"probcep approx: error: {path}: more than 100000 matches "
                             f"(passed in stream 's' at event 16, tag 16); narrow the window "
                             f"or the errors, or raise --max-matches")


def _state_files(tmp_path: Path) -> dict[str, Path]:
    import io as _io
    import zipfile

    import numpy as np

    good = tmp_path / "good.npz"
    STREAMS.to_csv(tmp_path / "streams.csv", index=False)
    assert main(["group", str(tmp_path / "streams.csv"), "--pattern", "a", "--policy",
                 "single", "--save-state", str(good), "-o", str(tmp_path / "g.jsonl")]) == 0
    files = {"empty": b"", "cut short": good.read_bytes()[:300],
             "a CSV": b"stream_id,t\n", "an array": b""}
    buf = _io.BytesIO()
    np.save(buf, np.arange(3))
    files["an array"] = buf.getvalue()
    buf = _io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("header.npy", b"not numpy")
    files["another archive"] = buf.getvalue()
    buf = _io.BytesIO()
    np.savez(buf, header=np.array("{not json"))
    files["a header not JSON"] = buf.getvalue()
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.npz"
        paths[name].write_bytes(data)
    return paths


def test_a_state_file_that_is_not_one_is_one_line(tmp_path, capsys):
    for name, path in _state_files(tmp_path).items():
        capsys.readouterr()
        code, _, err = cli(capsys, "group", tmp_path / "streams.csv", "--pattern", "a",
                           "--policy", "single", "--resume-from", path)
        assert code == 2, name
        assert one_line(err).startswith(f"probcep group: error: {path}: not a "), name


def test_a_failed_output_keeps_the_saved_state_as_it_was(tmp_path, capsys):
    """The state is moved into place after the lines are written: lines that fail leave
    the earlier state, so a rerun resumes from where the written lines end."""
    STREAMS.to_csv(tmp_path / "streams.csv", index=False)
    state = tmp_path / "state.npz"
    state.write_bytes(b"the earlier state")
    code, _, err = cli(capsys, "group", tmp_path / "streams.csv", "--pattern", "a",
                       "--policy", "single", "--save-state", state, "-o", "/dev/full")
    assert code == 2 and "no space left on device writing /dev/full" in one_line(err)
    assert state.read_bytes() == b"the earlier state"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.npz", "streams.csv"]


@pytest.mark.parametrize("dates, says", [
    (["--date", "2026-01-01", "--to", "2026-01-02"], "--to goes with --from, not --date"),
    (["--from", "2026-01-01"], "--from needs --to"),
])
def test_run_refuses_dates_it_would_half_use(tmp_path, capsys, dates, says):
    code, out, err = cli(capsys, "run", *dates, "--lake", tmp_path / "lake")
    assert (code, out) == (2, "")
    assert one_line(err) == f"probcep run: error: {says}" + (
        " (a range: --from D1 --to D2)" if "--date" in dates else "")
    assert not (tmp_path / "lake").exists()


def test_a_range_under_missing_day_refuse_names_every_refused_day(tmp_path, capsys,
                                                                   monkeypatch):
    """Before any work, all at once (QA, 2026-11-27: a backfill of many quiet days named
    one a run)."""
    _no_spark(monkeypatch)
    land = tmp_path / "landing"
    (land / "2026-01-02").mkdir(parents=True)
    STREAMS.to_csv(land / "2026-01-02" / "r.csv", index=False)
    (land / "2026-01-03").mkdir()
    (land / "2026-01-03" / "_COMPLETE").touch()
    monkeypatch.setenv("PROBCEP_LANDING_DIR", str(land))
    monkeypatch.setenv("PROBCEP_MISSING_DAY", "refuse")
    code, out, err = cli(capsys, "run", "--from", "2026-01-01", "--to", "2026-01-03",
                         "--lake", tmp_path / "lake", "--registry", REGISTRY)
    assert (code, out) == (2, "")
    assert one_line(err) == (
        f"probcep run: error: no landing folder for 2026-01-01: {land}/2026-01-01 does not "
        f"exist; and 1 more day(s) of the range: no landing files for 2026-01-03 in "
        f"{land}/2026-01-03 (expected .csv, .json, .jsonl, .ndjson, .parquet)")


# --- values a reader would change silently ------------------------------------------------

BIG = 2 ** 53 + 1  # the first integer a double cannot hold


@pytest.mark.parametrize("name, content, says", [
    # one time written as a decimal makes the column doubles: BIG would read as 2^53
    ("t.csv", f"stream_id,t,a,b\nA,1.0,1,0\nB,{BIG},1,0\n",
     f"stream 'B': t={float(BIG - 1)} cannot be read exactly"),
    ("t.jsonl", f'{{"stream_id":"A","t":1.0,"a":1,"b":0}}\n{{"stream_id":"B","t":{BIG},'
                f'"a":1,"b":0}}\n', f"stream 'B': t={float(BIG - 1)} cannot be read exactly"),
    ("under.jsonl", '{"stream_id":"s","t":-9223372036854775809,"a":1,"b":0}\n',
     "line 1: t -9223372036854775809 is outside the 64-bit integer range"),
    # pandas ends a field at a NUL byte: `n\0A` and `n\0B` would be one stream `n`
    ("nul.csv", "stream_id,t,a,b\nn\0A,1,1,0\nn\0B,2,0,1\n",
     "line 2: a NUL byte, which CSV text cannot hold"),
    ("bool_t.csv", "stream_id,t,a,b\ns,false,1,0\ns,true,0,1\n", "t=False is not an integer"),
    ("bool_p.csv", "stream_id,t,a,b\ns,1,True,False\n",
     "probability of 'a' is missing or not a number (True)"),
    ("bool_p.jsonl", '{"stream_id":"s","t":1,"a":true,"b":false}\n',
     "probability of 'a' is missing or not a number (True)"),
    ("blank_header.csv", "stream_id,t,a,,b\ns,1,0.5,0.5,0\n",
     "column 4 of the header has no name"),
    ("empty_t.csv", "stream_id,t,a,b\ns,,1,0\n", "stream 's': t is missing"),
])
def test_values_a_reader_would_change_are_refused(tmp_path, capsys, name, content, says):
    path = tmp_path / name
    path.write_text(content)
    code, out, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single")
    assert (code, out) == (2, "") and says in one_line(err)


def test_parquet_booleans_and_timestamps_are_no_times_or_probabilities(tmp_path, capsys):
    for column, says in (("t", "t=True is not an integer"),
                         ("a", "probability of 'a' is missing or not a number (True)")):
        table = {"stream_id": ["s"], "t": [1], "a": [1.0], "b": [0.0]}
        table[column] = [True]
        path = tmp_path / f"{column}.parquet"
        pd.DataFrame(table).to_parquet(path)
        code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single")
        assert code == 2 and says in one_line(err)
    path = tmp_path / "ts.parquet"
    pd.DataFrame({"stream_id": ["s"], "t": pd.to_datetime(["2026-01-01"]), "a": [1.0],
                  "b": [0.0]}).to_parquet(path)
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single")
    assert code == 2 and "is not an integer" in one_line(err)


def test_an_exact_big_time_and_a_big_tag_stay_exact(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text(f"stream_id,t,a,b\nB,{BIG},1,0\n")
    code, out, _ = cli(capsys, "group", path, "--pattern", "a", "--policy", "single")
    assert code == 0 and json.loads(out)["t_start"] == BIG
    events = tmp_path / "events.csv"
    events.write_text(f"stream_id,tag,symbol\ns,1.0,a\ns,{BIG},b\n")
    code, _, err = cli(capsys, "approx", events, "--pattern", "a b", "--max-errors", "0",
                       "--window", str(2 ** 60))
    assert code == 2 and f"tag {BIG} cannot be read exactly" in one_line(err)


def test_a_pipe_is_refused_not_waited_on(tmp_path, capsys):
    fifo = tmp_path / "streams.csv"
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "group", fifo, "--pattern", "a", "--policy", "single")
    assert code == 2 and "not a regular file (a folder, pipe or device)" in one_line(err)


@pytest.mark.parametrize("option", ["-o", "--save-state"])
def test_the_input_is_never_the_output(tmp_path, capsys, option):
    path = tmp_path / "streams.csv"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                       option, path)
    assert code == 2 and one_line(err).endswith(f"cannot write {path}: it is the input "
                                                f"{path}, which would be lost; nothing read")
    assert path.read_text() == "stream_id,t,a,b\ns,1,0.5,0.5\n"


@pytest.mark.parametrize("through_link", [False, True])
def test_two_outputs_naming_one_file_are_refused_before_reading(tmp_path, capsys,
                                                                  through_link):
    path, state = tmp_path / "streams.csv", tmp_path / "state.npz"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    state.write_text("an earlier state\n")
    output = state
    if through_link:
        output = tmp_path / "link.npz"
        output.symlink_to(state)
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                       "--save-state", state, "-o", output)
    assert code == 2 and one_line(err).endswith(
        f"cannot write {state}: -o writes it too, and one would replace the other; "
        f"nothing read")
    assert state.read_text() == "an earlier state\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["streams.csv", "state.npz"] + (["link.npz"] if through_link else []))


def test_a_device_may_take_both_outputs(tmp_path, capsys):
    path = tmp_path / "streams.csv"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                       "--save-state", "/dev/null", "-o", "/dev/null")
    assert (code, err) == (0, "")


def test_a_state_file_that_is_no_archive_gets_no_advice_to_unpickle(tmp_path, capsys):
    path, state = tmp_path / "streams.csv", tmp_path / "state.npz"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    state.write_text("junk\n")
    code, _, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                       "--resume-from", state)
    assert code == 2 and one_line(err).endswith(f"{state}: not a readable probcep state "
                                                f"file (not a NumPy archive)")


def test_an_archive_window_beyond_its_limit_is_one_line(tmp_path, capsys):
    path = tmp_path / "streams.csv"
    path.write_text("stream_id,t,a,b,c\ns,1,1,0,0\ns,2,0,1,0\ns,3,0,0,1\n")
    code, _, err = cli(capsys, "correlate", path, "--live-pattern", "c", "--policy",
                       "single", "--archive-pattern", "a b", "--lookback", "4",
                       "--archive-window", "1000000000")  # was 24 GB, then killed
    assert code == 2 and one_line(err).endswith("archive window 1000000000 is more than "
                                                "the limit of 1,048,576 timesteps "
                                                "(MAX_ARCHIVE_WINDOW)")


def test_a_bad_training_file_is_named(tmp_path, capsys):
    events, train = tmp_path / "events.csv", tmp_path / "train.csv"
    EVENTS.to_csv(events, index=False)
    train.write_text("stream_id,tag,symbol\ns,1,z\n")
    code, _, err = cli(capsys, "approx", events, "--pattern", "a b", "--max-errors", "1",
                       "--window", "5", "--budget", "1", "--train", train, "--domain", "a,b")
    assert code == 2 and one_line(err).endswith(f"error: {train}: stream 's': event 0 (tag 1): "
                                                f"symbol 'z' is not in the domain a, b")


@pytest.mark.parametrize("argv", [
    ["normalize", "--date", "{later}"], ["correlate-day", "--date", "{later}"],
    ["publish-alerts", "--date", "{later}"], ["run", "--from", "2026-01-01", "--to", "{later}"],
    ["rerun", "--from", "{later}", "--to", "{later}"]])
def test_a_day_that_has_not_begun_is_refused_before_any_work(tmp_path, capsys, argv):
    """A year's typo (2062 for 2026) must not be recorded as a night, nor send a lookback
    across decades."""
    later = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error
        main([a.format(later=later) for a in argv] + ["--lake", str(tmp_path / "lake")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.splitlines()[-1].endswith(f"{later} has not begun (today is "
                                         f"{later - dt.timedelta(days=1)}, UTC)")
    assert not (tmp_path / "lake").exists()


@pytest.mark.parametrize("first,last", [(0, 0), (0, -2)])
def test_a_rerun_refused_before_its_walk_leaves_no_mark(tmp_path, capsys, monkeypatch,
                                                      first, last):
    """A rerun of today (refused until the day ends) or of --to before --from wrote its
    mark of a rerun in progress first: every later rerun then warned of it and walked
    every processed day, and today's could not be cleared (QA, 2026-11-27)."""
    today = dt.datetime.now(dt.UTC).date()
    monkeypatch.setenv("PROBCEP_LANDING_DIR", str(tmp_path / "landing"))
    assert main(["rerun", "--from", str(today + dt.timedelta(first)), "--to",
                 str(today + dt.timedelta(last)), "--lake", str(tmp_path / "lake")]) == 2
    assert one_line(capsys.readouterr().err).startswith("probcep rerun: error: ")
    assert not (tmp_path / "lake" / "_reruns").exists()


@pytest.mark.parametrize("written", ["20260101", "2026-W01-4", "2026-001", "2026-1-01"])
def test_a_day_not_written_yyyy_mm_dd_is_refused(tmp_path, capsys, written):
    """Landing folders are named YYYY-MM-DD; `date.fromisoformat` also takes the basic
    and week forms (QA, 2026-11-27: `run --date 20260101` ran the night of 2026-01-01)."""
    for step in ("ingest", "run"):
        with pytest.raises(SystemExit) as exit_:
            main([step, "--date", written, "--lake", str(tmp_path / "lake")])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            f"argument --date: {written!r} is not a date (YYYY-MM-DD)")
    assert not (tmp_path / "lake").exists()


def test_ingest_of_a_day_that_has_not_begun_names_its_folder(tmp_path, capsys, monkeypatch):
    """Issue 13: `probcep ingest --date 2030-01-01` exits 2 with one line naming the
    missing folder (argparse's usage lines came first, and no folder was named)."""
    later = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    monkeypatch.setenv("PROBCEP_LANDING_DIR", str(tmp_path / "landing"))
    assert main(["ingest", "--date", str(later), "--lake", str(tmp_path / "lake")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"probcep ingest: error: {tmp_path / 'landing' / str(later)}: no landing "
                   f"folder: {later} has not begun (today is "
                   f"{later - dt.timedelta(days=1)}, UTC)"]
    assert not (tmp_path / "lake").exists()


@pytest.mark.parametrize("argv,said", [
    # QA, 2026-11-27: an offset reaching past year 1..9999 in UTC was an OverflowError
    (["slice", "--stream", "s", "--start", "2026-01-01", "--end",
      "9999-12-31T23:59:59.999999-23:59"], "argument --end: invalid ISO time value"),
    (["slice", "--stream", "s", "--start", "0001-01-01T00:00:00+02:00", "--end",
      "2026-01-01"], "argument --start: invalid ISO time value"),
    (["plot", "--stream", "s", "--pattern", "room_visit", "--from",
      "0001-01-01T00:00+01:00"], "'0001-01-01T00:00+01:00' is outside the years 1 to 9999"),
    # an output inside the lake read would replace one of its files (a log's commit)
    (["slice", "--stream", "s", "--start", "2026-01-01", "--end", "2026-01-02", "-o",
      "{lake}/silver/distributions/_delta_log/00000000000000000003.json"],
     "cannot write {lake}/silver/distributions/_delta_log/00000000000000000003.json: it "
     "is inside the lake {lake}, which the command reads; nothing read"),
    (["plot", "--stream", "s", "--pattern", "room_visit", "-o", "{lake}/x.png"],
     "cannot write {lake}/x.png: it is inside the lake {lake}"),
    (["evaluate", "--episodes", "{lake}/../e.csv", "--plot", "{lake}/gold/x.png"],
     "cannot write {lake}/gold/x.png: it is inside the lake {lake}"),
    # what a lake's plot would draw unsaid: no groups, or the registered θ for the one given
    (["plot", "--stream", "s", "--pattern", "visit_one_missing"],
     "--pattern visit_one_missing is an approximate pattern: plot draws the groups"),
    (["plot", "--stream", "s", "--pattern", "room_visit", "--threshold", "0.9", "--window",
      "3"], "--threshold, --window: with --lake the groups drawn are the registered"),
])
def test_slice_plot_and_evaluate_refuse_in_one_line(tmp_path, capsys, argv, said):
    lake = tmp_path / "lake"
    (lake / "gold").mkdir(parents=True)
    (lake / "silver" / "distributions" / "_delta_log").mkdir(parents=True)
    (tmp_path / "e.csv").write_text("pattern,stream_id,start,end\n")
    argv = [a.format(lake=lake) for a in argv]
    try:
        code = main([*argv, "--lake", str(lake)])
    except SystemExit as refused:  # argparse's own line
        code = refused.code
    assert code == 2
    err = capsys.readouterr().err
    assert said.format(lake=lake) in err
    assert "Traceback" not in err and not list(lake.rglob("*.json"))


@pytest.mark.parametrize("start,end,refused", [
    ("2026-01-01T00:00+05:00", "2026-01-02", False),
    ("2026-01-02T00:00+05:00", "2026-01-01T18:00", True),  # 19:00Z: the end is before it
    ("2026-01-01", "2026-01-01T05:00+05:00", True),  # the same instant
])
def test_slice_times_with_and_without_an_offset_compare_as_utc(tmp_path, capsys, start, end,
                                                               refused):
    assert main(["slice", "--stream", "s1", "--start", start, "--end", end,
                 "--lake", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert ("is not after its start" in err) == refused
    assert refused or "no silver table here" in err


@pytest.mark.parametrize("verb, option", [("group", "--threshold"),
                                          ("correlate", "--min-probability")])
@pytest.mark.parametrize("value", ["1e-400", "0.00001e-320"])
def test_a_probability_that_underflows_is_not_taken_as_zero(tmp_path, capsys, verb, option,
                                                              value):
    """θ = 1e-400 as a double is 0, which keeps every match: refused, not run as θ = 0."""
    path = tmp_path / "s.csv"
    STREAMS.to_csv(path, index=False)
    extra = (["--pattern", "a", "--policy", "single"] if verb == "group" else
             ["--live-pattern", "a", "--archive-pattern", "b", "--policy", "single",
              "--lookback", "5"])
    with pytest.raises(SystemExit) as exit_:
        main([verb, str(path), *extra, option, value])
    assert exit_.value.code == 2
    assert f"{value} is below the smallest positive double" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "0.0", "0e-400", "5e-324"])
def test_zero_and_the_smallest_double_are_taken(tmp_path, capsys, value):
    path = tmp_path / "s.csv"
    STREAMS.to_csv(path, index=False)
    code, out, err = cli(capsys, "group", path, "--pattern", "a", "--policy", "single",
                         "--threshold", value)
    assert code == 0, err
    assert out.count("\n") == 3  # a match of `a` at each of t = 1, 2, 3


SIGTERM_STEP = """
import sys, time
import datetime as dt
from probcep.cli import main, steps
from probcep.lake.tables import GROUPS

def held(args):  # a step holding its slice lock, as group-day does while it works
    with GROUPS.lock(sys.argv[1], dt.date(2026, 1, 1), pattern=["room_visit"]):
        print("locked", flush=True)
        time.sleep(60)

steps.vacuum = held
sys.exit(main(["vacuum", "--lake", sys.argv[1]]))
"""


def test_sigterm_releases_the_steps_locks(tmp_path):
    """SIGTERM (Airflow's timeout) unwinds the step: its lock is removed and it says so in
    one line, exit 143. It used to end the process at once, leaving the lock to a holder
    that another worker cannot judge gone (QA, 2026-11-27: its retry waited 600 s)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    step = subprocess.Popen([sys.executable, "-c", SIGTERM_STEP, str(lake)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert step.stdout.readline() == "locked\n"
    assert list(lake.rglob("*.lock"))
    step.send_signal(signal.SIGTERM)
    out, err = step.communicate(timeout=60)
    assert step.returncode == 143
    assert err.splitlines() == ["probcep vacuum: error: stopped by SIGTERM (its locks and "
                                "staged files are released: the step can run again)"]
    assert not list(lake.rglob("*.lock"))


SIGTERM_BEFORE = """
import os, signal, sys
from probcep import cli

build = cli.build_parser
def slow(command=None):  # a SIGTERM while the command's modules load
    os.kill(os.getpid(), signal.SIGTERM)
    return build(command)
cli.build_parser = slow
cli.entry(["vacuum", "--lake", sys.argv[1]])
"""

SIGTERM_AFTER = """
import atexit, os, signal, sys
from probcep import cli

atexit.register(os.kill, os.getpid(), signal.SIGTERM)  # while the process shuts down
cli.entry(["group", sys.argv[1], "--pattern", "a", "--policy", "single"])
"""


SIGTERM_IN_IMPORT = """
import os, signal, sys
state = {"numpy": False, "sent": False}

def hook(event, args):  # SIGTERM while numpy's C extension imports datetime
    if event == "import" and not state["sent"]:
        if args[0].endswith("_multiarray_umath"):
            state["numpy"] = True
        elif state["numpy"] and args[0] == "datetime":
            state["sent"] = True
            os.kill(os.getpid(), signal.SIGTERM)

sys.addaudithook(hook)
from probcep import cli

cli.entry(["group", sys.argv[1], "--pattern", "a b+ c", "--policy", "complete"])
"""


def test_a_sigterm_during_an_import_unwinds_once_the_import_is_done(tmp_path):
    """Raised inside numpy's C extension it became an ImportError: exit 1 and 63 lines
    blaming the numpy install; inside the import machinery it could leave a module lock
    taken, and the step then hung with its locks (QA, 2026-11-27)."""
    path = tmp_path / "big.csv"  # seconds of reading: the signal comes again meanwhile
    rows = 1_000_000
    pd.DataFrame({"stream_id": "s", "t": np.arange(rows), "a": 0.2, "b": 0.5,
                  "c": 0.3}).to_csv(path, index=False)
    done = subprocess.run([sys.executable, "-c", SIGTERM_IN_IMPORT, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr
    assert re.fullmatch(r"probcep( group)?: error: stopped by SIGTERM \(no output file is "
                        r"left half-written: it can run again\)\n", done.stderr)


def test_sigterm_before_the_step_says_so_and_after_it_changes_nothing(tmp_path):
    """A SIGTERM while the command loaded ended the process with no line, and one while
    it shut down, the work done, made it exit 143, a failure to Airflow (QA, 2026-11-27)."""
    before = subprocess.run([sys.executable, "-c", SIGTERM_BEFORE, str(tmp_path / "lake")],
                            capture_output=True, text=True, timeout=120)
    assert before.returncode == 143
    assert before.stderr.splitlines() == ["probcep: error: stopped by SIGTERM (no output "
                                          "file is left half-written: it can run again)"]
    path = tmp_path / "s.csv"
    STREAMS.to_csv(path, index=False)
    after = subprocess.run([sys.executable, "-c", SIGTERM_AFTER, str(path)],
                           capture_output=True, text=True, timeout=120)
    assert (after.returncode, after.stderr) == (0, "")
    assert after.stdout.count("\n") == 3


def test_a_warning_after_gx_routed_warnings_to_logging_is_still_a_line(capsys, monkeypatch,
                                                                        tmp_path):
    """GX's validator modules call `logging.captureWarnings(True)` when imported, after
    which no ProbcepWarning of a night reached its output (QA, 2026-11-27)."""
    import logging

    from probcep.cli import steps
    from probcep.errors import warn

    def step(args):
        logging.captureWarnings(True)  # as importing great_expectations' validator does
        warn("a version passed over its missed days")

    monkeypatch.setattr(steps, "vacuum", step)
    try:
        code, _, err = cli(capsys, "vacuum", "--lake", tmp_path)
    finally:
        logging.captureWarnings(False)
    assert code == 0
    assert err == "probcep vacuum: warning: a version passed over its missed days\n"


def test_a_warning_after_gx_routed_warnings_before_the_command_is_still_a_line(
        capsys, monkeypatch, tmp_path):
    """GX imported by an earlier command of the process: undoing its routing again put
    back the hook it had saved, over the command's own (a flaky CI run, 2026-11-27)."""
    import logging

    from probcep.cli import steps
    from probcep.errors import warn

    monkeypatch.setattr(steps, "vacuum", lambda args: warn("a retention under 168 h"))
    logging.captureWarnings(True)  # in force before the command installs its hook
    try:
        code, _, err = cli(capsys, "vacuum", "--lake", tmp_path)
    finally:
        logging.captureWarnings(False)
    assert code == 0
    assert err == "probcep vacuum: warning: a retention under 168 h\n"


SIGTERM_SWALLOWED = """
import sys, time
from probcep.cli import entry, steps

def careless(args):  # a library's bare `except:` swallows the first Terminated
    print("started", flush=True)
    try:
        time.sleep(60)
    except BaseException:
        pass
    time.sleep(60)

steps.vacuum = careless
entry(["vacuum", "--lake", sys.argv[1]])
"""


def test_a_swallowed_sigterm_comes_again_until_the_command_ends(tmp_path):
    """The step went on with SIGTERM ignored, and hung holding its locks (QA, 2026-11-27)."""
    step = subprocess.Popen([sys.executable, "-c", SIGTERM_SWALLOWED, str(tmp_path / "lake")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert step.stdout.readline() == "started\n"
    step.send_signal(signal.SIGTERM)
    out, err = step.communicate(timeout=40)
    assert step.returncode == 143, err
    assert err.endswith("probcep vacuum: error: stopped by SIGTERM (its locks and staged files "
                        "are released: the step can run again)\n")


SIGTERM_UNRAISABLE = """
import os, signal, sys, time
from probcep.cli import entry, steps

class Closing:
    def __del__(self):  # Python prints and drops what is raised here, as in an at-fork hook
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1_000_000):
            pass

def step(args):
    print("started", flush=True)
    Closing()
    time.sleep(60)

steps.vacuum = step
entry(["vacuum", "--lake", sys.argv[1]])
"""


def test_a_sigterm_raised_where_python_drops_exceptions_ends_the_command_at_once(tmp_path):
    """Raised in `logging`'s at-fork hook as Spark started its JVM, `Terminated` was
    printed as "Exception ignored" with a traceback, and the step ran on for 5 s more
    (QA, 2026-11-27)."""
    step = subprocess.Popen([sys.executable, "-c", SIGTERM_UNRAISABLE, str(tmp_path / "lake")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert step.stdout.readline() == "started\n"
    began = time.monotonic()
    out, err = step.communicate(timeout=40)
    assert step.returncode == 143, err
    assert err == ("probcep vacuum: error: stopped by SIGTERM (its locks and staged files "
                   "are released: the step can run again)\n")
    assert time.monotonic() - began < RAISE_AGAIN_SECONDS - 1


SIGTERM_FAILED_CLEANUP = """
import sys, time
from probcep.cli import entry, steps
from probcep.errors import ProbcepError

def step(args):
    print("started", flush=True)
    try:
        time.sleep(60)
    finally:  # a clean-up on the connection the signal cut short
        if sys.argv[2] == "KeyError":
            {}["p"]
        raise ProbcepError("the staging folder is gone")

steps.vacuum = step
entry(["vacuum", "--lake", sys.argv[1]])
"""


@pytest.mark.parametrize("error", ["KeyError", "ProbcepError"])
def test_a_clean_up_failing_after_a_sigterm_still_ends_as_stopped(tmp_path, error):
    """A SIGTERM inside a py4j call, then `unpersist` in a `finally`: its KeyError
    replaced `Terminated`, exit 1 and a traceback (QA, 2026-11-27)."""
    step = subprocess.Popen([sys.executable, "-c", SIGTERM_FAILED_CLEANUP,
                             str(tmp_path / "lake"), error],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert step.stdout.readline() == "started\n"
    step.send_signal(signal.SIGTERM)
    out, err = step.communicate(timeout=40)
    assert step.returncode == 143, err
    assert err == ("probcep vacuum: error: stopped by SIGTERM (its locks and staged files "
                   "are released: the step can run again)\n")


def test_the_sigterm_line_speaks_of_locks_only_for_commands_that_take_them():
    """`probcep group` said its locks were released; `probcep demo`, which runs the lake
    steps, said it had none (QA, 2026-11-27)."""
    from probcep.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    locking = {name for name, sub in commands.items() if sub.get_default("holds_locks")}
    assert locking == {"ingest", "normalize", "group-day", "validate-gold", "publish-alerts",
                       "correlate-day", "vacuum", "run", "rerun", "live", "demo"}


@pytest.mark.parametrize("option", ["-o", "--save-state"])
def test_an_output_on_a_loop_of_links_is_refused_in_one_line(capsys, tmp_path, option):
    """`resolve()` raised RuntimeError: a traceback and exit 1 (QA, 2026-11-27)."""
    path = tmp_path / "s.csv"
    STREAMS.to_csv(path, index=False)
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    code, _, err = cli(capsys, "group", path, "--pattern", "a b", "--policy", "single",
                       option, tmp_path / "loop1")
    assert code == 2
    assert one_line(err).startswith(f"probcep group: error: cannot write {tmp_path / 'loop1'}: ")
    assert "loop" in err.lower()


SLEEPING = """
import sys, time
from probcep.cli import entry, steps

def step(args):
    print("started", flush=True)
    time.sleep(60)

steps.vacuum = step
entry(["vacuum", "--lake", sys.argv[1]])
"""


def test_a_sigalrm_alone_is_not_taken_for_a_sigterm(tmp_path):
    """The alarm that takes a put-off SIGTERM again is ours only after a SIGTERM: a stray
    SIGALRM ended a command as "stopped by SIGTERM" (QA, 2026-11-27)."""
    step = subprocess.Popen([sys.executable, "-c", SLEEPING, str(tmp_path / "lake")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert step.stdout.readline() == "started\n"
    step.send_signal(signal.SIGALRM)
    with pytest.raises(subprocess.TimeoutExpired):
        step.wait(timeout=2)  # still sleeping
    step.send_signal(signal.SIGTERM)
    out, err = step.communicate(timeout=40)
    assert step.returncode == 143, err
    assert err.endswith("probcep vacuum: error: stopped by SIGTERM (its locks and staged files "
                        "are released: the step can run again)\n")


def group_as_in_a_shell(capsys, path, out):
    """`probcep group` with Python's own Ctrl-C handler, as a shell starts it (a test
    worker may have another)."""
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return cli(capsys, "group", path, "--pattern", "a", "--policy", "single", "-o", out)
    finally:
        signal.signal(signal.SIGINT, handler)


def test_ctrl_c_while_pandas_reads_is_a_stop_not_a_bad_file(tmp_path, capsys, monkeypatch):
    """pandas wraps a KeyboardInterrupt in its C reader as a ParserError: the command
    said `cannot read as csv` of a sound file, exit 2 (QA, 2026-11-28)."""
    path, out = tmp_path / "s.csv", tmp_path / "groups.jsonl"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    out.write_text("earlier\n")
    read = pd.read_csv

    def interrupted(*args, **kwargs):
        if kwargs.get("nrows") == 1:  # the header
            return read(*args, **kwargs)
        try:  # what the C reader does: the interrupt taken, a parse error with no trace
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except BaseException:  # noqa: BLE001 (as pandas' C reader does)
            pass
        raise pd.errors.ParserError("Error tokenizing data. C error: Calling "
                                    "read(nbytes) on source failed.")

    monkeypatch.setattr(pd, "read_csv", interrupted)
    code, _, err = group_as_in_a_shell(capsys, path, out)
    assert (code, err) == (130, "probcep group: error: stopped by SIGINT (no output file "
                                "is left half-written: it can run again)\n")
    assert out.read_text() == "earlier\n"


def test_ctrl_c_while_grouping_is_one_line_and_leaves_the_output_as_it_was(
        tmp_path, capsys, monkeypatch):
    from probcep.engine.grouping import StreamMatcher

    path, out = tmp_path / "s.csv", tmp_path / "groups.jsonl"
    STREAMS.to_csv(path, index=False)
    out.write_text("earlier\n")

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(StreamMatcher, "feed_columns", interrupted)
    code, _, err = cli(capsys, "group", path, "--pattern", "a b+", "--policy", "complete",
                       "-o", out)
    assert (code, err) == (130, "probcep group: error: stopped by SIGINT (no output file "
                                "is left half-written: it can run again)\n")
    assert out.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl", "s.csv"]


def test_sigterm_and_ctrl_c_at_once_are_one_line(tmp_path, capsys, monkeypatch):
    """The first stop signal set the others to SIG_IGN, and CPython printed an `OSError:
    Signal 15 ignored due to race condition` trace for the one already pending (QA)."""
    path, out = tmp_path / "s.csv", tmp_path / "groups.jsonl"
    path.write_text("stream_id,t,a,b\ns,1,0.5,0.5\n")
    read = pd.read_csv
    both = {signal.SIGINT, signal.SIGTERM}

    def interrupted(*args, **kwargs):
        if kwargs.get("nrows") == 1:  # the header
            return read(*args, **kwargs)
        signal.pthread_sigmask(signal.SIG_BLOCK, both)  # both pending at once
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)
        time.sleep(5)

    monkeypatch.setattr(pd, "read_csv", interrupted)
    unraisable = []  # where CPython's trace goes (pytest would turn it into a warning)
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    code, _, err = group_as_in_a_shell(capsys, path, out)
    assert code in (130, 143) and one_line(err).startswith("probcep group: error: stopped by")
    assert unraisable == [] and not out.exists()
