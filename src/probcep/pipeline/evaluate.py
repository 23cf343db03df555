"""Groups against ground truth, as in the grouping paper's real-data table.

For every true episode: the group that contains it (the most probable one overlapping
it), that group's probability and its largest match probability, and whether it raised
an alert. Alerts that overlap no episode are false alarms.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Scorecard:
    episodes: pd.DataFrame  # one row per true episode with its best group, if any
    false_alarms: pd.DataFrame  # alerts overlapping no true episode

    @property
    def found(self) -> int:
        return int(self.episodes["alerted"].sum())

    @property
    def missed(self) -> int:
        return int((~self.episodes["alerted"]).sum())

    def summary(self) -> str:
        return (f"{len(self.episodes)} true episodes: {self.found} alerted, "
                f"{self.missed} missed; {len(self.false_alarms)} false alarms")


def score(episodes: pd.DataFrame, groups: pd.DataFrame, alerts: pd.DataFrame) -> Scorecard:
    """episodes: stream_id, t_start, t_end. groups and alerts: stream_id, t_start, t_end,
    probability, max_match_probability (alerts are groups that reached their threshold)."""
    rows = []
    for ep in episodes.itertuples(index=False):
        best = _best_overlap(groups, ep)
        alert = _best_overlap(alerts, ep)
        rows.append({
            "stream_id": ep.stream_id, "episode": (ep.t_start, ep.t_end),
            "group": None if best is None else (best.t_start, best.t_end),
            "probability": None if best is None else best.probability,
            "max_match_probability": None if best is None else best.max_match_probability,
            "alerted": alert is not None,
        })
    table = pd.DataFrame(rows, columns=["stream_id", "episode", "group", "probability",
                                        "max_match_probability", "alerted"])
    hit = [_overlaps_any(episodes, a) for a in alerts.itertuples(index=False)]
    false_alarms = alerts[[not h for h in hit]] if len(alerts) else alerts
    return Scorecard(table, false_alarms)


def _best_overlap(groups: pd.DataFrame, ep):
    if not len(groups):
        return None
    mine = groups[(groups.stream_id == ep.stream_id) & (groups.t_start <= ep.t_end)
                  & (groups.t_end >= ep.t_start)]
    if not len(mine):
        return None
    return mine.sort_values("probability", ascending=False).iloc[0]


def _overlaps_any(episodes: pd.DataFrame, group) -> bool:
    mine = episodes[(episodes.stream_id == group.stream_id)
                    & (episodes.t_start <= group.t_end) & (episodes.t_end >= group.t_start)]
    return bool(len(mine))
