"""Read strategies for correlations: the paper's ALAA, LLAA, SLLAA and OLLAA (Peng et al.,
*Complex Event Processing over Live and Archived Data Streams*) as plans for reading the
archive. A plan decides which stored rows are read, when and in how many reads; it never
changes a row of the output (docs/semantics.md §8).

- `active` (ALAA): the archive is read ahead of the live side, whether a live group comes
  or not: one read per stream covering every range the night can ask for.
- `lazy` (LLAA): one read per live group, when the group is final, of the part of its
  range not read for the stream's groups before it (the rows already held are kept
  while later ranges still need them).
- `sublazy` (SLLAA): the ranges of a stream's groups that overlap or touch are coalesced
  into one read, so no row is read twice.
- `auto` (OLLAA): the rarer side drives. Groups whose probability cannot reach τ_C are
  dropped before anything is read: by P(g) alone (the live side) and, under `exists`, by
  a sound upper bound on P_A(R) from the statistics (the archive side). The rest is read
  in coalesced reads, joining two ranges when the hole between them costs fewer rows
  than another read.

A source is anything with `silence`, `first_t(stream)`, `stream_ids()` and
`read(stream, lo, hi)` returning the stored rows' times and probabilities: `Timeline`
here for rows in memory, a Delta-backed one in the lake.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numba import njit

from probcep.engine.automaton import UNREACHABLE, Dfa
from probcep.engine.correlate import (
    Correlated,
    Correlation,
    archive_probabilities,
    dense_rows,
)
from probcep.engine.grouping import Group, QueryError
from probcep.engine.transducer import Transducer

STRATEGIES = ("active", "lazy", "sublazy", "auto")
#: What one read costs `auto`, in rows: opening files and filtering them by statistics
#: costs about as much as decoding this many rows, so holes shorter than it are read.
READ_COST_ROWS = 256
#: Slack on the pruning bound, so that rounding in the bound, in P_A(R) and in the
#: product can never drop a row that reaches τ_C.
BOUND_RELATIVE_SLACK = 1e-6
BOUND_ABSOLUTE_SLACK = 1e-12


class ArchiveSource(Protocol):
    silence: tuple

    def stream_ids(self) -> list[str]: ...

    def first_t(self, stream_id: str) -> int | None: ...

    def read(self, stream_id: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]: ...

    # optional: `prefetch(plan)`, told the reads to come ({stream: [(lo, hi), ...]}, in
    # the order they come), so that a source can read many at once; rows never change


class Timeline:
    """Stored rows of streams in memory (times sorted, sparse or not); counts what is read."""

    def __init__(self, silence, streams: dict[str, tuple[np.ndarray, np.ndarray]]):
        self.silence = tuple(float(x) for x in silence)
        self.streams = {sid: (np.asarray(t, np.int64), np.asarray(p, np.float64))
                        for sid, (t, p) in streams.items() if len(t)}
        self.reads = 0
        self.rows_read = 0

    def stream_ids(self) -> list[str]:
        return sorted(self.streams)

    def first_t(self, stream_id: str) -> int | None:
        rows = self.streams.get(stream_id)
        return None if rows is None else int(rows[0][0])

    def read(self, stream_id: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        t, probs = self.streams.get(stream_id, (np.zeros(0, np.int64), np.zeros((0, 0))))
        a, b = np.searchsorted(t, lo), np.searchsorted(t, hi, side="right")
        self.reads += 1
        self.rows_read += int(b - a)
        return t[a:b], probs[a:b]


# --- statistics: expected number of archive matches per bucket (day) -------------------

@njit(cache=True, nogil=True)
def _match_ends(delta, accepting, dist_next, start, window, rows, carry):
    """Expected number of matches of the DFA ending at each row (matches told apart by
    interval and symbols, §3), resuming from `carry`: the expected number of live runs
    per (state, length − 1) (one length column without a window)."""
    n_states, n_sym = delta.shape
    n_len = carry.shape[1]
    out = np.zeros(rows.shape[0])
    cur = carry.copy()
    nxt = np.zeros_like(cur)
    alive = True  # some run may be live (a silent stretch kills them: then rows are cheap)
    for r in range(rows.shape[0]):
        if alive:
            nxt[:, :] = 0.0
        ends = 0.0
        grew = False
        for a in range(n_sym):
            p = rows[r, a]
            if p <= 0.0:
                continue
            for q in range(-1, n_states if alive else 0):  # -1: the run starting here
                for k in range(n_len if q >= 0 else 1):
                    v = 1.0 if q < 0 else cur[q, k]
                    if v == 0.0:
                        continue
                    q2 = delta[start if q < 0 else q, a]
                    if q2 < 0:
                        continue
                    length = 1 if q < 0 else k + 2
                    if window > 0 and length > window:
                        continue
                    m = v * p
                    if accepting[q2]:
                        ends += m
                    d = dist_next[q2]
                    if d >= UNREACHABLE or (window > 0 and length + d > window):
                        continue
                    nxt[q2, length - 1 if window > 0 else 0] += m
                    grew = True
        out[r] = ends
        if alive or grew:
            cur, nxt = nxt, cur
        if alive and not grew:
            nxt[:, :] = 0.0  # the old runs: cleared once, then silent rows skip the clearing
        alive = grew
    return out, cur


def match_ends(dfa: Dfa, window: int | None, rows: np.ndarray,
               carry: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(expected matches ending at each row, carry for the rows that follow). Runs are
    kept per length up to the window, or up to as many rows as there are when fewer: no
    run is longer (a carry grows by the rows that follow it)."""
    longest = (0 if carry is None else carry.shape[1]) + len(rows)
    n_len = max(1, min(int(window), longest)) if window else 1
    if carry is None:
        carry = np.zeros((dfa.n_states, n_len))
    elif carry.shape[1] < n_len:
        carry = np.pad(carry, ((0, 0), (0, n_len - carry.shape[1])))
    return _match_ends(dfa.delta, dfa.accepting, dfa.dist_next, dfa.start, int(window or 0),
                       np.ascontiguousarray(rows, np.float64), carry)


