"""Scoring groups and alerts against ground-truth episodes."""

from __future__ import annotations

import pandas as pd

from probcep.pipeline.evaluate import score


def test_found_missed_and_false_alarms():
    episodes = pd.DataFrame({"stream_id": ["a", "a", "b"], "t_start": [10, 50, 5],
                             "t_end": [20, 60, 9]})
    groups = pd.DataFrame({"stream_id": ["a", "a", "a", "b", "c"],
                           "t_start": [8, 12, 48, 30, 1], "t_end": [22, 25, 61, 40, 3],
                           "probability": [0.9, 0.95, 0.2, 0.99, 0.97],
                           "max_match_probability": [0.1, 0.2, 0.01, 0.5, 0.4]})
    alerts = groups[groups.probability >= 0.9]
    card = score(episodes, groups, alerts)
    assert card.episodes["group"].tolist() == [(12, 25), (48, 61), None]
    assert card.episodes["alerted"].tolist() == [True, False, False]
    assert (card.found, card.missed) == (1, 2)
    assert sorted(card.false_alarms.stream_id) == ["b", "c"]
    assert card.summary() == "3 true episodes: 1 alerted, 2 missed; 2 false alarms"
