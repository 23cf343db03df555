"""Compile a parsed pattern into a minimal DFA over a finite symbol domain.

The DFA (not an NFA) is what the engine runs: every symbol sequence has exactly one
path, so counting paths counts matches (docs/semantics.md §3: same interval, different symbols,
different matches). The dead state is dropped: a transition into it is `DEAD`.

Every stage is bounded (docs/engine.md §2, Limits): the parser bounds the text, nesting and
expanded size; the NFA's state count is computed on the syntax tree before anything is
built; subset construction stops at a number of DFA states and a number of steps; and the
final table has a bounded number of cells. So any pattern is refused with a PatternError,
or compiled in well under a second and a few tens of MiB (limits chosen for that).
The work does not grow with the domain: symbols the pattern cannot tell apart are one class.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from probcep.engine.pattern import (
    SYMBOL_NAME,
    Alternation,
    AnySymbol,
    Concat,
    PatternError,
    Repeat,
    Symbol,
    SymbolClass,
    empty_at,
    never_at,
    parse,
)
from probcep.errors import InputError

#: Transition target meaning "no match can follow" (the removed dead state).
DEAD = -1
#: Distance to acceptance from a state that can never accept again.
UNREACHABLE = np.iinfo(np.int32).max // 2
#: Most DFA states subset construction may create (before minimization); checked as each
#: state is found, so an exponential pattern such as `(a|b)* a (a|b){20}` stops early.
MAX_DFA_STATES = 10_000
#: Most Thompson NFA states a pattern may need; counted on the syntax tree before
#: building, since repetitions of nothing (`(a{0}){200}`) cost states but no positions.
MAX_NFA_STATES = 50_000
#: Most steps subset construction may take, a work estimate checked as it goes: an NFA
#: state visited by an epsilon closure counts 4, an element of a subset scanned, filled in
#: or kept counts 1, an element merged by a union (C speed) counts 1/8. Bounds its time
#: (a few tenths of a second) and the memory of the sets it keeps, whatever the pattern.
MAX_SUBSET_STEPS = 2_000_000
#: Most cells (states x domain symbols) of the minimal DFA's transition table, the array
#: the engine keeps: only a very large domain comes near it.
MAX_DFA_CELLS = 5_000_000


class _Alphabet:
    """The domain's symbols in classes that the pattern cannot tell apart.

    Two symbols are in one class when every symbol and `[...]` of the pattern names both
    or neither (all the symbols only `.` or `[^...]` can match form one class). The
    automaton is built over classes, so its cost does not grow with the domain; its
    columns are copied out to the symbols at the end, which gives the same minimal DFA.
    Classes are numbered in the order of their first symbol in the domain.
    """

    def __init__(self, tree, domain: tuple[str, ...]):
        self.domain_index = {name: i for i, name in enumerate(domain)}
        class_of = [0] * len(domain)
        size = [len(domain)]
        for members in _member_sets(tree, self.domain_index):
            touched: dict[int, list[int]] = {}
            for a in members:
                touched.setdefault(class_of[a], []).append(a)
            for c, inside in touched.items():
                if len(inside) < size[c]:  # split class c: `inside` becomes a new class
                    size[c] -= len(inside)
                    size.append(len(inside))
                    for a in inside:
                        class_of[a] = len(size) - 1
        number: dict[int, int] = {}
        self.class_of = [number.setdefault(c, len(number)) for c in class_of]
        self.n_classes = len(number)
        self.everything = frozenset(range(self.n_classes))

    def label(self, node, pattern: str) -> frozenset[int]:
        """The classes a leaf of the syntax tree matches; refuses unknown symbols."""
        if isinstance(node, AnySymbol):
            return self.everything
        members = node.members if isinstance(node, SymbolClass) else (node,)
        chosen = set()
        for sym in members:
            if sym.name not in self.domain_index:
                known = ", ".join(n if SYMBOL_NAME.fullmatch(n) else repr(n)  # ' a'
                                  for n in self.domain_index)
                raise PatternError(
                    f"unknown symbol {sym.name!r} (domain: {known})", pattern, sym.position
                )
            chosen.add(self.class_of[self.domain_index[sym.name]])
        if isinstance(node, SymbolClass) and node.negated:
            return self.everything - chosen
        return frozenset(chosen)


def _member_sets(tree, domain_index: dict[str, int]):
    """The distinct sets of domain indices named by the pattern's symbols and `[...]`."""
    seen = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Symbol | SymbolClass):
            members = node.members if isinstance(node, SymbolClass) else (node,)
            named = frozenset(domain_index[m.name] for m in members if m.name in domain_index)
            if named not in seen:
                seen.add(named)
                yield named
        elif isinstance(node, Concat):
            stack.extend(node.parts)
        elif isinstance(node, Alternation):
            stack.extend(node.options)
        elif isinstance(node, Repeat):
            stack.append(node.item)


