"""The engine and `probcep group` against a baseline commit, in one process (issue 17).

    .venv/bin/python benchmarks/engine_speed.py [--baseline REV] [--timesteps N]

The baseline is the package of commit REV (default: the last before this work), taken
with `git archive` into a temporary directory and imported as `probcep_baseline`, so
both sides run in this process, on the same stream, one after the other. Prints:

  1. θ = 0.01, w = 50, both policies: the engine's rate (timesteps/s, one core, data in
     memory), `probcep group`'s rate end to end (Parquet in, JSON lines out, in-process
     after a first untimed run, so net of start-up) and their ratio (target >= 0.8);
  2. complete overlap at θ = 0 against θ = 0.01, w = 5, 10, 25, 50 (`--theta0-windows`;
     targets: >= 1M/s at w = 50, θ = 0 within 3x of θ = 0.01);
  3. the engine at θ = 0.01 over windows up to 50 (`--windows`), both policies (target
     >= 5M/s);

each with the baseline's figure and the ratio new / baseline (both sides best of
`--repeat` runs), and in table 1 whether the two sides wrote the same bytes. Rates are
given by wall time and, in parentheses, by the process's CPU time, which is the better
guide when other jobs share the machine (the load average is printed before and after).
The stream is the grouping papers' synthetic stream (benchmarks/engine_throughput.py),
pattern `a b+ c`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import DOMAIN, PATTERN, synthetic_stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "ffb1cfe"  # main before issue 17


def load_baseline(rev: str, into: Path):
    """The package of commit `rev`, importable as `probcep_baseline`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/probcep"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    package = into / "probcep_baseline"
    (into / "src" / "probcep").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        path.write_text(re.sub(r"\bprobcep(?=[. ])(?!\s+(?:group|approx))", "probcep_baseline",
                               text))
    sys.path.insert(0, str(into))
    return importlib.import_module("probcep_baseline")


