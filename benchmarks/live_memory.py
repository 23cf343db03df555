"""A live worker's peak memory against the number of streams with a saved state (issue 15:
bounded by the cache's capacity, not by the streams).

    .venv/bin/python benchmarks/live_memory.py [--streams 10000 40000] [--cache 1000]
        [--active 1000] [--batches 4] [--baseline main] [--scenario steady|midnight]

For each stream count N, and for this tree's code and the code of `--baseline` (a git
revision, exported with `git archive` into a temporary folder), in the same run:

1. *build*: `probcep live --once` over a first landing file in which all N streams
   read "Room" (which opens nothing: `state/live` then holds N streams' quiet states),
   and a later file that makes that second complete;
2. *measure*: `probcep live --once` again, a fresh process (empty cache: every state it
   needs comes from `state/live`), over `--batches` new files, one micro-batch each,
   each with a reading of `--active` streams drawn at random from the N, and two files
   of one reading that complete them (a second is complete two files later): the
   batches that advance the active streams read their states back (misses) and write
   `state/live` anew.

With `--scenario midnight`, two other moments that touch every stream:

1. *day end*: `probcep live --once` from an empty lake over three files, one micro-batch
   each: all N streams read "Door" in the day's second-to-last second and "Room" in its
   last (each stream then has a `Door Room+ Door` run open at midnight), and one reading
   of the next day that completes the day: the third batch saves N streams' open states
   in `state/engine`, as the night would;
2. *seed*: `probcep live --once` with a fresh checkpoint and no `state/live`, over two
   files of the next day: its first batch seeds `state/live` from those N saved states.

The live process's resident memory (psutil, sampled every 0.1 s) is reported as the
peak of the Python driver and, separately, the peak of its child processes (Spark's
JVM). Two exact patterns, timestep one second, lateness 1 s, `local[2]`. Prints the
machine's load (`uptime`) before and after, and the ratios 40k/10k and new/baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from measure import TreeSampler

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = """
patterns:
  room_visit: {pattern: "Door Room+ Door", policy: complete, threshold: 0.01, window: 12,
               alert_threshold: 0.2}
  hallway_pass: {pattern: "Hallway Door Hallway", policy: single, threshold: 0.02,
                 alert_threshold: 0.3}
