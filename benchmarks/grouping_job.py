"""The grouping job's throughput on Spark against the engine alone, on the same data.

Writes S streams × N timesteps of the seeds' synthetic stream as Parquet, then measures
  1. the engine on one core: every stream fed to a StreamMatcher in this process;
  2. the Spark job (`probcep.gold.grouping.run_grouping`) on `local[C]`, reading the
     Parquet and collecting the groups and states through Arrow;
and prints timesteps/s for both and the ratio job / (engine × C). The issue's target is
a ratio of at least 0.5 (Spark, Arrow and Delta overhead at most 2×).

Rerun with `python benchmarks/grouping_job.py [--streams 200 --timesteps 50000]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import DOMAIN, PATTERN, synthetic_stream  # noqa: E402

from probcep.engine import StreamMatcher  # noqa: E402
from probcep.gold.grouping import STATE_SCHEMA, run_grouping  # noqa: E402
from probcep.registry import parse_entry  # noqa: E402


def write_streams(path: Path, streams: int, timesteps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    writer = None
    for k in range(streams):
        probs = synthetic_stream(timesteps, rng)
        table = pa.table({"stream_id": [f"s{k:04d}"] * timesteps,
                          "t": np.arange(timesteps, dtype=np.int64),
                          **{d: probs[:, i] for i, d in enumerate(DOMAIN)}})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def engine_alone(path: Path, entry) -> tuple[float, int]:
    table = pq.read_table(path)
    ids = table["stream_id"].to_numpy(zero_copy_only=False)
    probs = np.column_stack([table[d].to_numpy() for d in DOMAIN])
    bounds = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    warm = StreamMatcher(entry.query)
    warm.feed(0, probs[:10_000])
    start = time.perf_counter()
    n = 0
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(ids)]):
        m = StreamMatcher(entry.query, warm.transducer)
        n += len(m.feed(0, probs[lo:hi]))
    return time.perf_counter() - start, n


def spark_job(path: Path, entry, cores: int) -> tuple[float, int]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(f"local[{cores}]").appName("probcep-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(4 * cores))
             .config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    empty = spark.createDataFrame([], STATE_SCHEMA)
    silver = spark.read.parquet(str(path))
    run_grouping(silver.limit(20_000), empty, [entry], DOMAIN).toArrow()  # start workers
    start = time.perf_counter()
    out = run_grouping(silver, empty, [entry], DOMAIN).toArrow()
    seconds = time.perf_counter() - start
    spark.stop()
    return seconds, int(np.sum(np.asarray(out["kind"].to_pylist()) == "group"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--timesteps", type=int, default=50_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--policy", default="complete")
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    entry = parse_entry("bench", {"pattern": PATTERN, "policy": args.policy,
                                  "threshold": args.threshold, "window": args.window}, DOMAIN)
    rows = args.streams * args.timesteps
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "silver.parquet"
        write_streams(path, args.streams, args.timesteps, args.seed)
        eng_s, eng_groups = engine_alone(path, entry)
        job_s, job_groups = spark_job(path, entry, args.cores)
    assert eng_groups == job_groups, (eng_groups, job_groups)
    eng_rate, job_rate = rows / eng_s, rows / job_s
    print(f"## Grouping job vs engine, {args.streams} streams × {args.timesteps:,} timesteps "
          f"({rows:,} rows), `{PATTERN}` {args.policy} θ={args.threshold} w={args.window}")
    print("| run | seconds | timesteps/s | groups |")
    print("|---|---|---|---|")
    print(f"| engine, one core | {eng_s:.1f} | {eng_rate:,.0f} | {eng_groups:,} |")
    print(f"| Spark job, local[{args.cores}] | {job_s:.1f} | {job_rate:,.0f} | {job_groups:,} |")
    print(f"\njob / (engine × {args.cores}) = {job_rate / (eng_rate * args.cores):.2f} "
          "(target >= 0.5)")


if __name__ == "__main__":
    main()
