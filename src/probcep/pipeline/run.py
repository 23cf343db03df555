"""`run`: the night of a day, or of every day of a range in date order (a backfill).

A night prepares the day's silver (with `LakeSilver`: ingest the landing files into
bronze, normalize them into silver and validate it), groups every pattern (`group-day`,
states carried from the previous day) and publishes alerts. The days of a range run in
date order, since engine state flows night to night; a backfill gives exactly the rows
the nights one by one would have.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from probcep.errors import ProbcepError
from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import GroupDayReport, group_day
from probcep.pipeline.publish_alerts import AlertChanges, publish_alerts


@dataclass(frozen=True)
class DayReport:
    grouped: GroupDayReport
    alerts: AlertChanges

    def line(self) -> str:
        g = self.grouped
        text = (f"{g.day}: {g.result.groups} groups final over {g.result.streams} streams "
                f"(validated), alerts +{self.alerts.added} -{self.alerts.retracted}")
        if g.approx_matches is not None:
            text += f", approximate match classes {g.approx_matches}"
        return text


def run_day(ctx: RunContext, day: dt.date) -> DayReport:
    """The whole night: silver, groups (validated), alerts."""
    ctx.source.prepare(ctx, day)
    return DayReport(group_day(ctx, day), publish_alerts(ctx, day))


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    if last < first:
        raise ProbcepError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(d) for d in range((last - first).days + 1)]


def run_days(ctx: RunContext, first: dt.date, last: dt.date) -> list[DayReport]:
    """A backfill: every day from first to last, in order, each under its own run id."""
    from tqdm import tqdm

    reports = []
    for day in tqdm(days_between(first, last), desc="days", unit="day", leave=False):
        reports.append(run_day(ctx.for_day(day), day))
        ctx.echo(reports[-1].line())
    return reports
