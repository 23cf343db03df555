"""Overlap bookkeeping (docs/semantics.md §4), compiled: match events in, open groups out.

Events arrive as (end t, start s, count, max probability), ordered by end then start:
one *column* per end time. Open groups live in an int64 table with the columns below
and a float64 vector of their largest match probability.

Single overlap: the matches of one column all contain t, so they join one group; the
group swallows every open group whose end reaches the column's smallest start.

Complete overlap: C(f) holds the matches with s <= f <= e. A column at t adds to each
open C(f) the prefix of matches with s <= f, and opens C(t). C(f) is a proper subset of
an earlier C(f') exactly when some end time f' < f is >= the largest start in C(f); the
largest earlier end is `prev`, so the test needs only `prev` and `max_start`.
"""

from __future__ import annotations

from numba import njit

from probcep.engine.runs import _sat_add

START, FIRST, END, COUNT, MAX_START, PREV = range(6)
#: Stands for "none" in the int64 table (t_first of single groups, no earlier end).
NONE = -(2 ** 62)


@njit(cache=True, nogil=True)
def add_single(ev_t, ev_s, ev_c, ev_m, gi, gm, n_open):
    """Fold the columns into the open single-overlap groups; returns the new count."""
    i = 0
    n = ev_t.shape[0]
    while i < n:
        t = ev_t[i]
        lo = ev_s[i]
        count = 0
        best = 0.0
        j = i
        while j < n and ev_t[j] == t:
            count = _sat_add(count, ev_c[j])
            best = max(best, ev_m[j])
            j += 1
        start = lo
        while n_open > 0 and gi[n_open - 1, END] >= lo:
            n_open -= 1
            start = min(start, gi[n_open, START])
            count = _sat_add(count, gi[n_open, COUNT])
            best = max(best, gm[n_open])
        gi[n_open, START] = start
        gi[n_open, FIRST] = NONE
        gi[n_open, END] = t
        gi[n_open, COUNT] = count
        gi[n_open, MAX_START] = 0
        gi[n_open, PREV] = NONE
        gm[n_open] = best
        n_open += 1
        i = j
    return n_open


@njit(cache=True, nogil=True)
def add_complete(ev_t, ev_s, ev_c, ev_m, gi, gm, n_open, last_end):
    """Fold the columns into the open C(f); returns (new count, latest end time)."""
    i = 0
    n = ev_t.shape[0]
    while i < n:
        t = ev_t[i]
        j = i
        while j < n and ev_t[j] == t:
            j += 1
        # Groups are ordered by f and the column by start: one merge-like pass over the
        # groups with f >= the column's smallest start (found by bisection); earlier
        # groups get nothing from this column.
        lo, hi = 0, n_open
        while lo < hi:
            mid = (lo + hi) // 2
            if gi[mid, FIRST] < ev_s[i]:
                lo = mid + 1
            else:
                hi = mid
        x = i
        count = 0
        best = 0.0
        for g in range(lo, n_open):
            f = gi[g, FIRST]
            while x < j and ev_s[x] <= f:
                count = _sat_add(count, ev_c[x])
                best = max(best, ev_m[x])
                x += 1
            if x > i:
                gi[g, START] = min(gi[g, START], ev_s[i])
                gi[g, END] = t
                gi[g, COUNT] = _sat_add(gi[g, COUNT], count)
                gm[g] = max(gm[g], best)
                gi[g, MAX_START] = max(gi[g, MAX_START], ev_s[x - 1])
        while x < j:
            count = _sat_add(count, ev_c[x])
            best = max(best, ev_m[x])
            x += 1
        gi[n_open, START] = ev_s[i]
        gi[n_open, FIRST] = t
        gi[n_open, END] = t
        gi[n_open, COUNT] = count
        gi[n_open, MAX_START] = ev_s[j - 1]
        gi[n_open, PREV] = last_end
        gm[n_open] = best
        n_open += 1
        last_end = t
        i = j
    return n_open, last_end
