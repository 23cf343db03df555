"""Brute-force ACEP reference (docs/semantics.md §7), independent of the engine's automata.

Patterns are Python regular expressions over one-letter symbols. Every subsequence of
the stream whose tags span less than the window is tried; its error is the least number
of inserted letters that makes some string accepted by `re.fullmatch`, found by trying
every way to insert 0, 1, ..., k letters.
"""

from __future__ import annotations

import itertools
import re


def least_insertions(word: str, regex: re.Pattern, letters: str, k: int) -> int | None:
    """Least number of letters to insert into `word` to match, or None if more than k."""
    level = {word}
    for errors in range(k + 1):
        if any(regex.fullmatch(w) for w in level):
            return errors
        level = {w[:i] + c + w[i:] for w in level for i in range(len(w) + 1) for c in letters}
    return None


def all_matches(symbols: str, tags, regex: str, letters: str, k: int, window: int):
    """{event indices of σ: error} for every match."""
    compiled = re.compile(regex)
    out = {}
    n = len(symbols)
    for first in range(n):
        later = [j for j in range(first + 1, n) if tags[j] - tags[first] < window]
        for size in range(len(later) + 1):
            for rest in itertools.combinations(later, size):
                sigma = (first, *rest)
                err = least_insertions("".join(symbols[i] for i in sigma), compiled, letters, k)
                if err is not None:
                    out[sigma] = err
    return out


def bundles(points, window: int) -> list[tuple[int, int]]:
    """(first, last) match point of each bundle, by Definition 3 directly."""
    points = sorted(set(points))
    out: list[list[int]] = []
    for p in points:
        if out and p - out[-1][-1] <= window:
            out[-1].append(p)
        else:
            out.append([p])
    return [(b[0], b[-1]) for b in out]
