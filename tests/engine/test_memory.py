"""docs/semantics.md §5, Memory: with a window, a stream's saved state is bounded by the
window and the pattern, also under single overlap when a group never closes: once a
group is older than CARRY_AFTER its P(g) pass is carried on instead of its rows kept,
with the same steps, so the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probcep.engine.grouping as grouping
from probcep.engine import Query, StreamMatcher
from probcep.engine.grouping import GroupColumns


def _stream(n: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).uniform(0.05, 0.95, n)
    return np.column_stack([a, 1.0 - a])


def _groups(query, probs, cuts=(), saved=True) -> GroupColumns:
    matcher, parts = StreamMatcher(query), []
    for lo, hi in zip((0, *cuts), (*cuts, len(probs))):
        parts.append(matcher.feed_columns(lo, probs[lo:hi]))
        if saved:
            matcher = StreamMatcher.from_bytes(query, matcher.to_bytes())
    return GroupColumns.concat([*parts, matcher.finish_columns()])


def test_a_group_that_never_closes_keeps_a_bounded_state():
    query = Query.build("a a", "ab", policy="single", threshold=0.0, window=2)
    sizes = []
    for n in (grouping.CARRY_AFTER + 1_000, 4 * grouping.CARRY_AFTER):
        matcher = StreamMatcher(query)
        matcher.feed_columns(0, _stream(n, 1))
        assert matcher.n_open == 1 and matcher.open_i[0, 0] == 0  # one group since t = 0
        sizes.append(len(matcher.to_bytes()))
    assert sizes[1] <= sizes[0] + 64  # was ~15 bytes a timestep: about 1 MB more here


@pytest.mark.parametrize("carry_after", [1, 7, 100])
def test_the_carried_pass_gives_the_bits_of_one_pass_over_the_span(monkeypatch,
                                                                   carry_after):
    probs = _stream(3_000, 2)
    query = Query.build("a a", "ab", policy="single", threshold=0.0, window=2)
    one = _groups(query, probs)  # never carried: the group's rows are all kept
    monkeypatch.setattr(grouping, "CARRY_AFTER", carry_after)
    split = _groups(query, probs, cuts=range(250, 3_000, 250))
    assert len(one) == 1 and (one.t_start[0], one.t_end[0]) == (0, 2999)
    assert split.probability.tolist() == one.probability.tolist()
    by_rows = StreamMatcher(query).transducer.accept_probabilities(
        probs, np.array([0]), np.array([3000]), np.array([-1]))
    assert one.probability.tolist() == by_rows.tolist()  # the per-group pass's own bits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 32 - 1), st.integers(5, 120),
       st.lists(st.integers(1, 119), unique=True, max_size=4),
       st.sampled_from([("a b+ a", 0.0, 6), ("a (a | b) a", 0.0, None), ("a a", 0.02, 3),
                        ("(a b | b a)+", 0.0, 8)]),
       st.integers(1, 12))
def test_carrying_passes_anywhere_changes_no_bit(seed, n, cuts, case, carry_after):
    """Groups carried at any age, across saved states at any cuts, give the groups of
    one pass that carries none."""
    pattern, theta, window = case
    probs = _stream(n, seed)
    query = Query.build(pattern, "ab", policy="single", threshold=theta, window=window)
    one = _groups(query, probs)
    saved = grouping.CARRY_AFTER
    grouping.CARRY_AFTER = carry_after
    try:
        split = _groups(query, probs, cuts=sorted(c for c in cuts if c < n))
    finally:
        grouping.CARRY_AFTER = saved
    for name in GroupColumns.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(split, name), getattr(one, name))


@settings(max_examples=100, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # patched per example
@given(st.integers(0, 2 ** 32 - 1), st.integers(3, 80), st.sampled_from(["single", "complete"]),
       st.sampled_from([None, 3, 12]), st.sampled_from(["a b+ c", "(a|b)+ c", "a .* c"]))
def test_a_block_fed_in_pieces_by_the_event_cap_gives_the_same_groups(monkeypatch, seed, n,
                                                                      policy, window,
                                                                      pattern):
    """`MAX_EVENTS` makes the run tracker stop early and the matcher fold those events
    before going on; the groups are those of one piece, bit for bit."""
    import probcep.engine.runs as runs

    probs = np.random.default_rng(seed).dirichlet(np.ones(3), n)
    query = Query.build(pattern, "abc", policy=policy, threshold=0.0, window=window)
    whole = _groups(query, probs, saved=False)
    with monkeypatch.context() as patched:
        patched.setattr(runs, "MAX_EVENTS", 8)
        pieces = _groups(query, probs, saved=False)
    for name in GroupColumns.__dataclass_fields__:
        assert getattr(pieces, name).tolist() == getattr(whole, name).tolist(), name


def test_events_are_held_to_the_cap_without_a_window():
    """At θ = 0 without a window every start keeps a run, so a row's events grow with the
    stream: 20,000 rows of `a b+ c` asked for gigabytes of event buffers (QA,
    2026-11-27: out of memory, 21 GB at 30,000 rows). Now they stay at the cap."""
    import probcep.engine.runs as runs

    rng = np.random.default_rng(1)
    w = rng.uniform(0.01, 1, (6_000, 3))
    w[:, 0] *= 0.01
    w[:, 2] *= 0.0005
    query = Query.build("a b+ c", "abc", policy="single", threshold=0.0)
    matcher = StreamMatcher(query)
    found = GroupColumns.concat([matcher.feed_columns(0, w / w.sum(1, keepdims=True)),
                                 matcher.finish_columns()])
    assert len(found) == 1 and found.n_matches[0] > 10 ** 7
    assert len(matcher.runs._ev[0]) <= runs.MAX_EVENTS
