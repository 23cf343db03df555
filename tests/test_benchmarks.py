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
