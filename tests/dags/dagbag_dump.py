"""Load dags/ in a DagBag and write what the tests check to a JSON file.

Run in a fresh interpreter (by conftest.py) with AIRFLOW_HOME pointing at a temporary
folder, so that nothing from the developer's Airflow leaks in and the parse is timed cold.
"""

from __future__ import annotations

import json
import sys
import time

HEAVY = ("pyspark", "pandas", "great_expectations", "deltalake", "probcep", "numba")


def describe(dag) -> dict:
    tasks = {}
    for t in dag.tasks:
        tasks[t.task_id] = {
            "type": type(t).__name__,
            "operator": getattr(t, "operator_class", type(t)).__name__
            if not isinstance(getattr(t, "operator_class", None), dict)
            else t.operator_class["task_type"],
            "mapped": type(t).__name__.endswith("MappedOperator"),
            "upstream": sorted(t.upstream_task_ids),
            "depends_on_past": bool(t.depends_on_past),
            "owner": t.owner,
            "retries": t.retries,
            "execution_timeout": t.execution_timeout.total_seconds()
            if t.execution_timeout else None,
            "application": (t.partial_kwargs.get("application") if hasattr(t, "partial_kwargs")
                            else getattr(t, "application", None)),
            "conn_id": (t.partial_kwargs.get("conn_id") if hasattr(t, "partial_kwargs")
                        else getattr(t, "_conn_id", None)),
            "timeout": getattr(t, "timeout", None) if not hasattr(t, "partial_kwargs")
            else t.partial_kwargs.get("timeout"),
        }
    return {
        "tags": sorted(dag.tags),
        "doc_md": dag.doc_md,
        "schedule": None if dag.schedule is None else str(dag.schedule),
        "max_active_runs": dag.max_active_runs,
        "params": {k: dag.params.get_param(k).schema for k in dag.params},
        "tasks": tasks,
    }


def main(folder: str, out: str) -> None:
    before = set(sys.modules)
    start = time.perf_counter()
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(folder)
    total = time.perf_counter() - start
    result = {
        "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
        "durations": {s.file: s.duration.total_seconds() for s in bag.dagbag_stats},
        "total_seconds": total,
        "heavy_imported": sorted(m for m in set(sys.modules) - before
                                 if m.split(".")[0] in HEAVY),
        "dags": {dag_id: describe(dag) for dag_id, dag in bag.dags.items()},
    }
    with open(out, "w") as f:
        json.dump(result, f)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
