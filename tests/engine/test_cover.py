"""Complete overlap at θ = 0: the shared pass drops composites of negligible mass
(transducer.COVER_DROP) within an error budget, and gives a group the per-group pass when
the drops could have moved its P(g) by more than COVER_RELATIVE of itself; these tests
check that it does drop, that the error stays within the bound the budget gives, and
that each P(g) is the full pass's relatively too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from probcep.engine import Query, StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.transducer import COVER_BUDGET, COVER_STATES, Transducer

from .reference import reference_groups
from .test_against_reference import _compile_or_skip, cases


def _stream(n: int, noise: float, seed: int) -> np.ndarray:
    """A true symbol per timestep and `noise` on the others: long runs of one symbol
    become very unlikely, so most composites of a long window carry almost no mass."""
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0.0, noise, (n, 4))
    rows = np.arange(n)
    true = rng.integers(0, 4, n)
    probs[rows, true] = 0.0
    probs[rows, true] = 1.0 - probs.sum(axis=1)
    return probs


def _groups(query, probs, drop=None, budget=None, cuts=(), relative=None):
    transducer = Transducer(query.dfa, query.window)
    if drop is not None:
        transducer.cover_drop, transducer.cover_budget = drop, budget
    if relative is not None:
        transducer.cover_relative = relative
    matcher = StreamMatcher(query, transducer)
    parts = [matcher.feed_columns(lo, probs[lo:hi])
             for lo, hi in zip((0, *cuts), (*cuts, len(probs)))]
    return GroupColumns.concat([*parts, matcher.finish_columns()]), transducer


def test_dropping_stays_within_1e_12_of_the_full_pass():
    probs = _stream(6000, 0.05, 3)
    for pattern, window in (("a b+ c", 50), ("a (b | c)* d", 30), ("(a | d) b{2,} c", 25)):
        query = Query.build(pattern, "abcd", policy="complete", threshold=0.0, window=window)
        got, transducer = _groups(query, probs)
        want, full = _groups(query, probs, drop=0.0, budget=0.0)
        assert transducer.cover_dropped > 0.0, pattern  # the shortcut was taken
        assert full.cover_dropped == 0.0
        for name in ("t_start", "t_first", "t_end", "n_matches", "max_match_probability"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        np.testing.assert_allclose(got.probability, want.probability, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.probability, want.probability, rtol=2e-10, atol=0)
        assert np.abs(got.probability - want.probability).max() <= 2.01 * COVER_BUDGET


def test_theta_plays_no_part_in_a_tiny_probability():
    """Two matches of 1e-19 in one group: the pass drops one of them (its share is below
    COVER_DROP), which would halve P(g); the group gets the per-group pass instead, so
    θ = 0 gives what θ = 1e-30 gives (the same bounds, hence the same P(g))."""
    rows = np.array([[1, 1e-19], [1, 1e-19], [1, 0], [1, 0], [1, 0]], float)
    got = {}
    for theta, window in ((0.0, 4), (0.0, 8), (0.0, None), (1e-30, 4)):
        query = Query.build("b a{3}", "ab", policy="complete", threshold=theta, window=window)
        cols, _ = _groups(query, rows)
        got[theta, window] = [(s, f, e, p) for s, f, e, p in zip(
            cols.t_start, cols.t_first, cols.t_end, cols.probability)]
    assert len(set(map(tuple, got.values()))) == 1, got
    (s, f, e, p), = got[0.0, 4]
    assert (s, f, e) == (0, 3, 4) and abs(p - (2e-19 - 1e-38)) <= 1e-10 * p


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([1e-3, 1e-6, 1e-12]),
       st.sampled_from([("a b+ c", 12), ("a (b | c)* d", 9), ("(a | d) b{2,} c", 7)]))
def test_every_p_g_is_the_full_pass_s_relatively(seed, noise, case):
    """Streams whose unlikely symbols make tiny group probabilities: with the default
    drops every P(g) is within 1e-10 of the undropped pass's, relative to itself."""
    pattern, window = case
    probs = _stream(400, noise, seed)
    query = Query.build(pattern, "abcd", policy="complete", threshold=0.0, window=window)
    got, _ = _groups(query, probs)
    want, _ = _groups(query, probs, drop=0.0, budget=0.0)
    np.testing.assert_array_equal(got.t_first, want.t_first)
    np.testing.assert_allclose(got.probability, want.probability, rtol=2e-10, atol=0)


def test_a_large_budget_is_spent_and_bounds_the_error():
    """With drops far from negligible the error is visible, and within twice the budget."""
    probs = _stream(3000, 0.2, 5)
    query = Query.build("a b+ c", "abcd", policy="complete", threshold=0.0, window=20)
    want, _ = _groups(query, probs, drop=0.0, budget=0.0)
    for budget in (1e-6, 1e-3):  # and no group given the per-group pass
        got, transducer = _groups(query, probs, drop=0.05, budget=budget, relative=np.inf)
        error = np.abs(got.probability - want.probability).max()
        assert transducer.cover_dropped > 0.0
        assert 0.0 < error <= 2.0 * budget * (1 + 1e-9)


