"""Grouping of matches (SEMANTICS §4) over one stream, incrementally and resumably.

`StreamMatcher.feed` takes the next block of timesteps and returns the groups that
became final; `finish` closes the stream. Between blocks the matcher holds only what a
later timestep can still change: live runs, open groups and the rows that an open
group's probability will be computed over. With a window that is bounded by the window
and the pattern; `to_bytes`/`from_bytes` carry it across batches.

Match intervals come from `RunTracker` as (end, start, count, max) events, one per pair
that holds matches of M_θ. Probabilities are computed once per final group, over the
retained rows, with the transducer (or the naive enumeration).
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass

import numpy as np

from probcep.engine.automaton import Dfa, compile_pattern
from probcep.engine.naive import naive_group_probability
from probcep.engine.runs import COUNT_MAX, RunTracker
from probcep.engine.transducer import MODE_A, MODE_B, MODE_T, Transducer

POLICIES = ("single", "complete")
METHODS = ("transducer", "naive")
STATE_FORMAT = "probcep-stream-state/1"


@dataclass(frozen=True)
class Query:
    """A pattern with its grouping policy, match threshold θ and window w."""

    dfa: Dfa
    policy: str = "single"
    threshold: float = 0.0
    window: int | None = None
    method: str = "transducer"

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold!r}")
        if self.window is not None and (int(self.window) != self.window or self.window < 1):
            raise ValueError(f"window must be a positive integer, got {self.window!r}")

    @classmethod
    def build(cls, pattern: str, domain, **options) -> Query:
        return cls(compile_pattern(pattern, domain), **options)

    def describe(self) -> dict:
        return {"pattern": self.dfa.pattern, "domain": list(self.dfa.domain),
                "policy": self.policy, "threshold": float(self.threshold),
                "window": self.window, "method": self.method}


@dataclass(frozen=True)
class Group:
    t_start: int
    t_first: int | None
    t_end: int
    probability: float
    n_matches: int
    max_match_probability: float

    def as_dict(self) -> dict:
        return asdict(self)


# An open group as a plain list, cheap to update and to serialise:
# [t_start, t_first, t_end, n_matches, max_p, max_start, prev_end]
_S, _F, _E, _N, _M, _MAXS, _PREV = range(7)
_NONE = -(2 ** 62)  # "no previous end" in serialised state


class StreamMatcher:
    """Matches, groups and group probabilities for one stream."""

    def __init__(self, query: Query, transducer: Transducer | None = None):
        self.query = query
        self.runs = RunTracker(query.dfa, query.threshold, query.window)
        self.transducer = transducer or Transducer(query.dfa, query.window)
        self.next_t: int | None = None  # the timestep the next block must start at
        self.rows = np.zeros((0, len(query.dfa.domain)))  # retained rows
        self.rows_t0 = 0  # time of rows[0]
        self.open: list[list] = []
        self.last_end: int | None = None  # latest end time of an M_θ match

    # --- feeding -------------------------------------------------------------------

    def feed(self, t0: int, probs: np.ndarray) -> list[Group]:
        """Process rows for times t0, t0+1, ...; return the groups that became final."""
        probs = np.ascontiguousarray(probs, dtype=np.float64)
        if probs.ndim != 2 or probs.shape[1] != len(self.query.dfa.domain):
            raise ValueError(f"expected rows of {len(self.query.dfa.domain)} probabilities, "
                             f"got shape {probs.shape}")
        if self.next_t is not None and t0 != self.next_t:
            raise ValueError(f"stream continues at t={self.next_t}, block starts at t={t0}")
        if self.next_t is None:
            self.rows_t0 = t0
        if len(probs) == 0:
            return []
        self.rows = np.concatenate([self.rows, probs]) if len(self.rows) else probs.copy()
        self.next_t = t0 + len(probs)
        ev_t, ev_s, ev_c, ev_m = self.runs.advance(t0, probs)
        if len(ev_t):
            self._add_events(ev_t, ev_s, ev_c, ev_m)
        return self._emit(final_before=self.runs.min_start())

    def finish(self) -> list[Group]:
        """The stream has ended: every open group is final."""
        groups = self._emit(final_before=None)
        self.runs.n = 0
        return groups

    def _add_events(self, ev_t, ev_s, ev_c, ev_m):
        # Events are ordered by end time, then start; split them into per-end columns.
        cuts = np.flatnonzero(np.diff(ev_t)) + 1
        bounds = np.concatenate([[0], cuts, [len(ev_t)]])
        add = self._add_single if self.query.policy == "single" else self._add_complete
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            add(int(ev_t[lo]), ev_s[lo:hi], ev_c[lo:hi], ev_m[lo:hi])

    def _add_single(self, t, starts, counts, maxes):
        first = int(starts[0])
        group = [first, None, t, _total(counts), float(maxes.max()), 0, 0]
        while self.open and self.open[-1][_E] >= first:  # overlaps: merge
            prev = self.open.pop()
            group[_S] = min(group[_S], prev[_S])
            group[_N] = _sat(group[_N] + prev[_N])
            group[_M] = max(group[_M], prev[_M])
        self.open.append(group)

    def _add_complete(self, t, starts, counts, maxes):
        cum_n = np.cumsum(counts)  # prefix sums: matches with start <= f
        cum_m = np.maximum.accumulate(maxes)
        for g in self.open:
            k = int(np.searchsorted(starts, g[_F], side="right"))
            if k == 0:
                continue
            g[_S] = min(g[_S], int(starts[0]))
            g[_E] = t
            g[_N] = _sat(g[_N] + _prefix_count(cum_n, counts, k))
            g[_M] = max(g[_M], float(cum_m[k - 1]))
            g[_MAXS] = max(g[_MAXS], int(starts[k - 1]))
        prev_end = _NONE if self.last_end is None else self.last_end
        self.open.append([int(starts[0]), t, t, _total(counts), float(maxes.max()),
                          int(starts[-1]), prev_end])
        self.last_end = t

    # --- emitting ------------------------------------------------------------------

    def _emit(self, final_before: int | None) -> list[Group]:
        """Emit open groups no future match can join (all of them if None)."""
        key = _E if self.query.policy == "single" else _F
        done = [g for g in self.open if final_before is None or g[key] < final_before]
        self.open = [g for g in self.open if not (final_before is None or g[key] < final_before)]
        groups = []
        for g in done:
            if self.query.policy == "complete" and g[_PREV] != _NONE and g[_PREV] >= g[_MAXS]:
                continue  # C(f) is a proper subset of C(prev_end): not a group
            groups.append(Group(g[_S], g[_F], g[_E], self._probability(g), int(g[_N]), g[_M]))
        self._trim(final_before)
        return groups

    def _probability(self, g) -> float:
        lo, hi = g[_S] - self.rows_t0, g[_E] - self.rows_t0 + 1
        rows = self.rows[lo:hi]
        q = self.query
        first = None if g[_F] is None else g[_F] - g[_S]
        if q.method == "naive":
            p = naive_group_probability(q.dfa, rows, q.window, first)
        else:
            modes = np.full(len(rows), MODE_T, np.int8)
            if first is not None:
                modes[:first] = MODE_A
                modes[first + 1:] = MODE_B
            p = self.transducer.accept_probability(rows, modes)
        # P(g) >= max P(m) and <= 1 hold exactly; keep float rounding from breaking them.
        return min(1.0, max(p, g[_M]))

    def _trim(self, final_before: int | None):
        """Forget rows that no open group and no live run can reach."""
        keep = [g[_S] for g in self.open]
        if final_before is not None:
            keep.append(final_before)
        if self.next_t is None:
            return
        keep_from = min(keep) if keep else self.next_t
        drop = keep_from - self.rows_t0
        if drop > 0:
            self.rows = self.rows[drop:]
            self.rows_t0 = keep_from

    # --- state ---------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The open part of the computation, as bytes (a NumPy .npz archive)."""
        header = {"format": STATE_FORMAT, "query": self.query.describe(),
                  "next_t": self.next_t, "rows_t0": self.rows_t0,
                  "last_end": self.last_end}
        open_groups = np.array(
            [[g[_S], _NONE if g[_F] is None else g[_F], g[_E], g[_N], g[_MAXS], g[_PREV]]
             for g in self.open], dtype=np.int64).reshape(-1, 6)
        buf = io.BytesIO()
        np.savez(buf, header=np.array(json.dumps(header)), rows=self.rows,
                 open_int=open_groups, open_max=np.array([g[_M] for g in self.open], float),
                 **self.runs.to_arrays())
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, query: Query, data: bytes,
                   transducer: Transducer | None = None) -> StreamMatcher:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            header = json.loads(str(arrays["header"]))
            if header.get("format") != STATE_FORMAT:
                raise ValueError(f"not a probcep stream state (format {header.get('format')!r})")
            if header["query"] != query.describe():
                raise ValueError("saved state was made by a different query: "
                                 f"{header['query']} != {query.describe()}")
            m = cls(query, transducer)
            m.next_t = header["next_t"]
            m.rows_t0 = header["rows_t0"]
            m.last_end = header["last_end"]
            m.rows = arrays["rows"]
            m.open = [[int(r[0]), None if r[1] == _NONE else int(r[1]), int(r[2]), int(r[3]),
                       float(mx), int(r[4]), int(r[5])]
                      for r, mx in zip(arrays["open_int"], arrays["open_max"])]
            m.runs.load_arrays({k: arrays[k] for k in ("run_q", "run_s", "run_c", "run_m")})
        return m


def _sat(n: int) -> int:
    return min(int(n), COUNT_MAX)


def _total(counts: np.ndarray) -> int:
    return _sat(sum(int(c) for c in counts))


def _prefix_count(cum_n: np.ndarray, counts: np.ndarray, k: int) -> int:
    """Sum of counts[:k], exact even where the int64 cumulative sum would wrap."""
    if int(counts[:k].max()) > COUNT_MAX // k:  # the int64 prefix sum might wrap
        return _total(counts[:k])
    return int(cum_n[k - 1])
