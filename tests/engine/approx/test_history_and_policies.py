"""The history structure, the shedding policies, budgets and `ErrorAutomaton.need`."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from probcep.engine import PatternError
from probcep.engine.approx import (
    ApproxMatcher,
    Budget,
    ErrorAutomaton,
    History,
    HistoryPolicy,
    OldestFirstShedding,
)
from probcep.engine.approx.errors import NO_VECTOR
from probcep.engine.approx.matcher import Node

from ..strategies import LETTERS, patterns


def test_match_maps_follow_edges_and_forget_old_bundles():
    h = History(window=8, max_bundles=2)
    a, b, c, d = (0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)
    first, second, third = h.new_bundle(), h.new_bundle(), h.new_bundle()
    h.update(a, b, None)
    h.update(b, c, first)
    h.update(b, c, second)
    h.update(d, c, third)
    h.refresh_maps()
    # first is older than the latest max_bundles=2 bundles: dropped from the maps.
    assert h.match_map(a) == h.match_map(b) == (1 << second)
    assert h.match_map(d) == 1 << third
    assert h.match_map(c) == 0
    assert h.visits[b] == 2 and h.edges[b] == {c: 2}


def test_a_history_keeps_the_links_of_its_latest_bundles_only():
    """Links to bundles older than the latest `max_bundles` are in no map, now or after:
    kept, a history learned night after night grew with every bundle it ever completed
    (QA longevity, 2026-11-28). Dropping them changes no map."""
    h, kept = History(window=8, max_bundles=3), History(window=8, max_bundles=3)
    a, b = (0, 0, 0), (1, 0, 0)
    for _ in range(20):
        for x in (h, kept):
            x.update(a, b, x.new_bundle())
        h.refresh_maps()
    assert h.links[a] == {17, 18, 19}
    kept.refresh_maps()
    assert h.match_map(a) == kept.match_map(a) == (1 << 17) | (1 << 18) | (1 << 19)


def test_td_values_move_towards_targets():
    h = History(window=8, gamma=0.5)
    good, dead, parent = (1, 3, 0), (2, 3, 0), (0, 3, 0)
    for _ in range(50):
        h.update(good, (9, 3, 0), h.new_bundle())
        h.update(dead, (8, 3, 0), None)
    assert h.value_of(good) > 0.99
    assert h.value_of(dead) == 0.0
    for _ in range(50):
        h.update(parent, good, None)
    assert abs(h.value_of(parent) - 0.5 * h.value_of(good)) < 0.05
    # the time-since-last bucket does not split values
    assert h.value_of((1, 3, 2)) == h.value_of(good)


def test_budget_keeps_credit_up_to_its_cap():
    b = Budget(0.5, burst=4)
    assert [b.grant() for _ in range(3)] == [0, 1, 1]
    b.spend(1)
    assert b.credit == 0.5
    for _ in range(10):
        b.grant()
    assert b.credit == 2.0  # cap: 4 events of 0.5
    assert Budget(0.2, burst=1).cap == 1.0


def test_history_policy_prefers_the_proxy_of_each_vector():
    ea = ErrorAutomaton.build("a b c", 1, "abc")
    matcher = ApproxMatcher(ea, 10)
    for sym, tag in [("a", 1), ("a", 2)]:
        matcher.feed(ea.index[sym], tag)
    nodes = [n for group in matcher.by_start.values() for n in group.values()]
    assert sorted(n.start for n in nodes) == [0, 1] and len({n.vid for n in nodes}) == 1
    policy = HistoryPolicy(History(10), feasibility=False)
    chosen = policy.select(nodes, 1, 3, matcher)
    assert [n.start for n in chosen] == [1]  # the later "a" dominates the earlier one


def test_oldest_first_keeps_the_newest():
    nodes = [Node(s, s, 0, 1, s, None) for s in (4, 1, 7, 3)]
    matcher = SimpleNamespace(ea=SimpleNamespace(vector=lambda vid: bytes([vid])))
    assert [n.start for n in OldestFirstShedding().select(nodes, 2, 9, matcher)] == [7, 4]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(st.just(LETTERS[:n]),
                                                     patterns(LETTERS[:n]))),
       st.integers(0, 2))
def test_need_is_the_shortest_completion(case, k):
    letters, (text, _) = case
    try:
        ea = ErrorAutomaton.build(text, k, letters)
    except PatternError:
        assume(False)
    seen, todo = {ea.start}, [ea.start]
    while todo and len(seen) < 300:
        v = todo.pop()
        for a in range(len(letters)):
            w = ea.step(v, a)
            if w != NO_VECTOR and w not in seen:
                seen.add(w)
                todo.append(w)
    assume(not todo)
    need = {v: 0 if ea.error(v) <= k else 10**6 for v in seen}
    for _ in range(len(seen)):
        for v in seen:
            for a in range(len(letters)):
                w = ea.step(v, a)
                if w != NO_VECTOR:
                    need[v] = min(need[v], 1 + need[w])
    assert {v: ea.need(v) for v in seen} == need


def test_a_budget_grants_what_its_decimals_say():
    """Ten events of 0.1 make one unit, as written (as doubles they add up to
    0.9999999999999999, and the tenth event got nothing)."""
    from probcep.engine.approx import Budget

    for per_event, units in ((0.1, [0] * 9 + [1] + [0] * 9 + [1]), (0.3, [0, 0, 0, 1, 0, 0, 1])):
        budget = Budget(per_event)
        granted = []
        for _ in units:
            got = budget.grant()
            granted.append(got)
            budget.spend(got)
        assert granted == units