def best_time(fn, repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds of `repeat` runs after an untimed one (which
    compiles kernels, warms the transducer memo and the imports)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        began, began_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    return min(wall), min(cpu)


def engine_rate(pkg, policy, theta, window, probs, repeat) -> tuple[float, float]:
    """(wall, CPU) timesteps/s of the engine on `probs`, data in memory."""
    engine = importlib.import_module(pkg.__name__ + ".engine")
    query = engine.Query.build(PATTERN, DOMAIN, policy=policy, threshold=theta, window=window)

    def run():
        matcher = engine.StreamMatcher(query)
        matcher.feed_columns(0, probs)
        matcher.finish_columns()

    return tuple(len(probs) / s for s in best_time(run, repeat))


def group_rate(pkg, policy, theta, window, data: Path, out: Path, n: int,
               repeat) -> tuple[float, float]:
    """(wall, CPU) timesteps/s of `probcep group`, in-process, Parquet to JSON lines."""
    cli = importlib.import_module(pkg.__name__ + ".cli")
    argv = ["group", str(data), "--pattern", PATTERN, "--policy", policy, "--threshold",
            str(theta), "--window", str(window), "-o", str(out)]
    return tuple(n / s for s in best_time(lambda: cli.main(argv), repeat))


def fmt(rate: tuple[float, float]) -> str:
    return f"{rate[0]:,.0f} ({rate[1]:,.0f})"


def write_stream(probs: np.ndarray, path: Path) -> None:
    pd.DataFrame({"stream_id": "s0", "t": np.arange(len(probs)),
                  **{c: probs[:, i] for i, c in enumerate(DOMAIN)}}).to_parquet(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=BASELINE, help="commit to compare with")
    parser.add_argument("--timesteps", type=int, default=1_000_000)
    parser.add_argument("--theta0-timesteps", type=int, default=100_000,
                        help="stream length for θ = 0 (the baseline is slow there)")
    parser.add_argument("--windows", nargs="+", type=int, default=[5, 10, 15, 20, 25, 50],
                        help="windows of table 3")
    parser.add_argument("--theta0-windows", nargs="+", type=int, default=[5, 10, 25, 50],
                        help="windows of table 2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2015)
    parser.add_argument("--sections", nargs="+", type=int, default=[1, 2, 3],
                        choices=(1, 2, 3), help="which of the three tables to print")
    args = parser.parse_args()
    import probcep

    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores; > 2 means shared)")
    rng = np.random.default_rng(args.seed)
    probs = synthetic_stream(args.timesteps, rng)
    probs0 = probs[: args.theta0_timesteps]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = load_baseline(args.baseline, tmp)
        sides = {"new": probcep, "baseline": base}
        data = tmp / "stream.parquet"
        write_stream(probs, data)

        summary = []
        if 1 in args.sections:
            group_table(args, sides, probs, data, tmp, summary)
        if 2 in args.sections:
            theta0_table(args, base, probs, probs0, summary)
        if 3 in args.sections:
            engine_table(args, base, probs, summary)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    print("\n## Targets, wall (CPU)\n")
    for what, wall, cpu, bound, at_least in summary:
        met = [(x >= bound) if at_least else (x <= bound) for x in (wall, cpu)]
        print(f"- {what}: {wall:,.2f} ({cpu:,.2f}): "
              f"{'met' if met[0] else 'NOT met'} by wall, {'met' if met[1] else 'NOT met'} by CPU")


def group_table(args, sides, probs, data, tmp, summary) -> None:
    print(f"\n## 1. θ = 0.01, w = 50, {len(probs):,} timesteps: engine and `probcep group`")
    print("timesteps/s, wall (CPU); the ratio is group / engine, wall (CPU)\n")
    print("| policy | side | engine | group | group / engine | same bytes |")
    print("| --- | --- | --- | --- | --- | --- |")
    for policy in ("single", "complete"):
        rates = {}
        for name, pkg in sides.items():
            e = engine_rate(pkg, policy, 0.01, 50, probs, args.repeat)
            g = group_rate(pkg, policy, 0.01, 50, data, tmp / f"{name}.jsonl",
                           len(probs), args.repeat)
            rates[name] = (e, g)
        same = (tmp / "new.jsonl").read_bytes() == (tmp / "baseline.jsonl").read_bytes()
        for name, (e, g) in rates.items():
            print(f"| {policy} | {name} | {fmt(e)} | {fmt(g)} | {g[0] / e[0]:.2f} "
                  f"({g[1] / e[1]:.2f}) | {same} |", flush=True)
        (e1, g1), (e0, g0) = rates["new"], rates["baseline"]
        summary.append((f"group / engine, {policy} (>= 0.8)", g1[0] / e1[0], g1[1] / e1[1],
                        0.8, True))
        print(f"| {policy} | new / baseline | {e1[0] / e0[0]:.2f} | {g1[0] / g0[0]:.2f} "
              "| | |", flush=True)


def theta0_table(args, base, probs, probs0, summary) -> None:
    import probcep

    print(f"\n## 2. Complete overlap, θ = 0 against θ = 0.01, {len(probs0):,} timesteps")
    print("timesteps/s, wall (CPU)\n")
    print("| w | θ=0 new | θ=0 baseline | new / baseline | θ=0.01 new | "
          "θ=0.01 / θ=0, wall (CPU); target <= 3 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for w in args.theta0_windows:
        new0 = engine_rate(probcep, "complete", 0.0, w, probs0, args.repeat)
        base0 = engine_rate(base, "complete", 0.0, w, probs0, args.repeat)
        new1 = engine_rate(probcep, "complete", 0.01, w, probs, args.repeat)
        summary.append((f"theta=0.01 / theta=0, complete, w = {w} (<= 3)", new1[0] / new0[0],
                        new1[1] / new0[1], 3.0, False))
        if w == 50:
            summary.append(("theta=0 complete w = 50, timesteps/s (>= 1M)", new0[0],
                            new0[1], 1e6, True))
        print(f"| {w} | {fmt(new0)} | {fmt(base0)} | {new0[0] / base0[0]:.1f} | "
              f"{fmt(new1)} | {new1[0] / new0[0]:.2f} ({new1[1] / new0[1]:.2f}) |",
              flush=True)


def engine_table(args, base, probs, summary) -> None:
    import probcep

    print(f"\n## 3. Engine at θ = 0.01, {len(probs):,} timesteps, one core (target 5M)")
    print("timesteps/s, wall (CPU)\n")
    print("| policy | w | new | baseline | new / baseline |")
    print("| --- | --- | --- | --- | --- |")
    for policy in ("single", "complete"):
        for w in args.windows:
            new = engine_rate(probcep, policy, 0.01, w, probs, args.repeat)
            old = engine_rate(base, policy, 0.01, w, probs, args.repeat)
            summary.append((f"engine {policy} w = {w}, timesteps/s (>= 5M)", new[0],
                            new[1], 5e6, True))
            print(f"| {policy} | {w} | {fmt(new)} | {fmt(old)} | {new[0] / old[0]:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
