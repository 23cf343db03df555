"""Ingest and normalize against a plain Spark job, driver memory by size, and the grouping
job on a local standalone cluster against `local[2]`.

1. For each size (default 1, 5 and 10 million long-format readings in Parquet landing
   files) a fresh process with a 1 GiB driver on `local[2]` runs a plain Spark job that
   reads the same landing files and writes them as Parquet (the least any ingest costs)
   twice, the first untimed (it pays the new JVM's class loading and first reader and
   writer, which the steps after it would not), then `ingest_day` and `normalize_day`
   (the executors write the Delta files, the driver commits them). It prints the times
   and our rate over the plain job's, i.e. plain seconds / (ingest + normalize) seconds
   (target >= 0.5), and the Python driver's own peak resident memory
   (`measure.own_peak_mib`; target: at 10M at most 1.2 x that at 1M) with the JVM's.
2. With `--cluster`, a Spark standalone master and two one-core workers are started on
   127.0.0.1 from the installed pyspark, and the grouping job (`run_grouping`, the
   grouping benchmark's streams) runs on them and on `local[2]`, each in a fresh process,
   first pass and best warm pass; prints the ratio cluster / local (target <= 1.3).

The machine's load (`uptime`) is printed next to the figures: other processes only slow
a run down. Rerun with `python benchmarks/ingest_normalize.py [--readings N ...] [--cluster]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lake_memory import DAY, write_landing  # noqa: E402
from measure import TreeSampler, own_peak_mib  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def measure(lake: Path, landing: Path) -> dict:
    """The plain job, then ingest and normalize, in this process."""
    from probcep.config.settings import load_settings
    from probcep.lake.spark import spark_session
    from probcep.pipeline.context import LakeSilver, RunContext
    from probcep.pipeline.ingest import ingest_day
    from probcep.pipeline.normalize import normalize_day

    os.environ["PYSPARK_SUBMIT_ARGS"] = "--driver-memory 1g pyspark-shell"
    spark = spark_session("local[2]", shuffle_partitions=8)
    import great_expectations  # noqa: F401  (untimed, as Spark's start: a command imports
    # it while the JVM starts, `RunContext.spark`)
    with TreeSampler(os.getpid(), 0.5) as tree:  # its children: the JVM
        for name in ("warm-up", "plain"):
            began = time.perf_counter()
            spark.read.parquet(str(landing / DAY.isoformat())).write.parquet(
                str(lake.parent / name))
        plain = time.perf_counter()
        settings = dataclasses.replace(load_settings(), lake_root=lake, landing_dir=landing)
        ctx = RunContext(settings, (), LakeSilver(settings), "bench")
        ctx.__dict__["spark"] = spark
        report = ingest_day(ctx, DAY)
        ingested = time.perf_counter()
        made = normalize_day(ctx, DAY)
        done = time.perf_counter()
    return {"readings": report.rows, "silver_rows": made.rows, "plain_s": plain - began,
            "ingest_s": ingested - plain, "normalize_s": done - ingested,
            "python_peak_mib": own_peak_mib(),
            "jvm_peak_mib": tree.children_mib}


def lake_sizes(sizes: list[int], streams: int) -> None:
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            landing = Path(tmp) / "landing"
            write_landing(landing / DAY.isoformat(), n, streams)
            out = subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "lake"),
                                  str(landing)], check=True, capture_output=True,
                                 text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows.append(r)
        ours = r["ingest_s"] + r["normalize_s"]
        print(f"{r['readings']:>11,} readings: plain Spark read+write {r['plain_s']:6.1f} s, "
              f"ingest {r['ingest_s']:6.1f} s + normalize {r['normalize_s']:6.1f} s "
              f"(rate ours/plain {r['plain_s'] / ours:.2f}), Python driver peak "
              f"{r['python_peak_mib']:5.0f} MiB, JVM peak {r['jvm_peak_mib']:5.0f} MiB  "
              f"[{load()}]", flush=True)
    first, last = rows[0], rows[-1]
    wall = [r["ingest_s"] + r["normalize_s"] for r in (first, last)]
    print(f"readings x{last['readings'] / first['readings']:.0f}: Python driver peak "
          f"x{last['python_peak_mib'] / first['python_peak_mib']:.2f}, wall time "
          f"x{wall[1] / wall[0]:.2f}")


def grouping_child(master: str, files: list[str], staging: Path, repeat: int) -> dict:
    import pyarrow.compute as pc
    from grouping_job import DOMAIN, PATTERN

    from probcep.config.registry import parse_entry
    from probcep.lake.spark import spark_session
    from probcep.pipeline.group_tasks import SAVED_STATES, run_grouping

    entry = parse_entry("bench", {"pattern": PATTERN, "policy": "complete",
                                  "threshold": 0.01, "window": 20}, DOMAIN)
    spark = spark_session(master, "probcep-bench", shuffle_partitions=8)

    def job() -> float:
        folder = staging / uuid.uuid4().hex
        start = time.perf_counter()
        out = run_grouping(spark, files, SAVED_STATES.empty_table(), [entry], DOMAIN, folder)
        seconds = time.perf_counter() - start
        shutil.rmtree(folder, ignore_errors=True)
        assert pc.sum(pc.equal(out["kind"], "group")).as_py() > 0
        return seconds

    first = job()
    return {"first": first, "warm": min(job() for _ in range(repeat))}


def cluster_vs_local(streams: int, timesteps: int, repeat: int) -> None:
    from grouping_job import write_streams

    sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
    from test_cluster_night import standalone_cluster  # the cluster test's

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = write_streams(tmp / "silver", streams, timesteps, 7)
        with standalone_cluster(tmp) as cluster:
            results = {}
            for name, where in (("local[2]", "local[2]"), ("cluster", cluster.url)):
                out = subprocess.run(
                    [sys.executable, __file__, "--grouping-child", where, str(tmp),
                     str(repeat), *files], check=True, capture_output=True, text=True,
                    env={**os.environ, "PYSPARK_SUBMIT_ARGS":
                         "--conf spark.executor.memory=512m pyspark-shell"}).stdout
                results[name] = json.loads(out.strip().splitlines()[-1])
                r = results[name]
                print(f"grouping job, {streams} x {timesteps:,} timesteps on {name:>8}: first "
                      f"{r['first']:6.2f} s, warm {r['warm']:6.2f} s  [{load()}]", flush=True)
    ours, local = results["cluster"], results["local[2]"]
    print(f"cluster / local[2], warm: {ours['warm'] / local['warm']:.2f} "
          f"(first pass {ours['first'] / local['first']:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, nargs="*",
                        default=[1_000_000, 5_000_000, 10_000_000])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--cluster", action="store_true",
                        help="also the grouping job on a local standalone cluster")
    parser.add_argument("--group-streams", type=int, default=200)
    parser.add_argument("--group-timesteps", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--grouping-child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), Path(args.child[1]))))
        return
    if args.grouping_child:
        master, staging, repeat, *files = args.grouping_child
        print(json.dumps(grouping_child(master, files, Path(staging), int(repeat))))
        return
    print(f"load before: {load()}")
    if args.readings:
        lake_sizes(args.readings, args.streams)
    if args.cluster:
        cluster_vs_local(args.group_streams, args.group_timesteps, args.repeat)


if __name__ == "__main__":
    main()
