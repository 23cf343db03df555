"""Live mode's bounded engine-state cache: misses of each eviction policy (the paper's
§5, Figs. 16-17 direction) as the share of streams with matches grows.

    .venv/bin/python benchmarks/live.py [--streams 1000] [--steps 40] [--active 0.25]

Streams get readings at random, on average a share `--active` of them per step:
`--arrivals uniform`, each stream each step alike; `bursty`, each stream switches between
a burst (a reading 9 steps in 10) and a pause (1 in 50), bursts of 5 steps on average,
as presence sensors report while something happens. A stream "with matches" reads Door,
then Room for a while, then Door (a room visit, with noise), the others read Hallway, on
which "Door Room+ Door" never opens a run. One matcher per stream lives in a
`StateCache` of capacity 10% of the streams; a state evicted is spilled as bytes and
read back (a miss) when its stream has a reading again; a stream left with nothing open
keeps its (quiet) state, as live mode does within a day. Every policy sees the same
readings and gives the same groups (checked here too); only the misses differ.

It prints a Markdown table: share of streams with matches, then misses per policy and
the priority/creation ratio. The latency part of issue 15 (landing file to alert at
10,000 streams) is not measured by this script yet.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from probcep.engine import Query, StreamMatcher
from probcep.engine.state_cache import POLICIES, StateCache

DOMAIN = ("Hallway", "Door", "Room", "NoReading")


def readings(n_streams: int, steps: int, active: float, share: float, seed: int,
             arrivals: str = "uniform"):
    """(stream, distribution) in arrival order."""
    rng = np.random.default_rng(seed)
    matching = rng.random(n_streams) < share
    phase = rng.integers(0, 8, n_streams)
    # bursty: on/off per stream, P(on -> off) = 0.2; P(off -> on) set so that the mean
    # rate is `active`: 0.9 on + 0.02 off = active at the stationary share on
    on_share = min(1.0, max(0.0, (active - 0.02) / 0.88))
    p_off = 0.2
    p_on = p_off * on_share / max(1e-9, 1 - on_share)
    burst = rng.random(n_streams) < on_share
    out = []
    for _ in range(steps):
        if arrivals == "uniform":
            read = rng.random(n_streams) < active
        else:
            flip = rng.random(n_streams)
            burst = np.where(burst, flip >= p_off, flip < p_on)
            read = rng.random(n_streams) < np.where(burst, 0.9, 0.02)
        for s in np.flatnonzero(read):
            if matching[s]:
                k = phase[s] % 8
                main = 1 if k in (0, 7) else 2  # Door, Room x6, Door
                phase[s] += 1
            else:
                main = 0
            row = np.full(4, 0.0)
            row[main] = 0.8
            row[2 if main == 0 else (main % 2) + 1] += 0.2  # noise: Room, or the other
            out.append((int(s), row))
    return out


def run(events, query: Query, capacity: int, policy: str):
    store: dict = {}
    cache = StateCache(capacity, policy,
                       load=lambda k: (StreamMatcher.from_bytes(query, store[k])
                                       if k in store else None),
                       spill=lambda k, m: store.__setitem__(k, m.to_bytes()))
    shared = StreamMatcher(query).transducer
    groups = []
    for s, row in events:
        matcher = cache.get(s) or StreamMatcher(query, shared)
        t0 = 0 if matcher.next_t is None else matcher.next_t
        groups += [(s, *g.as_dict().values()) for g in matcher.feed_columns(t0, row[None, :])
                   .groups()]
        cache.put(s, matcher)
    return cache.misses, groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--active", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--arrivals", choices=("uniform", "bursty"), default="bursty")
    args = ap.parse_args()
    query = Query.build("Door Room+ Door", DOMAIN, policy="complete", threshold=0.01,
                        window=10)
    capacity = max(1, args.streams // 10)
    print(f"{args.streams} streams, {args.steps} steps, {args.active:.0%} with a reading "
          f"per step ({args.arrivals}), cache {capacity} states (10%)\n")
    print("| share with matches | " + " | ".join(f"{p} misses" for p in POLICIES)
          + " | priority / creation | seconds |")
    print("|---" * (len(POLICIES) + 3) + "|")
    for share in (0.1, 0.25, 0.5, 0.75, 1.0):
        events = readings(args.streams, args.steps, args.active, share, args.seed,
                          args.arrivals)
        start = time.perf_counter()
        found = {p: run(events, query, capacity, p) for p in POLICIES}
        groups = [g for _, g in found.values()]
        assert all(g == groups[0] for g in groups), "the policies gave other groups"
        misses = {p: m for p, (m, _) in found.items()}
        ratio = misses["priority"] / misses["creation"] if misses["creation"] else float("nan")
        print(f"| {share:.2f} | " + " | ".join(str(misses[p]) for p in POLICIES)
              + f" | {ratio:.3f} | {time.perf_counter() - start:.1f} |", flush=True)


if __name__ == "__main__":
    main()