class _Nfa:
    """Thompson NFA whose edges carry sets of symbol classes (see _Alphabet)."""

    def __init__(self, pattern: str, alphabet: _Alphabet):
        self.pattern = pattern
        self.alphabet = alphabet
        self.edges: list[list[tuple[frozenset[int], int]]] = []
        self.eps: list[list[int]] = []
        self.labels: dict[int, frozenset[int]] = {}  # id(leaf node) -> symbol classes

    def state(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:  # backstop: nfa_size() refuses such trees
            raise PatternError(_too_many_nfa_states(f"more than {MAX_NFA_STATES:,}"),
                               self.pattern, 0)
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def build(self, node) -> tuple[int, int]:
        if isinstance(node, Symbol | SymbolClass | AnySymbol):
            a, b = self.state(), self.state()
            label = self.labels.get(id(node))  # a repeated leaf is one node, copied
            if label is None:
                label = self.labels[id(node)] = self.alphabet.label(node, self.pattern)
            self.edges[a].append((label, b))
            return a, b
        if isinstance(node, Concat):
            first, last = self.build(node.parts[0])
            for part in node.parts[1:]:
                s, e = self.build(part)
                self.eps[last].append(s)
                last = e
            return first, last
        if isinstance(node, Alternation):
            a, b = self.state(), self.state()
            for option in node.options:
                s, e = self.build(option)
                self.eps[a].append(s)
                self.eps[e].append(b)
            return a, b
        if isinstance(node, Repeat):
            return self._repeat(node)
        raise TypeError(f"unknown syntax node {node!r}")

    def _repeat(self, node: Repeat) -> tuple[int, int]:
        template = None  # the first copy of the item, as built: later copies repeat it

        def copy() -> tuple[int, int]:
            nonlocal template
            if template is None:
                first = len(self.edges)
                s, e = self.build(node.item)
                template = (first, [list(row) for row in self.edges[first:]],
                            [list(row) for row in self.eps[first:]], s, e)
                return s, e
            first, edges, eps, s, e = template
            if len(self.edges) + len(edges) > MAX_NFA_STATES:  # backstop, as in state()
                raise PatternError(_too_many_nfa_states(f"more than {MAX_NFA_STATES:,}"),
                                   self.pattern, 0)
            shift = len(self.edges) - first
            self.edges.extend([(label, t + shift) for label, t in row] for row in edges)
            self.eps.extend([t + shift for t in row] for row in eps)
            return s + shift, e + shift

        start = last = self.state()
        for _ in range(node.low):
            s, e = copy()
            self.eps[last].append(s)
            last = e
        if node.high is None:  # Kleene star on one more copy
            s, e = copy()
            loop_end = self.state()
            self.eps[last] += [s, loop_end]
            self.eps[e] += [s, loop_end]
            return start, loop_end
        end = self.state()
        self.eps[last].append(end)
        for _ in range(node.high - node.low):  # optional copies, each may end the run
            s, e = copy()
            self.eps[last].append(s)
            self.eps[e].append(end)
            last = e
        return start, end

    def closure(self, states) -> set[int]:
        eps = self.eps
        seen = set(states)
        stack = list(states)
        push, pop, add = stack.append, stack.pop, seen.add
        while stack:
            for nxt in eps[pop()]:
                if nxt not in seen:
                    add(nxt)
                    push(nxt)
        return seen


def nfa_size(node) -> int:
    """Number of states `_Nfa.build` creates for `node`, computed without building it."""
    if isinstance(node, Symbol | SymbolClass | AnySymbol):
        return 2
    if isinstance(node, Concat):
        return sum(nfa_size(part) for part in node.parts)
    if isinstance(node, Alternation):
        return 2 + sum(nfa_size(option) for option in node.options)
    if isinstance(node, Repeat):
        item = nfa_size(node.item)
        if node.high is None:
            return 2 + (node.low + 1) * item
        return 2 + node.high * item
    raise TypeError(f"unknown syntax node {node!r}")


def _too_many_nfa_states(count: str) -> str:
    return (f"pattern too large: its automaton needs {count} NFA states, more than the "
            f"limit of {MAX_NFA_STATES:,} (MAX_NFA_STATES)")


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

    def unfit(self, window: int | None) -> str | None:
        """Why no match can fit in `window` timesteps (its shortest match is longer), or
        None: such a query is valid and finds nothing, almost surely not what was meant."""
        if window is None or window >= self.min_length():
            return None
        return (f"the window of {window} is shorter than the shortest match of "
                f"{self.pattern!r} ({self.min_length()} timesteps): it can never match")


def compile_pattern(pattern: str, domain) -> Dfa:
    """Parse `pattern` and build its minimal DFA over `domain` (a sequence of names).

    Raises PatternError for bad syntax, unknown symbols, a pattern that matches the
    empty sequence and one that can match nothing at all over this domain.
    """
    domain = tuple(domain)
    if any(not isinstance(s, str) or not s for s in domain):
        raise InputError(f"domain symbols must be non-empty strings, got {domain!r}")
    if len(set(domain)) != len(domain) or not domain:
        raise InputError(f"domain must be a non-empty list of distinct symbols, got {domain!r}")
    tree = parse(pattern)
    if (size := nfa_size(tree)) > MAX_NFA_STATES:
        raise PatternError(_too_many_nfa_states(f"{size:,}"), pattern, 0)
    alphabet = _Alphabet(tree, domain)
    nfa = _Nfa(pattern, alphabet)
    start, final = nfa.build(tree)
    delta, accepting = _determinize(nfa, start, final, alphabet.n_classes, pattern)
    if accepting[0]:
        raise PatternError("pattern matches the empty sequence", pattern, empty_at(tree) or 0)
    delta, accepting, dfa_start = _trim_and_minimize(delta, accepting)
    if dfa_start == DEAD:
        raise PatternError("pattern can never match over this domain", pattern,
                           never_at(tree, domain) or 0)
    if (cells := delta.shape[0] * len(domain)) > MAX_DFA_CELLS:
        raise PatternError(
            f"pattern too complex: its automaton table needs {delta.shape[0]:,} states x "
            f"{len(domain):,} symbols = {cells:,} cells, more than the limit of "
            f"{MAX_DFA_CELLS:,} (MAX_DFA_CELLS)", pattern, 0)
    dist_next = _distances(delta, accepting)
    classes = np.array(alphabet.class_of, dtype=np.intp)
    return Dfa(
        pattern=pattern,
        domain=domain,
        delta=np.take(delta, classes, axis=1),  # columns of classes copied out to symbols
        start=dfa_start,
        accepting=accepting,
        dist_next=dist_next,
    )


def _determinize(nfa: _Nfa, start: int, final: int, n_symbols: int, pattern: str):
    """Subset construction; DFA state 0 is the start, the empty subset is dropped.

    A subset keeps only the NFA states that matter for the future: those with a symbol
    edge, and the final state. Subsets with the same such states behave alike, and the
    minimal DFA (unique) does not depend on how many copies of a state were found.
    `moves[a][q]`, filled in when `q` first appears in a subset, is the subset reached
    from `q` on symbol `a`, so a DFA transition is one union of frozensets.

    The work is counted as it goes (see MAX_SUBSET_STEPS), and so are the DFA states
    (MAX_DFA_STATES): past either limit the pattern is refused.
    """
    important = [bool(edges) for edges in nfa.edges]
    important[final] = True
    nothing: frozenset[int] = frozenset()
    moves: list[dict[int, frozenset[int]]] = [{} for _ in range(n_symbols)]
    reach: dict[int, frozenset[int]] = {}  # epsilon closure of a state, important states only
    known: set[int] = set()  # states whose moves are filled in
    steps = 0

    def count(more: int):
        nonlocal steps
        steps += more
        if steps > MAX_SUBSET_STEPS:
            raise PatternError(f"pattern too complex: building its automaton takes more than "
                               f"{MAX_SUBSET_STEPS:,} steps (MAX_SUBSET_STEPS)", pattern, 0)

    def reach_of(target: int) -> frozenset[int]:
        found = reach.get(target)
        if found is None:
            closure = nfa.closure([target])
            count(4 * len(closure))
            found = reach[target] = frozenset(q for q in closure if important[q])
        return found

    def learn(subset: frozenset[int]):
        """Fill in the moves of the states of `subset` not seen before, and count it."""
        new = subset - known
        count(len(subset) + n_symbols * len(new))
        for q in new:
            for moves_a in moves:
                moves_a[q] = nothing
            for label, t in nfa.edges[q]:
                found = reach_of(t)
                for a in label:
                    moves[a][q] = moves[a][q] | found
        known.update(new)

    first = reach_of(start)
    learn(first)
    ids = {first: 0}
    order = [first]
    rows = []
    i = 0
    while i < len(order):
        subset = order[i]
        row = []
        for moves_a in moves:
            parts = [moves_a[q] for q in subset]
            count(len(parts) + (sum(map(len, parts)) >> 3) + 1)
            nxt = nothing.union(*parts)
            if not nxt:
                row.append(DEAD)
                continue
            if nxt not in ids:
                if len(order) >= MAX_DFA_STATES:
                    raise PatternError(
                        f"pattern too complex: its automaton needs more than "
                        f"{MAX_DFA_STATES:,} DFA states (MAX_DFA_STATES)", pattern, 0)
                learn(nxt)
                ids[nxt] = len(order)
                order.append(nxt)
            row.append(ids[nxt])
        rows.append(row)
        i += 1
    delta = np.array(rows, dtype=np.int32).reshape(len(order), n_symbols)
    accepting = np.array([final in subset for subset in order], dtype=bool)
    return delta, accepting


def _trim_and_minimize(delta: np.ndarray, accepting: np.ndarray):
    """Drop states that cannot reach acceptance, then merge equivalent ones (Hopcroft).

    States are numbered in order of first appearance from the start state (BFS over the
    merged automaton, symbols in domain order), so the result is canonical.
    """
    n, k = delta.shape
    live = _steps_to_accept(delta, accepting) < UNREACHABLE
    if not live[0]:
        return delta[:0], accepting[:0], DEAD
    delta = np.where((delta >= 0) & live[np.maximum(delta, 0)], delta, DEAD)
    block = _equivalence_blocks(delta, accepting, live)
    # Renumber blocks in order of first appearance from the start state (BFS).
    block_of = block.tolist()
    new_id = [-1] * (max(block_of) + 1)
    order = []
    rows = delta.tolist()
    queue = deque([0])
    while queue:
        q = queue.popleft()
        b = block_of[q]
        if new_id[b] >= 0:
            continue
        new_id[b] = len(order)
        order.append(q)
        queue.extend(t for t in rows[q] if t >= 0 and new_id[block_of[t]] < 0)
    reps = np.array(order, dtype=np.int64)
    targets = delta[reps]
    renumber = np.array(new_id, dtype=np.int64)
    new_delta = np.where(targets >= 0, renumber[block[np.maximum(targets, 0)]], DEAD)
    return new_delta.astype(np.int32), accepting[reps].copy(), 0


def _steps_to_accept(delta: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Least number of symbols (>= 0) from each state to an accepting state (reverse BFS);
    UNREACHABLE when there is none."""
    n = delta.shape[0]
    preds: list[list[int]] = [[] for _ in range(n)]
    for q, row in enumerate(delta.tolist()):
        for t in row:
            if t >= 0:
                preds[t].append(q)
    dist = [UNREACHABLE] * n
    queue = deque(int(q) for q in np.flatnonzero(accepting))
    for q in queue:
        dist[q] = 0
    while queue:
        q = queue.popleft()
        for p in preds[q]:
            if dist[p] == UNREACHABLE:
                dist[p] = dist[q] + 1
                queue.append(p)
    return np.array(dist, dtype=np.int64)


def _equivalence_blocks(delta: np.ndarray, accepting: np.ndarray,
                        live: np.ndarray) -> np.ndarray:
    """Block number of each live state under language equivalence, -1 for the others.

    Hopcroft's partition refinement, O(k n log n), over the live states completed by one
    sink state that stands for DEAD.
    """
    n, k = delta.shape
    states = np.flatnonzero(live)
    index = np.full(n, -1, dtype=np.int64)
    index[states] = np.arange(len(states))
    sink = len(states)
    size = sink + 1
    rows = delta[states]
    succ = np.where(rows >= 0, index[np.maximum(rows, 0)], sink)
    succ = np.vstack([succ, np.full((1, k), sink, dtype=succ.dtype)]).T.tolist()
    preds: list[list[list[int]]] = []
    for a in range(k):
        pa: list[list[int]] = [[] for _ in range(size)]
        for p, q in enumerate(succ[a]):
            pa[q].append(p)
        preds.append(pa)
    final = {i for i, q in enumerate(states.tolist()) if accepting[q]}
    blocks = [final, set(range(size)) - final]  # both non-empty: state 0 is live
    block_of = [0 if i in final else 1 for i in range(size)]
    waiting = [0, 1]
    while waiting:
        splitter = tuple(blocks[waiting.pop()])
        for pa in preds:
            touched: dict[int, list[int]] = {}
            for q in splitter:
                for p in pa[q]:
                    touched.setdefault(block_of[p], []).append(p)
            for b, inside in touched.items():
                block = blocks[b]
                if len(inside) == len(block):  # each p has one successor: no repeats
                    continue
                # Both ways cost O(len(inside)): the block is at most twice as large.
                if 2 * len(inside) <= len(block):
                    small = set(inside)
                    block -= small
                else:
                    small = block - set(inside)
                    blocks[b] = set(inside)
                new = len(blocks)
                blocks.append(small)
                for p in small:
                    block_of[p] = new
                waiting.append(new)  # with b when b waits, else the smaller half: Hopcroft
    result = np.full(n, -1, dtype=np.int64)
    result[states] = np.array(block_of[:sink], dtype=np.int64)
    return result


def _distances(delta: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Least number of symbols (>= 1) from each state to an accepting state."""
    dist0 = _steps_to_accept(delta, accepting)  # >= 0 symbols
    succ = np.where(delta >= 0, dist0[np.maximum(delta, 0)], UNREACHABLE)
    return np.minimum(succ.min(axis=1) + 1, UNREACHABLE).astype(np.int32)
