"""ACEP and RC-ACEP over one deterministic event stream (docs/semantics.md §7; the paper
"History is a mirror to the future").

A *match node* is a class of candidate prefixes: every non-empty subsequence σ seen so
far that starts at the same event and has the same cost vector (see `errors.py`). Nodes
with equal (first event, cost vector) have identical futures, so they are merged and
carry `count`, the number of distinct subsequences they stand for. When event `j`
arrives, every node whose vector can consume `j`'s symbol is a *candidate*: expanding it
(one *work unit*) yields the class of its subsequences followed by `j`. The event alone
is one more candidate (the seed). Skipping `j` is free: a node stays as it is.

Matches are reported as *match classes*: the subsequences that event `j` completes from
one first event with one cost vector, so with one error. `count` says how many distinct
critical subsequences a class holds; `subsequences()` lists them (with `trace=True`) by
following the nodes' arrival links backwards, which is the paper's "once we locate the
window, enumerate the trajectories there".

Under a budget (RC-ACEP) a policy picks which candidates to expand when there are more
than the credit allows; the others are shed (dropped from the state). Work is counted in
expansions, so a budgeted run is reproducible; wall-clock time is measured alongside.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from probcep.engine.approx.bundles import Bundle, BundleTracker
from probcep.engine.approx.errors import NO_VECTOR, ErrorAutomaton
from probcep.errors import InputError


class Node:
    """A match node: prefixes from event `start` with cost vector `vid`."""

    __slots__ = ("start", "start_tag", "vid", "count", "last_tag", "arrivals")

    def __init__(self, start: int, start_tag: int, vid: int, count: int, last_tag: int,
                 arrivals: list | None):
        self.start = start
        self.start_tag = start_tag
        self.vid = vid
        self.count = count
        self.last_tag = last_tag
        self.arrivals = arrivals  # [(event index, parent Node or None)], oldest first

    def __repr__(self) -> str:
        return f"Node(start={self.start}, vid={self.vid}, count={self.count})"


def _prefixes(node: Node, before: int) -> Iterator[tuple[int, ...]]:
    """The subsequences (event indices) that `node` held just before event `before`."""
    for j, parent in node.arrivals:
        if j >= before:
            break
        if parent is None:
            yield (j,)
        else:
            for prefix in _prefixes(parent, j):
                yield prefix + (j,)


@dataclass(frozen=True)
class MatchClass:
    """Matches completed by event `position`, sharing first event and error."""

    position: int
    match_point: int
    start: int
    start_tag: int
    errors: int
    count: int
    sources: tuple = field(repr=False, compare=False)

    def subsequences(self) -> Iterator[tuple[int, ...]]:
        """Event indices of each critical subsequence (needs a matcher with trace=True)."""
        for parent in self.sources:
            if parent is None:
                yield (self.position,)
                continue
            if parent.arrivals is None:
                raise RuntimeError("subsequences need a matcher built with trace=True")
            for prefix in _prefixes(parent, self.position):
                yield prefix + (self.position,)


#: Unused credit is kept for this many events' worth of budget (a small input buffer).
DEFAULT_BURST = 10.0


#: The largest budget (work units an event) and burst: their product, the budget's
#: credit cap, stays a finite float whose whole part is an exact integer.
MAX_BUDGET = 1e15
#: The longest window: tags are 64-bit integers, so a window spans at most their range.
MAX_WINDOW = 2 ** 63 - 1


class Budget:
    """`per_event` work units of credit per event; unused credit is kept up to a cap.

    The cap is `burst` events' worth of credit (at least one unit), so a budget below
    one unit per event still expands a node every few events; `burst=1` makes the
    budget strictly per event.
    """

    def __init__(self, per_event: float, burst: float = DEFAULT_BURST):
        if not (0 <= per_event <= MAX_BUDGET and 1 <= burst <= MAX_BUDGET):
            raise ValueError(f"budget needs per_event in 0..{MAX_BUDGET:g} and burst in "
                             f"1..{MAX_BUDGET:g}, got {per_event!r}, {burst!r}")
        self.per_event = per_event
        # credit is counted exactly, in the decimals the budget was written with: ten
        # events of 0.1 grant one unit (added as doubles they make 0.9999999999999999)
        self._grant = Fraction(repr(float(per_event)))
        self.cap = max(Fraction(1), self._grant * Fraction(repr(float(burst))))
        self.credit = Fraction(0)

    def grant(self) -> int:
        self.credit = min(self.credit + self._grant, self.cap)
        return int(self.credit)

    def spend(self, units: int) -> None:
        self.credit -= units


@dataclass
class Stats:
    events: int = 0
    candidates: int = 0
    work: int = 0
    shed: int = 0
    matches: int = 0
    seconds: float = 0.0


class ApproxMatcher:
    """Finds every match with at most `k` errors within window `w` in one stream.

    Feed events in tag order with `feed(symbol_index, tag)`; `finish()` closes the
    bundles. With `budget` (a `Budget`) and `policy` (see `policies.py`) it is RC-ACEP.
    """

    def __init__(self, automaton: ErrorAutomaton, window: int, *, budget: Budget | None = None,
                 policy=None, trace: bool = False, stream_id: str = ""):
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if budget is not None and policy is None:
            raise ValueError("a budget needs a shedding policy")
        self.ea = automaton
        self.window = window
        self.budget = budget
        self.policy = policy
        self.trace = trace
        self.stream_id = stream_id
        self.by_start: dict[int, dict[int, Node]] = {}  # oldest start first
        self.by_vid: dict[int, dict[int, Node]] = {}
        self.bundles = BundleTracker(window)
        self.stats = Stats()
        self._last_tag: int | None = None
        self.symbol: int | None = None  # the event being processed, for policies

    # --- the event loop --------------------------------------------------------------

    def feed(self, symbol: int, tag: int) -> list[MatchClass]:
        """Process one event; return the match classes it completes."""
        began = time.perf_counter()
        if self._last_tag is not None and tag < self._last_tag:
            raise InputError(f"stream {self.stream_id!r}: tag {tag} after {self._last_tag}")
        self._last_tag = tag
        self.symbol = symbol
        j = self.stats.events
        self.stats.events += 1
        self._expire(tag)
        candidates = self._candidates(symbol, j, tag)
        self.stats.candidates += len(candidates)
        chosen = self._choose(candidates, tag)
        found = self._expand(chosen, symbol, j, tag)
        self.stats.seconds += time.perf_counter() - began
        return found

    def finish(self) -> list[Bundle]:
        return self.bundles.finish()

    @property
    def tag(self) -> int | None:
        """The tag of the event being (or last) processed."""
        return self._last_tag

    def _expire(self, tag: int) -> None:
        while self.by_start:
            start = next(iter(self.by_start))
            nodes = self.by_start[start]
            if nodes and tag - next(iter(nodes.values())).start_tag < self.window:
                break
            for node in nodes.values():
                self._unlink_vid(node)
            del self.by_start[start]

    def _candidates(self, symbol: int, j: int, tag: int) -> list[Node]:
        ea = self.ea
        out = [node for vid, nodes in self.by_vid.items() if symbol in ea.live_symbols(vid)
               for node in nodes.values()]
        if ea.step(ea.start, symbol) != NO_VECTOR:
            out.append(Node(j, tag, ea.start, 1, tag, None))  # the seed: the event alone
        return out

    def _choose(self, candidates: list[Node], tag: int) -> list[Node]:
        if self.policy is not None:
            self.policy.tick(len(candidates), self)
        if self.budget is None:
            self.stats.work += len(candidates)
            return candidates
        units = self.budget.grant()
        if len(candidates) > units or self.policy.declines:
            chosen = self.policy.select(candidates, min(units, len(candidates)), tag, self)
            kept = {id(n) for n in chosen}
            for node in candidates:
                if id(node) not in kept:
                    self._remove(node)
            self.stats.shed += len(candidates) - len(chosen)
        else:
            chosen = candidates
        self.budget.spend(len(chosen))
        self.stats.work += len(chosen)
        return chosen

    def _expand(self, chosen: list[Node], symbol: int, j: int, tag: int) -> list[MatchClass]:
        ea = self.ea
        children: dict[tuple[int, int], list] = {}
        steps = []
        for node in chosen:
            vid = ea.step(node.vid, symbol)
            is_seed = node.start == j
            child = children.get((node.start, vid))
            if child is None:
                child = children[(node.start, vid)] = [node.start_tag, 0, []]
            child[1] += node.count
            child[2].append(None if is_seed else node)
            steps.append((node, vid))
        found = []
        # by start, then by cost vector: ids number vectors in the order the automaton,
        # shared by the streams of a file, first met them, so they depend on other streams
        ordered = sorted(children.items(), key=lambda c: (c[0][0], ea.vector(c[0][1])))
        bundle: Bundle | None = None  # every match of this event lands in one bundle
        for (start, vid), (start_tag, count, sources) in ordered:
            err = ea.error(vid)
            if err <= ea.k:
                found.append(MatchClass(j, tag, start, start_tag, err, count, tuple(sources)))
                bundle = self.bundles.add(tag, count, err)
                self.stats.matches += count
        if self.policy is not None:  # before merging: parents as the policy saw them
            for node, vid in steps:
                matched = ea.error(vid) <= ea.k
                self.policy.learn(node, vid, bundle if matched else None, tag, self)
        for (start, vid), (start_tag, count, sources) in ordered:
            self._merge(start, start_tag, vid, count, sources, j, tag)
        return found

    # --- node bookkeeping ------------------------------------------------------------

    def _merge(self, start, start_tag, vid, count, sources, j, tag) -> None:
        group = self.by_start.get(start)
        if group is None:
            group = self.by_start[start] = {}
        node = group.get(vid)
        if node is None:
            node = group[vid] = Node(start, start_tag, vid, 0, tag, [] if self.trace else None)
            self.by_vid.setdefault(vid, {})[start] = node
        node.count += count
        node.last_tag = tag
        if self.trace:
            node.arrivals.extend((j, parent) for parent in sources)

    def _remove(self, node: Node) -> None:
        group = self.by_start.get(node.start)
        if group is None or group.get(node.vid) is not node:
            return  # a seed, or already gone
        del group[node.vid]
        if not group:
            del self.by_start[node.start]
        self._unlink_vid(node)

    def _unlink_vid(self, node: Node) -> None:
        nodes = self.by_vid[node.vid]
        del nodes[node.start]
        if not nodes:
            del self.by_vid[node.vid]
