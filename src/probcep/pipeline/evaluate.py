"""`evaluate`: a run's groups and alerts against true episodes, as in the grouping paper's
real-data table.

Matching rules. An episode is a stream, a time interval and the registered pattern it
is a true case of. At a probability threshold P (or, by default, at each pattern's
alert threshold, that is against `gold/alerts`):
- an episode is *found* when some group of its pattern on its stream with probability
  >= P overlaps it (shares at least one timestep), and *missed* otherwise;
- a group with probability >= P that overlaps no episode of its pattern on its stream is
  a *false alarm* (several groups over one occurrence that is not true count once each);
- every episode also reports its *best group*: the most probable group of its pattern
  on its stream overlapping it, whatever its probability.
Episode times are timestamps (UTC), turned into timesteps with the settings' clock:
the episode covers the timesteps from the one holding `start` to the one holding `end`.
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from probcep.config.clock import Clock
from probcep.errors import InputError, ProbcepError, first_few
from probcep.lake.failures import first_line_not_utf8

#: The thresholds of a sweep.
SWEEP = tuple(float(x) for x in np.round(np.arange(0.05, 1.0, 0.05), 2))
EPISODE_COLUMNS = ("stream_id", "start", "end", "pattern")


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

    def shown(self, clock: Clock) -> pd.DataFrame:
        """The per-episode table for people: each span (episode, best group) as the
        times its first and last timesteps start (UTC) instead of timestep numbers."""
        def span(pair) -> str:
            if pair is None:
                return ""
            first, last = (clock.time(t).replace(tzinfo=None) for t in pair)
            end = last.time().isoformat() if last.date() == first.date() \
                else last.isoformat(sep=" ")
            return f"{first.isoformat(sep=' ')} to {end}"

        table = self.episodes.copy()
        table["episode"] = table["episode"].map(span)
        table["group"] = table["group"].map(span)
        return table


def score(episodes: pd.DataFrame, groups: pd.DataFrame, alerts: pd.DataFrame) -> Scorecard:
    """One pattern's episodes (stream_id, t_start, t_end) against its groups and alerts
    (stream_id, t_start, t_end, probability, max_match_probability; alerts are the
    groups that count as raised)."""
    rows = []
    for ep in episodes.itertuples(index=False):
        best = _best_overlap(groups, ep)
        alert = _best_overlap(alerts, ep)
        rows.append({
            "stream_id": ep.stream_id, "episode": (int(ep.t_start), int(ep.t_end)),
            "group": None if best is None else (int(best.t_start), int(best.t_end)),
            "probability": None if best is None else float(best.probability),
            "max_match_probability": None if best is None else
            float(best.max_match_probability),
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


def read_episodes(path: Path, clock: Clock) -> pd.DataFrame:
    """A true-episodes CSV (stream_id, start, end, pattern; ISO timestamps, UTC unless
    they say otherwise) as stream_id, t_start, t_end, pattern. Errors name the line a
    record starts on (blank lines skipped, a quoted field may span lines)."""
    lines, frame = _records(path)
    missing = [c for c in EPISODE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)} "
                         f"(expected {', '.join(EPISODE_COLUMNS)})")
    for column in ("stream_id", "pattern"):
        blank = frame[column].str.strip() == ""
        if blank.any():
            raise InputError(f"{path}: row {lines[int(np.argmax(blank.to_numpy()))]}: "
                             f"no {column}")
    times = {}
    for column in ("start", "end"):
        # one value at a time: over a column, pandas gives a time without an offset the
        # offset of an earlier row's (2.x), where it means UTC
        stamps = pd.Series([pd.to_datetime(v, utc=True, errors="coerce", format="ISO8601")
                            for v in frame[column]], dtype="datetime64[ns, UTC]")
        if stamps.isna().any():
            row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
            raise InputError(f"{path}: row {lines[row]}: {column} "
                             f"{frame[column].iloc[row]!r} is not a timestamp between "
                             f"1677-09-22 and 2262-04-11 (ISO 8601)")
        # whole microseconds: a timestep is never shorter, and pandas warns of the rest
        times[column] = [clock.timestep(s.to_pydatetime()) for s in stamps.dt.floor("us")]
    out = pd.DataFrame({"stream_id": frame["stream_id"], "t_start": times["start"],
                        "t_end": times["end"], "pattern": frame["pattern"]})
    backwards = out.t_end < out.t_start
    if backwards.any():
        raise InputError(f"{path}: row {lines[int(np.argmax(backwards.to_numpy()))]}: end "
                         f"is before start")
    again = out.duplicated()  # a row equal to an earlier one
    if again.any():  # one true case counted twice would count as missed twice
        second = int(np.argmax(again.to_numpy()))
        first = int(np.argmax((out == out.iloc[second]).all(axis=1).to_numpy()))
        raise InputError(f"{path}: rows {lines[first]} and {lines[second]} are the same "
                         f"episode")
    return out


def _records(path: Path) -> tuple[list[int], pd.DataFrame]:
    """The file's records under its header, as text, with the line each starts on; a
    record with more or fewer fields than the header is refused (pandas would shift it
    into the wrong columns)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader, rows, lines, after = csv.reader(handle), [], [], 0
            for fields in reader:
                if fields:  # a blank line is no record
                    rows.append(fields)
                    lines.append(after + 1)
                after = reader.line_num
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read the episodes file: line "
                         f"{first_line_not_utf8(path)}: bytes that are not UTF-8 text") from exc
    except (OSError, csv.Error) as exc:
        raise InputError(f"{path}: cannot read the episodes file: {exc}") from exc
    if not rows:
        raise InputError(f"{path}: empty: expected a header {','.join(EPISODE_COLUMNS)}")
    header, body, lines = rows[0], rows[1:], lines[1:]
    for fields, line in zip(body, lines):
        if len(fields) != len(header):
            raise InputError(f"{path}: row {line}: {len(fields)} field(s), the header has "
                             f"{len(header)}")
    repeated = sorted({name for name in header if header.count(name) > 1 and name})
    if repeated:  # which one would count is anybody's guess
        raise InputError(f"{path}: the header names {', '.join(repeated)} more than once")
    frame = pd.DataFrame(body, columns=header, dtype=str) if body else \
        pd.DataFrame(columns=header, dtype=str)
    return lines, frame.loc[:, ~frame.columns.duplicated()]


