"""A local Spark session for the gold tests (reused if another suite made one)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pyspark_sql = pytest.importorskip("pyspark.sql")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv
    session = (pyspark_sql.SparkSession.builder.master("local[2]")
               .appName("probcep-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .getOrCreate())
    yield session
