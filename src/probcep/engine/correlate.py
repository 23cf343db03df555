"""Live ⋈ archive correlations (docs/semantics.md §8): each live group of a pattern L
joined with an archive pattern A over a lookback range of the same stream.

Because the range ends at least one timestep before the group starts, the two events
are independent and the correlation's probability is P(g) · P_A(R) (exists) or
P(g) · (1 − P_A(R)) (absent), where P_A(R) is the single-overlap group probability of
the pseudo-group R under A, computed by the same transducer as any group's.

How the archive is read (which rows, when, in how many reads) is a plan chosen by the
strategy (`probcep.engine.read_plans`); this module holds what a plan never changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probcep.engine.automaton import Dfa, compile_pattern
from probcep.engine.grouping import Group, QueryError
from probcep.engine.transducer import Transducer

MODES = ("exists", "absent")


#: The longest archive window: its statistics keep the expected runs of every length up
#: to it, and a day's bound reads that many timesteps of silence before the day (for
#: longer patterns, leave the window out: the archive side is then unbounded).
MAX_ARCHIVE_WINDOW = 2 ** 20


@dataclass(frozen=True)
class Correlation:
    """The archive side of a correlation: pattern A (as a DFA) with window w_A, the
    lookback and gap in timesteps, the mode and the minimum probability τ_C."""

    dfa: Dfa
    lookback: int
    window: int | None = None
    gap: int = 1
    mode: str = "exists"
    min_probability: float = 0.0

    def __post_init__(self):
        if self.window is not None and (int(self.window) != self.window or self.window < 1):
            raise QueryError(f"archive window must be a positive integer, got {self.window!r}")
        if self.window is not None and self.window > MAX_ARCHIVE_WINDOW:
            raise QueryError(f"archive window {self.window} is more than the limit of "
                             f"{MAX_ARCHIVE_WINDOW:,} timesteps (MAX_ARCHIVE_WINDOW)")
        if int(self.gap) != self.gap or self.gap < 1:
            raise QueryError(f"gap must be an integer >= 1, got {self.gap!r} (with gap < 1 the "
                             f"range meets the live group and the product is wrong)")
        if int(self.lookback) != self.lookback or self.lookback < self.gap:
            raise QueryError(f"lookback must be an integer >= gap ({self.gap}), "
                             f"got {self.lookback!r}")
        if self.mode not in MODES:
            raise QueryError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= float(self.min_probability) <= 1.0:
            raise QueryError(f"min probability must lie in [0, 1], got {self.min_probability!r}")

    @classmethod
    def build(cls, pattern: str, domain, **options) -> Correlation:
        return cls(compile_pattern(pattern, domain), **options)

    def archive_range(self, t_start: int, stream_t0: int) -> tuple[int, int] | None:
        """R(g) for a group starting at `t_start` on a stream whose first timestep is
        `stream_t0`, or None when it is empty."""
        lo, hi = max(t_start - self.lookback, stream_t0), t_start - self.gap
        return (lo, hi) if lo <= hi else None

    def combine(self, live: float, archive: float) -> float:
        """The correlation's probability from P(g) and P_A(R)."""
        return live * archive if self.mode == "exists" else live * (1.0 - archive)

    def emits(self, probability: float) -> bool:
        return probability >= self.min_probability


@dataclass(frozen=True)
class Correlated:
    """One emitted row: the live group, its archive range (None when empty), P_A(R) and
    the correlation's probability."""

    stream_id: str
    group: Group
    r_lo: int | None
    r_hi: int | None
    archive_probability: float
    probability: float

    def as_dict(self) -> dict:
        group = self.group.as_dict()
        return {"stream_id": self.stream_id,
                **{k: v for k, v in group.items() if k != "probability"},
                "live_probability": self.group.probability,
                "archive_probability": self.archive_probability,
                "r_lo": self.r_lo, "r_hi": self.r_hi, "probability": self.probability}


def dense_rows(t: np.ndarray, probs: np.ndarray, lo: int, hi: int, silence) -> np.ndarray:
    """Every timestep of [lo, hi] as a (timesteps, symbols) array: the stored rows where
    there are some (times `t`), the gap policy's `silence` everywhere else (§1, §8)."""
    dense = np.tile(np.asarray(silence, dtype=np.float64), (hi - lo + 1, 1))
    inside = (t >= lo) & (t <= hi)
    dense[t[inside] - lo] = probs[inside]
    return dense


def archive_probabilities(transducer: Transducer, t: np.ndarray, probs: np.ndarray, silence,
                          ranges: list[tuple[int, int]]) -> np.ndarray:
    """P_A(R) for each range (inclusive), from the stored rows `probs` at sorted times `t`
    (every timestep of the ranges that has a row) and `silence` for the rest: the
    accepting probability of single-overlap pseudo-groups. Each range starts from the
    transducer's empty vector, so its value depends on its own rows alone, never on how
    much around it was read; a silent stretch costs the steps the transducer's vector
    takes to settle, not its length (`Transducer.accept_sparse`)."""
    if not ranges:
        return np.zeros(0)
    bounds = np.asarray(ranges, dtype=np.int64)
    return np.minimum(1.0, transducer.accept_sparse(t, probs, silence, bounds[:, 0],
                                                    bounds[:, 1]))
