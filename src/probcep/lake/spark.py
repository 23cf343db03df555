"""How probcep starts Spark: local by default, any master by setting it.

Under `spark-submit` the master comes from spark-submit (`master=None` leaves it alone);
run directly, PySpark's default is `local[*]`.

PySpark starts its Python workers with `PYSPARK_PYTHON` (the `spark.pyspark.python`
setting is not read on this path), so it is pointed at this interpreter, whose
environment has probcep and the engine's dependencies.
"""

from __future__ import annotations

import os
import sys


def spark_session(master: str | None = None, app: str = "probcep",
                  shuffle_partitions: int = 8):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    session = (builder.appName(app)
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # staged Parquet is read back by delta-rs: plain microsecond timestamps
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session
