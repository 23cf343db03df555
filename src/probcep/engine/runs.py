"""Run tracking: which intervals of the stream hold matches of M_θ (docs/semantics.md §3).

A *run* is a partial match: a start time, a DFA state, and either one path's
probability (θ > 0: every path is its own run, so we can tell whether it reaches θ) or,
for θ = 0, all paths from one start in one state merged into a count and the largest
path probability (every positive path is in M_0, so only the count matters).

Runs that can no longer produce a match (window exhausted, below θ, no way to accept)
are dropped at once, so the smallest start among live runs says which groups are final.
The hot loop is compiled with Numba; it stops early (status GROW) when the caller must
enlarge its buffers, and is then called again from the row where it stopped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from probcep.engine.automaton import UNREACHABLE
from probcep.errors import ProbcepError

#: Counts saturate here instead of wrapping around (θ = 0 on long windows can have
#: more matches than an int64 holds).
COUNT_MAX = np.iinfo(np.int64).max
DONE, GROW = 0, 1
#: Event buffers grow to the rest of the block at the rate so far, but never beyond this
#: many times what they need at that moment (a burst of events in the first rows would
#: otherwise ask for the block's length times the burst).
GROWTH_CAP = 8
#: The event buffer is not grown past this many entries (128 MiB) within one call: a
#: call stops early instead, its events are folded into groups, and the next call goes
#: on. Without a window at θ = 0 every start keeps a run, so a row's events grow with
#: the stream, and a chunk's asked for gigabytes (20,000 rows of `a b+ c` ran out of
#: memory; 30,000 reached 21 GB).
MAX_EVENTS = 1 << 22
#: The largest run buffer (entries; about 0.9 GiB with its twin). At θ > 0 every path is
#: its own run, so a tiny θ without a window lets them multiply by up to the domain's size
#: each row: refused with a reason here, not left to exhaust the machine's memory.
MAX_RUNS = 1 << 24


class RunLimitError(ProbcepError, RuntimeError):
    """The runs would outgrow `MAX_RUNS`: the query lets partial matches multiply."""


@njit(cache=True, nogil=True)
def _sat_add(a, b):
    return a + b if a <= COUNT_MAX - b else COUNT_MAX


@njit(cache=True, nogil=True, inline="always")
def _row(probs, r, t, delta, start, accepting, dist_next, window, theta, merge,
         rq, rs, rc, rm, n, oq, os_, oc, om, slot, stamp, serial,
         ev_t, ev_s, ev_c, ev_m, n_ev):
    """One row: the runs (rq..)[:n] into (oq..); returns (runs, events, serial)."""
    n_sym = probs.shape[1]
    m = 0
    first = True
    prev_s = 0
    for i in range(n + 1):
        if i < n:
            q, s, c, p = rq[i], rs[i], rc[i], rm[i]
        else:
            q, s, c, p = start, t, 1, 1.0
        if merge and (first or s != prev_s):
            serial += 1
            first = False
            prev_s = s
        length = t - s + 1
        for a in range(n_sym):
            pa = probs[r, a]
            if pa <= 0.0:
                continue
            q2 = delta[q, a]
            if q2 < 0:
                continue
            p2 = p * pa
            if p2 <= 0.0 or p2 < theta:
                continue
            if accepting[q2]:
                if n_ev > 0 and ev_t[n_ev - 1] == t and ev_s[n_ev - 1] == s:
                    ev_c[n_ev - 1] = _sat_add(ev_c[n_ev - 1], c)
                    if p2 > ev_m[n_ev - 1]:
                        ev_m[n_ev - 1] = p2
                else:
                    ev_t[n_ev] = t
                    ev_s[n_ev] = s
                    ev_c[n_ev] = c
                    ev_m[n_ev] = p2
                    n_ev += 1
            d = dist_next[q2]
            if d >= UNREACHABLE or (window > 0 and length + d > window):
                continue
            if merge:
                if stamp[q2] == serial:
                    j = slot[q2]
                    oc[j] = _sat_add(oc[j], c)
                    if p2 > om[j]:
                        om[j] = p2
                    continue
                stamp[q2] = serial
                slot[q2] = m
            oq[m] = q2
            os_[m] = s
            oc[m] = c
            om[m] = p2
            m += 1
    return m, n_ev, serial


@njit(cache=True, nogil=True)
def advance(probs, row0, t0, delta, start, accepting, dist_next, window, theta, merge,
            rq, rs, rc, rm, n, oq, os_, oc, om, slot, stamp,
            ev_t, ev_s, ev_c, ev_m, n_ev):
    """Advance the runs over probs[row0:], recording per (end, start) the matches.

    Rows go in pairs, (rq..) -> (oq..) -> (rq..), so that no row copies its runs back;
    an odd last row copies them once.
    Merging (θ = 0): slot[q] is the output run of the current start in state q when
    stamp[q] holds the current start's serial number, so moving on to the next start
    (at θ = 0 about w times a row) resets nothing.
    Returns (row reached, live runs, events, status). Runs stay ordered by start.
    """
    stamp[:] = -1
    serial = 0
    n_sym = probs.shape[1]
    cap_runs = oq.shape[0]
    cap_ev = ev_t.shape[0]
    r = row0
    end = probs.shape[0]
    while r < end:
        if (n + 1) * n_sym > cap_runs or n_ev + (n + 1) * n_sym > cap_ev:
            return r, n, n_ev, GROW
        m, n_ev, serial = _row(probs, r, t0 + r, delta, start, accepting, dist_next, window,
                               theta, merge, rq, rs, rc, rm, n, oq, os_, oc, om, slot,
                               stamp, serial, ev_t, ev_s, ev_c, ev_m, n_ev)
        r += 1
        if r == end or ((m + 1) * n_sym > cap_runs
                        or n_ev + (m + 1) * n_sym > cap_ev):
            for i in range(m):  # back into rq..: a plain loop costs less than slicing
                rq[i] = oq[i]
                rs[i] = os_[i]
                rc[i] = oc[i]
                rm[i] = om[i]
            n = m
            continue
        n, n_ev, serial = _row(probs, r, t0 + r, delta, start, accepting, dist_next, window,
                               theta, merge, oq, os_, oc, om, m, rq, rs, rc, rm, slot,
                               stamp, serial, ev_t, ev_s, ev_c, ev_m, n_ev)
        r += 1
    return end, n, n_ev, DONE


def _grown(array: np.ndarray, size: int, used: int) -> np.ndarray:
    """A larger buffer holding the first `used` entries of `array`."""
    out = np.empty(size, array.dtype)
    out[:used] = array[:used]
    return out


class RunTracker:
    """Live runs of one stream, with growable buffers for the compiled loop."""

    def __init__(self, dfa, threshold: float, window: int | None):
        self.dfa = dfa
        self.theta = float(threshold)
        self.window = int(window or 0)
        self.merge = self.theta == 0.0
        self.q = np.zeros(64, np.int32)
        self.s = np.zeros(64, np.int64)
        self.c = np.zeros(64, np.int64)
        self.m = np.zeros(64, np.float64)
        self.n = 0
        self.events_per_row = 4  # grows to what the stream needs (θ = 0: about w)
        #: Event buffers kept from block to block: fresh ones of this size (θ = 0: w
        #: events per row) cost more in page faults than the loop that fills them.
        self._ev = (np.empty(0, np.int64),) * 3 + (np.empty(0, np.float64),)

    def min_start(self) -> int | None:
        """Smallest start among live runs: no future match starts before it."""
        return int(self.s[0]) if self.n else None

    def advance(self, t0: int, probs: np.ndarray):
        """Feed rows for times t0, t0+1, ...; returns (rows fed, match events (t, s,
        count, max)), views of buffers that the next call overwrites. Stops after fewer
        rows than given when their events would outgrow `MAX_EVENTS`."""
        dfa = self.dfa
        n_sym = probs.shape[1]
        cap_ev = min(max(64, self.events_per_row * len(probs)), MAX_EVENTS)
        ev = self._ev
        if len(ev[0]) < cap_ev:
            ev = (np.empty(cap_ev, np.int64), np.empty(cap_ev, np.int64),
                  np.empty(cap_ev, np.int64), np.empty(cap_ev, np.float64))
        n_ev = 0
        slot = np.empty(dfa.n_states, np.int64)
        stamp = np.full(dfa.n_states, -1, np.int64)
        row = 0
        while True:
            cap = len(self.q)
            out = (np.empty(cap, np.int32), np.empty(cap, np.int64),
                   np.empty(cap, np.int64), np.empty(cap, np.float64))
            row, self.n, n_ev, status = advance(
                probs, row, t0, dfa.delta, dfa.start, dfa.accepting, dfa.dist_next,
                self.window, self.theta, self.merge,
                self.q, self.s, self.c, self.m, self.n, *out, slot, stamp, *ev, n_ev)
            if status == DONE:
                break
            need = (self.n + 1) * n_sym
            if need > cap:
                if 2 * need > MAX_RUNS:
                    raise RunLimitError(
                        f"{self.n:,} partial matches alive at t={t0 + row}, more each row: "
                        f"with θ = {self.theta:g}" + (f" and a window of {self.window}"
                                                       if self.window else " and no window") +
                        " they multiply faster than they end; use a "
                        + ("shorter " if self.window else "") + "window or a larger θ")
                self._grow(2 * need)
            if n_ev + need > len(ev[0]) and row > 0 and n_ev + need > MAX_EVENTS:
                self._ev = ev
                return row, tuple(a[:n_ev] for a in ev)  # these first: see MAX_EVENTS
            if n_ev + need > len(ev[0]):  # room for the rest at the rate so far, plus
                # 1/4, but at most GROWTH_CAP times what is needed now: a burst of events
                # in a block's first rows must not be taken as the rate of the whole block
                rest = -(-n_ev * (len(probs) - row) // max(row, 1))
                size = max(2 * (n_ev + need),
                           min(n_ev + need + rest + rest // 4, GROWTH_CAP * (n_ev + need)))
                size = min(size, max(MAX_EVENTS, n_ev + need))
                ev = tuple(_grown(a, size, n_ev) for a in ev)
        if n_ev > cap_ev:  # the next block starts with buffers of the size this one needed
            self.events_per_row = -(-n_ev // len(probs)) + 1
        self._ev = ev
        return len(probs), tuple(a[:n_ev] for a in ev)

    def _grow(self, size: int):
        arrays = (self.q, self.s, self.c, self.m)
        self.q, self.s, self.c, self.m = (_grown(a, size, self.n) for a in arrays)

    def to_arrays(self) -> dict:
        n = self.n
        return {"run_q": self.q[:n].copy(), "run_s": self.s[:n].copy(),
                "run_c": self.c[:n].copy(), "run_m": self.m[:n].copy()}

    def load_arrays(self, arrays: dict):
        n = len(arrays["run_q"])
        self.n = 0
        self._grow(max(64, n))
        self.q[:n] = arrays["run_q"]
        self.s[:n] = arrays["run_s"]
        self.c[:n] = arrays["run_c"]
        self.m[:n] = arrays["run_m"]
        self.n = n
