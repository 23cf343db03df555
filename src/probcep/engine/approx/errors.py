"""k-error automaton: the pattern's DFA plus least-insertion costs (docs/semantics.md §7).

Inserting a symbol into a critical subsequence is a free choice of any DFA edge, so the
least number of insertions between two DFA states is their shortest-path distance over
the DFA's edges. A prefix σ of a candidate match is summarized by its *cost vector*:
`c[q]` = least insertions after which σ leads the DFA into state `q` (capped at
`k + 1` = `FAR`, meaning "more than `k`"). Two prefixes with the same cost vector have
the same future: every extension gives both the same error. Vectors are interned as
small integers (vector ids), and the transition `(vector id, symbol) -> vector id` is
memoized, so the matcher's inner step is one dictionary lookup.
"""

from __future__ import annotations

import numpy as np

from probcep.engine.automaton import DEAD, Dfa, compile_pattern
from probcep.engine.pattern import PatternError, Symbol, parse

#: Vector id meaning "no extension of this prefix is within k errors".
NO_VECTOR = -1


def pattern_symbols(pattern: str) -> tuple[str, ...]:
    """Symbol names that a pattern mentions, in order of first appearance."""
    names: list[str] = []

    def walk(node) -> None:
        if isinstance(node, Symbol):
            if node.name not in names:
                names.append(node.name)
            return
        for attr in ("members", "parts", "options"):
            for child in getattr(node, attr, ()):
                walk(child)
        if hasattr(node, "item"):
            walk(node.item)

    walk(parse(pattern))
    return tuple(names)


def default_domain(pattern: str, observed) -> tuple[str, ...]:
    """The pattern's symbols (in pattern order), then other observed symbols (sorted)."""
    named = pattern_symbols(pattern)
    extra = sorted({str(s) for s in observed} - set(named))
    return named + tuple(extra)


#: The most insertions a match may need: distances are int64 sums of a few of them
#: (k + 1 stands for "more than k"), which 2^63 would overflow.
MAX_ERRORS = 2 ** 60
#: The most automaton states approximate matching takes: it keeps the insertion distance
#: between every two states (32 MiB at this size, found by a search from each state), and
#: a cost vector per state for every prefix; exact matching takes up to MAX_DFA_STATES.
MAX_APPROX_STATES = 2048


def check_approx_size(dfa: Dfa) -> None:
    """PatternError when the pattern's automaton is too large to match approximately."""
    if dfa.n_states > MAX_APPROX_STATES:
        raise PatternError(
            f"pattern too complex for approximate matching: its automaton has "
            f"{dfa.n_states:,} states, more than the limit of {MAX_APPROX_STATES:,} "
            f"(MAX_APPROX_STATES; the insertion distances between every two states would "
            f"take {dfa.n_states ** 2 * 8 / 2 ** 20:,.0f} MiB)", dfa.pattern, 0)


def insertion_distances(dfa: Dfa, cap: int) -> np.ndarray:
    """`d[q, r]`: least number of symbols leading from `q` to `r` (0 on the diagonal).

    Breadth-first search from every state over the DFA's edges; distances above `cap`
    are stored as `cap`.
    """
    n = dfa.n_states
    succ = [sorted({int(t) for t in dfa.delta[q] if t != DEAD}) for q in range(n)]
    dist = np.full((n, n), cap, dtype=np.int64)
    for src in range(n):
        dist[src, src] = 0
        frontier = [src]
        depth = 0
        while frontier and depth + 1 < cap:
            depth += 1
            nxt = []
            for q in frontier:
                for r in succ[q]:
                    if dist[src, r] == cap:
                        dist[src, r] = depth
                        nxt.append(r)
            frontier = nxt
    return dist


