"""Compile a parsed pattern into a minimal DFA over a finite symbol domain.

The DFA (not an NFA) is what the engine runs: every symbol sequence has exactly one
path, so counting paths counts matches (docs/semantics.md §3: same interval, different symbols,
different matches). The dead state is dropped: a transition into it is `DEAD`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from probcep.engine.pattern import (
    Alternation,
    AnySymbol,
    Concat,
    PatternError,
    Repeat,
    Symbol,
    SymbolClass,
    parse,
)
from probcep.errors import InputError

#: Transition target meaning "no match can follow" (the removed dead state).
DEAD = -1
#: Distance to acceptance from a state that can never accept again.
UNREACHABLE = np.iinfo(np.int32).max // 2
#: A DFA larger than this is refused instead of exhausting memory.
MAX_DFA_STATES = 20_000


class _Nfa:
    """Thompson NFA whose edges carry sets of symbol indices."""

    def __init__(self):
        self.edges: list[list[tuple[frozenset[int], int]]] = []
        self.eps: list[list[int]] = []

    def state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def build(self, node, domain_index: dict[str, int], pattern: str) -> tuple[int, int]:
        if isinstance(node, Symbol | SymbolClass | AnySymbol):
            a, b = self.state(), self.state()
            self.edges[a].append((_symbols(node, domain_index, pattern), b))
            return a, b
        if isinstance(node, Concat):
            first, last = self.build(node.parts[0], domain_index, pattern)
            for part in node.parts[1:]:
                s, e = self.build(part, domain_index, pattern)
                self.eps[last].append(s)
                last = e
            return first, last
        if isinstance(node, Alternation):
            a, b = self.state(), self.state()
            for option in node.options:
                s, e = self.build(option, domain_index, pattern)
                self.eps[a].append(s)
                self.eps[e].append(b)
            return a, b
        if isinstance(node, Repeat):
            return self._repeat(node, domain_index, pattern)
        raise TypeError(f"unknown syntax node {node!r}")

    def _repeat(self, node: Repeat, domain_index, pattern) -> tuple[int, int]:
        start = last = self.state()
        for _ in range(node.low):
            s, e = self.build(node.item, domain_index, pattern)
            self.eps[last].append(s)
            last = e
        if node.high is None:  # Kleene star on one more copy
            s, e = self.build(node.item, domain_index, pattern)
            loop_end = self.state()
            self.eps[last] += [s, loop_end]
            self.eps[e] += [s, loop_end]
            return start, loop_end
        end = self.state()
        self.eps[last].append(end)
        for _ in range(node.high - node.low):  # optional copies, each may end the run
            s, e = self.build(node.item, domain_index, pattern)
            self.eps[last].append(s)
            self.eps[e].append(end)
            last = e
        return start, end

    def closure(self, states) -> frozenset[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for nxt in self.eps[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)


def _symbols(node, domain_index: dict[str, int], pattern: str) -> frozenset[int]:
    everything = frozenset(domain_index.values())
    if isinstance(node, AnySymbol):
        return everything
    members = node.members if isinstance(node, SymbolClass) else (node,)
    chosen = set()
    for sym in members:
        if sym.name not in domain_index:
            known = ", ".join(domain_index)
            raise PatternError(
                f"unknown symbol {sym.name!r} (domain: {known})", pattern, sym.position
            )
        chosen.add(domain_index[sym.name])
    if isinstance(node, SymbolClass) and node.negated:
        return everything - chosen
    return frozenset(chosen)


@dataclass(frozen=True, eq=False)
class Dfa:
    """A minimal, trimmed DFA: `delta[q, a]` is the next state or DEAD.

    `dist_next[q]` is the least number of further symbols (at least one) after which a
    run now in `q` can be accepting again; UNREACHABLE when it never can. The engine uses
    it to drop runs that can no longer produce a match inside the window.
    """

    pattern: str
    domain: tuple[str, ...]
    delta: np.ndarray = field(repr=False)
    start: int
    accepting: np.ndarray = field(repr=False)
    dist_next: np.ndarray = field(repr=False)

    @property
    def n_states(self) -> int:
        return self.delta.shape[0]

    def accepts(self, symbols) -> bool:
        """Whether the sequence of symbol names is in the pattern's language."""
        q = self.start
        index = {s: i for i, s in enumerate(self.domain)}
        for name in symbols:
            q = int(self.delta[q, index[name]])
            if q == DEAD:
                return False
        return bool(self.accepting[q])

    def min_length(self) -> int:
        return int(self.dist_next[self.start])


