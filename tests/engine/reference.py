"""Brute-force possible-worlds reference for docs/semantics.md §3–§4, independent of the engine.

Patterns are given here as Python regular expressions over one-letter symbols (the test
strategies render each random syntax tree twice: probcep syntax for the engine, `re`
syntax for this module), so nothing of the engine's parser or automata is reused.
Everything is enumerated: every interval, every symbol sequence, every world.
"""

from __future__ import annotations

import itertools
import math
import re


def _support(row):
    return [i for i, p in enumerate(row) if p > 0]


def all_matches(probs, letters, regex, window):
    """Every match of positive probability: (start, end, probability) with 0-based rows."""
    pattern = re.compile(regex)
    found = []
    n = len(probs)
    for s in range(n):
        for e in range(s, n):
            if window is not None and e - s + 1 > window:
                break
            for seq in itertools.product(*(_support(probs[t]) for t in range(s, e + 1))):
                if pattern.fullmatch("".join(letters[i] for i in seq)):
                    p = 1.0
                    for t, i in zip(range(s, e + 1), seq):
                        p *= probs[t][i]
                    if p > 0:
                        found.append((s, e, p))
    return found


def world_probability(probs, letters, regex, window, lo, hi, first=None):
    """P(the world contains a match in rows lo..hi), with lo <= s <= first <= e if first."""
    pattern = re.compile(regex)
    total = 0.0
    for seq in itertools.product(*(_support(probs[t]) for t in range(lo, hi + 1))):
        text = "".join(letters[i] for i in seq)
        hit = False
        for s in range(lo, hi + 1):
            if first is not None and s > first:
                break
            for e in range(s, hi + 1):
                if window is not None and e - s + 1 > window:
                    break
                if first is not None and e < first:
                    continue
                if pattern.fullmatch(text[s - lo:e - lo + 1]):
                    hit = True
                    break
            if hit:
                break
        if hit:
            total += math.prod(probs[t][i] for t, i in zip(range(lo, hi + 1), seq))
    return total


def reference_groups(probs, letters, regex, policy, threshold, window, t0=0):
    """Groups as (t_start, t_first, t_end, probability, n_matches, max_probability)."""
    kept = [m for m in all_matches(probs, letters, regex, window) if m[2] >= threshold]
    groups = []
    if policy == "single":
        components = []  # sorted by start, a match joins when it overlaps the reach so far
        for m in sorted(kept):
            if components and m[0] <= max(x[1] for x in components[-1]):
                components[-1].append(m)
            else:
                components.append([m])
        for comp in components:
            lo, hi = min(m[0] for m in comp), max(m[1] for m in comp)
            p = world_probability(probs, letters, regex, window, lo, hi)
            groups.append((lo, None, hi, p, len(comp), max(m[2] for m in comp)))
    else:
        ends = sorted({m[1] for m in kept})
        sets = {f: frozenset(i for i, m in enumerate(kept) if m[0] <= f <= m[1]) for f in ends}
        for f in ends:
            if any(sets[f] < sets[g] for g in ends if g != f):
                continue
            if any(sets[f] == sets[g] for g in ends if g < f):
                continue
            members = [kept[i] for i in sets[f]]
            lo, hi = min(m[0] for m in members), max(m[1] for m in members)
            p = world_probability(probs, letters, regex, window, lo, hi, first=f)
            groups.append((lo, f, hi, p, len(members), max(m[2] for m in members)))
    return sorted((lo + t0, None if f is None else f + t0, hi + t0, p, n, mx)
                  for lo, f, hi, p, n, mx in groups)


def correlation_probability(probs, letters, live, archive, group, r, mode):
    """P(E_L ∧ E_A) (exists) or P(E_L ∧ ¬E_A) (absent) by listing every world over
    [min(R.lo, t_start), t_end], without using their independence (docs/semantics.md §8).

    `live` and `archive` are (regex, window) pairs; `group` is (t_start, t_first, t_end)
    in rows, t_first None under single overlap; `r` is (lo, hi) in rows or None (empty).
    """
    t_start, first, t_end = group
    lo = t_start if r is None else min(r[0], t_start)
    memo = {}

    def holds(regex, window, text, a, b, f=None):
        """A match of `regex` inside rows a..b of the world (with a <= s <= f <= e)."""
        key = (regex, window, text[a - lo:b - lo + 1], None if f is None else f - a)
        if key not in memo:
            memo[key] = _has_match(re.compile(regex), window, key[2], key[3])
        return memo[key]

    total = 0.0
    for seq in itertools.product(*(_support(probs[t]) for t in range(lo, t_end + 1))):
        text = "".join(letters[i] for i in seq)
        if not holds(live[0], live[1], text, t_start, t_end, first):
            continue
        in_archive = r is not None and holds(archive[0], archive[1], text, r[0], r[1])
        if in_archive == (mode == "exists"):
            total += math.prod(probs[t][i] for t, i in zip(range(lo, t_end + 1), seq))
    return total


def _has_match(pattern, window, text, first):
    for s in range(len(text)):
        if first is not None and s > first:
            return False
        for e in range(s, len(text)):
            if window is not None and e - s + 1 > window:
                break
            if first is not None and e < first:
                continue
            if pattern.fullmatch(text[s:e + 1]):
                return True
    return False
