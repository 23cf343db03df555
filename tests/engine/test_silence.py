"""Silent stretches (timesteps with no reading, filled by the gap policy) fed with
`feed_silence` give exactly the groups of the same rows fed one by one, and an inert
silence is stepped over in O(1)."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from probcep.engine import PatternError, Query, StreamMatcher
from probcep.engine.runs import RunLimitError
from probcep.errors import InputError

from .strategies import LETTERS, patterns, policies, streams, thresholds, windows


@st.composite
def silent_cases(draw):
    """A pattern, readings, and silences: where they fall, how long, what they hold."""
    n_symbols = draw(st.integers(2, 4))
    letters = LETTERS[:n_symbols]
    text, _ = draw(patterns(letters))
    probs = draw(streams(n_symbols, max_worlds=10**9))
    if draw(st.booleans()):  # the no-reading symbol: one-hot
        row = np.eye(n_symbols)[draw(st.integers(0, n_symbols - 1))]
    else:  # the uniform policy
        row = np.full(n_symbols, 1.0 / n_symbols)
    gaps = draw(st.lists(st.tuples(st.integers(0, len(probs)), st.integers(1, 60)),
                         max_size=3))
    return letters, text, probs, row, sorted(gaps)


def _groups(groups):
    return [(g.t_start, g.t_first, g.t_end, round(g.probability, 12), g.n_matches,
             g.max_match_probability) for g in groups]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(silent_cases(), policies, thresholds, windows, st.booleans())
def test_silences_fed_sparsely_equal_dense_rows(case, policy, threshold, window, saved):
    letters, text, probs, row, gaps = case
    try:
        query = Query.build(text, letters, policy=policy, threshold=threshold, window=window)
    except PatternError:
        return
    pieces, at = [], 0  # (readings) and (silence length) in stream order
    for pos, length in gaps:
        pieces += [probs[at:pos], length]
        at = max(at, pos)
    pieces.append(probs[at:])
    dense = np.concatenate([p if not isinstance(p, int) else np.repeat(row[None], p, 0)
                            for p in pieces])
    one = StreamMatcher(query)
    try:
        want = one.feed(5, dense) + one.finish()
    except RunLimitError:  # a tiny θ without a window: paths multiply over the silences
        reject()

    matcher, t, got = StreamMatcher(query), 5, []
    for piece in pieces:
        if isinstance(piece, int):
            got += matcher.feed_silence(t, piece, row).groups()
            t += piece
        elif len(piece):
            got += matcher.feed(t, piece)
            t += len(piece)
        if saved:  # batch boundaries anywhere: the state round-trips
            matcher = StreamMatcher.from_bytes(query, matcher.to_bytes())
    got += matcher.finish()
    assert _groups(got) == _groups(want)


def test_an_inert_silence_is_stepped_over_at_once():
    query = Query.build("Door Room+ Door", ("Door", "Room", "NoReading"), policy="complete",
                        threshold=0.01, window=60)
    rows = np.array([[0.9, 0.1, 0], [0.1, 0.9, 0], [0.2, 0.8, 0], [0.9, 0.1, 0]])
    silence = np.array([0.0, 0.0, 1.0])
    matcher = StreamMatcher(query)
    groups = matcher.feed(0, rows)
    began = time.perf_counter()
    groups += matcher.feed_silence(4, 10**15, silence).groups()  # a silence of ages
    assert time.perf_counter() - began < 1.0
    assert matcher.next_t == 4 + 10**15 and matcher.quiet(silence)
    assert [(g.t_start, g.t_end) for g in groups] == [(0, 3)]
    assert not len(matcher.rows)  # nothing retained across the silence


def test_paths_that_multiply_without_end_are_refused_not_left_to_fill_memory():
    """Above θ every path is its own run; with θ = 1e-300 and no window, `a (b|c)+ d` on
    uniform rows doubles the runs of every start each row (a test worker once grew to
    21 GB on such a case). The engine stops with a reason instead; with a window the same
    rows are fine."""
    domain = ("a", "b", "c", "d")
    rows = np.full((40, 4), 0.25)
    query = Query.build("a (b | c)+ d", domain, policy="complete", threshold=1e-300)
    with pytest.raises(RunLimitError, match=r"partial matches alive at t=\d+, more each row: "
                                            r"with θ = 1e-300 and no window"):
        StreamMatcher(query).feed(0, rows)
    windowed = Query.build("a (b | c)+ d", domain, policy="complete", threshold=1e-300,
                           window=8)
    assert StreamMatcher(windowed).feed(0, rows)


@pytest.mark.parametrize("before, t0, n, said", [
    ([[0.0, 1.0]], 5, 3, "stream continues at t=1, block starts at t=5"),  # a hole
    ([[0.0, 1.0]] * 4, 1, 2, "stream continues at t=4, block starts at t=1"),  # back
    ([], 2 ** 63 - 2, 5, "leaves the 64-bit timesteps"),
    ([], -2 ** 62 - 1, 5, "is the one timestep the engine cannot take"),
    ([], 1.5, 5, "a block starts at an integer timestep, got t0=1.5"),
    ([], 0, 2.5, "a stretch of silence is a whole number of timesteps, got n=2.5"),
    ([], 0, -1, "a stretch of silence is a whole number of timesteps, got n=-1"),
])
def test_silence_is_checked_as_a_block_of_rows_is(before, t0, n, said):
    """A quiet matcher steps over silence in O(1), but not over the checks `feed` makes:
    a hole, a step back, or a stretch past the 64-bit timesteps was taken (QA,
    2026-11-27), and after a fractional t0 every later block was refused."""
    matcher = StreamMatcher(Query.build("a", ["a", "z"], policy="single"))
    if before:
        matcher.feed(0, np.array(before))
    with pytest.raises(InputError, match=re.escape(said)):
        matcher.feed_silence(t0, n, np.array([0.0, 1.0]))
    assert matcher.next_t == (len(before) if before else None)


def test_an_empty_block_after_the_last_timestep_is_nothing_more():
    """A stream that ended at t = 2^63 - 1 continues at 2^63: an empty block there (as at
    any other point) is taken, not refused for leaving the 64-bit timesteps (QA, 2026-11-28)."""
    query = Query.build("a b", "ab", policy="single", threshold=0.0, window=2)
    rows = np.array([[1.0, 0.0], [0.0, 1.0]])
    whole = StreamMatcher(query)
    want = whole.feed(2 ** 63 - 2, rows) + whole.finish()
    matcher = StreamMatcher(query)
    got = matcher.feed(2 ** 63 - 2, rows)
    got += matcher.feed(2 ** 63, rows[:0]) + matcher.feed_silence(2 ** 63, 0, rows[0]).groups()
    assert got + matcher.finish() == want and len(want) == 1
    with pytest.raises(InputError, match="leaves the 64-bit timesteps"):
        matcher.feed(2 ** 63, rows[:1])