@dataclass(frozen=True)
class ArchiveStats:
    """Per (stream, bucket of `bucket` timesteps, a day in the lake): the expected number
    of archive matches ending in it, over the timesteps [covered[stream]] it was computed
    for. `bound` is an upper bound on P_A(R) (union bound), infinite outside coverage."""

    bucket: int
    counts: dict[tuple[str, int], float] = field(default_factory=dict)
    covered: dict[str, tuple[int, int]] = field(default_factory=dict)
    offset: int = 0  # bucket k holds t in [offset + k·bucket, offset + (k + 1)·bucket)

    def bound(self, stream_id: str, lo: int, hi: int) -> float:
        span = self.covered.get(stream_id)
        if span is None or lo < span[0] or hi > span[1]:
            return float("inf")
        return sum(self.counts.get((stream_id, b), 0.0)
                   for b in range((lo - self.offset) // self.bucket,
                                  (hi - self.offset) // self.bucket + 1))

    @classmethod
    def from_timeline(cls, dfa: Dfa, window: int | None, timeline: Timeline,
                      bucket: int, until: int | None = None) -> ArchiveStats:
        """Statistics over each stream's stored span, and on to `until` when given (the
        end of the archive: a stream silent at its end is silent there, not unknown),
        with silence filled in."""
        counts, covered = {}, {}
        for sid, (t, probs) in timeline.streams.items():
            lo, hi = int(t[0]), max(int(t[-1]), until if until is not None else int(t[-1]))
            ends, _ = match_ends(dfa, window, dense_rows(t, probs, lo, hi, timeline.silence))
            first = lo // bucket
            sums = np.bincount((lo + np.arange(hi - lo + 1)) // bucket - first, weights=ends)
            counts.update({(sid, first + k): float(v) for k, v in enumerate(sums)})
            covered[sid] = (lo, hi)
        return cls(bucket, counts, covered)


# --- plans ----------------------------------------------------------------------------

def _coalesce(ranges: list[tuple[int, int]], hole: int) -> list[tuple[int, int]]:
    """Join ranges (sorted by lo) whose hole between them is shorter than `hole` rows."""
    spans: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if spans and lo - spans[-1][1] - 1 < hole:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    return [(lo, hi) for lo, hi in spans]


def _unread(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Lazy's reads, one per range in time order, of the part not read for the ranges
    before it (rows already held are not read again)."""
    reads, held = [], None
    for lo, hi in sorted(ranges):
        if held is None or lo > held + 1:
            reads.append((lo, hi))
        elif hi > held:
            reads.append((held + 1, hi))
        held = hi if held is None else max(held, hi)
    return reads


def _prunable(correlation: Correlation, live: float, bound: float) -> bool:
    """Whether a group cannot reach τ_C: its probability is at most live · bound."""
    if correlation.min_probability <= 0.0:
        return False
    factor = 1.0
    if correlation.mode == "exists":
        factor = min(1.0, bound * (1 + BOUND_RELATIVE_SLACK) + BOUND_ABSOLUTE_SLACK)
    return live * factor * (1 + BOUND_RELATIVE_SLACK) < correlation.min_probability


def plan_reads(strategy: str, correlation: Correlation, ranges: dict[str, list],
               source: ArchiveSource, night: tuple[int, int]) -> dict[str, list]:
    """The reads, per stream, in the order they are made: (lo, hi) spans."""
    if strategy == "lazy":
        return {sid: _unread(rs) for sid, rs in ranges.items() if rs}
    if strategy == "sublazy":
        return {sid: _coalesce(rs, 1) for sid, rs in ranges.items() if rs}
    if strategy == "auto":
        return {sid: _coalesce(rs, READ_COST_ROWS) for sid, rs in ranges.items() if rs}
    if strategy == "active":
        reads = {}
        for sid in sorted(set(source.stream_ids()) | set(ranges)):
            first = source.first_t(sid)
            if first is None:
                continue
            los, his = zip(*ranges.get(sid, []), (night[0] - correlation.lookback,
                                                  night[1] - correlation.gap))
            lo, hi = max(min(los), first), max(his)
            if lo <= hi:
                reads[sid] = [(lo, hi)]
        return reads
    raise QueryError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")


def correlate(correlation: Correlation, transducer: Transducer,
              groups: dict[str, list[Group]], source: ArchiveSource, strategy: str,
              night: tuple[int, int], stats: ArchiveStats | None = None) -> list[Correlated]:
    """The emitted rows for the live groups of each stream, sorted like `probcep group`'s
    output. `night` is the span of timesteps the live groups come from (what `active`
    reads ahead for); `stats` lets `auto` prune before reading."""
    if strategy not in STRATEGIES:
        raise QueryError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    todo: dict[str, list[tuple[Group, tuple[int, int] | None]]] = defaultdict(list)
    for sid, gs in groups.items():
        first = source.first_t(sid)
        for g in gs:
            r = None if first is None else correlation.archive_range(g.t_start, first)
            if strategy == "auto":
                bound = 0.0 if r is None else (
                    stats.bound(sid, *r) if stats is not None else float("inf"))
                if _prunable(correlation, g.probability, bound):
                    continue
            todo[sid].append((g, r))
    ranges = {sid: [r for _, r in items if r is not None] for sid, items in todo.items()}
    archive: dict[tuple[str, tuple[int, int]], float] = {}
    silence = np.asarray(source.silence, np.float64)
    plan = plan_reads(strategy, correlation, ranges, source, night)
    if hasattr(source, "prefetch"):
        source.prefetch(plan)
    for sid, reads in plan.items():
        pending = sorted(set(ranges.get(sid, [])))
        held_lo, held_hi, held_t, held_p = 0, None, [], []  # the rows held: one span
        for lo, hi in reads:
            t, probs = source.read(sid, lo, hi)
            if held_hi is None or lo != held_hi + 1:
                held_lo, held_t, held_p = lo, [], []
            held_hi = hi
            held_t.append(t)
            held_p.append(np.asarray(probs, np.float64).reshape(len(t), len(silence)))
            inside = [r for r in pending if held_lo <= r[0] and r[1] <= held_hi]
            if not inside:
                continue
            done = set(inside)
            pending = [r for r in pending if r not in done]
            t, probs = np.concatenate(held_t), np.concatenate(held_p)
            values = archive_probabilities(transducer, t, probs, silence, inside)
            archive.update({(sid, r): float(v) for r, v in zip(inside, values)})
            if pending:  # keep only what the ranges still to come can need
                keep = t >= min(r[0] for r in pending)
                held_t, held_p = [t[keep]], [probs[keep]]
    rows = []
    for sid, items in todo.items():
        for g, r in items:
            p_a = 0.0 if r is None else archive[(sid, r)]
            p = correlation.combine(g.probability, p_a)
            if correlation.emits(p):
                rows.append(Correlated(sid, g, *(r or (None, None)), p_a, p))
    rows.sort(key=lambda c: (c.stream_id, c.group.t_start,
                             -1 if c.group.t_first is None else c.group.t_first))
    return rows
