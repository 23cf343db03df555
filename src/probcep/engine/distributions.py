"""Whether rows of probabilities are distributions (docs/semantics.md §1): every
probability in [0, 1] and each row summing to 1 within `SUM_TOLERANCE`.

The engine trusts its input; the readers that feed it (files of `probcep group`, silver
given as `--source` files) ask this of every row, and word what is wrong the same way.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

#: How far a row's probabilities may sum from 1 (silver's suite allows the same).
SUM_TOLERANCE = 1e-9


class Flaw(NamedTuple):
    """The first row that is not a distribution, and what is wrong with it."""

    row: int
    column: int | None
    """Its first probability that is NaN or outside [0, 1]; None if only its sum is off."""
    value: float
    """That probability, or the row's sum."""

    def says(self, domain, raw=None) -> str:
        """What is wrong, naming the symbol; `raw` is a NaN's cell as the file wrote it."""
        if self.column is None:
            return f"probabilities sum to {self.value!r}, not 1"
        name = domain[self.column]
        if math.isnan(self.value):
            shown = self.value if raw is None else raw
            return f"probability of {name!r} is missing or not a number ({shown!r})"
        return f"probability of {name!r} is {self.value!r}, outside [0, 1]"


def first_flaw(values: np.ndarray, tolerance: float = SUM_TOLERANCE) -> Flaw | None:
    """The first row of the (rows, symbols) array that is not a distribution, or None.

    One compiled pass clears almost every array; only one it doubts is looked at again
    with NumPy, whose sums decide a row near the bound."""
    if _plausible(values, tolerance):
        return None
    bad_cell = ~((values >= 0) & (values <= 1))  # also NaN
    sums = values.sum(axis=1)
    bad_row = bad_cell.any(axis=1) | ~(np.abs(sums - 1.0) <= tolerance)
    if not bad_row.any():
        return None
    r = int(np.flatnonzero(bad_row)[0])
    if bad_cell[r].any():
        c = int(np.flatnonzero(bad_cell[r])[0])
        return Flaw(r, c, float(values[r, c]))
    return Flaw(r, None, float(sums[r]))


@njit(cache=True, nogil=True)
def _plausible(values, tolerance):
    """True if every row is in [0, 1] and sums to 1 clearly within `tolerance`; rows
    near the bound are left to NumPy, whose summation order decides."""
    for r in range(values.shape[0]):
        total = 0.0
        for c in range(values.shape[1]):
            v = values[r, c]
            if not (0.0 <= v <= 1.0):  # also NaN
                return False
            total += v
        if abs(total - 1.0) > 0.5 * tolerance:
            return False
    return True
