"""Engine benchmark on the grouping papers' synthetic stream (their evaluation sections).

Prints three tables:
  1. throughput (timesteps/s, one core) of `a b+ c` for both policies, θ and w;
  2. the transducer against the naive world enumeration (the English paper's Table 2), both run
     here in this process on the same stream, with the ratio;
  3. peak traced memory over a long stream against a short one, fed in equal blocks.

Rerun with `python benchmarks/engine_throughput.py` (`--help` for sizes). Numba runs
single-threaded here; the first, untimed pass compiles the kernels and warms the
transducer's memo, so the timed passes measure steady-state work.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from probcep.engine import NaiveLimitError, Query, StreamMatcher  # noqa: E402

DOMAIN = ("a", "b", "c", "d")
PATTERN = "a b+ c"
#: Published figures of the papers' Java system at θ = 0.01 (English paper, Table 2), for scale.
SEED_JAVA = {"single": 100_000, "complete": 75_000}
TARGET = 1_000_000


def synthetic_stream(n: int, rng: np.random.Generator, gap: int = 20) -> np.ndarray:
    """The papers' generator with `a b+ c` occurrences planted in the true sequence.

    The true symbol at each timestep is uniform over a, b, c, d, except for planted
    occurrences (a, 1-5 b's, c) separated by 5..2*gap timesteps. The other symbols get
    probabilities drawn from [0, 0.1]; the true symbol gets the rest.
    """
    true = rng.integers(0, 4, n)
    pos = 0
    while True:
        pos += int(rng.integers(5, 2 * gap))
        bs = int(rng.integers(1, 6))
        if pos + bs + 2 >= n:
            break
        true[pos], true[pos + 1:pos + 1 + bs], true[pos + 1 + bs] = 0, 1, 2
        pos += bs + 2
    probs = rng.uniform(0.0, 0.1, (n, 4))
    rows = np.arange(n)
    probs[rows, true] = 0.0
    probs[rows, true] = 1.0 - probs.sum(axis=1)
    return probs


def run_once(query: Query, probs: np.ndarray, matcher_proto: StreamMatcher) -> tuple[float, int]:
    matcher = StreamMatcher(query, matcher_proto.transducer)
    start = time.perf_counter()
    groups = matcher.feed(0, probs) + matcher.finish()
    return time.perf_counter() - start, len(groups)


def throughput(policy, theta, window, probs, repeat=3, method="transducer"):
    query = Query.build(PATTERN, DOMAIN, policy=policy, threshold=theta, window=window,
                        method=method)
    warm = StreamMatcher(query)
    warm.feed(0, probs[: min(len(probs), 20_000)])
    warm.finish()
    best, n_groups = min(run_once(query, probs, warm) for _ in range(repeat))
    return len(probs) / best, n_groups


def table_throughput(args, probs):
    print(f"\n## 1. Throughput, pattern `{PATTERN}`, {len(probs):,} timesteps, one core")
    print("| policy | θ | w | groups | timesteps/s | × target 1M/s | × papers' Java (θ=0.01) |")
    print("|---|---|---|---|---|---|---|")
    for policy in args.policies:
        for theta in args.thresholds:
            for w in args.windows:
                rate, n = throughput(policy, theta, w, probs, args.repeat)
                print(f"| {policy} | {theta} | {w} | {n:,} | {rate:,.0f} | "
                      f"{rate / TARGET:.2f} | {rate / SEED_JAVA[policy]:.1f} |", flush=True)


def table_naive(args, rng):
    probs = synthetic_stream(args.naive_timesteps, rng)
    print(f"\n## 2. Transducer vs naive enumeration, θ = 0.01, {len(probs):,} timesteps")
    print("| policy | w | transducer ts/s | naive ts/s | transducer / naive |")
    print("|---|---|---|---|---|")
    for policy in args.policies:
        for w in args.naive_windows:
            fast, _ = throughput(policy, 0.01, w, probs, 1)
            try:
                slow, _ = throughput(policy, 0.01, w, probs, 1, method="naive")
                print(f"| {policy} | {w} | {fast:,.0f} | {slow:,.1f} | {fast / slow:,.0f} |",
                      flush=True)
            except NaiveLimitError as exc:
                print(f"| {policy} | {w} | {fast:,.0f} | refused: {exc} | – |", flush=True)


def peak_memory(policy, theta, window, n, block, seed):
    """Peak traced bytes while feeding n timesteps in blocks (blocks made on the fly)."""
    query = Query.build(PATTERN, DOMAIN, policy=policy, threshold=theta, window=window)
    rng = np.random.default_rng(seed)
    matcher = StreamMatcher(query)
    n_groups = 0
    tracemalloc.start()
    for lo in range(0, n, block):
        probs = synthetic_stream(min(block, n - lo), rng)
        n_groups += len(matcher.feed(lo, probs))
        del probs
    n_groups += len(matcher.finish())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, n_groups


def table_memory(args):
    print(f"\n## 3. Peak traced memory, fed in blocks of {args.block:,} timesteps")
    print("| policy | θ | w | timesteps | groups | peak MiB | long / short |")
    print("|---|---|---|---|---|---|---|")
    for policy in args.policies:
        # a first run, its figures dropped: what the first feed of a process allocates once
        # (compiled kernels, caches) counted against the short run alone (0.31 long / short, QA)
        peak_memory(policy, 0.01, 50, args.block, args.block, 1)
        short, n_short = peak_memory(policy, 0.01, 50, args.short, args.block, 1)
        long_, n_long = peak_memory(policy, 0.01, 50, args.long, args.block, 1)
        for n, peak, groups, ratio in ((args.short, short, n_short, ""),
                                       (args.long, long_, n_long, f"{long_ / short:.2f}")):
            print(f"| {policy} | 0.01 | 50 | {n:,} | {groups:,} | {peak / 2**20:.1f} | {ratio} |",
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=200_000)
    parser.add_argument("--policies", nargs="+", default=["single", "complete"])
    parser.add_argument("--thresholds", nargs="+", type=float, default=[0.0, 0.01, 0.1])
    parser.add_argument("--windows", nargs="+", type=int, default=[5, 10, 15, 20, 25, 50])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-timesteps", type=int, default=400)
    parser.add_argument("--naive-windows", nargs="+", type=int, default=[5, 10, 15])
    parser.add_argument("--short", type=int, default=100_000)
    parser.add_argument("--long", type=int, default=10_000_000)
    parser.add_argument("--block", type=int, default=100_000)
    parser.add_argument("--skip", nargs="*", default=[], choices=["throughput", "naive",
                                                                  "memory"])
    parser.add_argument("--seed", type=int, default=2015)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if "throughput" not in args.skip:
        table_throughput(args, synthetic_stream(args.timesteps, rng))
    if "naive" not in args.skip:
        table_naive(args, rng)
    if "memory" not in args.skip:
        table_memory(args)


if __name__ == "__main__":
    main()
