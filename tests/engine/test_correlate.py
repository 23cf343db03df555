"""Correlations (docs/semantics.md §8) against the possible-worlds reference: every world
over [R.lo, t_end] is listed and E_L ∧ E_A (or E_L ∧ ¬E_A) evaluated directly, without
the product; every read strategy gives the same bytes; auto's pruning loses no row."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from probcep.engine import PatternError, Query, StreamMatcher
from probcep.engine.automaton import compile_pattern
from probcep.engine.correlate import Correlation
from probcep.engine.grouping import QueryError
from probcep.engine.read_plans import STRATEGIES, ArchiveStats, Timeline, correlate, match_ends
from probcep.engine.transducer import SCALED_STEPS, Transducer

from .reference import all_matches, correlation_probability
from .strategies import LETTERS, patterns, policies, streams, thresholds, windows


@st.composite
def archives(draw):
    """Streams with some rows missing (silence there), a live and an archive pattern."""
    n_symbols = draw(st.integers(2, 4))
    letters = LETTERS[:n_symbols]
    live, archive = draw(patterns(letters)), draw(patterns(letters))
    if draw(st.booleans()):  # the no-reading symbol: one-hot
        silence = np.eye(n_symbols)[draw(st.integers(0, n_symbols - 1))]
    else:  # the uniform policy
        silence = np.full(n_symbols, 1.0 / n_symbols)
    stored = {}
    for sid in draw(st.sampled_from([["s"], ["s", "u"]])):
        dense = draw(streams(n_symbols, max_len=8, max_worlds=200))
        keep = np.array([True] + [draw(st.integers(0, 3)) > 0 for _ in dense[1:]])
        dense[~keep] = silence  # missing from silver: the gap policy's silence
        stored[sid] = (dense, keep)
    return letters, live, archive, silence, stored


def _build(text, letters, make, **options):
    try:
        return make(text, letters, **options)
    except PatternError:
        assume(False)


def _dumps(rows):
    return "".join(json.dumps(r.as_dict()) + "\n" for r in rows)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(archives(), policies, thresholds, windows, windows, st.integers(1, 8),
       st.integers(0, 7), st.sampled_from(["exists", "absent"]),
       st.one_of(st.just(0.0), st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.5]), st.floats(0, 1)),
       st.integers(-3, 3), st.integers(1, 5), st.booleans())
def test_correlations_match_reference_and_strategies_agree(
        case, policy, threshold, window, archive_window, lookback, gap_less, mode, tau, t0,
        bucket, to_the_end):
    letters, live, archive, silence, stored = case
    query = _build(live[0], letters, Query.build, policy=policy, threshold=threshold,
                   window=window)
    corr = _build(archive[0], letters, Correlation.build, window=archive_window,
                  lookback=lookback, gap=max(1, lookback - gap_less), mode=mode,
                  min_probability=tau)
    timeline_rows, groups = {}, {}
    for sid, (dense, keep) in stored.items():
        t = np.arange(t0, t0 + len(dense))
        timeline_rows[sid] = (t[keep], dense[keep])
        matcher = StreamMatcher(query)
        groups[sid] = matcher.feed(t0, dense) + matcher.finish()
    night = (t0, t0 + max(len(d) for d, _ in stored.values()) - 1)
    transducer = Transducer(corr.dfa, corr.window)
    outputs, reads = {}, {}
    for strategy in STRATEGIES:
        timeline = Timeline(silence, timeline_rows)
        stats = ArchiveStats.from_timeline(corr.dfa, corr.window, timeline, bucket,
                                           night[1] if to_the_end else None)
        outputs[strategy] = _dumps(correlate(corr, transducer, groups, timeline, strategy,
                                             night, stats))
        reads[strategy] = timeline.rows_read
    assert len(set(outputs.values())) == 1, outputs  # same bytes, and auto pruned no row
    event(f"auto read less than sublazy: {reads['auto'] < reads['sublazy']}")
    event(f"groups: {min(3, sum(map(len, groups.values())))}")

    emitted = {(r["stream_id"], r["t_start"], r["t_first"]): r
               for r in map(json.loads, outputs["active"].splitlines())}
    for sid, gs in groups.items():
        dense = stored[sid][0].tolist()
        for g in gs:
            first = None if g.t_first is None else g.t_first - t0
            lo, hi = max(g.t_start - lookback, t0), g.t_start - corr.gap
            r = (lo - t0, hi - t0) if lo <= hi else None
            want = correlation_probability(dense, letters, (live[1], window),
                                           (archive[1], archive_window),
                                           (g.t_start - t0, first, g.t_end - t0), r, mode)
            row = emitted.get((sid, g.t_start, g.t_first))
            if row is None:
                assert want < tau + 1e-9
                continue
            assert want >= tau - 1e-9
            assert row["probability"] == pytest.approx(want, abs=1e-9)
            assert (row["r_lo"], row["r_hi"]) == ((lo, hi) if r else (None, None))
            assert row["live_probability"] == g.probability
            if r is None:
                assert row["archive_probability"] == 0.0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(st.just(LETTERS[:n]), patterns(LETTERS[:n]),
                                                     streams(n, max_worlds=10**6))),
       windows, st.integers(0, 3))
def test_expected_match_counts_bound_the_archive_probability(case, window, cut):
    """match_ends is the expected number of matches ending at each row (their sum over
    every match, §3), resumable at any row, and the union bound holds."""
    letters, (text, regex), probs = case
    dfa = _build(text, letters, Correlation.build, window=window, lookback=1).dfa
    want = np.zeros(len(probs))
    for _, e, p in all_matches(probs.tolist(), letters, regex, window):
        want[e] += p
    cut = min(cut, len(probs))
    head, carry = match_ends(dfa, window, probs[:cut])
    tail, _ = match_ends(dfa, window, probs[cut:], carry)
    np.testing.assert_allclose(np.r_[head, tail], want, rtol=1e-9, atol=1e-12)
    p_a = Transducer(dfa, window).accept_probabilities(probs, [0], [len(probs)], [-1])[0]
    assert p_a <= want.sum() + 1e-12


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.just(LETTERS[:n]), patterns(LETTERS[:n]), streams(n, max_len=12, max_worlds=10**9),
    st.lists(st.integers(0, 120), min_size=12, max_size=12), st.integers(0, n - 1),
    st.booleans())), windows, st.lists(st.tuples(st.integers(-5, 400), st.integers(0, 400)),
                                       min_size=1, max_size=4),
       st.sampled_from([0.0, 0.0, -1e-9, 3e-10]))
def test_silent_stretches_are_stepped_over_exactly(case, window, spans, tilt):
    """`accept_sparse` over stored rows with long silences between them gives the bits of
    the forward pass over every timestep filled in, whatever the ranges, also where the
    rows sum to 1 only within the input's tolerance (`tilt`)."""
    letters, (text, _), probs, gaps, quiet, one_hot = case
    dfa = _build(text, letters, Correlation.build, window=window, lookback=1).dfa
    silence = np.eye(len(letters))[quiet] if one_hot else np.full(len(letters), 1 / len(letters))
    silence, probs = silence * (1 + tilt), probs * (1 - tilt)
    t = np.cumsum(np.asarray(gaps[:len(probs)]) + 1) - 1
    dense = np.tile(silence, (int(t[-1]) + 200, 1))
    dense[t] = probs
    ranges = [(lo, min(lo + n, len(dense) - 1)) for lo, n in spans if lo <= len(dense) - 1]
    ranges = [(max(lo, 0), hi) for lo, hi in ranges if max(lo, 0) <= hi]
    assume(ranges)
    los, his = np.array(ranges).T
    sparse = Transducer(dfa, window).accept_sparse(t, probs, silence, los, his)
    filled = Transducer(dfa, window).accept_probabilities(dense, los, his + 1,
                                                          np.full(len(los), -1))
    assert sparse.tolist() == filled.tolist()


