"""The bounded state cache: every eviction policy, at every capacity, gives each stream
exactly the groups of an uncached matcher (policies change misses, never rows); with room
for every stream nothing misses; priority keeps the streams with open runs, and the
streams read often through a scan of more streams than it holds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from probcep.engine import Query, StreamMatcher
from probcep.engine.pattern import PatternError
from probcep.engine.state_cache import POLICIES, StateCache
from tests.engine.strategies import LETTERS, patterns, streams


@st.composite
def cases(draw):
    n_symbols = draw(st.integers(2, 3))
    letters = LETTERS[:n_symbols]
    text, _ = draw(patterns(letters))
    data = draw(st.lists(streams(n_symbols, max_len=10, max_worlds=10**9), min_size=1,
                         max_size=5))
    # each stream cut into chunks; the chunks of all streams arrive interleaved
    chunks = []
    for probs in data:
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(probs) - 1)), max_size=3)))
        bounds = [0, *[c for c in cuts if c < len(probs)], len(probs)]
        chunks.append([(bounds[k], probs[bounds[k]:bounds[k + 1]])
                       for k in range(len(bounds) - 1)])
    order = draw(st.permutations([i for i, c in enumerate(chunks) for _ in c]))
    policy = draw(st.sampled_from(["single", "complete"]))
    theta = draw(st.sampled_from([0.0, 0.05, 0.3]))
    window = draw(st.sampled_from([None, 3]))
    return letters, text, chunks, order, dict(policy=policy, threshold=theta, window=window)


def groups_of(parts):
    return [(g.t_start, g.t_first, g.t_end, round(g.probability, 12), g.n_matches)
            for p in parts for g in p.groups()]


def run(query, chunks, order, cache: StateCache | None):
    """Feed the chunks in arrival order; the groups per stream."""
    alone = {}
    found = {i: [] for i in range(len(chunks))}
    nxt = dict.fromkeys(range(len(chunks)), 0)
    for i in order:
        t0, probs = chunks[i][nxt[i]]
        nxt[i] += 1
        if cache is None:
            matcher = alone.setdefault(i, StreamMatcher(query))
        else:
            matcher = cache.get(i) or StreamMatcher(query)
        found[i].append(matcher.feed_columns(t0, probs))
        if cache is not None:
            cache.put(i, matcher)
    for i in found:
        matcher = alone[i] if cache is None else cache.get(i)
        found[i].append(matcher.finish_columns())
    return {i: groups_of(parts) for i, parts in found.items()}


@settings(max_examples=60, deadline=None)
@given(cases(), st.integers(1, 4), st.sampled_from(POLICIES))
def test_every_policy_and_capacity_gives_the_uncached_groups(case, capacity, policy):
    letters, text, chunks, order, options = case
    try:
        query = Query.build(text, letters, **options)
    except PatternError:
        assume(False)
    store: dict = {}
    cache = StateCache(capacity, policy,
                       load=lambda k: (StreamMatcher.from_bytes(query, store[k])
                                       if k in store else None),
                       spill=lambda k, m: store.__setitem__(k, m.to_bytes()))
    assert run(query, chunks, order, cache) == run(query, chunks, order, None)
    assert len(cache) <= capacity
    if capacity >= len(chunks):
        assert cache.misses == 0


@pytest.mark.parametrize("policy,spilled", [("priority", {"quiet", "new"}), ("lru", {"busy"}),
                                            ("creation", {"busy"})])
def test_priority_keeps_the_stream_with_an_open_run_where_lru_spills_the_older(policy,
                                                                                spilled):
    query = Query.build("a b+ a", "ab", policy="complete", threshold=0.0)
    store: dict = {}
    cache = StateCache(2, policy, load=lambda k: None,
                       spill=lambda k, m: store.__setitem__(k, m))
    busy, quiet = StreamMatcher(query), StreamMatcher(query)
    busy.feed_columns(0, np.array([[1.0, 0.0], [0.0, 1.0]]))  # "a b": a run is open
    quiet.feed_columns(0, np.array([[0.0, 1.0]]))  # "b": nothing open
    cache.put("busy", busy)
    cache.put("quiet", quiet)  # used more recently than busy
    cache.put("new", StreamMatcher(query))
    assert len(store) == 1 and set(store) <= spilled


def test_a_scan_through_more_streams_than_the_cache_holds_keeps_the_frequent_ones():
    """Streams 0-1 are read every round, 2-9 every fourth: after warming up, priority
    hits the frequent streams where creation and lru (a cyclic scan) miss them all."""
    query = Query.build("a b+ a", "ab", policy="complete", threshold=0.0)
    store: dict = {}
    order = [k for r in range(40) for k in [0, 1, *range(2 + 2 * (r % 4), 4 + 2 * (r % 4))]]
    misses = {}
    for policy in POLICIES:
        store.clear()
        cache = StateCache(2, policy,
                           load=lambda k: store.pop(k, None),
                           spill=lambda k, m: store.__setitem__(k, m))
        for k in order:
            cache.put(k, cache.get(k) or StreamMatcher(query))
            assert len(cache) <= 2
        misses[policy] = cache.misses
    assert misses["priority"] < 0.6 * min(misses["creation"], misses["lru"]), misses


@pytest.mark.parametrize("bad", [dict(capacity=0, policy="lru"),
                                 dict(capacity=2, policy="random")])
def test_bad_cache_settings_are_refused(bad):
    with pytest.raises(ValueError):
        StateCache(load=lambda k: None, spill=lambda k, m: None, **bad)


def test_the_use_history_is_bounded_by_the_capacity_not_the_streams_seen():
    """Ten times HISTORY x capacity streams, each used once and spilled: the cache
    remembers the last uses of at most HISTORY x capacity of them, the most recent."""
    from probcep.engine.state_cache import HISTORY

    query = Query.build("a b+ a", "ab", policy="complete", threshold=0.0)
    cache = StateCache(2, "priority", load=lambda k: None, spill=lambda k, m: None)
    n = 10 * HISTORY * 2
    for k in range(n):
        cache.put(k, cache.get(k) or StreamMatcher(query))
    assert len(cache._last) == HISTORY * 2 and len(cache._gaps) <= HISTORY * 2
    assert list(cache._last) == list(range(n - HISTORY * 2, n))