"""
DAY = "2026-01-01"


def settings(folder: Path, cache: int) -> Path:
    (folder / "patterns.yaml").write_text(REGISTRY)
    path = folder / "probcep.yaml"
    path.write_text(
        f"lake_root: {folder / 'lake'}\nlanding_dir: {folder / 'landing'}\n"
        f"timestep_seconds: 1\nepoch: '{DAY}T00:00:00'\n"
        f"domain: [Hallway, Door, Room]\nregistry: patterns.yaml\n"
        f"allowed_lateness_seconds: 1\nlive_max_files_per_trigger: 1\n"
        f"live_cache_streams: {cache}\nmax_quarantine_fraction: 0.5\n")
    return path


def landing_file(folder: Path, second: int, ids: np.ndarray, rng,
                 names=("Hallway", "Door", "Room")) -> None:
    """A reading of each stream `ids` at `second` (from DAY's midnight), its symbol drawn
    from `names`."""
    names = np.array(names)
    when = pd.Timestamp(f"{DAY}T00:00:00") + pd.Timedelta(seconds=second)
    frame = pd.DataFrame({"stream_id": ids, "sensor_id": "r1", "ts": when.isoformat(),
                          "symbol": names[rng.integers(0, len(names), len(ids))],
                          "score": np.round(0.5 + 0.5 * rng.random(len(ids)), 3)})
    path = folder / "landing" / when.date().isoformat() / f"r-{second:06d}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    stamp = 1_700_000_000 + second  # the file source lists files in this order
    os.utime(path, (stamp, stamp))


def live_once(config: Path, src: Path, log: Path) -> tuple[float, float, float]:
    """Run `probcep live --once`; (peak RSS of the Python driver, peak of its children
    (the JVM), seconds), in MiB."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.time()
    with open(log, "a") as out:
        proc = subprocess.Popen([sys.executable, "-m", "probcep", "live", "--once",
                                 "--settings", str(config), "--master", "local[2]"],
                                cwd=config.parent, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        with TreeSampler(proc.pid, 0.1) as peaks:
            code = proc.wait()
    if code:
        sys.exit(f"live exited with {code}: see {log}")
    return peaks.own_mib, peaks.children_mib, time.time() - started


def fresh(name: str, n: int, work: Path, args):
    """A run's folder with its settings, its random generator and the N stream ids."""
    folder = work / f"{name}-{n}"
    folder.mkdir(parents=True)
    return (folder, settings(folder, args.cache), np.random.default_rng(args.seed),
            np.array([f"s{i:06d}" for i in range(n)]))


def run(name: str, n: int, src: Path, work: Path, args) -> dict:
    folder, config, rng, ids = fresh(name, n, work, args)
    landing_file(folder, 0, ids, rng, names=("Room",))  # opens nothing: quiet states
    landing_file(folder, 2, ids[:1], rng, names=("Room",))  # second 0 complete
    build = live_once(config, src, folder / "live.log")
    from probcep.lake.tables import LIVE_STATUS

    built = LIVE_STATUS.read(folder / "lake").num_rows
    for k in range(args.batches):
        landing_file(folder, 3 + k, np.sort(rng.choice(ids, args.active, replace=False)), rng)
    for k in range(2):  # a second is complete two files later: these complete the last
        landing_file(folder, 3 + args.batches + k, ids[:1], rng, names=("Room",))
    measure = live_once(config, src, folder / "live.log")
    from deltalake import DeltaTable

    status = LIVE_STATUS.read(folder / "lake").to_pandas()
    live = DeltaTable(str(folder / "lake" / "state" / "live")).to_pyarrow_table(
        columns=["stream_id", "state"])
    return {"build": build, "measure": measure, "batches": len(status) - built,
            "misses": int(status["cache_misses"].sum()), "states": live.num_rows - 1,
            "state_mib": live["state"].nbytes / 2 ** 20}


def midnight(name: str, n: int, src: Path, work: Path, args) -> dict:
    """The day end and the seed of the next day (see the module's docstring)."""
    import shutil

    from deltalake import DeltaTable

    folder, config, rng, ids = fresh(name, n, work, args)
    end = 86_400
    landing_file(folder, end - 2, ids, rng, names=("Door",))
    landing_file(folder, end - 1, ids, rng, names=("Room",))
    landing_file(folder, end + 1, ids[:1], rng, names=("Room",))  # the day is complete
    day_end = live_once(config, src, folder / "live.log")
    engine = DeltaTable(str(folder / "lake" / "state" / "engine")).to_pyarrow_table(
        columns=["stream_id", "state"])
    shutil.rmtree(folder / "lake" / "state" / "live")
    shutil.rmtree(folder / "lake" / "_live")
    shutil.move(folder / "landing", folder / "landing-first")
    for second in (end + 3, end + 5):
        landing_file(folder, second, ids[:1], rng, names=("Room",))
    seed = live_once(config, src, folder / "live.log")
    live = DeltaTable(str(folder / "lake" / "state" / "live")).to_pyarrow_table(
        columns=["stream_id"])
    return {"build": day_end, "measure": seed, "states": engine.num_rows,
            "state_mib": engine["state"].nbytes / 2 ** 20, "seeded": live.num_rows - 1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, nargs="+", default=[10_000, 40_000])
    ap.add_argument("--cache", type=int, default=1000, help="live_cache_streams")
    ap.add_argument("--active", type=int, default=1000, help="streams read per batch")
    ap.add_argument("--batches", type=int, default=4, help="files of active streams")
    ap.add_argument("--baseline", default="main", help="git revision to compare with "
                    "('' for none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (else a "
                    "temporary one, removed at the end)")
    ap.add_argument("--scenario", choices=["steady", "midnight"], default="steady")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    work = args.keep or Path(tempfile.mkdtemp(prefix="probcep-live-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    codes = {"this": ROOT / "src"}
    if args.baseline:
        base = work / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.baseline, "src"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        codes["baseline"] = base / "src"
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results = {}
    for n in args.streams:
        for name, src in codes.items():
            if args.scenario == "midnight":
                r = results[name, n] = midnight(name, n, src, work, args)
                print(f"{name:8s} N={n:6d}: state/engine {r['states']} rows "
                      f"({r['state_mib']:.1f} MiB of state bytes), {r['seeded']} seeded "
                      f"into state/live; day end peak driver {r['build'][0]:.0f} MiB, JVM "
                      f"{r['build'][1]:.0f} MiB, {r['build'][2]:.0f} s; seed peak driver "
                      f"{r['measure'][0]:.0f} MiB, JVM {r['measure'][1]:.0f} MiB, "
                      f"{r['measure'][2]:.0f} s", flush=True)
                continue
            r = results[name, n] = run(name, n, src, work, args)
            print(f"{name:8s} N={n:6d}: state/live {r['states']} states "
                  f"({r['state_mib']:.1f} MiB of state bytes); build peak driver "
                  f"{r['build'][0]:.0f} MiB, JVM {r['build'][1]:.0f} MiB; measure "
                  f"({r['batches']} batches, {r['misses']} misses) "
                  f"peak driver {r['measure'][0]:.0f} MiB, JVM {r['measure'][1]:.0f} MiB, "
                  f"{r['measure'][2]:.0f} s", flush=True)
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"load before: {load_before}\nload after:  {load_after}")
    print(f"cache {args.cache} streams, {args.active} streams read in each of "
          f"{args.batches} files; work folder {work}"
          + ("" if args.keep else " (removed at the end)"))
    lo, hi = min(args.streams), max(args.streams)
    moments = {"measure": "measure"} if args.scenario == "steady" else \
        {"build": "day end", "measure": "seed"}
    print("| moment | code | N | driver peak MiB | JVM peak MiB |")
    print("|---|---|---|---|---|")
    for key, moment in moments.items():
        for (name, n), r in results.items():
            print(f"| {moment} | {name} | {n:,} | {r[key][0]:.0f} | {r[key][1]:.0f} |")
    for key, moment in moments.items():
        for name in codes:
            a, b = results[name, lo][key], results[name, hi][key]
            print(f"{moment}, {name}: driver peak {hi}/{lo} = {b[0] / a[0]:.3f}, "
                  f"JVM {b[1] / a[1]:.3f}")
        if "baseline" in codes:
            for n in args.streams:
                a, b = results["baseline", n][key], results["this", n][key]
                print(f"{moment}, N={n}: driver peak this/baseline = {b[0] / a[0]:.3f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
