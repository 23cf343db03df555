"""Driver memory while ingesting and normalizing a large day of raw readings.

For each size (default 1 and 10 million long-format readings) a fresh process starts a
local Spark with a small driver (`--driver-memory`, default 1g: in local mode the
executors live in that JVM too), runs `ingest_day` and `normalize_day` on a day of
generated readings in Parquet landing files, and reports its own peak resident memory
(the Python driver) and the JVM's heap limit. Bounded means: ten times the readings,
about the same Python peak, and the JVM never needs more than its small heap.

Rerun with `python benchmarks/lake_memory.py [--readings 1000000 10000000]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from measure import own_peak_mib

DAY = dt.date(2026, 1, 1)
SYMBOLS = np.array(["Hallway", "Door", "Room"])
CHUNK = 1_000_000


def write_landing(folder: Path, readings: int, streams: int, seed: int = 7) -> None:
    """`readings` long rows for one day over `streams` streams, in 1M-row Parquet files."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = np.datetime64(DAY.isoformat(), "us")
    for k, lo in enumerate(range(0, readings, CHUNK)):
        n = min(CHUNK, readings - lo)
        pq.write_table(pa.table({
            "stream_id": np.char.add("person-", rng.integers(0, streams, n).astype(str)),
            "sensor_id": np.char.add("reader-", rng.integers(0, 3, n).astype(str)),
            "ts": start + rng.integers(0, 86_400_000_000, n).astype("timedelta64[us]"),
            "symbol": SYMBOLS[rng.integers(0, 3, n)],
            "score": rng.uniform(0.3, 1.0, n)}), folder / f"readings-{k:03d}.parquet")


def measure(lake: Path, landing: Path, driver_memory: str) -> dict:
    """Ingest and normalize the day in this process; return timings and peak memory."""
    from probcep.config.settings import load_settings
    from probcep.lake.spark import spark_session
    from probcep.pipeline.context import LakeSilver, RunContext
    from probcep.pipeline.ingest import ingest_day
    from probcep.pipeline.normalize import normalize_day

    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {driver_memory} pyspark-shell"
    spark = spark_session("local[2]", shuffle_partitions=8)
    settings = dataclasses.replace(load_settings(), lake_root=lake, landing_dir=landing)
    began = time.perf_counter()
    ctx = RunContext(settings, (), LakeSilver(settings), "bench")
    report = ingest_day(ctx, DAY)
    ingested = time.perf_counter()
    made = normalize_day(ctx, DAY)
    done = time.perf_counter()
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    return {"readings": report.rows, "bronze": report.bronze, "silver_rows": made.rows,
            "ingest_s": ingested - began, "normalize_s": done - ingested,
            "python_peak_mib": own_peak_mib(),
            "jvm_heap_mib": heap / 2 ** 20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--child", nargs=2, metavar=("LAKE", "LANDING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), Path(args.child[1]),
                                 args.driver_memory)))
        return
    rows = []
    for n in args.readings:
        with tempfile.TemporaryDirectory() as tmp:
            landing = Path(tmp) / "landing"
            write_landing(landing / DAY.isoformat(), n, args.streams)
            out = subprocess.run(
                [sys.executable, __file__, "--driver-memory", args.driver_memory,
                 "--child", str(Path(tmp) / "lake"), str(landing)],
                check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            r = rows[-1]
            print(f"{r['readings']:>11,} readings: ingest {r['ingest_s']:6.1f} s, normalize "
                  f"{r['normalize_s']:6.1f} s, silver {r['silver_rows']:,} rows, Python "
                  f"driver peak {r['python_peak_mib']:6.0f} MiB, JVM heap limit "
                  f"{r['jvm_heap_mib']:.0f} MiB", flush=True)
    first, last = rows[0], rows[-1]
    print(f"readings x{last['readings'] / first['readings']:.0f} -> Python driver peak "
          f"x{last['python_peak_mib'] / first['python_peak_mib']:.2f}")


if __name__ == "__main__":
    main()
