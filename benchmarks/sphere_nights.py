"""Six nights of the SPHERE house (examples/sphere/): this code's sparse silver against the
dense silver of an earlier commit, on the same landing files, same machine, one run.

    .venv/bin/python benchmarks/sphere_nights.py OUT_DIR --baseline REV
    .venv/bin/python benchmarks/sphere_nights.py OUT_DIR --per-day

OUT_DIR is what `examples/sphere/convert.py RAW_DIR OUT_DIR` wrote. The baseline is the
tree of REV (a commit before sparse silver, e.g. b518a6d), checked out into a temporary
git worktree and run with this environment's packages; both sides run `probcep run` over
the six days in a fresh process with a fresh lake. Prints each side's wall time and
silver rows, the ratio, and whether both wrote the same groups (run metadata aside).
With `--per-day`, this code alone: a backfill of the first day and one of all six, each
in a fresh process with a fresh lake; (six − one) / 5 is what a day adds to a backfill
beyond the fixed cost paid once (Spark's start, the registry, GX's set-up).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAYS = ("2026-05-01", "2026-05-06")


def night_run(src: Path, settings: Path, landing: Path, lake: Path,
              days: tuple[str, str] = DAYS) -> float:
    """`probcep run` over the days with the package at `src`; wall seconds."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PROBCEP_")},
           "PYTHONPATH": str(src), "PROBCEP_LANDING_DIR": str(landing),
           "PROBCEP_LAKE_ROOT": str(lake), "PYSPARK_PYTHON": sys.executable}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "import sys; from probcep.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "run", "--settings", str(settings),
                           "--from", days[0], "--to", days[1], "--master", "local[2]"],
                          env=env, capture_output=True, text=True, cwd=lake.parent)
    if done.returncode:
        raise SystemExit(f"{src}: probcep run failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - began


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the converter's OUT_DIR")
    parser.add_argument("--baseline", default="b518a6d",
                        help="the commit whose dense silver to compare with")
    parser.add_argument("--per-day", action="store_true",
                        help="time this code's backfill of one day and of six instead")
    args = parser.parse_args()
    settings = ROOT / "examples" / "sphere" / "probcep.yaml"
    landing = args.out.resolve() / "landing"
    if args.per_day:
        per_day(settings, landing)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tree = tmp / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                        str(tree), args.baseline], check=True)
        try:
            rows = {}
            for name, src in (("dense (baseline)", tree / "src"), ("sparse", ROOT / "src")):
                lake = tmp / name.split()[0] / "lake"
                lake.parent.mkdir()
                seconds = night_run(src, settings, landing, lake)
                rows[name] = (seconds, silver_rows(lake), groups(lake))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tree)], check=False)
    print("| silver | wall s (6 nights) | silver rows | groups |")
    print("| --- | --- | --- | --- |")
    for name, (seconds, n, g) in rows.items():
        print(f"| {name} | {seconds:.1f} | {n:,} | {len(g)} |")
    (dense_s, _, dense_g), (sparse_s, _, sparse_g) = rows.values()
    print(f"\nsparse / dense wall time: {sparse_s / dense_s:.3f} "
          f"(dense takes {dense_s / sparse_s:.1f}x as long); same groups: "
          f"{dense_g.equals(sparse_g)}")


def per_day(settings: Path, landing: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        seconds = {}
        for name, days in (("one day", (DAYS[0], DAYS[0])), ("six days", DAYS)):
            lake = Path(tmp) / name.replace(" ", "-") / "lake"
            lake.parent.mkdir()
            seconds[name] = night_run(ROOT / "src", settings, landing, lake, days)
    one, six = seconds["one day"], seconds["six days"]
    print("| backfill | wall s |\n| --- | --- |")
    print(f"| {DAYS[0]} | {one:.1f} |\n| {DAYS[0]} to {DAYS[1]} | {six:.1f} |")
    print(f"\neach day after the first adds {(six - one) / 5:.1f} s; the fixed cost is "
          f"about {one - (six - one) / 5:.1f} s")


if __name__ == "__main__":
    main()
