"""Hypothesis strategies: random patterns of the whole language and small random streams.

A pattern is drawn as a syntax tree and rendered twice: probcep syntax (for the engine)
and a Python regular expression over one-letter symbols (for the reference).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

LETTERS = "abcd"


def _symbol(letters):
    return st.sampled_from(letters).map(lambda s: (s, s))


def _any(letters):
    return st.just((".", f"[{letters}]"))


def _symbol_class(letters):
    def render(members_negated):
        members, negated = members_negated
        chosen = "".join(sorted(members))
        text = f"[{'^' if negated else ''}{' '.join(sorted(members))}]"
        regex_set = "".join(c for c in letters if (c in chosen) != negated)
        return text, (f"[{regex_set}]" if regex_set else "(?!)")

    return st.tuples(st.sets(st.sampled_from(letters), min_size=1, max_size=len(letters)),
                     st.booleans()).map(render)


def _quantifier():
    small = st.integers(0, 3)
    return st.one_of(
        st.sampled_from(["+", "*", "?"]),
        small.map(lambda m: f"{{{m}}}"),
        small.map(lambda m: f"{{{m},}}"),
        st.tuples(small, st.integers(0, 2)).map(lambda mk: f"{{{mk[0]},{mk[0] + mk[1]}}}"),
    )


def patterns(letters: str):
    """(probcep pattern, Python regex) pairs over `letters`."""
    leaves = st.one_of(_symbol(letters), _symbol(letters), _any(letters),
                       _symbol_class(letters))

    def extend(children):
        concat = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: (" ".join(x[0] for x in xs), "".join(f"(?:{x[1]})" for x in xs)))
        alternation = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: ("( " + " | ".join(x[0] for x in xs) + " )",
                        "(?:" + "|".join(x[1] for x in xs) + ")"))
        repeat = st.tuples(children, _quantifier()).map(
            lambda xq: (f"( {xq[0][0]} ){xq[1]}", f"(?:{xq[0][1]}){xq[1]}"))
        return st.one_of(concat, alternation, repeat)

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def streams(draw, n_symbols: int, max_len: int = 8, max_worlds: int = 3000):
    """A (T, D) matrix of distributions, often sparse, with few enough worlds."""
    length = draw(st.integers(1, max_len))
    rows = []
    worlds = 1
    for _ in range(length):
        weights = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 10]),
                                min_size=n_symbols, max_size=n_symbols))
        if sum(weights) == 0:
            weights[draw(st.integers(0, n_symbols - 1))] = 1
        support = sum(1 for w in weights if w)
        if worlds * support > max_worlds:  # keep the reference's enumeration small
            weights = [0] * n_symbols
            weights[int(np.argmax(rows[-1])) if rows else 0] = 1
            support = 1
        worlds *= support
        total = sum(weights)
        rows.append([w / total for w in weights])
    return np.array(rows, dtype=np.float64)


thresholds = st.one_of(st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.1, 0.2, 0.5]),
                       st.floats(0.0, 1.0))
windows = st.one_of(st.none(), st.integers(1, 6))
policies = st.sampled_from(["single", "complete"])
