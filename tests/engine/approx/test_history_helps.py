"""A trained history policy finds more bundles than the baselines on the same budget."""

from __future__ import annotations

import random

from probcep.engine.approx import (
    Budget,
    ErrorAutomaton,
    History,
    HistoryPolicy,
    make_policy,
    run_stream,
)

PATTERN, K, WINDOW = "a b+ c d", 1, 10


def _stream(seed: int, n: int = 3000):
    """Background letters with planted `a b b.. c d` episodes, one letter per tag."""
    rng = random.Random(seed)
    symbols: list[str] = []
    while len(symbols) < n:
        if rng.random() < 0.08:
            symbols += ["a"] + ["b"] * rng.randint(1, 3) + ["c", "d"]
        else:
            symbols.append(rng.choice("abcdxxxx"))
    return symbols[:n], list(range(n))


def _bundle_recall(reference, result) -> float:
    spans = [(b.first_point, b.last_point) for b in reference.bundles]
    hit = {i for m in result.matches for i, (lo, hi) in enumerate(spans)
           if lo <= m.match_point <= hi}
    return len(hit) / len(spans)


def test_history_beats_random_and_oldest_first():
    ea = ErrorAutomaton.build(PATTERN, K, "abcdx")
    history = History(WINDOW)
    train = _stream(1)
    run_stream(ea, WINDOW, *train, policy=HistoryPolicy(history))
    history.refresh_maps()
    test = _stream(2)
    reference = run_stream(ea, WINDOW, *test)
    assert len(reference.bundles) > 20
    per_event = 0.1 * reference.stats.work / len(test[0])
    recall = {}
    for name in ("history", "random", "oldest"):
        policy = make_policy(name, history=history.copy(), seed=0)
        result = run_stream(ea, WINDOW, *test, budget=Budget(per_event), policy=policy)
        assert result.stats.work <= per_event * len(test[0])
        recall[name] = _bundle_recall(reference, result)
    assert recall["history"] > max(recall["random"], recall["oldest"]), recall
