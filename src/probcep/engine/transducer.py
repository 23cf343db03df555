"""Exact group probability by a forward pass over a lazily built transducer.

The grouping papers' transducer (the English paper's §5, the Japanese paper's §4) tracks
which pattern states the runs of a world are in; its final state absorbs every world
that contains a match. We build the same thing for any DFA and any window: a *composite*
state is the set of live runs of one world, each kept as (DFA state, length so far). Of
two runs in the same DFA state only the younger matters (same future, more window left),
so a composite holds at most one run per DFA state, and runs that cannot accept inside
the window are dropped.

Three modes give the papers' three transition matrices:
  A (T^A): runs may start, acceptance is ignored   (complete overlap, before t_first)
  T (T):   runs may start, acceptance is absorbed  (single overlap; t_first)
  B (T^B): no new runs, acceptance is absorbed     (complete overlap, after t_first)

Composite states and their transitions are created on first use and memoised, so only
the part of the (possibly large) product that the data visits is ever built.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from probcep.engine.automaton import UNREACHABLE, Dfa

MODE_A, MODE_T, MODE_B = 0, 1, 2
#: Composite id of the absorbing "the world contains a match" state.
ACCEPT = 0
#: Composite id of "no live runs".
EMPTY = 1
#: Table entry for a transition not built yet.
UNKNOWN = -1


@njit(cache=True, nogil=True)
def _forward(table, rows, los, his, firsts, out, g0, r0, ids, vals, nvec, accepted,
             out_ids, out_vals, mark):
    """Forward pass for groups g0, g1, ...: group g covers rows[los[g]:his[g]] and, when
    firsts[g] >= 0, uses mode A before row firsts[g], T at it and B after (else T).

    Resumes group g0 at row r0 with the given vector. Stops at the first transition not
    in the table and returns (group, row, nvec, accepted); done when group == len(los).
    """
    n_sym = rows.shape[1]
    for g in range(g0, los.shape[0]):
        if g != g0:
            r0 = los[g]
            ids[0] = EMPTY
            vals[0] = 1.0
            nvec = 1
            accepted = 0.0
        first = firsts[g]
        for r in range(r0, his[g]):
            mode = MODE_T
            if first >= 0:
                mode = MODE_A if r < first else (MODE_T if r == first else MODE_B)
            for i in range(nvec):  # `build` fills a state's row for all symbols at once
                if table[ids[i], 0, mode] == UNKNOWN:
                    return g, r, nvec, accepted
            m = 0
            for i in range(nvec):
                src = ids[i]
                v = vals[i]
                for a in range(n_sym):
                    pa = rows[r, a]
                    if pa <= 0.0:
                        continue
                    dst = table[src, a, mode]
                    if dst == ACCEPT:
                        accepted += v * pa
                        continue
                    if dst == EMPTY and mode == MODE_B:
                        continue  # no run left and none may start: never accepts
                    k = mark[dst]
                    if k < 0:
                        mark[dst] = m
                        out_ids[m] = dst
                        out_vals[m] = v * pa
                        m += 1
                    else:
                        out_vals[k] += v * pa
            for i in range(m):
                mark[out_ids[i]] = -1
                ids[i] = out_ids[i]
                vals[i] = out_vals[i]
            nvec = m
        out[g] = accepted
    return los.shape[0], 0, nvec, accepted


class Transducer:
    """Memoised composite-state transitions for one DFA and window."""

    def __init__(self, dfa: Dfa, window: int | None):
        self.dfa = dfa
        self.window = int(window or 0)
        self.keys: list[tuple | None] = [None, ()]
        self.ids: dict[tuple, int] = {(): EMPTY}
        self.table = np.full((64, len(dfa.domain), 3), UNKNOWN, np.int32)
        self.table[ACCEPT] = ACCEPT
        #: Memo for the matchers sharing this transducer: whether a silent row (θ, row
        #: bytes) leaves a matcher without live runs where it found none.
        self.inert: dict[tuple[float, bytes], bool] = {}

    @property
    def n_states(self) -> int:
        return len(self.keys)

    def _intern(self, key: tuple) -> int:
        cid = self.ids.get(key)
        if cid is None:
            cid = len(self.keys)
            self.ids[key] = cid
            self.keys.append(key)
            if cid >= len(self.table):
                grown = np.full((2 * len(self.table),) + self.table.shape[1:], UNKNOWN, np.int32)
                grown[: len(self.table)] = self.table
                self.table = grown
        return cid

    def _step(self, key: tuple, a: int, mode: int) -> int:
        dfa = self.dfa
        runs = list(key)
        if mode != MODE_B:
            runs.append((dfa.start, 0))
        live: dict[int, int] = {}
        for q, length in runs:
            q2 = int(dfa.delta[q, a])
            if q2 < 0:
                continue
            length2 = length + 1 if self.window else 0
            if mode != MODE_A and dfa.accepting[q2]:
                return ACCEPT
            d = int(dfa.dist_next[q2])
            if d >= UNREACHABLE or (self.window and length2 + d > self.window):
                continue
            if q2 not in live or length2 < live[q2]:
                live[q2] = length2
        return self._intern(tuple(sorted(live.items())))

    def build(self, cid: int, mode: int):
        key = self.keys[cid]
        targets = [self._step(key, a, mode) for a in range(len(self.dfa.domain))]
        self.table[cid, :, mode] = targets

    def accept_probabilities(self, rows: np.ndarray, los, his, firsts) -> np.ndarray:
        """For each group g, the probability that a world over rows[los[g]:his[g]] is
        accepted; firsts[g] is the row of t_first for complete overlap, else -1."""
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        los, his, firsts = (np.ascontiguousarray(a, dtype=np.int64) for a in (los, his, firsts))
        out = np.zeros(len(los))
        g, r, nvec, accepted = 0, (int(los[0]) if len(los) else 0), 1, 0.0
        ids, vals = np.zeros(self.n_states, np.int64), np.zeros(self.n_states)
        ids[0], vals[0] = EMPTY, 1.0
        while g < len(los):
            size = self.n_states
            if len(ids) < size:
                ids, vals = np.resize(ids, size), np.resize(vals, size)
            out_ids, out_vals = np.empty(size, np.int64), np.empty(size)
            mark = np.full(len(self.table), -1, np.int64)
            g, r, nvec, accepted = _forward(self.table, rows, los, his, firsts, out, g, r,
                                            ids, vals, nvec, accepted, out_ids, out_vals, mark)
            if g < len(los):  # build what the vector needs at row r, then resume
                first = firsts[g]
                mode = MODE_T if first < 0 or r == first else (MODE_A if r < first else MODE_B)
                for cid in ids[:nvec]:
                    if self.table[cid, 0, mode] == UNKNOWN:
                        self.build(int(cid), mode)
        return out
