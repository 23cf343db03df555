"""The layers stay clean: the engine and `probcep group` import nothing heavy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pyspark", "deltalake", "great_expectations", "airflow")


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return {name.split(".")[0] for name in out.split()}


def test_engine_imports_no_spark_delta_gx_or_airflow():
    loaded = _modules_after("import probcep.engine, probcep.engine.approx")
    assert not loaded & set(HEAVY)


def test_group_command_imports_nothing_heavy():
    loaded = _modules_after("from probcep.cli import build_parser\nbuild_parser()\n"
                            "import probcep.commands.group")
    assert not loaded & set(HEAVY)