def compile_pattern(pattern: str, domain) -> Dfa:
    """Parse `pattern` and build its minimal DFA over `domain` (a sequence of names).

    Raises PatternError for bad syntax, unknown symbols, a pattern that matches the
    empty sequence and one that can match nothing at all over this domain.
    """
    domain = tuple(domain)
    if len(set(domain)) != len(domain) or not domain:
        raise InputError(f"domain must be a non-empty list of distinct symbols, got {domain!r}")
    tree = parse(pattern)
    nfa = _Nfa()
    domain_index = {name: i for i, name in enumerate(domain)}
    start, final = nfa.build(tree, domain_index, pattern)
    delta, accepting = _determinize(nfa, start, final, len(domain), pattern)
    if accepting[0]:
        raise PatternError("pattern matches the empty sequence", pattern, 0)
    delta, accepting, dfa_start = _trim_and_minimize(delta, accepting)
    if dfa_start == DEAD:
        raise PatternError("pattern can never match over this domain", pattern, 0)
    return Dfa(
        pattern=pattern,
        domain=domain,
        delta=delta,
        start=dfa_start,
        accepting=accepting,
        dist_next=_distances(delta, accepting),
    )


def _determinize(nfa: _Nfa, start: int, final: int, n_symbols: int, pattern: str):
    """Subset construction; DFA state 0 is the start, the empty subset is dropped."""
    first = nfa.closure([start])
    ids = {first: 0}
    order = [first]
    rows = []
    i = 0
    while i < len(order):
        subset = order[i]
        row = []
        for a in range(n_symbols):
            targets = [t for s in subset for label, t in nfa.edges[s] if a in label]
            if not targets:
                row.append(DEAD)
                continue
            nxt = nfa.closure(targets)
            if nxt not in ids:
                if len(order) >= MAX_DFA_STATES:
                    raise PatternError(
                        f"pattern needs more than {MAX_DFA_STATES} automaton states", pattern, 0
                    )
                ids[nxt] = len(order)
                order.append(nxt)
            row.append(ids[nxt])
        rows.append(row)
        i += 1
    delta = np.array(rows, dtype=np.int32).reshape(len(order), n_symbols)
    accepting = np.array([final in subset for subset in order], dtype=bool)
    return delta, accepting


def _trim_and_minimize(delta: np.ndarray, accepting: np.ndarray):
    """Drop states that cannot reach acceptance, then merge equivalent ones (Moore)."""
    n, k = delta.shape
    live = accepting.copy()
    changed = True
    while changed:
        nxt_live = np.where(delta >= 0, live[np.maximum(delta, 0)], False)
        new_live = live | nxt_live.any(axis=1)
        changed = bool((new_live != live).any())
        live = new_live
    if not live[0]:
        return delta[:0], accepting[:0], DEAD
    delta = np.where((delta >= 0) & live[np.maximum(delta, 0)], delta, DEAD)
    # Moore refinement: blocks by acceptance, split by the blocks of successors.
    block = accepting.astype(np.int64)
    block[~live] = -2
    while True:
        succ = np.where(delta >= 0, block[np.maximum(delta, 0)], -1)
        signature = np.column_stack([block, succ])
        _, new_block = np.unique(signature, axis=0, return_inverse=True)
        new_block = new_block.ravel()
        new_block[~live] = -2
        if len(np.unique(new_block)) == len(np.unique(block)):
            break
        block = new_block
    # Renumber blocks in order of first appearance from the start state (BFS).
    rep_of_block = {}
    order = []
    queue = [0]
    while queue:
        q = queue.pop(0)
        b = block[q]
        if b in rep_of_block:
            continue
        rep_of_block[b] = len(order)
        order.append(q)
        queue.extend(int(t) for t in delta[q] if t >= 0)
    m = len(order)
    new_delta = np.full((m, k), DEAD, dtype=np.int32)
    new_accepting = np.zeros(m, dtype=bool)
    for i, q in enumerate(order):
        new_accepting[i] = accepting[q]
        for a in range(k):
            t = delta[q, a]
            if t >= 0:
                new_delta[i, a] = rep_of_block[block[t]]
    return new_delta, new_accepting, 0


def _distances(delta: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Least number of symbols (>= 1) from each state to an accepting state."""
    n, _ = delta.shape
    dist0 = np.where(accepting, 0, UNREACHABLE).astype(np.int64)  # >= 0 symbols
    for _ in range(n):
        succ = np.where(delta >= 0, dist0[np.maximum(delta, 0)], UNREACHABLE)
        best = np.minimum(dist0, succ.min(axis=1) + 1)
        if (best == dist0).all():
            break
        dist0 = best
    succ = np.where(delta >= 0, dist0[np.maximum(delta, 0)], UNREACHABLE)
    return np.minimum(succ.min(axis=1) + 1, UNREACHABLE).astype(np.int32)
