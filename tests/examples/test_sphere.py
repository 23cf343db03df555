"""The SPHERE house end to end (examples/sphere/): the six annotated sequences converted,
six nights run, the alerts scored against the true visits. The figures asserted here are
the ones the example's README and docs/performance.md report.

The data is not in the repository: set PROBCEP_SPHERE_DIR to the release's `train/`
folder (default: `../shared/realdata/sphere/train` beside the checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from probcep.cli import main
from probcep.lake.tables import SILVER

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sphere"
RAW = Path(os.environ.get("PROBCEP_SPHERE_DIR",
                          ROOT.parent / "shared" / "realdata" / "sphere" / "train"))
DAYS = ("2026-05-01", "2026-05-06")
#: At the alerts (threshold 0.5): (true, found, false alarms) per pattern. The true
#: episodes follow convert.py's floor-plan rule: both kitchen stays of every sequence
#: (the second is annotated as left for the stairs, through the hall), and 00002's bed1
#: and bath visits (annotated bed1 -> bath, across the landing).
AT_ALERTS = {"toilet_visit": (6, 6, 4), "kitchen_visit": (12, 12, 3),
             "bed1_visit": (6, 6, 2), "bed2_visit": (6, 6, 0), "bath_visit": (6, 6, 0)}

pytestmark = [pytest.mark.slow, pytest.mark.soak, pytest.mark.skipif(
    not (RAW / "00001").is_dir(),
    reason=f"SPHERE data not found at {RAW} (set PROBCEP_SPHERE_DIR to the release's train/)")]


@pytest.fixture(scope="module")
def house(spark, tmp_path_factory):
    """The six sequences converted and run through six nights, in this test session's
    Spark."""
    base = tmp_path_factory.mktemp("sphere")
    done = subprocess.run([sys.executable, str(EXAMPLE / "convert.py"), str(RAW),
                           str(base / "out")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {"PROBCEP_LANDING_DIR": str(base / "out" / "landing"),
           "PROBCEP_LAKE_ROOT": str(base / "lake")}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        assert main(["run", "--settings", str(EXAMPLE / "probcep.yaml"), "--from", DAYS[0],
                     "--to", DAYS[1]]) == 0
    return base


def evaluate(house, capsys, *extra):
    capsys.readouterr()
    assert main(["evaluate", "--episodes", str(house / "out" / "episodes.csv"), "--lake",
                 str(house / "lake"), "--settings", str(EXAMPLE / "probcep.yaml"), "--json",
                 *extra]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_alerts_find_every_true_visit(house, capsys):
    got = {r["pattern"]: (r["true"], r["found"], r["false_alarms"])
           for r in evaluate(house, capsys)}
    assert got == AT_ALERTS


def test_the_best_threshold_of_the_sweep(house, capsys):
    rows = evaluate(house, capsys, "--sweep", "--pattern", "toilet_visit", "--pattern",
                    "kitchen_visit")
    toilet = [r for r in rows if r["pattern"] == "toilet_visit"]
    best = min(toilet, key=lambda r: (-r["found"], r["false_alarms"], r["threshold"]))
    assert (best["threshold"], best["found"], best["false_alarms"]) == (0.75, 6, 0)
    assert [r["threshold"] for r in toilet if r["found"] >= 0.9 * r["true"]
            and r["false_alarms"] <= r["true"] / 2] == [0.65, 0.7, 0.75, 0.8, 0.85, 0.9,
                                                        0.95]
    kitchen = [r for r in rows if r["pattern"] == "kitchen_visit"]
    best = min(kitchen, key=lambda r: (-r["found"], r["false_alarms"], r["threshold"]))
    assert (best["threshold"], best["found"], best["false_alarms"]) == (0.55, 12, 2)
    # Met for kitchen visits (README §4) from 0.15 to 0.7; the false alarms left are the
    # kitchen visits before and after the annotated span (00001's two from 0.55 up).
    assert [r["threshold"] for r in kitchen if r["found"] >= 0.9 * r["true"]
            and r["false_alarms"] <= r["true"] / 2] == [0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
                                                        0.45, 0.5, 0.55, 0.6, 0.65, 0.7]
    found = {r["threshold"]: (r["found"], r["false_alarms"]) for r in kitchen}
    assert found[0.1] == (12, 9) and found[0.5] == (12, 3) and found[0.65] == (12, 2)
    assert found[0.7] == (11, 2) and found[0.85] == (6, 2) and found[0.95] == (1, 1)


def test_silver_holds_only_seconds_with_readings(house):
    landing = pd.concat(pd.read_csv(f) for f in (house / "out" / "landing").rglob("*.csv"))
    seconds = pd.to_datetime(landing.ts).dt.floor("s")
    heard = landing.assign(s=seconds).groupby(["stream_id", "s"]).ngroups
    rows = SILVER.read(house / "lake").num_rows
    assert rows <= 2 * heard
