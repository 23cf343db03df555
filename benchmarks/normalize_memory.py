"""The Python driver's peak resident memory in each step of normalize, by size.

For each size (default 1 and 10 million readings, the generated day of
`lake_memory.py`) a fresh process with a 1 GiB driver on `local[2]` ingests the day,
then normalizes it with the lake's steps wrapped: each wrapped call, and the stretch
before it, reports the process's peak RSS within it (Linux: the peak is reset through
`/proc/self/clear_refs` at each boundary, so it is this step's, not the process's).
Ingest's own peak is printed first. Issue 17 wants the driver's peak at 10M within
1.2 x that at 1M; this says which step grows.

Rerun with `python benchmarks/normalize_memory.py [--readings N ...]`.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lake_memory import DAY, write_landing  # noqa: E402
from measure import own_peak_mib  # noqa: E402

#: (module, function) pairs timed as steps of normalize.
STEPS = [("probcep.lake.delta", "day_fingerprints"), ("probcep.lake.delta", "staged_frame"),
         ("probcep.lake.expectations", "validate"), ("probcep.lake.delta", "staged_rows"),
         ("probcep.lake.delta", "commit_staged")]


def wrap(peaks: dict, module, name: str) -> None:
    inner = getattr(module, name)

    @functools.wraps(inner)
    def step(*args, **kwargs):
        before = f"before {name}"
        peaks[before] = max(peaks.get(before, 0), own_peak_mib(reset=True))
        try:
            return inner(*args, **kwargs)
        finally:
            peaks[name] = max(peaks.get(name, 0), own_peak_mib(reset=True))

    setattr(module, name, step)


def measure(lake: Path, landing: Path) -> dict:
    import importlib

    from probcep.config.settings import load_settings
    from probcep.lake.spark import spark_session
    from probcep.pipeline.context import LakeSilver, RunContext
    from probcep.pipeline.ingest import ingest_day
    from probcep.pipeline.normalize import normalize_day

    os.environ["PYSPARK_SUBMIT_ARGS"] = "--driver-memory 1g pyspark-shell"
    spark = spark_session("local[2]", shuffle_partitions=8)
    settings = dataclasses.replace(load_settings(), lake_root=lake, landing_dir=landing)
    ctx = RunContext(settings, (), LakeSilver(settings), "bench")
    ctx.__dict__["spark"] = spark
    report = ingest_day(ctx, DAY)
    peaks = {"ingest": own_peak_mib(reset=True)}
    for module, name in STEPS:
        wrap(peaks, importlib.import_module(module), name)
    made = normalize_day(ctx, DAY)
    peaks["after the last step"] = own_peak_mib(reset=True)
    return {"readings": report.rows, "silver_rows": made.rows, "streams": made.streams,
            "peaks": peaks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), Path(args.child[1]))))
        return
    for n in args.readings:
        with tempfile.TemporaryDirectory() as tmp:
            landing = Path(tmp) / "landing"
            write_landing(landing / DAY.isoformat(), n, args.streams)
            out = subprocess.run([sys.executable, __file__, "--child", str(Path(tmp) / "lake"),
                                  str(landing)], check=True, capture_output=True,
                                 text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{r['readings']:,} readings, {r['silver_rows']:,} silver rows, "
              f"{r['streams']} streams; peak RSS (MiB) per step:")
        for step, mib in r["peaks"].items():
            print(f"  {step:<28} {mib:6.0f}")


if __name__ == "__main__":
    main()