@pytest.mark.parametrize("tilt", [0.0, 1e-9])
def test_dropping_gives_the_same_bits_for_any_split(tilt):
    """Also where rows sum to 1 only within the input's tolerance (`tilt`): the pass runs
    on them normalized and multiplies each P(g) by its own rows' mass."""
    probs = _stream(5000, 0.05, 11)
    probs *= 1.0 + np.random.default_rng(3).uniform(-tilt, tilt, (len(probs), 1))
    query = Query.build("a b+ c", "abcd", policy="complete", threshold=0.0, window=40)
    one, transducer = _groups(query, probs)
    assert transducer.cover_dropped > 0.0
    for cuts in ((1, 333, 334, 2500), (1999, 4001)):
        split, _ = _groups(query, probs, cuts=cuts)
        for name in GroupColumns.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(split, name), getattr(one, name))


def _values():
    """Probabilities of `a` that make runs die (0), shares far below the drops' (1e-200)
    and ordinary ones; `b` takes the rest."""
    return st.sampled_from([0.0, 0.0, 1e-200, 1e-200, 1e-12, 0.4, 0.9, 1.0])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_values().map(lambda a: (a, 1.0 - a)), min_size=2, max_size=12),
       st.lists(st.integers(1, 11), unique=True, max_size=3),
       st.sampled_from([("a a", 3), ("a{2,4}", 6), ("a b* a", 5), ("(a | b) a", 2)]))
@example([(1e-200, 1.0), (0.0, 1.0), (0.9, 0.1), (0.4, 0.6), (1e-200, 1.0), (1.0, 0.0)],
         [2], ("a a", 3))  # the report's case
def test_a_batch_ending_with_no_live_run_gives_the_same_bits(rows, cuts, case):
    """A batch that ends with no run live kept no row, so the next group's shared pass
    started after its block's anchor, where one pass had dropped a tiny composite: the
    two then took P(g) from different passes, a bit apart (1e-200 against
    1.0000000000000001e-200). Rows back to the anchor are kept whatever the batch."""
    pattern, window = case
    probs = np.array(rows)
    query = Query.build(pattern, "ab", policy="complete", threshold=0.0, window=window)
    one, _ = _groups(query, probs)
    split = StreamMatcher(query)
    parts = []
    bounds = sorted(c for c in cuts if c < len(rows))
    for lo, hi in zip((0, *bounds), (*bounds, len(rows))):
        parts.append(split.feed_columns(lo, probs[lo:hi]))
        split = StreamMatcher.from_bytes(query, split.to_bytes())  # as a saved state
    got = GroupColumns.concat([*parts, split.finish_columns()])
    for name in GroupColumns.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(got, name), getattr(one, name))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(cases(), st.integers(1, 9), st.sampled_from([0.01, 0.1]))
def test_the_bound_holds_against_the_reference(case, window, budget):
    """Any pattern, any stream: dropping shares below 0.3 up to `budget` moves no P(g)
    from the reference's by more than twice the budget (the tiny streams of the
    reference need large drops to show an error at all)."""
    letters, text, regex, probs = case
    query = _compile_or_skip(text, regex, letters, policy="complete", threshold=0.0,
                             window=window)
    want = reference_groups(probs.tolist(), letters, regex, "complete", 0.0, window, 0)
    got, _ = _groups(query, probs, drop=0.3, budget=budget, relative=np.inf)
    assert [(s, f, e) for s, f, e in zip(got.t_start, got.t_first, got.t_end)] == [
        w[:3] for w in want]
    for g, w in zip(got.probability, want):
        assert abs(g - w[3]) <= 2.0 * budget + 1e-9


def test_a_window_far_longer_than_the_stream_costs_what_the_stream_does():
    """The shared pass's mode-B closure grows with the window, whatever the data: past
    COVER_STATES composites the per-group pass takes over, which builds only what the
    rows visit. On 40 rows any window of 40 or more gives the same groups."""
    probs = _stream(40, 0.3, 2)
    want, _ = _groups(Query.build("a b+ c", "abcd", policy="complete", threshold=0.0,
                                  window=40), probs)
    got, transducer = _groups(Query.build("a b+ c", "abcd", policy="complete", threshold=0.0,
                                          window=10 ** 9), probs)
    assert transducer.n_states < 2 * COVER_STATES
    for name in ("t_start", "t_first", "t_end", "n_matches", "max_match_probability"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    np.testing.assert_allclose(got.probability, want.probability, rtol=1e-12, atol=0)
