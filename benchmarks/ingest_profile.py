"""Where ingest's time goes: its steps and every Spark job, on a generated day.

A fresh process with a 1 GiB driver on `local[2]` (the ingest benchmark's setting)
ingests a day of `--readings` long-format readings in 1M-row Parquet landing files
(`lake_memory.write_landing`), with Spark's event log on. It prints the wall time of
ingest's steps (`time.perf_counter()` around them), then each Spark job with its stages:
wall time, task time, executor CPU time, GC, shuffle written and spill (Spark's
in-memory size of what was spilled). Executor CPU time moves less with the machine's
load than wall time does; the load (`uptime`) is printed too.

Rerun with `python benchmarks/ingest_profile.py [--readings 5000000]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lake_memory import DAY, write_landing  # noqa: E402

#: ingest's steps, timed: (module, function); a step the code does not have is skipped
#: (`_taken` is the per-file and duplicate counts of the code before 2026-11-24 11:00)
STEPS = [("probcep.pipeline.ingest", "read_records"), ("probcep.pipeline.ingest", "_per_file"),
         ("probcep.pipeline.ingest", "_taken"),
         ("probcep.lake.expectations", "validate"), ("probcep.pipeline.ingest", "staged_days"),
         ("probcep.lake.delta", "day_fingerprints"), ("probcep.pipeline.ingest", "_duplicates"),
         ("probcep.pipeline.ingest", "commit_staged")]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def profile(landing: Path, lake: Path, events: Path) -> list[tuple[str, float]]:
    """Ingests the day with each step timed and Spark's event log written to `events`."""
    import importlib

    os.environ["PYSPARK_SUBMIT_ARGS"] = "--driver-memory 1g pyspark-shell"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    SparkSession.builder.master("local[2]").config("spark.eventLog.enabled", "true") \
        .config("spark.eventLog.dir", str(events)) \
        .config("spark.eventLog.compress", "false").getOrCreate()
    from probcep.config.settings import load_settings
    from probcep.lake.spark import spark_session  # the same session, its settings added
    from probcep.pipeline import ingest
    from probcep.pipeline.context import LakeSilver, RunContext

    spark = spark_session("local[2]", shuffle_partitions=8)
    steps: list[tuple[str, float]] = []
    for module, name in STEPS:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            setattr(mod, name, _timed(getattr(mod, name), name, spark, steps))
    import great_expectations  # noqa: F401  (a command imports it while the JVM starts)

    settings = dataclasses.replace(load_settings(), lake_root=lake, landing_dir=landing)
    ctx = RunContext(settings, (), LakeSilver(settings), "profile")
    ctx.__dict__["spark"] = spark
    start = time.perf_counter()
    ingest.ingest_day(ctx, DAY)
    return [("ingest_day", time.perf_counter() - start), *steps]


def _timed(f, name: str, spark, steps: list):
    """`f` timed into `steps`, its Spark jobs described by `name`; a context manager
    (`staged_days`) is timed until it is entered."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        spark.sparkContext.setJobDescription(name)
        start = time.perf_counter()
        try:
            out = f(*args, **kwargs)
            if hasattr(out, "__enter__"):
                entered = out.__enter__()
                steps.append((name, time.perf_counter() - start))
                return _Entered(out, entered)
            steps.append((name, time.perf_counter() - start))
            return out
        except BaseException:
            steps.append((name, time.perf_counter() - start))
            raise
    return wrapper


class _Entered:
    def __init__(self, manager, value):
        self.manager, self.value = manager, value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return self.manager.__exit__(*exc)


def jobs(events: Path) -> None:
    """Prints each Spark job of the event log in `events` with its stages."""
    lines = [json.loads(x) for f in sorted(events.rglob("events_*")) for x in f.open()]
    started, ended, stages = {}, {}, {}
    for e in lines:
        if e["Event"] == "SparkListenerJobStart":
            started[e["Job ID"]] = e
        elif e["Event"] == "SparkListenerJobEnd":
            ended[e["Job ID"]] = e["Completion Time"]
        elif e["Event"] == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            acc = {a["Name"]: int(a.get("Value") or 0) for a in info.get("Accumulables", [])
                   if str(a.get("Value", "")).lstrip("-").isdigit()}
            stages[info["Stage ID"]] = (
                (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000,
                acc.get("internal.metrics.executorRunTime", 0) / 1000,
                acc.get("internal.metrics.executorCpuTime", 0) / 1e9,
                acc.get("internal.metrics.jvmGCTime", 0) / 1000,
                acc.get("internal.metrics.shuffle.write.bytesWritten", 0) / 2 ** 20,
                acc.get("internal.metrics.memoryBytesSpilled", 0) / 2 ** 20,
                info["Number of Tasks"])
    for job, e in sorted(started.items()):
        wall = (ended.get(job, e["Submission Time"]) - e["Submission Time"]) / 1000
        what = e.get("Properties", {}).get("spark.job.description", "")
        print(f"job {job:3d} {wall:7.2f} s  {what}")
        for s in e["Stage IDs"]:
            if s in stages:
                w, run, cpu, gc, shuffled, spilled, tasks = stages[s]
                print(f"    stage {s:3d} {w:7.2f} s, {tasks:3d} tasks: task time {run:7.2f} s, "
                      f"CPU {cpu:6.2f} s, GC {gc:5.2f} s, shuffle written {shuffled:7.1f} MiB, "
                      f"spill {spilled:7.1f} MiB")
    total = [sum(v[i] for v in stages.values()) for i in (1, 2, 5)]
    print(f"all stages: task time {total[0]:.1f} s, executor CPU {total[1]:.1f} s, "
          f"spill {total[2]:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, default=5_000_000)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        landing, lake, events = map(Path, args.child)
        print(json.dumps(profile(landing, lake, events)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_landing(tmp / "landing" / DAY.isoformat(), args.readings, args.streams)
        (tmp / "events").mkdir()
        print(f"load before: {load()}", flush=True)
        out = subprocess.run([sys.executable, __file__, "--child", str(tmp / "landing"),
                              str(tmp / "lake"), str(tmp / "events")], check=True,
                             capture_output=True, text=True).stdout
        print(f"{args.readings:,} readings  [{load()}]")
        for name, seconds in json.loads(out.strip().splitlines()[-1]):
            print(f"  {name:18s} {seconds:7.2f} s")
        jobs(tmp / "events")


if __name__ == "__main__":
    main()
