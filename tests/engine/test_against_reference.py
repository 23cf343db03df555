"""The engine against the brute-force possible-worlds reference, on random small cases."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from probcep.engine import PatternError, Query, StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.transducer import Transducer

from .reference import reference_groups
from .strategies import LETTERS, patterns, policies, streams, thresholds, windows


@st.composite
def cases(draw):
    n_symbols = draw(st.integers(2, 4))
    letters = LETTERS[:n_symbols]
    text, regex = draw(patterns(letters))
    probs = draw(streams(n_symbols))
    return letters, text, regex, probs


def _compile_or_skip(text, regex, letters, **options):
    try:
        return Query.build(text, letters, **options)
    except PatternError as exc:
        # Refused patterns must deserve it: empty sequence, or no string matches at all.
        if re.fullmatch(regex, ""):
            assert "empty sequence" in str(exc)
        else:
            assert "never match" in str(exc)
            short = ("".join(w) for n in range(1, 6) for w in _words(letters, n))
            assert not any(re.fullmatch(regex, w) for w in short)
        assume(False)


def _words(letters, n):
    if n == 0:
        yield ()
        return
    for w in _words(letters, n - 1):
        for c in letters:
            yield (*w, c)


def _run(query, probs, t0):
    matcher = StreamMatcher(query)
    groups = matcher.feed(t0, probs) + matcher.finish()
    return [(g.t_start, g.t_first, g.t_end, g.probability, g.n_matches,
             g.max_match_probability) for g in groups]


def _assert_same(got, want):
    assert [g[:3] + g[4:5] for g in got] == [w[:3] + w[4:5] for w in want]
    for g, w in zip(got, want):
        assert g[3] == pytest.approx(w[3], abs=1e-9), (g, w)
        assert g[5] == pytest.approx(w[5], abs=1e-12), (g, w)
        assert g[5] <= g[3] <= 1.0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(cases(), policies, thresholds, windows, st.integers(-5, 5))
def test_transducer_matches_reference(case, policy, threshold, window, t0):
    letters, text, regex, probs = case
    query = _compile_or_skip(text, regex, letters, policy=policy, threshold=threshold,
                             window=window)
    want = reference_groups(probs.tolist(), letters, regex, policy, threshold, window, t0)
    event(f"groups: {min(len(want), 3)}")
    _assert_same(_run(query, probs, t0), want)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(cases(), st.one_of(st.none(), st.integers(1, 9)), st.integers(-5, 5))
def test_complete_overlap_at_theta_0_matches_reference(case, window, t0):
    """θ = 0 under complete overlap takes the shared forward-backward pass."""
    letters, text, regex, probs = case
    query = _compile_or_skip(text, regex, letters, policy="complete", threshold=0.0,
                             window=window)
    want = reference_groups(probs.tolist(), letters, regex, "complete", 0.0, window, t0)
    event(f"groups: {min(len(want), 3)}")
    _assert_same(_run(query, probs, t0), want)


tilts = st.lists(st.sampled_from([0.0, -1e-9, -4e-10, 3e-10, 1e-9]), min_size=8, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(cases(), policies, st.sampled_from([0.0, 0.0, 0.05]), windows, tilts)
def test_rows_summing_to_1_within_the_tolerance_give_the_sum_over_worlds(
        case, policy, threshold, window, tilt):
    """Rows may sum to 1 within 1e-9 (docs/semantics.md §1); P(g) is still the sum over
    worlds of the rows as given, to rounding: mass accepted before a row was not multiplied
    by it, and P(g) was off by up to the group's rows times 1e-9 (QA, 2026-11-28). θ = 0
    under complete overlap takes the shared pass."""
    letters, text, regex, probs = case
    probs = probs * (1.0 + np.array(tilt[: len(probs)]))[:, None]
    query = _compile_or_skip(text, regex, letters, policy=policy, threshold=threshold,
                             window=window)
    want = reference_groups(probs.tolist(), letters, regex, policy, threshold, window)
    got = _run(query, probs, 0)
    assert [g[:3] + g[4:] for g in got] == [w[:3] + w[4:] for w in want]
    for g, w in zip(got, want):  # within [max P(m), 1], as always (§4)
        assert g[3] == pytest.approx(min(max(w[3], w[5]), 1.0), rel=1e-13, abs=1e-15), (g, w)


def test_theta_0_complete_equals_the_per_group_pass():
    """The shared pass gives each group the probability of its own forward pass (the
    method for every other query) to 1e-12, on streams longer than the reference takes."""
    rng = np.random.default_rng(17)
    probs = rng.dirichlet(np.full(4, 0.3), size=1500)
    probs[rng.random(probs.shape) < 0.2] = 0.0  # zeros: symbols that cannot occur
    probs /= probs.sum(axis=1, keepdims=True)
    n_groups = 0
    for pattern in ("a b+ c", "a (b | c)* d", "(a | b) . c?"):
        for window in (None, 1, 4, 13):
            query = Query.build(pattern, "abcd", policy="complete", threshold=0.0,
                                window=window)
            matcher = StreamMatcher(query)
            groups = matcher.feed_columns(0, probs[:700])
            groups = GroupColumns.concat([groups, matcher.feed_columns(700, probs[700:]),
                                          matcher.finish_columns()])
            n_groups += len(groups)
            each = Transducer(query.dfa, window).accept_probabilities(
                probs, groups.t_start, groups.t_end + 1, groups.t_first)
            each = np.minimum(1.0, np.maximum(each, groups.max_match_probability))
            np.testing.assert_allclose(groups.probability, each, rtol=0, atol=1e-12)
    assert n_groups > 1000


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
@given(cases(), policies, thresholds, windows)
def test_naive_method_matches_reference(case, policy, threshold, window):
    letters, text, regex, probs = case
    query = _compile_or_skip(text, regex, letters, policy=policy, threshold=threshold,
                             window=window, method="naive")
    want = reference_groups(probs.tolist(), letters, regex, policy, threshold, window)
    _assert_same(_run(query, probs, 0), want)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(cases(), policies, thresholds, windows, st.data())
def test_batches_with_saved_state_equal_one_pass(case, policy, threshold, window, data):
    letters, text, regex, probs = case
    query = _compile_or_skip(text, regex, letters, policy=policy, threshold=threshold,
                             window=window)
    one_pass = StreamMatcher(query)
    expected = one_pass.feed(10, probs) + one_pass.finish()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(probs)), max_size=4)))
    got = []
    state = None
    for lo, hi in zip([0, *cuts], [*cuts, len(probs)]):
        matcher = StreamMatcher(query) if state is None else StreamMatcher.from_bytes(query,
                                                                                     state)
        got += matcher.feed(10 + lo, probs[lo:hi])
        state = matcher.to_bytes()
    got += StreamMatcher.from_bytes(query, state).finish()
    assert got == expected


def test_long_random_stream_splits_agree():
    """A longer stream than the reference can enumerate: batches still equal one pass."""
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.full(4, 0.3), size=3000)
    for policy in ("single", "complete"):
        for threshold, window in ((0.0, 6), (0.01, None), (0.001, 12)):
            query = Query.build("a b+ c | d (a | b){2,}", "abcd", policy=policy,
                                threshold=threshold, window=window)
            one = StreamMatcher(query)
            expected = one.feed(0, probs) + one.finish()
            assert expected, "the stream should produce groups"
            got, state = [], None
            for lo, hi in ((0, 1), (1, 777), (777, 778), (778, 2500), (2500, 3000)):
                m = StreamMatcher(query) if state is None else StreamMatcher.from_bytes(query,
                                                                                       state)
                got += m.feed(lo, probs[lo:hi])
                state = m.to_bytes()
            got += StreamMatcher.from_bytes(query, state).finish()
            assert got == expected
