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
from probcep.errors import ProbcepError

MODE_A, MODE_T, MODE_B = 0, 1, 2
#: Composite id of the absorbing "the world contains a match" state.
ACCEPT = 0
#: Composite id of "no live runs".
EMPTY = 1
#: Table entry for a transition not built yet.
UNKNOWN = -1
#: Most cells (rows x composites) of the backward array of `cover_probabilities`.
COVER_CELLS = 1 << 23
#: Fewest composite columns that array starts with: at w = 5 the pass has 6 composites,
#: and 64 columns made each call zero (and fault in) ten times the memory it used.
COVER_MIN_COLUMNS = 8
#: Most composites the shared pass builds: the mode-B closure it needs is built whole,
#: whatever the data visits, and grows with the window (a run looping in one DFA state is
#: a composite per length up to w); beyond this the per-group pass, which builds only
#: what the data visits, takes over.
COVER_STATES = 1 << 15
#: Groups share a forward pass per this many windows of t_first: the pass starts one
#: window early, so the shared work is (COVER_BLOCK + 1) / COVER_BLOCK of the rows.
COVER_BLOCK = 8
#: A shared pass drops a composite whose share of its normalized vector is below this
#: (at θ = 0 most composites hold runs too unlikely to matter: without this the pass
#: carries O(w) of them at every row) ...
COVER_DROP = 1e-18
#: ... while the mass it has dropped stays within this. The pass's steps are linear and
#: keep the L1 norm (mode A loses no mass, then each row is normalized), so an error in
#: its vector never grows: every P(g) of the block is off by at most twice the dropped
#: mass times its own rows' mass (1 within the input's tolerance), whatever the
#: pattern, window and stream.
COVER_BUDGET = 1e-14
#: A group whose P(g) that bound could move by more than this fraction of itself (a group
#: of tiny probability in a block that dropped something) gets the per-group pass: the
#: shared pass's results are then the per-group pass's to rounding, relatively too.
COVER_RELATIVE = 1e-10
#: Most composites a transducer makes (about 1.2 KiB each, its table rows and key): a
#: pattern whose runs multiply within the window, such as `a .{0,k} b` (2^(k+1)
#: composites), is refused with a reason at this many (k = 19), not left to exhaust the
#: machine's memory.
MAX_COMPOSITES = 1 << 20
#: A silent stretch that only scales the accepted mass (its row sums to 1 within the
#: input's tolerance, not exactly) is stepped this far one multiplication at a time (the
#: bits of the filled-in rows), and beyond it by a power (the stretch would take as long).
SCALED_STEPS = 1 << 20
#: Statuses of `_cover_blocks`.
DONE, NEED_A, NEED_T, NEED_B = 0, 1, 2, 3


@njit(cache=True, nogil=True, inline="always")
def _sparse_step(table, rows, r, mode, ids, vals, nvec, out_ids, out_vals, mark, split,
                 out_free, accepted):
    """One row of the sparse forward product: the vector (ids, vals) times row r's
    transitions in `mode`, into (out_ids, out_vals); returns (size, `accepted` plus the
    mass absorbed, added one transition at a time).

    With `split` (mode A only), mass whose mode-T transition accepts is also counted as
    accepted, and out_free gets the rest: the mode-T step of the same row comes free,
    since mode T goes where mode A goes unless it accepts. `mark` is -1 for every
    composite on entry; the caller resets the entries this sets."""
    n_sym = rows.shape[1]
    m = 0
    for i in range(nvec):
        src = ids[i]
        v = vals[i]
        for a in range(n_sym):
            pa = rows[r, a]
            if pa <= 0.0:
                continue
            x = v * pa
            dst = table[src, a, mode]
            if dst == ACCEPT:
                accepted += x
                continue
            if dst == EMPTY and mode == MODE_B:
                continue  # no run left and none may start: never accepts
            free = x
            if split and table[src, a, MODE_T] == ACCEPT:
                accepted += x
                free = 0.0
            k = mark[dst]
            if k < 0:
                mark[dst] = m
                out_ids[m] = dst
                out_vals[m] = x
                if split:
                    out_free[m] = free
                m += 1
            else:
                out_vals[k] += x
                if split:
                    out_free[k] += free
    return m, accepted


