"""Which candidates to expand when the budget is short (RC-ACEP).

A policy has `select(candidates, units, tag, matcher) -> chosen` (at most `units` of
them; the matcher sheds the rest) and `learn(node, child_vid, bundle, tag, matcher)`,
called after every expansion (a no-op for the baselines).
"""

from __future__ import annotations

import random

from probcep.engine.approx.history import History


class RandomShedding:
    """Baseline: expand a uniformly random subset (seeded, so runs are reproducible)."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def select(self, candidates, units, tag, matcher):
        return self.rng.sample(candidates, units)

    def learn(self, node, child_vid, bundle, tag, matcher) -> None:
        return None


class OldestFirstShedding:
    """Baseline: shed the nodes with the oldest first event; keep the newest."""

    name = "oldest"

    def select(self, candidates, units, tag, matcher):
        return sorted(candidates, key=lambda n: (-n.start, n.vid))[:units]

    def learn(self, node, child_vid, bundle, tag, matcher) -> None:
        return None


class HistoryPolicy:
    """Expand the candidates that history says are likeliest to lead to new bundles.

    Candidates are ranked in three tiers, each ordered by learned value (ties: later
    first event first):

    0. *proxies with a new match map*: the proxy of each cost vector (below) whose
       match vector's match map differs from those already taken, so that nodes that
       history says lead to the same bundles are represented by one of them;
    1. the other proxies;
    2. the rest.

    The *proxy* of a cost vector is its candidate with the latest first event. It
    dominates the others with that vector: same future symbols give the same error and
    it has more window left, so every match point they can reach, it can reach too
    (seed 004's proxy match: one node explores on behalf of similar ones). Dominated
    nodes are expanded only with budget to spare, which costs match recall but rarely
    bundle recall.

    With `learn_online` the policy keeps updating the history during the run.
    """

    name = "history"

    def __init__(self, history: History, *, learn_online: bool = True):
        self.history = history
        self.learn_online = learn_online

    def select(self, candidates, units, tag, matcher):
        h = self.history
        newest: dict[int, int] = {}
        for n in candidates:
            if newest.get(n.vid, -1) < n.start:
                newest[n.vid] = n.start
        scored = []
        for n in candidates:
            key = h.key(n.vid, n.start_tag, n.last_tag, tag)
            scored.append((-h.value_of(key), -n.start, n.vid, h.match_map(key), n))
        scored.sort(key=lambda s: s[:3])
        tiers: tuple[list, list, list] = ([], [], [])
        seen_maps: set[int] = set()
        for _, _, vid, mmap, n in scored:
            if newest[vid] != n.start:
                tiers[2].append(n)
            elif mmap and mmap not in seen_maps:
                seen_maps.add(mmap)
                tiers[0].append(n)
            else:
                tiers[1].append(n)
        return (tiers[0] + tiers[1] + tiers[2])[:units]

    def learn(self, node, child_vid, bundle, tag, matcher) -> None:
        if not self.learn_online:
            return
        h = self.history
        key = h.key(node.vid, node.start_tag, node.last_tag, tag)
        child = h.key(child_vid, node.start_tag, tag, tag)
        where = None
        if bundle is not None:
            if bundle.history_id is None:
                bundle.history_id = h.new_bundle()
            where = bundle.history_id
        h.update(key, child, where)


def make_policy(name: str, *, history: History | None = None, seed: int = 0):
    """A policy by name: 'history' (needs a History), 'random' or 'oldest'."""
    if name == "history":
        if history is None:
            raise ValueError("the history policy needs a History")
        return HistoryPolicy(history)
    if name == "random":
        return RandomShedding(seed)
    if name == "oldest":
        return OldestFirstShedding()
    raise ValueError(f"unknown shedding policy {name!r} (history, random, oldest)")