@pytest.mark.parametrize("options, message", [
    ({"lookback": 5, "gap": 0}, "gap must be an integer >= 1"),
    ({"lookback": 5, "gap": -2}, "gap must be an integer >= 1"),
    ({"lookback": 2, "gap": 3}, "lookback must be an integer >= gap"),
    ({"lookback": 5, "mode": "never"}, "mode must be one of"),
    ({"lookback": 5, "min_probability": 1.5}, "min probability must lie in"),
    ({"lookback": 5, "window": 0}, "archive window must be a positive integer"),
])
def test_bad_correlations_are_refused(options, message):
    with pytest.raises(QueryError, match=message):
        Correlation.build("a b", "ab", **options)


def test_an_unknown_strategy_is_refused():
    corr = Correlation.build("a", "ab", lookback=2)
    with pytest.raises(QueryError, match="strategy must be one of"):
        correlate(corr, Transducer(corr.dfa, None), {}, Timeline([1.0, 0.0], {}), "eager",
                  (0, 1))


def test_a_long_silence_that_sums_to_1_within_the_tolerance_scales_what_was_accepted():
    """Past a match, a silence row of mass 1 - 1e-9 multiplies the accepted mass once a
    step (the sum over worlds of §1), stepped one at a time up to `SCALED_STEPS` and by a
    power beyond, however long the stretch."""
    transducer = Transducer(compile_pattern("a", "ab"), None)
    silence = np.array([0.0, 1.0 - 1e-9])
    for k in (10, 5000, SCALED_STEPS + 3, 3 * SCALED_STEPS):
        got = transducer.accept_sparse(np.array([0]), np.array([[1.0, 0.0]]), silence,
                                       np.array([0]), np.array([k]))
        dense = np.tile(silence, (min(k, 5000) + 1, 1))
        dense[0] = [1.0, 0.0]
        if k <= 5000:  # the bits of the filled-in rows
            assert got.tolist() == transducer.accept_probabilities(
                dense, [0], [k + 1], [-1]).tolist()
        assert got[0] == pytest.approx((1.0 - 1e-9) ** k, rel=1e-12)
