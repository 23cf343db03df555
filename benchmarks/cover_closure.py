"""The shared θ = 0 pass on a pattern whose mode-B closure is large, against a baseline
commit, in one process (QA finding of 2026-11-26).

    .venv/bin/python benchmarks/cover_closure.py [--baseline REV] [--rows N]

`a .{K} b` under complete overlap with a window of K + 2 makes some 2^K composites, closed
one round trip at a time; each closure recomputed the backward array over every column
(quadratic in the composites). Prints the engine's seconds at θ = 0 for both sides on the
same random stream over {a, b, c}, their ratio, whether the groups are the same (every
field equal, P(g) within 1e-12: the engine's exactness bound; since 4c60add rows are
summed in another order, so the bits of P(g) may differ from older commits'), and
θ = 1e-9 (the per-group pass, the same groups) for scale.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_speed import load_baseline  # noqa: E402


def seconds(pkg, pattern, window, theta, probs) -> tuple[float, list]:
    engine = importlib.import_module(pkg.__name__ + ".engine")
    query = engine.Query.build(pattern, ["a", "b", "c"], policy="complete",
                               threshold=theta, window=window)
    began = time.perf_counter()
    matcher = engine.StreamMatcher(query)
    groups = matcher.feed(0, probs) + matcher.finish()
    return time.perf_counter() - began, [g.as_dict() for g in groups]


def same(new: list[dict], old: list[dict]) -> bool:
    """Every field equal, the probabilities within 1e-12."""
    return len(new) == len(old) and all(
        a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-12 if k == "probability"
                                     else a[k] == b[k] for k in a)
        for a, b in zip(new, old, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="485989f", help="commit to compare with")
    parser.add_argument("--rows", type=int, default=150)
    parser.add_argument("--k", type=int, default=12, help="the K of `a .{K} b`")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    import probcep

    rng = np.random.default_rng(args.seed)
    probs = rng.dirichlet(np.ones(3), args.rows)
    pattern, window = f"a .{{{args.k}}} b", args.k + 2
    with tempfile.TemporaryDirectory() as tmp:
        base = load_baseline(args.baseline, Path(tmp))
        for pkg in (probcep, base):  # compile kernels, untimed
            seconds(pkg, "a b", 3, 0.0, probs[:20])
        new, new_groups = seconds(probcep, pattern, window, 0.0, probs)
        old, old_groups = seconds(base, pattern, window, 0.0, probs)
        per_group, _ = seconds(probcep, pattern, window, 1e-9, probs)
    print(f"`{pattern}`, complete, w = {window}, θ = 0, {args.rows} rows: new {new:.2f} s, "
          f"baseline ({args.baseline}) {old:.2f} s, baseline / new {old / new:.1f}, "
          f"same groups: {same(new_groups, old_groups)}; "
          f"θ = 1e-9 (per-group pass) {per_group:.2f} s")


if __name__ == "__main__":
    main()