@njit(cache=True, nogil=True, inline="always")
def _row_sum(rows, r):
    """Row r's mass. Mass already accepted is multiplied by each later row's, as every
    world that holds an accepted prefix is counted: with rows that sum to 1 only within
    the input's tolerance, P(g) is then the sum over worlds of docs/semantics.md §4 (and
    `--method naive`'s), not the probability of an accepted prefix, which differed from it
    by up to the group's rows times 1e-9 (QA, 2026-11-28). 1 changes no bit."""
    total = 0.0
    for a in range(rows.shape[1]):
        total += rows[r, a]
    return total


@njit(cache=True, nogil=True)
def _forward(table, rows, los, his, firsts, out, g0, r0, ids, vals, nvec, accepted,
             out_ids, out_vals, mark):
    """Forward pass for groups g0, g1, ...: group g covers rows[los[g]:his[g]] and, when
    firsts[g] >= 0, uses mode A before row firsts[g], T at it and B after (else T).

    Resumes group g0 at row r0 with the given vector. Stops at the first transition not
    in the table and returns (group, row, nvec, accepted); done when group == len(los).
    """
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
            if accepted != 0.0:
                accepted *= _row_sum(rows, r)  # see `_row_sum`
            m, accepted = _sparse_step(table, rows, r, mode, ids, vals, nvec, out_ids,
                                       out_vals, mark, False, out_vals, accepted)
            for i in range(m):
                mark[out_ids[i]] = -1
                ids[i] = out_ids[i]
                vals[i] = out_vals[i]
            nvec = m
        out[g] = accepted
    return los.shape[0], 0, nvec, accepted


@njit(cache=True, nogil=True)
def _scaled(x, s, k):
    """x multiplied by s k times, one step at a time as the rows would (the same bits)
    until it stops changing; past `SCALED_STEPS` steps, by the power of what is left."""
    for _ in range(min(k, SCALED_STEPS)):
        y = x * s
        if y == x:  # 0, inf, or where rounding holds it: so would every later step
            return x
        x = y
    if k > SCALED_STEPS:
        x *= s ** (k - SCALED_STEPS)
    return x


@njit(cache=True, nogil=True)
def _forward_sparse(table, t, rows, silence, los, his, a_idx, out, pos, ids, vals, nvec,
                    accepted, out_ids, out_vals, mark, seen):
    """Mode-T forward pass for ranges g = pos[0], ...: range g covers the timesteps
    [los[g], his[g]], whose stored rows are rows[a_idx[g]:] (times `t`, sorted); every
    other timestep holds `silence`. After a silent step that leaves the vector bit for bit
    as it was and accepts no more, every further silent step would too (the step is a
    function of them and the row), bar scaling the accepted mass by the silence's (which
    `_scaled` does), so the rest of the silent stretch is skipped.

    Resumes range pos[0] at time pos[1], stored row pos[2], with the given vector. Stops at
    the first transition not in the table (pos says where; returns nvec, accepted) and
    sets pos[0] = len(los) when done.
    """
    quiet = silence.reshape((1, silence.shape[0]))
    quiet_sum = _row_sum(quiet, 0)
    g0 = pos[0]
    for g in range(g0, los.shape[0]):
        if g != g0:
            cur, i = los[g], a_idx[g]
            ids[0] = EMPTY
            vals[0] = 1.0
            nvec = 1
            accepted = 0.0
        else:
            cur, i = pos[1], pos[2]
        while cur <= his[g]:
            stored = i < t.shape[0] and t[i] == cur
            for k in range(nvec):
                if table[ids[k], 0, MODE_T] == UNKNOWN:
                    pos[0], pos[1], pos[2] = g, cur, i
                    return nvec, accepted
            row, r = (rows, i) if stored else (quiet, 0)
            if accepted != 0.0:  # the silence's sum, summed once (QA: 1.45x slower)
                accepted *= _row_sum(rows, i) if stored else quiet_sum
            before = accepted
            m, accepted = _sparse_step(table, row, r, MODE_T, ids, vals, nvec, out_ids,
                                       out_vals, mark, False, out_vals, accepted)
            same = not stored and m == nvec and accepted == before
            if same:
                for k in range(nvec):
                    seen[ids[k]] = vals[k]
                for k in range(m):
                    if seen[out_ids[k]] != out_vals[k]:
                        same = False
                for k in range(nvec):
                    seen[ids[k]] = -1.0
            for k in range(m):
                mark[out_ids[k]] = -1
                ids[k] = out_ids[k]
                vals[k] = out_vals[k]
            nvec = m
            if stored:
                i += 1
                cur += 1
            elif same:  # a fixed point: on to the next stored row (or the range's end)
                nxt = min(t[i], his[g] + 1) if i < t.shape[0] else his[g] + 1
                if accepted != 0.0 and quiet_sum != 1.0:  # each step scales it alone
                    accepted = _scaled(accepted, quiet_sum, nxt - cur - 1)
                cur = nxt
            else:
                cur += 1
        out[g] = accepted
    pos[0] = los.shape[0]
    return nvec, accepted