def uncovered(lake, clock: Clock, episodes: pd.DataFrame, patterns: list[str]) -> list[str]:
    """Why some episodes may count as missed, whatever the engine found: days of theirs
    their pattern was never grouped on (no "day processed" row in `state/engine`;
    nothing on them can be found), or a stream silver holds no row of on any of their
    grouped days (a mistyped id, a sensor that sent nothing). One line per pattern and
    reason; none when all are covered. Reads `state/engine` once over the episodes'
    range and silver only on grouped days, so a mistyped year costs no read per day."""
    import pyarrow.compute as pc

    from probcep.lake.tables import SILVER, STATES
    from probcep.pipeline.group_day import PROCESSED

    mine = episodes[episodes.pattern.isin(patterns)]
    if not len(mine):
        return []
    spans = [(clock.day_of(a), clock.day_of(b)) for a, b in zip(mine.t_start, mine.t_end)]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    grouped, held = {}, set()
    for part in STATES.scan(lake, [("batch_date", ">=", lo), ("batch_date", "<=", hi)],
                            pc.field("stream_id") == PROCESSED,
                            ["pattern", "stream_id", "batch_date"]):
        for name, day in zip(part.column("pattern").to_pylist(),
                             part.column("batch_date").to_pylist()):
            grouped.setdefault(name, set()).add(day)
    has_silver = SILVER.exists(lake)  # without it, no stream can be told missing
    for day in sorted(set().union(*grouped.values())) if has_silver else ():
        ids = SILVER.read(lake, [("date", "=", day)], columns=["stream_id"])["stream_id"]
        held.update((s, day) for s in pc.unique(ids).to_pylist())
    lines = []
    for name in patterns:
        days = sorted(grouped.get(name, ()))
        ranges = _merged([span for span, p in zip(spans, mine.pattern) if p == name])
        unheard = set()
        for stream, pattern, (a, b) in zip(mine.stream_id, mine.pattern, spans):
            done = days[bisect.bisect_left(days, a):bisect.bisect_right(days, b)]
            if pattern == name and done and not any((stream, d) in held for d in done):
                unheard.add(stream)
        n_ungrouped = sum((b - a).days + 1 - (bisect.bisect_right(days, b)
                                              - bisect.bisect_left(days, a))
                          for a, b in ranges)
        if n_ungrouped:
            first = itertools.islice((a + dt.timedelta(days=k) for a, b in ranges
                                      for k in range((b - a).days + 1)
                                      if a + dt.timedelta(days=k) not in grouped.get(name, ())),
                                     4)
            lines.append(f"{name}: {n_ungrouped} day(s) of its episodes were never grouped "
                         f"({first_few(list(first))}): "
                         f"nothing on them is found (an episode wholly on them counts as "
                         f"missed)")
        if unheard and has_silver:
            lines.append(f"{name}: silver holds no reading of stream(s) "
                         f"{first_few(sorted(unheard))} on the days "
                         f"of their episodes: a mistyped stream_id? they count as missed")
    return lines


