"""ACEP against the brute-force reference on small random streams and patterns."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from probcep.engine import PatternError
from probcep.engine.approx import (
    Budget,
    ErrorAutomaton,
    History,
    MatchLimitError,
    make_policy,
    run_stream,
)

from ..strategies import LETTERS, patterns
from .reference import all_matches, bundles


@st.composite
def cases(draw):
    n_symbols = draw(st.integers(2, 4))
    letters = LETTERS[:n_symbols]
    text, regex = draw(patterns(letters))
    length = draw(st.integers(1, 9))
    symbols = "".join(draw(st.lists(st.sampled_from(letters), min_size=length,
                                    max_size=length)))
    gaps = draw(st.lists(st.integers(0, 2), min_size=length, max_size=length))
    tags = [sum(gaps[: i + 1]) for i in range(length)]
    window = draw(st.integers(1, 4))
    k = draw(st.integers(0, 2))
    return letters, text, regex, symbols, tags, window, k


def _automaton(text, regex, letters, k):
    try:
        return ErrorAutomaton.build(text, k, letters)
    except PatternError:
        # Refused only when the pattern accepts "" or nothing short at all.
        assume(False)


def _found(result, symbols):
    out = {}
    for m in result.matches:
        for sigma in m.subsequences():
            assert sigma not in out, f"{sigma} reported twice"
            out[sigma] = m.errors
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_matches_equal_reference(case):
    letters, text, regex, symbols, tags, window, k = case
    ea = _automaton(text, regex, letters, k)
    result = run_stream(ea, window, list(symbols), tags, trace=True)
    expected = all_matches(symbols, tags, regex, letters, k, window)
    found = _found(result, symbols)
    assert found == expected
    assert result.n_matches == len(expected)
    for m in result.matches:
        assert m.match_point == tags[m.position]
    spans = [(b.first_point, b.last_point) for b in result.bundles]
    assert spans == bundles([tags[s[-1]] for s in expected], window)
    assert sum(b.n_matches for b in result.bundles) == len(expected)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["history", "random", "oldest"]),
       st.floats(0.0, 3.0), st.integers(0, 3))
def test_budgeted_run_finds_a_subset(case, policy_name, per_event, seed):
    letters, text, regex, symbols, tags, window, k = case
    ea = _automaton(text, regex, letters, k)
    full = _found(run_stream(ea, window, list(symbols), tags, trace=True), symbols)
    policy = make_policy(policy_name, history=History(window), seed=seed)
    budget = Budget(per_event)
    result = run_stream(ea, window, list(symbols), tags, trace=True, budget=budget,
                        policy=policy)
    part = _found(result, symbols)
    assert part.items() <= full.items()
    assert result.stats.work <= per_event * len(symbols) + 1e-9
    assert result.stats.work + result.stats.shed == result.stats.candidates


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["history", "random", "oldest"]))
def test_ample_budget_changes_nothing(case, policy_name):
    letters, text, regex, symbols, tags, window, k = case
    ea = _automaton(text, regex, letters, k)
    full = run_stream(ea, window, list(symbols), tags)
    budget = Budget(per_event=full.stats.candidates + 1.0)
    policy = make_policy(policy_name, history=History(window))
    again = run_stream(ea, window, list(symbols), tags, budget=budget, policy=policy)
    assert again.match_keys() == full.match_keys()
    assert again.n_matches == full.n_matches
    if policy_name == "history":
        # it may still decline partial matches that cannot finish inside their window
        assert again.stats.work <= full.stats.work
    else:
        assert again.stats.work == full.stats.work == full.stats.candidates


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(0, 12))
def test_match_limit_stops_at_the_first_event_past_it(case, limit):
    """`max_matches` refuses exactly the streams with more matches than it, at the event
    whose matches first pass it, and changes nothing for the others."""
    letters, text, regex, symbols, tags, window, k = case
    ea = _automaton(text, regex, letters, k)
    full = run_stream(ea, window, list(symbols), tags, trace=True)
    try:
        limited = run_stream(ea, window, list(symbols), tags, trace=True, max_matches=limit)
    except MatchLimitError as exc:
        assert full.n_matches > limit
        before = sum(m.count for m in full.matches if m.position < exc.event)
        upto = sum(m.count for m in full.matches if m.position <= exc.event)
        assert before <= limit < upto and exc.tag == tags[exc.event]
    else:
        assert full.n_matches <= limit
        assert _found(limited, symbols) == _found(full, symbols)


def test_k_zero_is_exact_skip_till_any_match():
    ea = ErrorAutomaton.build("a b+ c", 0, "abcx")
    symbols, tags = list("axbbc"), [1, 2, 3, 4, 5]
    result = run_stream(ea, 10, symbols, tags, trace=True)
    found = {tuple(symbols[i] + str(tags[i]) for i in s)
             for m in result.matches for s in m.subsequences()}
    assert found == {("a1", "b3", "c5"), ("a1", "b4", "c5"), ("a1", "b3", "b4", "c5")}
    assert all(m.errors == 0 for m in result.matches)


def test_reference_regex_sanity():
    # The reference itself: "ab" is one insertion from "a(b|c)b", none from "ab".
    from .reference import least_insertions
    assert least_insertions("ab", re.compile("a(?:b|c)b"), "abc", 2) == 1
    assert least_insertions("ab", re.compile("ab"), "abc", 2) == 0
    assert least_insertions("c", re.compile("aab"), "abc", 2) is None


def test_seed_example_2():
    # Seed 004, Example 2: p = a(b|c)db, w = 5, k = 2.
    stream = "a1 e2 e3 b4 c5 e6 a7 e8 e9 c10 d11 a12 e13 b14 d15".split()
    symbols, tags = [x[0] for x in stream], [int(x[1:]) for x in stream]
    ea = ErrorAutomaton.build("a ( b | c ) d b", 2, "abcde")
    result = run_stream(ea, 5, symbols, tags, trace=True)
    found = {" ".join(stream[i] for i in s): m.errors
             for m in result.matches for s in m.subsequences()}
    assert found["a1 b4"] == 2
    assert found["c10 d11 b14"] == 1
    assert "a1 b4 c5" not in found  # a b c: 'c' cannot follow 'a b' without > 2 errors
    expected = all_matches("".join(symbols), tags, "a(?:b|c)db", "abcde", 2, 5)
    assert found == {" ".join(stream[i] for i in s): e for s, e in expected.items()}
