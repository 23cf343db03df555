"""probcep installed from its wheel works with no checkout: settings, registry, expectation
suites and the bundled sample come from the package.

The wheel is built from this tree and installed (without dependencies) into a fresh
virtual environment outside the checkout; the environment borrows this one's
third-party packages through a path entry, which does not activate this environment's
editable install of probcep, so every probcep module must come from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(args, cwd, env=None, timeout=600):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-4000:])
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment with the wheel installed; returns its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(base / "dist"), str(ROOT)], cwd=base)
    wheel, = (base / "dist").glob("probcep-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    site = run([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                "print(sysconfig.get_paths()['purelib'])"], cwd=base).stdout.strip()
    (Path(site) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-q",
         str(wheel)], cwd=base)
    return venv / "bin"


def test_installed_package_comes_from_the_wheel(installed, tmp_path):
    where = run([str(installed / "python"), "-c", "import probcep.lake.expectations as e; "
                 "print(e.__file__); print(e.suite_spec('gold_groups')['name'])"],
                cwd=tmp_path).stdout.split()
    assert where[0].startswith(str(installed.parent)) and where[1] == "gold_groups"


def test_group_and_a_night_from_the_installed_wheel(installed, tmp_path):
    streams = tmp_path / "streams.csv"
    streams.write_text("stream_id,t,a,b,c\ns,1,1.0,0,0\ns,2,0.3,0.7,0\ns,3,0.1,0.8,0.1\n"
                       "s,4,0.1,0.7,0.2\ns,5,0,0.9,0.1\ns,6,0,0,1.0\n")
    out = run([str(installed / "probcep"), "group", "--pattern", "a b+ c", "--policy",
               "single", str(streams)], cwd=tmp_path).stdout
    assert '"probability": 0.9437' in out  # docs/semantics.md §6, single overlap at θ = 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBCEP_")}
    env["PYSPARK_PYTHON"] = str(installed / "python")
    night = run([str(installed / "probcep"), "run", "--date", "2026-01-01", "--master",
                 "local[2]", "--pattern", "room_visit"], cwd=tmp_path, env=env).stdout
    assert "groups final over 4 streams (validated)" in night, night
    # the packaged defaults put the lake under the working directory
    assert (tmp_path / "lake" / "local" / "gold" / "groups" / "_delta_log").is_dir()
