"""Where `probcep group`'s time goes on Parquet: each thread of the streamed path (issue 17).

    PYTHONPATH=src .venv/bin/python benchmarks/group_stages.py [--timesteps N ...] [--repeat R]

On the benchmark stream of engine_speed.py (θ = 0.01, w = 50, both policies), in one
process: the engine alone (data in memory), then the command end to end (in-process,
after an untimed run), with the wall and CPU time of each of its threads (reader,
engine, formatter and writer) and of the whole process. The medians of R runs are
printed, with the load average: on two shared cores, the walls mean little above a load
of about 1. What the threads' CPU adds up to, halved, is the best wall two idle cores
could give. With two stream lengths (`--timesteps 1000000 10000000`), it also prints what
the longer adds over the shorter, the engine's against the command's: the ratio without
the command's cost per run (opening the file, the first batch, the last lines, the move
into place), which a million timesteps do not amortize.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_speed import write_stream  # noqa: E402
from engine_throughput import DOMAIN, PATTERN, synthetic_stream  # noqa: E402

import probcep.cli.group_stream as stream  # noqa: E402
from probcep.cli import main as cli  # noqa: E402
from probcep.engine import Query, StreamMatcher  # noqa: E402

RECORD: dict[str, list[tuple[float, float]]] = {}


def timed(name: str, fn):
    """`fn`, recording the wall and the CPU time of the thread that runs it."""
    def run(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            RECORD.setdefault(name, []).append((time.perf_counter() - wall,
                                                time.thread_time() - cpu))
    return run


def clock(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, nargs="+", default=[1_000_000],
                        help="stream lengths; with two or more, also the ratio of what the "
                        "longest adds over the shortest (the per-run fixed cost left out)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=2015)
    parser.add_argument("--output", type=Path, help="where the command writes (default: a "
                        "new file in a temporary folder; /dev/null leaves the disk out)")
    args = parser.parse_args()
    stream._read = timed("reader thread", stream._read)
    stream._match = timed("engine thread", stream._match)
    stream._Formatter.run = timed("formatter + writer thread", stream._Formatter.run)
    walls: dict[tuple[str, int], tuple[float, float]] = {}
    for n in sorted(args.timesteps):
        walls.update(measure(n, args))
    sizes = sorted(args.timesteps)
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        print(f"\nwhat {hi:,} timesteps add over {lo:,} (medians, wall):")
        for policy in ("single", "complete"):
            (e0, c0), (e1, c1) = walls[policy, lo], walls[policy, hi]
            print(f"  {policy:8} engine {(e1 - e0) * 1e3:7.1f} ms, probcep group "
                  f"{(c1 - c0) * 1e3:7.1f} ms: group / engine {(e1 - e0) / (c1 - c0):.2f}")


def measure(timesteps: int, args) -> dict[tuple[str, int], tuple[float, float]]:
    """Print both policies' table for a stream of `timesteps`; their median walls (s),
    the engine's and the command's, by (policy, timesteps)."""
    walls = {}
    probs = synthetic_stream(timesteps, np.random.default_rng(args.seed))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "stream.parquet"
        out = args.output or Path(tmp) / "out.jsonl"
        write_stream(probs, data)
        for policy in ("single", "complete"):
            query = Query.build(PATTERN, DOMAIN, policy=policy, threshold=0.01, window=50)

            def engine(query=query):
                matcher = StreamMatcher(query)
                matcher.feed_columns(0, probs)
                matcher.finish_columns()

            argv = ["group", str(data), "--pattern", PATTERN, "--policy", policy,
                    "--threshold", "0.01", "--window", "50", "-o", str(out)]
            engine(), cli(argv)
            RECORD.clear()
            load = os.getloadavg()[0]
            alone, whole = [], []
            for _ in range(args.repeat):
                alone.append(clock(engine))
                whole.append(clock(lambda argv=argv: cli(argv)))
            print(f"\n{policy}, {timesteps:,} timesteps, load average {load:.2f} before, "
                  f"{os.getloadavg()[0]:.2f} after; medians of {args.repeat}, ms wall (CPU)")
            rows = [("engine alone", alone), ("probcep group, whole process", whole),
                    *RECORD.items()]
            for name, times in rows:
                wall, cpu = np.median(np.array(times), axis=0) * 1e3
                print(f"  {name:32} {wall:7.1f} ({cpu:6.1f})")
            threads = sum(np.median(np.array(t), axis=0)[1] for t in RECORD.values()) * 1e3
            e = np.median(np.array(alone), axis=0) * 1e3
            w = np.median(np.array(whole), axis=0) * 1e3
            print(f"  group / engine: {e[0] / w[0]:.2f} by wall ({e[1] / w[1]:.2f} by CPU); "
                  f"threads' CPU {threads:.1f} ms, halved {threads / 2:.1f}: at best "
                  f"{e[1] / max(e[1], threads / 2):.2f} on two idle cores (engine's CPU / that)")
            walls[policy, timesteps] = (e[0] / 1e3, w[0] / 1e3)
    return walls


if __name__ == "__main__":
    main()
