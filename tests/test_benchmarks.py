"""Every benchmark script still starts: its imports resolve and its options parse
(`--help`). A benchmark is how docs/performance.md's numbers are made again; one once
lost the stream generators it imported to another script's rewrite, and nothing ran it
(QA, 2026-11-28)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_a_benchmark_script_starts(script):
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    if "argparse" in script.read_text():
        assert done.stdout.startswith("usage:"), done.stdout[:500]


#: Scripts of the engine alone, run at a tiny size to the end (a few seconds each): the
#: measuring code runs, not only the options (QA, 2026-11-28: a check that compared only
#: the numbers of groups, a ratio against a single baseline run, went unseen).
TINY = {
    "engine_throughput.py": (["--timesteps", "2000", "--windows", "5", "--repeat", "1",
                              "--naive-timesteps", "50", "--naive-windows", "3", "--short",
                              "1000", "--long", "3000", "--block", "500"],
                             "## 1. Throughput"),
    "group_stages.py": (["--timesteps", "2000", "--repeat", "1"], "group / engine:"),
    "live.py": (["--streams", "20", "--steps", "5"], "| 1.00 |"),
}


@pytest.mark.parametrize("script", sorted(TINY))
def test_a_benchmark_runs_to_the_end_at_a_tiny_size(script):
    args, printed = TINY[script]
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert printed in done.stdout, done.stdout[-2000:]
