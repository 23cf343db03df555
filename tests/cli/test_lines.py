"""The compiled line assembler (`lines.py`) against one `json.dumps` per line."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.cli.output import _compiled_lines, group_lines
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE

ints = st.integers(-(2 ** 63), 2 ** 63 - 1)
positional = st.floats(1e-4, 1e16, exclude_max=True).filter(lambda v: v != int(v))


def reference(sid: str, cols: GroupColumns) -> str:
    return "".join(json.dumps({"stream_id": sid, **g.as_dict()}) + "\n" for g in cols.groups())


@st.composite
def columns(draw):
    n = draw(st.integers(0, 8))
    single = draw(st.booleans())
    column = lambda values: np.array(draw(st.lists(values, min_size=n, max_size=n)))  # noqa
    first = np.full(n, NONE) if single else column(ints.filter(lambda v: v != NONE))
    return GroupColumns(column(ints).astype(np.int64), first.astype(np.int64),
                        column(ints).astype(np.int64), column(positional).astype(np.float64),
                        column(ints).astype(np.int64), column(positional).astype(np.float64))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=4), columns())
def test_lines_are_those_of_json_dumps(sid, cols):
    single = bool((cols.t_first == NONE).all())
    head = f'{{"stream_id": {json.dumps(sid)}, "t_start": '
    text = b"".join(_compiled_lines(head, cols, single)).decode("ascii")
    assert text == reference(sid, cols)
    assert b"".join(group_lines(sid, cols)).decode("ascii") == text


def test_extreme_integers_and_many_lines():
    rng = np.random.default_rng(4)
    n = 200_000  # more than one block of LINES_PER_WRITE
    big = np.array([-(2 ** 63), 2 ** 63 - 1, -1, 0, 9, 10, 99, 100, -10 ** 18, 10 ** 18])
    t = np.resize(big, n).astype(np.int64)
    p = rng.random(n) * 0.999 + 1e-4
    cols = GroupColumns(t, np.sort(rng.integers(-5, 10 ** 12, n)), t[::-1].copy(), p,
                        rng.integers(0, 2 ** 62, n), p[::-1].copy())
    assert b"".join(group_lines("s", cols)).decode("ascii") == reference("s", cols)