class ErrorAutomaton:
    """Cost vectors of prefixes under at most `k` insertions, interned and memoized.

    >>> ea = ErrorAutomaton.build("a ( b | c ) d b", 2, domain="abcde")
    >>> v = ea.step(ea.step(ea.start, ea.index["a"]), ea.index["b"])
    >>> ea.error(v)  # "a b" needs "d b" inserted
    2
    """

    def __init__(self, dfa: Dfa, k: int):
        if not 0 <= k <= MAX_ERRORS:
            raise ValueError(f"max errors must be in 0..{MAX_ERRORS}, got {k}")
        check_approx_size(dfa)
        self.dfa = dfa
        self.k = k
        self.far = k + 1
        self.index = {name: i for i, name in enumerate(dfa.domain)}
        self.dist = insertion_distances(dfa, self.far)
        acc = np.flatnonzero(dfa.accepting)
        self.to_accept = np.minimum(self.dist[:, acc].min(axis=1), self.far)
        self._vectors: list[np.ndarray] = []
        self._ids: dict[bytes, int] = {}
        self._errors: list[int] = []
        self._step: dict[tuple[int, int], int] = {}
        self._live: list[frozenset[int] | None] = []
        self._need: list[int] = []
        self._cost: dict[tuple[int, int], int] = {}
        # Symbols from each state to acceptance, uncapped (0 for accepting states).
        self.to_accept_full = np.where(dfa.accepting, 0, dfa.dist_next).astype(np.int64)
        empty = np.full(dfa.n_states, self.far, dtype=np.int64)
        empty[dfa.start] = 0
        self.start = self._intern(empty)

    @classmethod
    def build(cls, pattern: str, k: int, domain) -> ErrorAutomaton:
        return cls(compile_pattern(pattern, tuple(domain)), k)

    def error(self, vid: int) -> int:
        """Least insertions that turn a prefix with this vector into a word (FAR if > k)."""
        return self._errors[vid]

    def step(self, vid: int, symbol: int) -> int:
        """Vector id after consuming `symbol` (with insertions before it), or NO_VECTOR."""
        key = (vid, symbol)
        nxt = self._step.get(key)
        if nxt is None:
            nxt = self._step[key] = self._compute_step(vid, symbol)
        return nxt

    def need(self, vid: int) -> int:
        """Least number of further events after which some extension has <= k errors.

        From state `q`, reached with `c[q]` insertions, acceptance is `L(q)` symbols
        away; at most `k - c[q]` of them may be inserted, the rest must be events.
        """
        return self._need[vid]

    def completion_cost(self, vid: int, symbol: int) -> int:
        """Expansions a match through (vid, then `symbol`) needs at least: 1 + need."""
        key = (vid, symbol)
        cost = self._cost.get(key)
        if cost is None:
            cost = self._cost[key] = 1 + self._need[self.step(vid, symbol)]
        return cost

    def live_symbols(self, vid: int) -> frozenset[int]:
        """Symbols whose consumption keeps a prefix with this vector within k errors."""
        live = self._live[vid]
        if live is None:
            live = frozenset(a for a in range(len(self.dfa.domain))
                             if self.step(vid, a) != NO_VECTOR)
            self._live[vid] = live
        return live

    def vector(self, vid: int) -> bytes:
        """The cost vector of an id, as bytes (`vector_id` takes them back)."""
        return self._vectors[vid].tobytes()

    def vector_id(self, vector: bytes) -> int:
        """The id of a cost vector (bytes of `vector`), interned if new here."""
        return self._intern(np.frombuffer(vector, dtype=np.int64).copy())

    def basis(self) -> list[bytes]:
        """Every id's cost vector, in id order."""
        return [v.tobytes() for v in self._vectors]

    def _compute_step(self, vid: int, symbol: int) -> int:
        cost = self._vectors[vid]
        reach = np.minimum((cost[:, None] + self.dist).min(axis=0), self.far)
        targets = self.dfa.delta[:, symbol]
        ok = (targets != DEAD) & (reach < self.far)
        if not ok.any():
            return NO_VECTOR
        nxt = np.full(self.dfa.n_states, self.far, dtype=np.int64)
        np.minimum.at(nxt, targets[ok], reach[ok])
        return self._intern(nxt)

    def _intern(self, cost: np.ndarray) -> int:
        key = cost.tobytes()
        vid = self._ids.get(key)
        if vid is None:
            vid = self._ids[key] = len(self._vectors)
            self._vectors.append(cost)
            self._errors.append(int(min((cost + self.to_accept).min(), self.far)))
            self._live.append(None)
            ok = cost <= self.k
            self._need.append(int((np.maximum(self.to_accept_full - (self.k - cost), 0))[ok].min()))
        return vid