def _merged(spans: list[tuple[dt.date, dt.date]]) -> list[tuple[dt.date, dt.date]]:
    """Day ranges (first, last), overlapping or adjacent ones merged."""
    out: list[tuple[dt.date, dt.date]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + dt.timedelta(days=1):
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def unpublished(groups: pd.DataFrame, alerts: pd.DataFrame, thresholds: dict[str, float]
                ) -> list[str]:
    """Days whose groups reach their pattern's alert threshold but which hold no alert
    of that pattern (publish-alerts not run on them, or run before a change of
    threshold): scored against the published alerts, their episodes would count as
    missed unseen. One line per pattern; none when every such day has alerts."""
    lines = []
    for name, threshold in thresholds.items():
        due = set(groups.batch_date[(groups.pattern == name)
                                    & (groups.probability >= threshold)])
        missing = sorted(due - set(alerts.batch_date[alerts.pattern == name]))
        if missing:
            lines.append(f"{name}: {len(missing)} day(s) hold groups at or above its alert "
                         f"threshold {threshold:g} but no published alert "
                         f"({first_few(missing)}): run "
                         f"publish-alerts for them, or give --threshold")
    return lines


@dataclass(frozen=True)
class Evaluation:
    """One pattern at one threshold (None: its alert threshold, as published)."""

    pattern: str
    threshold: float | None
    true: int
    found: int
    missed: int
    false_alarms: int

    def as_dict(self) -> dict:
        return {"pattern": self.pattern, "threshold": self.threshold, "true": self.true,
                "found": self.found, "missed": self.missed,
                "false_alarms": self.false_alarms}


def evaluate(episodes: pd.DataFrame, groups: pd.DataFrame, alerts: pd.DataFrame,
             patterns: list[str], thresholds=(None,)) -> tuple[list[Evaluation],
                                                                 dict[str, Scorecard]]:
    """Each pattern at each threshold (None: against the published alerts), and each
    pattern's scorecard at the first threshold (its per-episode best groups)."""
    rows, cards = [], {}
    for name in patterns:
        truth = episodes[episodes.pattern == name]
        mine = groups[groups.pattern == name]
        for threshold in thresholds:
            raised = alerts[alerts.pattern == name] if threshold is None else \
                mine[mine.probability >= threshold]
            card = score(truth, mine, raised)
            cards.setdefault(name, card)
            rows.append(Evaluation(name, threshold, len(truth), card.found, card.missed,
                                   len(card.false_alarms)))
    return rows, cards



def tables_to_score(ctx, episodes: pd.DataFrame, source: Path, chosen: list[str] | None,
                    thresholds) -> tuple[list[str], pd.DataFrame, pd.DataFrame, list[str]]:
    """The patterns to score (the `chosen` ones, else every registered exact pattern the
    episodes of `source` name), their groups and alerts from the context's lake, and the
    warnings of episodes that can only count as missed. Refuses what would score
    nothing, or score it wrongly: an approximate pattern, episodes naming patterns the
    registry does not hold as exact, a lake without the tables the thresholds need
    (None among them: the published alerts)."""
    from probcep.lake.tables import ALERTS, GROUPS

    named = set(episodes.pattern)
    exact = {p.name for p in ctx.exact}
    inexact = [n for n in chosen or () if n not in exact]
    if inexact:  # registered (the context checked), but approximate: no groups to score
        raise ProbcepError(f"--pattern {inexact[0]} is an approximate pattern: evaluate "
                           f"scores the groups and alerts of exact patterns")
    names = [p.name for p in ctx.exact if chosen or p.name in named]
    if not len(episodes) and not names:
        raise ProbcepError(f"{source}: holds no episode (give --pattern NAME to "
                           f"count a pattern's alarms against no true case)")
    if not names:
        raise ProbcepError(f"{source}: names no registered exact pattern "
                           f"({', '.join(sorted(named))})")
    unknown = sorted(named - exact)
    if unknown and not chosen:  # a misspelt name would drop its episodes unseen
        raise ProbcepError(f"{source}: names pattern(s) {unknown} that "
                           f"{ctx.settings.registry} does not register as exact patterns "
                           f"(give --pattern NAME to score only some)")
    if not GROUPS.exists(ctx.lake):  # a mistyped --lake would score nothing found
        raise ProbcepError(f"{GROUPS.path(ctx.lake)}: no gold groups table here (run the "
                           f"pipeline first, or give --lake)")
    scores_alerts = None in thresholds
    if scores_alerts and not ALERTS.exists(ctx.lake):  # every episode would count as missed
        raise ProbcepError(f"{ALERTS.path(ctx.lake)}: no gold alerts table here (run "
                           f"publish-alerts, or give --threshold P to score the groups)")
    filters = [("pattern", "in", names)]
    groups = GROUPS.read(ctx.lake, filters).to_pandas()
    alerts = ALERTS.read(ctx.lake, filters).to_pandas()
    lines = uncovered(ctx.lake, ctx.clock, episodes, names)
    if scores_alerts:
        lines += unpublished(groups, alerts, {p.name: p.alert_threshold for p in ctx.exact
                                              if p.name in names})
    return names, groups, alerts, lines
