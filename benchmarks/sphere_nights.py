"""Nights of the SPHERE house (examples/sphere/): this code against an earlier commit (dense
silver, a day at a time), on the same landing files, same machine, one run.

    .venv/bin/python benchmarks/sphere_nights.py OUT_DIR [--baseline REV]
    .venv/bin/python benchmarks/sphere_nights.py OUT_DIR --per-day   # this code alone

OUT_DIR is what `examples/sphere/convert.py RAW_DIR OUT_DIR` wrote. The baseline is the
tree of REV (default b518a6d, the last commit before sparse silver), checked out into a
temporary git worktree and run with this environment's packages. Each side runs `probcep
run` over the first day alone and over all six days, each in a fresh process with a fresh
lake, timed by the wall clock and by the CPU time of the whole process tree (the Python
driver and Spark's JVM, sampled every 0.2 s), which a busy machine inflates far less.
(six − one) / 5 is what a day adds to a backfill beyond the fixed cost paid once
(Spark's start, the registry, GX's set-up). Prints both sides, the ratios, whether
both wrote the same groups (run metadata aside), and the stack's fixed cost: a fresh
process to a local Spark session, one trivial job and GX imported, which any run of six
nights pays whatever it does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAYS = ("2026-05-01", "2026-05-06")


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float


def night_run(src: Path, settings: Path, landing: Path, lake: Path,
              days: tuple[str, str] = DAYS) -> Timed:
    """`probcep run` over the days with the package at `src`. Its CPU time is the kernel's
    account of the process and all its descendants: this process is made their
    subreaper, so Spark's JVM, which PySpark never waits for and which ends after the
    driver, comes back to it and is waited for too; the sum of `wait4`'s resource usage
    over them counts no process twice and misses none between samples."""
    import ctypes

    subreaper = 36  # PR_SET_CHILD_SUBREAPER (Linux)
    if ctypes.CDLL(None, use_errno=True).prctl(subreaper, 1, 0, 0, 0):
        raise SystemExit("cannot become the runs' subreaper (Linux prctl)")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PROBCEP_")},
           "PYTHONPATH": str(src), "PROBCEP_LANDING_DIR": str(landing),
           "PROBCEP_LAKE_ROOT": str(lake), "PYSPARK_PYTHON": sys.executable}
    with tempfile.TemporaryFile("w+") as err:  # a pipe read at the end could fill and block
        began = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", "import sys; from probcep.cli import "
                                 "main; sys.exit(main(sys.argv[1:]))", "run", "--settings",
                                 str(settings), "--from", days[0], "--to", days[1],
                                 "--master", "local[2]"],
                                env=env, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                cwd=lake.parent)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
        while True:  # the orphans (the JVM), reparented to this process as they end
            try:
                _, _, usage = os.wait4(-1, 0)
            except ChildProcessError:
                break
            cpu += usage.ru_utime + usage.ru_stime
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"{src}: probcep run failed:\n{err.read()[-3000:]}")
    return Timed(wall, cpu)


def groups(lake: Path):
    from deltalake import DeltaTable

    frame = DeltaTable(str(lake / "gold" / "groups")).to_pandas()
    keys = ["pattern", "stream_id", "t_start", "t_end", "probability", "n_matches",
            "max_match_probability"]
    return frame[keys].sort_values(keys).reset_index(drop=True)


def silver_rows(lake: Path) -> int:
    from deltalake import DeltaTable

    return len(DeltaTable(str(lake / "silver" / "distributions")).to_pyarrow_table(
        columns=["t"]))


#: What every run pays before its first row, as the pipeline pays it: Python and probcep
#: imported, a local Spark session started with GX imported meanwhile, one trivial job,
#: GX's import finished.
FLOOR = """
import threading, time
began = time.perf_counter()
from probcep.lake.expectations import import_meanwhile
from probcep.lake.spark import spark_session
import_meanwhile()
spark_session("local[2]").range(10).count()
for t in threading.enumerate():
    if t.name == "import great_expectations":
        t.join()
print(time.perf_counter() - began)
"""


def floor(src: Path) -> float:
    """Seconds from a fresh interpreter to Spark and GX ready (the stack's fixed cost)."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FLOOR], env={**os.environ,
                          "PYTHONPATH": str(src)}, capture_output=True, text=True, check=True)
    float(done.stdout.split()[-1])  # the script ran to its end
    return time.perf_counter() - began


def side(src: Path, settings: Path, landing: Path, tmp: Path, name: str) -> dict:
    """One day and six days with the package at `src`: timings, silver rows, groups."""
    out = {}
    for label, days in (("one", (DAYS[0], DAYS[0])), ("six", DAYS)):
        lake = tmp / f"{name}-{label}" / "lake"
        lake.parent.mkdir()
        out[label] = night_run(src, settings, landing, lake, days)
        if label == "six":
            out["silver"], out["groups"] = silver_rows(lake), groups(lake)
    return out


def per_day(r: dict, what: str) -> float:
    return (getattr(r["six"], what) - getattr(r["one"], what)) / 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the converter's OUT_DIR")
    parser.add_argument("--baseline", default="b518a6d",
                        help="the commit to compare with (default: dense silver)")
    parser.add_argument("--per-day", action="store_true",
                        help="this code alone: one day and six days")
    args = parser.parse_args()
    settings = ROOT / "examples" / "sphere" / "probcep.yaml"
    landing = args.out.resolve() / "landing"
    sides = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.per_day:
            tree = tmp / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                            str(tree), args.baseline], check=True)
            try:
                sides[f"baseline {args.baseline}"] = side(tree / "src", settings, landing,
                                                          tmp, "baseline")
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], check=False)
        sides["this code"] = side(ROOT / "src", settings, landing, tmp, "this")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}\n")
    print("| code | one day: wall s (CPU s) | six days: wall s (CPU s) | a day adds: wall s "
          "(CPU s) | silver rows | groups |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in sides.items():
        print(f"| {name} | {r['one'].wall:.1f} ({r['one'].cpu:.1f}) | {r['six'].wall:.1f} "
              f"({r['six'].cpu:.1f}) | {per_day(r, 'wall'):.1f} ({per_day(r, 'cpu'):.1f}) | "
              f"{r['silver']:,} | {len(r['groups'])} |")
    fixed = min(floor(ROOT / "src") for _ in range(3))
    print(f"\nthe stack's fixed cost (a fresh process to a local Spark session, one job and "
          f"GX imported; best of 3): {fixed:.1f} s")
    if len(sides) == 2:
        (_, base), (_, this) = sides.items()
        print(f"ten times faster than the baseline's six days means six nights within "
              f"{base['six'].wall / 10:.1f} s, {base['six'].wall / 10 / fixed:.2f} times "
              f"that fixed cost")
        print(f"\nsix days, baseline / this code: wall {base['six'].wall / this['six'].wall:.2f}x"
              f", CPU {base['six'].cpu / this['six'].cpu:.2f}x; a day's added cost: wall "
              f"{per_day(base, 'wall') / max(per_day(this, 'wall'), 1e-9):.1f}x, CPU "
              f"{per_day(base, 'cpu') / max(per_day(this, 'cpu'), 1e-9):.1f}x; same groups: "
              f"{base['groups'].equals(this['groups'])}")


if __name__ == "__main__":
    main()