@njit(cache=True, nogil=True)
def _cover_backward(table, rows, lo, beta, todo, k_min):
    """beta[k, z] = probability that composite z before row lo + k reaches acceptance in
    mode B by the last row (beta[-1] is 1 at ACCEPT, else 0), for the composites `todo`,
    whose mode-B closure is built; rows k_min and later. Other columns are left as they
    are: a closed composite's successors are closed, so columns computed before stay
    right when more composites are closed, and only the new ones need a pass."""
    n_sym = rows.shape[1]
    last = beta.shape[0] - 1
    for z in todo:
        beta[last, z] = 1.0 if z == ACCEPT else 0.0
    for k in range(last - 1, k_min - 1, -1):
        r = lo + k
        nxt = beta[k + 1]
        cur = beta[k]
        for z in todo:
            if z == ACCEPT:
                cur[z] = 1.0
                continue
            total = 0.0
            for a in range(n_sym):
                pa = rows[r, a]
                if pa > 0.0:
                    total += pa * nxt[table[z, a, MODE_B]]
            cur[z] = total


@njit(cache=True, nogil=True)
def _row_sums(rows, lo, hi, out):
    for r in range(lo, hi):
        total = 0.0
        for a in range(rows.shape[1]):
            total += rows[r, a]
        out[r] = total


@njit(cache=True, nogil=True)
def _times_mass(out, starts, ends, rows, masses):
    """out[g] times the masses of the rows (sorted; masses[k] is row rows[k]'s) in
    [starts[g], ends[g]], multiplied in row order: the same bits however the stream was cut."""
    k = 0
    for g in range(out.shape[0]):
        while k > 0 and rows[k - 1] >= starts[g]:  # starts rise with t_first, mostly
            k -= 1
        while k < rows.shape[0] and rows[k] < starts[g]:
            k += 1
        x = out[g]
        while k < rows.shape[0] and rows[k] <= ends[g]:
            x *= masses[k]
            k += 1
        out[g] = x


