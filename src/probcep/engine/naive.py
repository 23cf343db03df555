"""The grouping papers' baseline: group probability by enumerating every world of the interval.

Exponential in the group's length (|D|^len worlds); kept for benchmarks and as a
cross-check of the transducer. Worlds are enumerated in NumPy chunks, and a group that
would need more than `max_worlds` worlds is refused instead of exhausting memory.
"""

from __future__ import annotations

import numpy as np

from probcep.engine.automaton import Dfa
from probcep.errors import ProbcepError

DEFAULT_MAX_WORLDS = 1 << 24
_CHUNK = 1 << 16


class NaiveLimitError(ProbcepError, RuntimeError):
    """The naive method would have to enumerate too many worlds."""


def naive_group_probability(dfa: Dfa, probs: np.ndarray, window: int | None,
                            first: int | None, max_worlds: int = DEFAULT_MAX_WORLDS) -> float:
    """P(some match of length <= window lies in the rows), by enumeration.

    With `first` (a row index) only matches with start <= first <= end count, as for
    complete overlap; otherwise any match inside the rows counts.
    """
    probs = np.asarray(probs, dtype=np.float64)
    length = len(probs)
    supports = [np.flatnonzero(row > 0) for row in probs]
    total = 1
    for sup in supports:
        total *= len(sup)
        if total > max_worlds:
            raise NaiveLimitError(
                f"naive method needs more than {max_worlds} worlds for {length} timesteps")
    window = window or length
    dead = dfa.n_states
    delta = np.vstack([np.where(dfa.delta >= 0, dfa.delta, dead),
                       np.full((1, dfa.delta.shape[1]), dead)]).astype(np.int64)
    accepting = np.append(dfa.accepting, False)
    radices = np.array([len(s) for s in supports], dtype=np.int64)
    result = 0.0
    for lo in range(0, total, _CHUNK):
        index = np.arange(lo, min(total, lo + _CHUNK), dtype=np.int64)
        world = np.empty((len(index), length), dtype=np.int64)
        weight = np.ones(len(index))
        for col in range(length - 1, -1, -1):  # mixed-radix digits, last row fastest
            digit = index % radices[col]
            index //= radices[col]
            world[:, col] = supports[col][digit]
            weight *= probs[col, world[:, col]]
        hit = np.zeros(len(world), dtype=bool)
        for s in range(length if first is None else first + 1):
            state = np.full(len(world), dfa.start, dtype=np.int64)
            for e in range(s, min(length, s + window)):
                state = delta[state, world[:, e]]
                if first is None or e >= first:
                    hit |= accepting[state]
        result += float(weight[hit].sum())
    return result
