"""The nightly DAG's mapped `group_day` tasks as a real scheduler runs them: one
`probcep group-day` process per pattern, each with its own Spark, at once on one lake;
and two runs of the same day, of which the second waits or stops.

The three processes are held at a barrier just before their first commit to
`gold/groups`, so that their commits race every time (not only when the JVMs happen to
start together); the rows must be those of the three steps run one after another.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from probcep.cli import main
from probcep.demo.sample import generate_sample
from probcep.lake import locks
from probcep.lake.tables import GROUPS, STATES, same_rows

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
DAY = dt.date(2026, 1, 1)
REGISTRY = """patterns:
  room_visit:
    pattern: "Door Room+ Door"
    policy: single
    threshold: 0.001
    window: 60
  hallway_pass:
    pattern: "Hallway Door Hallway"
    policy: single
    threshold: 0.05
    window: 6
  door_twice:
    pattern: "Door Hallway+ Door"
    policy: complete
    threshold: 0.01
    window: 20
"""
PATTERNS = ("room_visit", "hallway_pass", "door_twice")

#: `probcep group-day`, held at a file barrier before its first gold/groups commit.
AT_ONCE = """
import os, sys, time
from pathlib import Path
from probcep.lake import tables

gate, n = Path(sys.argv[1]), int(sys.argv[2])
real = tables.Table.replace_day

def replace_day(table, *args, **kwargs):
    if table == tables.GROUPS:
        (gate / str(os.getpid())).touch()
        deadline = time.monotonic() + 300
        while len(list(gate.iterdir())) < n:
            if time.monotonic() > deadline:
                sys.exit("the other group-day steps never reached their commit")
            time.sleep(0.01)
    return real(table, *args, **kwargs)

tables.Table.replace_day = replace_day
from probcep.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """A day of distributions (two streams) and a registry of three exact patterns."""
    tmp = tmp_path_factory.mktemp("night")
    sample = generate_sample(tmp / "silver", days=1, streams=2, seed=7)
    registry = tmp / "patterns.yaml"
    registry.write_text(REGISTRY)
    return sample.folder, registry


def options(lake, night, *patterns):
    source, registry = night
    return ["group-day", "--date", DAY.isoformat(), "--lake", str(lake), "--source",
            str(source), "--registry", str(registry),
            *(a for p in patterns for a in ("--pattern", p))]


def test_three_group_days_of_one_night_at_once_equal_them_one_after_another(
        spark, tmp_path, night, monkeypatch):
    lake, gate = tmp_path / "lake", tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                        os.environ.get("PYTHONPATH", "")]),
           # three JVMs on a test machine: the quick JIT alone takes a third less CPU
           "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    started = time.monotonic()
    steps = [subprocess.Popen([sys.executable, "-c", AT_ONCE, str(gate), str(len(PATTERNS)),
                               *options(lake, night, p), "--master", "local[1]"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in PATTERNS]
    done = [step.communicate(timeout=600) for step in steps]
    seconds = time.monotonic() - started
    for step, (out, err) in zip(steps, done):
        assert step.returncode == 0, err[-3000:]
        assert f"{DAY}: " in out and "groups final" in out
    assert len(list(gate.iterdir())) == len(PATTERNS)  # all three met before committing

    # the same steps one after another, in this process (its Spark session)
    from probcep.lake import spark as spark_module

    monkeypatch.setattr(spark_module, "spark_session", lambda *a, **k: spark)
    for p in PATTERNS:
        assert main(options(tmp_path / "one-by-one", night, p)) == 0

    for table in (GROUPS, STATES):
        concurrent = table.read(lake)
        sequential = table.read(tmp_path / "one-by-one")
        assert same_rows(concurrent, sequential), table.name  # apart from run ids
        assert set(concurrent["pattern"].to_pylist()) == set(PATTERNS)
    groups = GROUPS.read(lake)
    assert all(groups["pattern"].to_pylist().count(p) > 0 for p in PATTERNS)
    assert len(DeltaTable(str(GROUPS.path(lake))).history()) == len(PATTERNS)  # one each
    assert not list(lake.rglob("_staging-*")) and not list(lake.rglob("*.lock"))
    print(f"three group-day processes at once: {seconds:.1f} s")


HOLD = """
import datetime as dt, sys, time
from probcep.lake.tables import GROUPS
with GROUPS.lock(sys.argv[1], dt.date.fromisoformat(sys.argv[2]), pattern=["room_visit"]):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def _hold(lake, seconds: float) -> subprocess.Popen:
    """Another run of the day, writing room_visit's groups for `seconds`."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(lake), DAY.isoformat(),
                              str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_run_of_the_same_day_stops_in_one_line(tmp_path, night, capsys,
                                                        monkeypatch):
    monkeypatch.setattr(locks, "WAIT_SECONDS", 0.5)
    lake = tmp_path / "lake"
    child = _hold(lake, 60)
    try:
        code = main(options(lake, night, "room_visit"))
    finally:
        child.kill()
        child.wait()
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"probcep group-day: error: another run is writing gold/groups for "
                          f"{DAY} (pattern=room_visit): pid {child.pid} on ")
    assert "gave up after waiting 0.5 s" in err
    assert not GROUPS.exists(lake)  # nothing of the day written


def test_a_second_run_of_the_same_day_waits_for_the_first(spark, tmp_path, night, caplog,
                                                          monkeypatch):
    from probcep.lake import spark as spark_module

    monkeypatch.setattr(spark_module, "spark_session", lambda *a, **k: spark)
    lake = tmp_path / "lake"
    child = _hold(lake, 2.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=locks.__name__):
        code = main(options(lake, night, "room_visit"))
    child.wait()
    assert code == 0
    assert time.monotonic() - started >= 1.5
    assert any(f"another run is writing gold/groups for {DAY} (pattern=room_visit)" in m
               and "waiting up to" in m for m in caplog.messages)
    assert any(m.startswith(f"took the lock on gold/groups for {DAY} (pattern=room_visit) "
                            f"after waiting ") for m in caplog.messages)
    assert GROUPS.read(lake).num_rows > 0
    assert GROUPS.version(lake) == 0