@njit(cache=True, nogil=True)
def _cover_blocks(table, rows, sums, anchors, block_end, starts, firsts, beta, beta_lo,
                  closed, out, bound, pos, ids, vals, out_ids, out_vals, out_free, mark,
                  dropped, drop, budget):
    """Complete-overlap P(g) at θ = 0 for the groups of each block, sharing one mode-A
    pass per block (see `Transducer.cover_probabilities`).

    Block b holds groups pos-order block_end[b-1]..block_end[b]-1 and starts its pass at
    row anchors[b]. pos = [block, group, row, nvec] says where to resume; the vector
    (ids, vals) holds the distribution before that row, normalized to sum 1. Returns a
    status: DONE, or NEED_A / NEED_T / NEED_B with the composite that needs its mode-A
    row, mode-T row or mode-B closure built (pos then says where to resume).
    The pass drops a composite whose share is below `drop` while dropped[0], the mass
    its pass has dropped so far, stays within `budget` (`COVER_DROP`); dropped[1] sums
    what all passes dropped. bound[g] receives how far the drops may have moved out[g].
    """
    n_beta = beta.shape[1]
    b, g, r, nvec = pos[0], pos[1], pos[2], pos[3]
    while b < anchors.shape[0]:
        if nvec == 0:  # a fresh block
            r = anchors[b]
            ids[0] = EMPTY
            vals[0] = 1.0
            nvec = 1
            dropped[0] = 0.0
        while g < block_end[b]:
            f = firsts[g]
            here = r == f  # group g's t_first: its mode-T step rides on this row's step
            for i in range(nvec):
                x = ids[i]
                if table[x, 0, MODE_A] == UNKNOWN:
                    pos[0], pos[1], pos[2], pos[3] = b, g, r, nvec
                    return NEED_A, x
                if here and table[x, 0, MODE_T] == UNKNOWN:
                    pos[0], pos[1], pos[2], pos[3] = b, g, r, nvec
                    return NEED_T, x
            m, total = _sparse_step(table, rows, r, MODE_A, ids, vals, nvec, out_ids,
                                    out_vals, mark, here, out_free, 0.0)
            for i in range(m):
                mark[out_ids[i]] = -1
            if here:
                after = beta[f + 1 - beta_lo]
                for i in range(m):
                    if out_free[i] > 0.0:
                        d = out_ids[i]
                        if d >= n_beta or not closed[d]:
                            pos[0], pos[1], pos[2], pos[3] = b, g, r, nvec
                            return NEED_B, d
                        total += out_free[i] * after[d]
                scale = 1.0  # the mass of the group's own rows before t_first
                for r2 in range(starts[g], f):
                    scale *= sums[r2]
                out[g] = total * scale
                bound[g] = 2.0 * dropped[0] * scale
                g += 1
                if g == block_end[b]:
                    break  # the block's last group: no need of the next vector
            mass = 0.0
            for i in range(m):
                mass += out_vals[i]
            cut = drop * mass
            k = 0
            for i in range(m):
                x = out_vals[i]
                if x < cut and dropped[0] + x / mass <= budget:
                    dropped[0] += x / mass
                    dropped[1] += x / mass
                    continue
                ids[k] = out_ids[i]
                vals[k] = x / mass
                k += 1
            if k == 1:
                vals[0] = 1.0  # exactly: a pass that reaches one composite forgets its past
            nvec = k
            r += 1
        b += 1
        nvec = 0
    pos[0], pos[1], pos[2], pos[3] = b, g, r, 0
    return DONE, -1


class TransducerLimitError(ProbcepError, RuntimeError):
    """The transducer would outgrow `MAX_COMPOSITES`."""


