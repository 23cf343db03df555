"""Which candidates to expand when the budget is short (RC-ACEP).

A policy has `select(candidates, units, tag, matcher) -> chosen` (at most `units` of
them; the matcher sheds the rest), `tick(n_candidates, matcher)`, called once per event
of a budgeted run, and `learn(node, child_vid, bundle, tag, matcher)`, called after
every expansion (both no-ops for the baselines). A policy whose `declines` is true may
expand fewer candidates than the credit allows, to save credit for better ones; the
matcher then consults it at every event, not only when candidates exceed the credit.
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

    declines = False

    def tick(self, n_candidates, matcher) -> None:
        return None

    def learn(self, node, child_vid, bundle, tag, matcher) -> None:
        return None


class OldestFirstShedding:
    """Baseline: shed the nodes with the oldest first event; keep the newest."""

    name = "oldest"

    def select(self, candidates, units, tag, matcher):
        vector = matcher.ea.vector  # not the id: ids depend on the other streams
        return sorted(candidates, key=lambda n: (-n.start, vector(n.vid)))[:units]

    declines = False

    def tick(self, n_candidates, matcher) -> None:
        return None

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
    dominates the others with that vector: same future symbols give the same error and it
    has more window left, so every match point they can reach, it can reach too (the
    approximate-matching paper's proxy match: one node explores on behalf of similar ones).
    Dominated nodes are expanded only with budget to spare, which costs match recall but
    rarely bundle recall.

    Feasibility: a candidate is expanded only if the credit that can still arrive
    before its window closes (credit now, less what this event already spent, plus the
    budget per event times the events expected in the remaining window, from the event
    rate history has seen) pays for this expansion and the least number of further ones
    that any match through it needs (`ErrorAutomaton.need`). Budget is not spent on
    partial matches that cannot be finished in time. A seed (a new partial match: the
    event alone) must moreover find `seed_reserve` times its cost in credit already
    there, so that a short budget carries started partial matches to the end instead
    of starting new ones it cannot all finish.

    With `learn_online` the policy keeps updating the history during the run, from
    every `learn_every`-th expansion (a deterministic sample that bounds the overhead).
    """

    name = "history"

    def __init__(self, history: History, *, learn_online: bool = True,
                 feasibility: bool = True, seed_reserve: float = 0.5, learn_every: int = 1):
        if learn_every < 1:
            raise ValueError(f"learn_every must be >= 1, got {learn_every}")
        self.history = history
        self.learn_online = learn_online
        self.learn_every = learn_every
        self._expansions = 0
        self.feasibility = feasibility
        self.seed_reserve = seed_reserve
        self.declines = feasibility
        self._matcher = None

    def tick(self, n_candidates, matcher) -> None:
        self.history.bind(matcher.ea)  # its keys are ids of the matcher's automaton
        if self.learn_online:
            fresh = matcher is not self._matcher
            self._matcher = matcher
            self.history.observe_event(n_candidates, matcher.tag, fresh)

    def select(self, candidates, units, tag, matcher):
        if len(candidates) <= units and self.feasibility and matcher.budget is not None:
            return self._feasible(candidates, units, tag, matcher)  # no ranking needed
        h = self.history
        newest: dict[int, int] = {}
        for n in candidates:
            if newest.get(n.vid, -1) < n.start:
                newest[n.vid] = n.start
        scored = []
        for n in candidates:
            key = h.key(n.vid, n.start_tag, n.last_tag, tag)
            scored.append((-h.value_of(key), -n.start, matcher.ea.vector(n.vid), n.vid,
                           h.match_map(key), n))
        scored.sort(key=lambda s: s[:3])  # ties by cost vector: ids depend on other streams
        tiers: tuple[list, list, list] = ([], [], [])
        seen_maps: set[int] = set()
        for _, _, _, vid, mmap, n in scored:
            if newest[vid] != n.start:
                tiers[2].append(n)
            elif mmap and mmap not in seen_maps:
                seen_maps.add(mmap)
                tiers[0].append(n)
            else:
                tiers[1].append(n)
        ranked = tiers[0] + tiers[1] + tiers[2]
        if not self.feasibility or matcher.budget is None:
            return ranked[:units]
        return self._feasible(ranked, units, tag, matcher)

    def _feasible(self, ranked, units, tag, matcher):
        rate = self.history.events_per_tag()
        budget, ea, symbol = matcher.budget, matcher.ea, matcher.symbol
        refill = None if rate is None else budget.per_event * rate
        seed_start = matcher.stats.events - 1
        closes = matcher.window - tag  # + a node's start tag: tags left in its window
        chosen = []
        for n in ranked:
            if len(chosen) == units:
                break
            cost = ea.completion_cost(n.vid, symbol)
            left = budget.credit - len(chosen)
            if n.start == seed_start and left < self.seed_reserve * cost:
                continue
            if refill is not None and cost > left + refill * (closes + n.start_tag):
                continue
            chosen.append(n)
        return chosen

    def learn(self, node, child_vid, bundle, tag, matcher) -> None:
        if not self.learn_online:
            return
        self._expansions += 1
        if self._expansions % self.learn_every:
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


#: During a budgeted run the history policy learns from every this-many expansions.
ONLINE_LEARN_EVERY = 4


def make_policy(name: str, *, history: History | None = None, seed: int = 0):
    """A policy by name for a budgeted run: 'history' (needs a History), 'random' or
    'oldest'."""
    if name == "history":
        if history is None:
            raise ValueError("the history policy needs a History")
        return HistoryPolicy(history, learn_every=ONLINE_LEARN_EVERY)
    if name == "random":
        return RandomShedding(seed)
    if name == "oldest":
        return OldestFirstShedding()
    raise ValueError(f"unknown shedding policy {name!r} (history, random, oldest)")
