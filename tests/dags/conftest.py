"""The DAG folder loaded once per session, in a fresh interpreter on a temporary AIRFLOW_HOME."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for Airflow commands that touches nothing outside `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROBCEP_"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    })
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def dagbag(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("airflow_home")
    out = home / "dagbag.json"
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("dagbag_dump.py")),
                           str(DAGS), str(out)], env=airflow_env(home), cwd=home,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def dag_module(tmp_path_factory, name: str):
    """dags/<name>.py as a module, Airflow configured under a temporary home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow_home")))
        spec = importlib.util.spec_from_file_location(f"{name}_dag", DAGS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module
