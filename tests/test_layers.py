"""The layers stay clean.

Imports point one way: engine ← config ← lake ← pipeline ← cli/demo ← jobs/DAGs. A module
may import its own layer and the layers below it, never one above, including imports
made inside functions. The engine and `probcep group` import nothing heavy.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
HEAVY = ("pyspark", "deltalake", "great_expectations", "airflow")
#: Module prefixes, lowest layer first (the root package holds only its version).
LAYERS = (
    ("engine", ("probcep.errors", "probcep.engine")),
    ("config", ("probcep.config",)),
    ("lake", ("probcep.lake",)),
    ("pipeline", ("probcep.pipeline",)),
    ("cli/demo", ("probcep.cli", "probcep.demo", "probcep.__main__")),
    ("jobs/dags", ("jobs", "dags")),
)


def layer(module: str) -> int:
    if module == "probcep":
        return 0
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module}: in no layer; add it to LAYERS")


def imports(path: Path, module: str) -> set[str]:
    """The probcep modules a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = module.split(".")[:-node.level]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
    return {m for m in found if m == "probcep" or m.startswith("probcep.")}


def modules(root: Path):
    """(module name, path) of every module of the package, the jobs and the DAGs."""
    for path in sorted((root / "src" / "probcep").rglob("*.py")):
        parts = path.relative_to(root / "src").with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path
    for folder in ("jobs", "dags"):
        for path in sorted((root / folder).glob("*.py")):
            yield f"{folder}.{path.stem}", path


def back_edges(root: Path) -> list[str]:
    return [f"{name} ({LAYERS[layer(name)][0]}) imports {target} "
            f"({LAYERS[layer(target)][0]})"
            for name, path in modules(root) for target in sorted(imports(path, name))
            if layer(target) > layer(name)]


def test_imports_point_down_the_layers():
    assert back_edges(ROOT) == []


def test_a_back_edge_is_caught(tmp_path):
    """The check itself: a lake module importing a pipeline step is reported."""
    lake = tmp_path / "src" / "probcep" / "lake"
    lake.mkdir(parents=True)
    (tmp_path / "src" / "probcep" / "__init__.py").write_text("")
    (lake / "tables.py").write_text("def f():\n    from probcep.pipeline import run\n")
    assert back_edges(tmp_path) == [
        "probcep.lake.tables (lake) imports probcep.pipeline (pipeline)"]


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
                            "import probcep.cli.group")
    assert not loaded & set(HEAVY)