class Transducer:
    """Memoised composite-state transitions for one DFA and window."""

    def __init__(self, dfa: Dfa, window: int | None):
        self.dfa = dfa
        self.window = int(window or 0)
        self.keys: list[tuple | None] = [None, ()]
        self.ids: dict[tuple, int] = {(): EMPTY}
        self.table = np.full((64, len(dfa.domain), 3), UNKNOWN, np.int32)
        self.table[ACCEPT] = ACCEPT
        #: Composites whose mode-B row and those of all their mode-B successors are built.
        self.b_closed = np.zeros(64, np.bool_)
        self.b_closed[ACCEPT] = True
        #: Memo for the matchers sharing this transducer: whether a silent row (θ, row
        #: bytes) leaves a matcher without live runs where it found none.
        self.inert: dict[tuple[float, bytes], bool] = {}
        #: `cover_probabilities` drops what is below this share (0: nothing) ...
        self.cover_drop = COVER_DROP
        #: ... while its pass has dropped at most this mass; a group the drops may have
        #: moved by more than this fraction of itself gets the per-group pass.
        self.cover_budget = COVER_BUDGET
        self.cover_relative = COVER_RELATIVE
        #: The mass all its passes have dropped so far (for the tests).
        self.cover_dropped = 0.0

    @property
    def n_states(self) -> int:
        return len(self.keys)

    def intern(self, key: tuple) -> int:
        """The id of the composite `key` (its runs as (DFA state, length) pairs), made if
        new: ids follow the order composites are met, so a saved vector keeps keys."""
        cid = self.ids.get(key)
        if cid is None:
            cid = len(self.keys)
            if cid >= MAX_COMPOSITES:
                raise TransducerLimitError(
                    f"the group probability of {self.dfa.pattern!r}"
                    + (f" with a window of {self.window}" if self.window else "")
                    + f" needs more than {MAX_COMPOSITES:,} composite states of the "
                    "transducer (MAX_COMPOSITES): the pattern's runs multiply within the "
                    "window; use a shorter window or narrower repetition bounds")
            self.ids[key] = cid
            self.keys.append(key)
            if cid >= len(self.table):
                grown = np.full((2 * len(self.table),) + self.table.shape[1:], UNKNOWN, np.int32)
                grown[: len(self.table)] = self.table
                self.table = grown
                self.b_closed = np.resize(self.b_closed, len(grown))
                self.b_closed[cid:] = False
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
        return self.intern(tuple(sorted(live.items())))

    def build(self, cid: int, mode: int):
        key = self.keys[cid]
        targets = [self._step(key, a, mode) for a in range(len(self.dfa.domain))]
        self.table[cid, :, mode] = targets

    def accept_probabilities(self, rows: np.ndarray, los, his, firsts) -> np.ndarray:
        """For each group g, the probability that a world over rows[los[g]:his[g]] is
        accepted; firsts[g] is the row of t_first for complete overlap, else -1."""
        los, his, firsts = (np.ascontiguousarray(a, dtype=np.int64) for a in (los, his, firsts))
        start = int(los[0]) if len(los) else 0
        return self._forward_passes(rows, los, his, firsts, start, np.array([EMPTY]),
                                    np.ones(1), 0.0)[0]

    def advance_pass(self, rows: np.ndarray, lo: int, hi: int, ids: np.ndarray,
                     vals: np.ndarray, accepted: float):
        """Carry a mode-T pass on over rows[lo:hi]: (ids, vals) is its vector and
        `accepted` its accepted mass before row lo (a fresh pass: [EMPTY], [1.0], 0.0);
        returns them after row hi - 1. The steps are `accept_probabilities`' own, so a
        pass carried on piece by piece gives its bits."""
        return self._forward_passes(rows, np.array([lo], np.int64), np.array([hi], np.int64),
                                    np.array([-1], np.int64), lo, ids, vals, accepted)[1:]

    def _forward_passes(self, rows, los, his, firsts, r, ids, vals, accepted):
        """`_forward` over the groups, the first resumed at row r with the vector (ids,
        vals) and `accepted`, building what the table lacks as it goes; (each group's
        accepted mass, and the last group's vector and accepted mass at its end)."""
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        out = np.zeros(len(los))
        nvec = len(ids)
        buf_ids = np.zeros(max(self.n_states, nvec), np.int64)
        buf_vals = np.zeros(len(buf_ids))
        buf_ids[:nvec], buf_vals[:nvec] = ids, vals
        g = 0
        while g < len(los):
            size = self.n_states
            if len(buf_ids) < size:
                buf_ids, buf_vals = np.resize(buf_ids, size), np.resize(buf_vals, size)
            out_ids, out_vals = np.empty(size, np.int64), np.empty(size)
            mark = np.full(len(self.table), -1, np.int64)
            g, r, nvec, accepted = _forward(self.table, rows, los, his, firsts, out, g, r,
                                            buf_ids, buf_vals, nvec, accepted, out_ids,
                                            out_vals, mark)
            if g < len(los):  # build what the vector needs at row r, then resume
                first = firsts[g]
                mode = MODE_T if first < 0 or r == first else (MODE_A if r < first else MODE_B)
                for cid in buf_ids[:nvec]:
                    if self.table[cid, 0, mode] == UNKNOWN:
                        self.build(int(cid), mode)
        return out, buf_ids[:nvec].copy(), buf_vals[:nvec].copy(), accepted

    def accept_sparse(self, t: np.ndarray, rows: np.ndarray, silence, los, his) -> np.ndarray:
        """For each range [los[g], his[g]] of timesteps, the probability that a world over
        it is accepted (mode T, a single-overlap pseudo-group), where the stored rows
        `rows` at sorted times `t` hold their timesteps and `silence` every other. Equal
        bit for bit to `accept_probabilities` over the filled-in rows; a silent stretch
        costs the steps the vector takes to settle, not its length (under `uniform`
        silence a vector may never settle: then every step of it)."""
        t = np.ascontiguousarray(t, dtype=np.int64)
        rows = np.ascontiguousarray(rows, dtype=np.float64).reshape(len(t), len(self.dfa.domain))
        silence = np.ascontiguousarray(silence, dtype=np.float64)
        los, his = (np.ascontiguousarray(a, dtype=np.int64) for a in (los, his))
        out = np.zeros(len(los))
        if not len(los):
            return out
        a_idx = np.searchsorted(t, los).astype(np.int64)
        pos = np.array([0, los[0], a_idx[0]], np.int64)
        nvec, accepted = 1, 0.0
        ids, vals = np.zeros(self.n_states, np.int64), np.zeros(self.n_states)
        ids[0], vals[0] = EMPTY, 1.0
        while True:
            size = self.n_states
            if len(ids) < size:
                ids, vals = np.resize(ids, size), np.resize(vals, size)
            out_ids, out_vals = np.empty(size, np.int64), np.empty(size)
            mark = np.full(len(self.table), -1, np.int64)
            seen = np.full(len(self.table), -1.0)
            nvec, accepted = _forward_sparse(self.table, t, rows, silence, los, his, a_idx,
                                             out, pos, ids, vals, nvec, accepted, out_ids,
                                             out_vals, mark, seen)
            if pos[0] == len(los):
                return out
            for cid in ids[:nvec]:  # build what the vector needs, then resume
                if self.table[cid, 0, MODE_T] == UNKNOWN:
                    self.build(int(cid), MODE_T)

    def cover_probabilities(self, rows: np.ndarray, rows_t0: int, starts, ends,
                            firsts) -> np.ndarray | None:
        """P(g) for complete-overlap groups at θ = 0 with a window, sharing the work among
        groups; None where it does not apply (no window, too many composites).

        At θ = 0 every match of positive probability is in M_θ, so every match that runs at
        t_first lies inside its group's bounds, and P(g) is the probability that some
        match runs at t_first. So groups can share passes that start earlier and end later
        than their own rows. Groups are taken in blocks of `COVER_BLOCK` windows of
        t_first, on a grid of absolute time: a block's mode-A pass starts one window before
        it, at a row that depends on the stream alone (never on how it was cut into
        batches), and is normalized at every row; one mode-B pass backward gives, for
        every row and composite, the probability of acceptance after it. A group then
        costs one mode-T step between the two, times the mass of its own rows before
        t_first. The result is the per-group pass's to rounding (tests: 1e-12), and the
        same bits for any split into batches. Arguments are absolute times; groups are
        sorted by t_first; `rows` start at `rows_t0` and reach every group's end.
        A group whose result the pass's drops may have moved by more than
        `COVER_RELATIVE` of itself is computed by the per-group pass instead.
        """
        w = self.window
        if not w or len(firsts) == 0:
            return None
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        block = COVER_BLOCK * w
        anchor = (np.asarray(firsts, np.int64) - w) // block * block
        starts, firsts = (np.asarray(a, np.int64) - rows_t0 for a in (starts, firsts))
        anchor = np.maximum(anchor - rows_t0, 0)  # rows_t0 itself is a fresh start
        cuts = np.flatnonzero(np.diff(anchor)) + 1
        anchors, block_end = anchor[np.r_[0, cuts]], np.r_[cuts, len(anchor)]
        beta_lo, hi = int(firsts.min()) + 1, int(np.max(ends)) - rows_t0 + 1
        if (hi - beta_lo + 1) * self.n_states > COVER_CELLS:
            return None
        sums = np.zeros(len(rows))
        _row_sums(rows, int(anchors[0]), hi, sums)
        # Rows that sum to 1 only within the input's tolerance: the pass runs on them
        # normalized, and each P(g) is multiplied by its own rows' mass, which makes it the
        # sum over worlds of the rows as given (see `_row_sum`). Rows of mass 1 change no bit.
        raw, uneven = rows, np.flatnonzero(sums[int(anchors[0]): hi] != 1.0) + int(anchors[0])
        if len(uneven):
            rows, some = rows.copy(), uneven[sums[uneven] > 0.0]
            rows[some] /= sums[some, None]
            masses = sums[uneven]
            _row_sums(rows, int(anchors[0]), hi, sums)
        out, bound = np.zeros(len(firsts)), np.zeros(len(firsts))
        pos = np.zeros(4, np.int64)  # where _cover_blocks resumes, with the vector kept
        dropped = np.zeros(2)  # and the mass its pass has dropped
        # Buffers grow by doubling and beta gains only the columns of composites closed
        # since its last pass: the composites a pass needs come one round trip at a time
        # (NEED_A/T/B), and work or buffers of O(composites) at each made it quadratic
        # (`a .{12} b`, w = 14: 4,097 closures, 150 rows, 22 s; now about a second).
        cap, n_rows = 0, hi - beta_lo + 1
        beta = np.zeros((n_rows, 0))
        new = np.flatnonzero(self.b_closed[: self.n_states])
        mark, ids, vals = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        while True:
            if self.n_states > cap:  # beta within COVER_CELLS (checked for n_states)
                cap = max(self.n_states,
                          min(max(2 * cap, COVER_MIN_COLUMNS), COVER_CELLS // n_rows))
                kept = ids[: pos[3]], vals[: pos[3]]
                ids, vals = np.zeros(cap, np.int64), np.zeros(cap)
                ids[: pos[3]], vals[: pos[3]] = kept
                out_ids, out_vals, out_free = (np.empty(cap, np.int64), np.empty(cap),
                                               np.empty(cap))
                wide = np.zeros((n_rows, cap))
                wide[:, : beta.shape[1]] = beta
                beta = wide
            if len(new):
                _cover_backward(self.table, rows, beta_lo, beta, new.astype(np.int64), 0)
                new = new[:0]
            if len(mark) != len(self.table):
                mark = np.full(len(self.table), -1, np.int64)
            status, cid = _cover_blocks(self.table, rows, sums, anchors, block_end, starts,
                                        firsts, beta, beta_lo, self.b_closed, out, bound,
                                        pos, ids, vals, out_ids, out_vals, out_free, mark,
                                        dropped, self.cover_drop, self.cover_budget)
            if status == DONE:
                if len(uneven):
                    _times_mass(out, starts, np.asarray(ends, np.int64) - rows_t0, uneven,
                                masses)
                self.cover_dropped += dropped[1]
                shaky = np.flatnonzero(bound > self.cover_relative * out) \
                    if self.cover_relative < np.inf else ()
                if len(shaky):
                    his = np.asarray(ends, np.int64)[shaky] - rows_t0 + 1
                    out[shaky] = self.accept_probabilities(raw, starts[shaky], his,
                                                           firsts[shaky])
                return out
            if status == NEED_B:
                new = self._close_b(int(cid))
                if new is None:
                    return None
                if (hi - beta_lo + 1) * self.n_states > COVER_CELLS:
                    return None
            else:
                self.build(int(cid), MODE_A if status == NEED_A else MODE_T)

    def _close_b(self, cid: int) -> np.ndarray | None:
        """Build the mode-B rows of `cid` and of every composite mode B leads it to; the
        composites newly closed, or None (what is built stays built, none marked closed)
        if that would take the transducer past `COVER_STATES` composites."""
        todo, seen = [cid], set()
        while todo:
            c = todo.pop()
            if self.b_closed[c] or c in seen:
                continue
            if self.table[c, 0, MODE_B] == UNKNOWN:
                if self.n_states > COVER_STATES:
                    return None
                self.build(c, MODE_B)
            seen.add(c)
            todo.extend(int(d) for d in set(self.table[c, :, MODE_B].tolist())
                        if not self.b_closed[d])
        closed = np.array(sorted(seen), np.int64)
        self.b_closed[closed] = True
        return closed

