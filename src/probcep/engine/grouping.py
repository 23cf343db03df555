"""Grouping of matches (docs/semantics.md §4) over one stream, incrementally and resumably.

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
from probcep.engine.overlap import (
    COUNT,
    END,
    FIRST,
    MAX_START,
    NONE,
    PREV,
    START,
    add_complete,
    add_single,
)
from probcep.engine.runs import RunTracker
from probcep.engine.transducer import COVER_BLOCK, EMPTY, Transducer
from probcep.errors import InputError, ProbcepError

POLICIES = ("single", "complete")
METHODS = ("transducer", "naive")
STATE_FORMAT = "probcep-stream-state/1"
#: Rows handed to the compiled loops at a time: bounds the event buffers, not results.
CHUNK_ROWS = 1 << 14
#: A single-overlap group open this many timesteps has its P(g) pass carried on instead
#: of its rows kept (younger groups' passes run once, batched, when they close: the
#: same steps, so the same bits).
CARRY_AFTER = CHUNK_ROWS
#: The longest window (35,000 years of seconds): window arithmetic on 64-bit times, and
#: the shared pass's blocks of `COVER_BLOCK` windows, must not overflow.
MAX_WINDOW = 2 ** 40
#: Timesteps are 64-bit integers (docs/semantics.md §1).
T_MIN, T_MAX = -(2 ** 63), 2 ** 63 - 1


class QueryError(ProbcepError, ValueError):
    """A query option outside what the engine accepts (policy, θ, window, method)."""


@dataclass(frozen=True)
class Query:
    """A pattern with its grouping policy, match threshold θ and window w."""

    dfa: Dfa
    policy: str = "single"
    threshold: float = 0.0
    window: int | None = None
    method: str = "transducer"

    def __post_init__(self):
        window, threshold = self.window, self.threshold
        if window is not None and (isinstance(window, bool) or not isinstance(
                window, (int, np.integer))):
            raise QueryError(f"window must be a positive integer or None, got {window!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer,
                                                                      np.floating)):
            raise QueryError(f"threshold must be a number in [0, 1], got {threshold!r}")
        if self.policy not in POLICIES:
            raise QueryError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.method not in METHODS:
            raise QueryError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise QueryError(f"threshold must lie in [0, 1], got {self.threshold!r}")
        if self.window is not None and (int(self.window) != self.window or self.window < 1):
            raise QueryError(f"window must be a positive integer, got {self.window!r}")
        if self.window is not None and self.window > MAX_WINDOW:
            raise QueryError(f"window {self.window} is more than the limit of {MAX_WINDOW:,} "
                             f"timesteps (MAX_WINDOW)")

    @classmethod
    def build(cls, pattern: str, domain, **options) -> Query:
        return cls(compile_pattern(pattern, domain), **options)

    def describe(self) -> dict:
        return {"pattern": self.dfa.pattern, "domain": list(self.dfa.domain),
                "policy": self.policy, "threshold": float(self.threshold),
                "window": self.window, "method": self.method}


def query_differences(saved: dict, now: dict) -> str:
    """What differs between two `Query.describe()`s, for a refusal to resume a state."""
    return "; ".join(f"{k} {saved.get(k)!r} then, {now.get(k)!r} now"
                     for k in now if saved.get(k) != now.get(k))


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


@dataclass(frozen=True)
class GroupColumns:
    """Final groups as NumPy columns, for callers that hand them on as Arrow or Parquet
    without building one object per group; t_first holds `NONE` for single overlap."""

    t_start: np.ndarray
    t_first: np.ndarray
    t_end: np.ndarray
    probability: np.ndarray
    n_matches: np.ndarray
    max_match_probability: np.ndarray

    def __len__(self) -> int:
        return len(self.t_start)

    def groups(self) -> list[Group]:
        rows = zip(self.t_start.tolist(), self.t_first.tolist(), self.t_end.tolist(),
                   self.probability.tolist(), self.n_matches.tolist(),
                   self.max_match_probability.tolist())
        return [Group(s, None if f == NONE else f, e, p, n, m) for s, f, e, p, n, m in rows]

    @classmethod
    def concat(cls, parts: list[GroupColumns]) -> GroupColumns:
        if len(parts) == 1:  # most streams' blocks: no copy
            return parts[0]
        return cls(*(np.concatenate([getattr(p, name) for p in parts])
                     for name in cls.__dataclass_fields__))


class StreamMatcher:
    """Matches, groups and group probabilities for one stream."""

    def __init__(self, query: Query, transducer: Transducer | None = None):
        self.query = query
        self.runs = RunTracker(query.dfa, query.threshold, query.window)
        self.transducer = transducer or Transducer(query.dfa, query.window)
        self.next_t: int | None = None  # the timestep the next block must start at
        self.rows = np.zeros((0, len(query.dfa.domain)))  # retained rows
        self.rows_t0 = 0  # time of rows[0]
        self.open_i = np.zeros((16, 6), np.int64)  # open groups, see overlap.py
        self.open_m = np.zeros(16)
        self.n_open = 0
        self.last_end = NONE  # latest end time of an M_θ match
        #: Single overlap: each open group's P(g) pass, carried on to the group's end, by
        #: its t_start: (next t, composite ids, values, accepted mass). Its rows need not be
        #: kept, so a group that goes on and on costs no memory for its span.
        self.passes: dict[int, tuple[int, np.ndarray, np.ndarray, float]] = {}
        self._carried = query.policy == "single" and query.method == "transducer"

    # --- feeding -------------------------------------------------------------------

    def feed(self, t0: int, probs: np.ndarray) -> list[Group]:
        """Process rows for times t0, t0+1, ...; return the groups that became final."""
        return self.feed_columns(t0, probs).groups()

    def finish(self) -> list[Group]:
        """The stream has ended: every open group is final."""
        return self.finish_columns().groups()

    def feed_columns(self, t0: int, probs: np.ndarray) -> GroupColumns:
        """`feed`, returning the final groups as columns."""
        probs = np.ascontiguousarray(probs, dtype=np.float64)
        if probs.ndim != 2 or probs.shape[1] != len(self.query.dfa.domain):
            raise InputError(f"expected rows of {len(self.query.dfa.domain)} probabilities, "
                             f"got shape {probs.shape}")
        t0 = self._block_start(t0, len(probs))
        if self.next_t is None:
            self.rows_t0 = t0
        parts = [self._feed_chunk(t0 + lo, probs[lo:lo + CHUNK_ROWS])  # bounded memory
                 for lo in range(0, len(probs), CHUNK_ROWS)]
        return GroupColumns.concat(parts) if parts else self._columns(
            np.zeros((0, 6), np.int64), np.zeros(0))

    def _block_start(self, t0, n: int) -> int:
        """`t0` as an int, once a block of `n` rows from it is known to continue the
        stream, to stay within 64-bit timesteps and to miss the engine's "none"."""
        if self.next_t is not None and t0 != self.next_t:
            raise InputError(f"stream continues at t={self.next_t}, block starts at t={t0}")
        if isinstance(t0, bool) or not isinstance(t0, (int, np.integer)):
            raise InputError(f"a block starts at an integer timestep, got t0={t0!r}")
        t0 = int(t0)
        if n == 0 and t0 == self.next_t:  # nothing more, even after t = 2^63 - 1
            return t0
        if not T_MIN <= t0 <= T_MAX - max(n - 1, 0):
            raise InputError(f"a block of {n} rows from t={t0} leaves the 64-bit "
                             f"timesteps [{T_MIN}, {T_MAX}]")
        if t0 <= NONE < t0 + n:
            raise InputError(f"t={NONE} (-2^62) is the one timestep the engine cannot take: "
                             "it keeps it for 'none'")
        return t0

    def feed_silence(self, t0: int, n: int, row: np.ndarray) -> GroupColumns:
        """Process `n` timesteps that all have the distribution `row` (a stretch with no
        reading, as the gap policy fills it), like `feed_columns` on `n` copies of it.

        Once the matcher has no live run and the row is inert (one more such row starts
        no run that survives it and ends no match), every further row leaves it exactly
        as it is: the rest of the stretch is skipped in O(1). Before that, rows are fed
        in growing chunks, at most about twice as many as the runs needed to die."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"a stretch of silence is a whole number of timesteps, got "
                             f"n={n!r}")
        row = np.ascontiguousarray(row, dtype=np.float64).reshape(1, -1)
        if row.shape[1] != len(self.query.dfa.domain):
            raise InputError(f"expected rows of {len(self.query.dfa.domain)} probabilities, "
                             f"got shape {row.shape}")
        t0, n = self._block_start(t0, int(n)), int(n)
        parts, done, chunk = [], 0, 16
        while done < n:
            if self.quiet(row):
                self.next_t = t0 + n
                self.rows, self.rows_t0 = self.rows[:0], t0 + n
                break
            k = min(chunk, n - done)
            parts.append(self.feed_columns(t0 + done, np.repeat(row, k, axis=0)))
            done, chunk = done + k, min(2 * chunk, CHUNK_ROWS)
        return GroupColumns.concat(parts) if parts else self._columns(
            np.zeros((0, 6), np.int64), np.zeros(0))

    def quiet(self, row: np.ndarray) -> bool:
        """No live run, no open group, and `row` repeated forever would change nothing:
        the state is then the same as a fresh matcher's."""
        return self.runs.n == 0 and self.n_open == 0 and self._inert(row)

    def _inert(self, row: np.ndarray) -> bool:
        key = (float(self.query.threshold), row.tobytes())
        known = self.transducer.inert.get(key)
        if known is None:
            probe = StreamMatcher(self.query, self.transducer)
            found = probe.feed_columns(0, row.reshape(1, -1))
            known = self.transducer.inert[key] = probe.runs.n == 0 and not len(found)
        return known

    def finish_columns(self) -> GroupColumns:
        """`finish`, returning the final groups as columns."""
        columns = self._emit(final_before=None, finished=True)
        self.runs.n = 0
        return columns

    def _feed_chunk(self, t0: int, probs: np.ndarray) -> GroupColumns:
        parts, done = [], 0
        while done < len(probs):  # in pieces when their events would be too many
            fed, (ev_t, ev_s, ev_c, ev_m) = self.runs.advance(t0 + done, probs[done:])
            piece = probs[done:done + fed]
            self.rows = np.concatenate([self.rows, piece]) if len(self.rows) else piece.copy()
            done += fed
            self.next_t = t0 + done
            if len(ev_t):
                self._add_events(ev_t, ev_s, ev_c, ev_m)
            parts.append(self._emit(final_before=self.runs.min_start()))
        return GroupColumns.concat(parts)

    def _add_events(self, ev_t, ev_s, ev_c, ev_m):
        # One column per end time: their span bounds them without a pass over the events
        # (about w a row at θ = 0); they are counted only when the bound does not fit.
        need = self.n_open + int(ev_t[-1] - ev_t[0]) + 1
        if need > len(self.open_i):
            need = self.n_open + int(np.count_nonzero(np.diff(ev_t))) + 1
        if need > len(self.open_i):
            size = 2 * need
            self.open_i = np.resize(self.open_i, (size, 6))
            self.open_m = np.resize(self.open_m, size)
        if self.query.policy == "single":
            self.n_open = add_single(ev_t, ev_s, ev_c, ev_m, self.open_i, self.open_m,
                                     self.n_open)
        else:
            self.n_open, self.last_end = add_complete(ev_t, ev_s, ev_c, ev_m, self.open_i,
                                                      self.open_m, self.n_open, self.last_end)

    # --- emitting ------------------------------------------------------------------

    def _emit(self, final_before: int | None, finished: bool = False) -> GroupColumns:
        """Emit open groups no future match can join (all of them if None: no run is
        live, or the stream is `finished`)."""
        complete = self.query.policy == "complete"
        key = self.open_i[: self.n_open, FIRST if complete else END]  # ascending
        k = self.n_open if final_before is None else int(np.searchsorted(key, final_before))
        done_i, done_m = self.open_i[:k].copy(), self.open_m[:k].copy()
        self.open_i[: self.n_open - k] = self.open_i[k: self.n_open]
        self.open_m[: self.n_open - k] = self.open_m[k: self.n_open]
        self.n_open -= k
        if complete:  # C(f) inside C(prev) is not a group
            keep = (done_i[:, PREV] == NONE) | (done_i[:, PREV] < done_i[:, MAX_START])
            done_i, done_m = done_i[keep], done_m[keep]
        columns = self._columns(done_i, done_m)
        if self._carried:
            self._carry_passes()
        self._trim(final_before, finished)
        return columns

    def _carry_passes(self) -> None:
        """Carry the pass of each open single-overlap group older than CARRY_AFTER on to
        the group's end (from where it stopped, or from the group's start); the passes of
        groups that merged into an earlier one or were emitted go."""
        if self.next_t is None:  # never fed a row: nothing is open
            return
        carried = {}
        old = self.next_t - CARRY_AFTER
        for start, end in self.open_i[: self.n_open, [START, END]].tolist():
            if start > old and start not in self.passes:
                continue  # young: its rows are kept
            t, ids, vals, accepted = self.passes.get(start) or (
                start, np.array([EMPTY], np.int64), np.ones(1), 0.0)
            if t <= end:
                ids, vals, accepted = self.transducer.advance_pass(
                    self.rows, t - self.rows_t0, end + 1 - self.rows_t0, ids, vals, accepted)
            carried[start] = (end + 1, ids, vals, accepted)
        self.passes = carried

    def _columns(self, done_i: np.ndarray, done_m: np.ndarray) -> GroupColumns:
        probs = np.zeros(0)
        if len(done_i):
            probs = np.minimum(1.0, np.maximum(self._probabilities(done_i), done_m))
        return GroupColumns(
            t_start=done_i[:, START].copy(),
            t_first=done_i[:, FIRST].copy(),
            t_end=done_i[:, END].copy(), probability=probs,
            n_matches=done_i[:, COUNT].copy(), max_match_probability=done_m)

    def _probabilities(self, done: np.ndarray) -> np.ndarray:
        """P(g) for each group (clipped by the caller to [max P(m), 1] against rounding)."""
        los = done[:, START] - self.rows_t0
        his = done[:, END] - self.rows_t0 + 1
        firsts = np.where(done[:, FIRST] == NONE, -1, done[:, FIRST] - self.rows_t0)
        q = self.query
        carried = np.flatnonzero(np.isin(done[:, START], list(self.passes))) \
            if self.passes else ()
        if len(carried):  # groups open before: their passes carry on to their ends
            out = np.zeros(len(done))
            fresh = np.setdiff1d(np.arange(len(done)), carried)
            if len(fresh):
                out[fresh] = self.transducer.accept_probabilities(
                    self.rows, los[fresh], his[fresh], firsts[fresh])
            for i in carried.tolist():
                t, ids, vals, accepted = self.passes[int(done[i, START])]
                out[i] = self.transducer.advance_pass(self.rows, t - self.rows_t0, his[i],
                                                      ids, vals, accepted)[2]
            return out
        if q.method == "transducer" and q.policy == "complete" and q.threshold == 0:
            shared = self.transducer.cover_probabilities(
                self.rows, self.rows_t0, done[:, START], done[:, END], done[:, FIRST])
            if shared is not None:
                return shared
        if q.method == "transducer":
            return self.transducer.accept_probabilities(self.rows, los, his, firsts)
        return np.array([
            naive_group_probability(q.dfa, self.rows[lo:hi], q.window,
                                    None if first < 0 else first - lo)
            for lo, hi, first in zip(los, his, firsts)])

    def _trim(self, final_before: int | None, finished: bool = False):
        """Forget rows that no open group and no live run can reach (nor, at θ = 0 under
        complete overlap, a later group's shared pass, which starts at its block's
        anchor however the stream was cut into batches)."""
        if self.next_t is None:
            return
        keep_from = self.next_t if final_before is None else final_before
        if self.n_open:  # a carried pass needs the rows from its group's end on
            reach = [self.passes[s][0] if s in self.passes else s
                     for s in self.open_i[: self.n_open, START].tolist()]
            keep_from = min(keep_from, int(min(reach)))
        q = self.query
        if not finished and q.policy == "complete" and q.threshold == 0 and q.window:
            # the shared pass of a later group starts at its block's anchor (transducer.py)
            f = min(self.next_t, int(self.open_i[: self.n_open, FIRST].min())
                    if self.n_open else self.next_t)
            block = COVER_BLOCK * q.window
            keep_from = min(keep_from, (f - q.window) // block * block)
        drop = keep_from - self.rows_t0
        if drop > 0:
            self.rows = self.rows[drop:]
            self.rows_t0 = keep_from

    # --- state ---------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The open part of the computation, as bytes (a NumPy .npz archive)."""
        keys = self.transducer.keys  # a pass's composites by what they are, not by id
        passes = [[start, t, [list(map(list, keys[c])) for c in ids.tolist()], vals.tolist(),
                   accepted] for start, (t, ids, vals, accepted) in self.passes.items()]
        header = {"format": STATE_FORMAT, "query": self.query.describe(),
                  "next_t": self.next_t, "rows_t0": self.rows_t0,
                  "last_end": self.last_end}
        if passes:
            header["passes"] = passes  # floats as JSON writes them: repr, so exact
        buf = io.BytesIO()
        np.savez(buf, header=np.array(json.dumps(header)), rows=self.rows,
                 open_i=self.open_i[: self.n_open], open_m=self.open_m[: self.n_open],
                 **self.runs.to_arrays())
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, query: Query, data: bytes,
                   transducer: Transducer | None = None) -> StreamMatcher:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            header = json.loads(str(arrays["header"]))
            if header.get("format") != STATE_FORMAT:
                raise InputError(f"not a probcep stream state (format {header.get('format')!r})")
            if header["query"] != query.describe():
                raise InputError("saved state was made by a different query: "
                                 + query_differences(header["query"], query.describe()))
            m = cls(query, transducer)
            m.next_t = header["next_t"]
            m.rows_t0 = header["rows_t0"]
            m.last_end = header["last_end"]
            m.rows = arrays["rows"]
            m.n_open = len(arrays["open_m"])
            m.open_i = np.resize(arrays["open_i"], (max(16, m.n_open), 6))
            m.open_m = np.resize(arrays["open_m"], max(16, m.n_open))
            m.runs.load_arrays({k: arrays[k] for k in ("run_q", "run_s", "run_c", "run_m")})
        for start, t, keys, vals, accepted in header.get("passes", ()):
            ids = [m.transducer.intern(tuple(tuple(run) for run in key)) for key in keys]
            m.passes[start] = (t, np.array(ids, np.int64), np.array(vals, np.float64),
                               accepted)
        return m

