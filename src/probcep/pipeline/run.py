"""`run`: the night of a day, or of every day of a range in date order (a backfill).

A night prepares the day's silver (with `LakeSilver`: ingest the landing files into
bronze, normalize them into silver and validate it), groups every pattern (`group-day`,
states carried from the previous day), publishes alerts and joins the groups with the
registry's correlations (`correlate-day`). The days of a range run in
date order, since engine state flows night to night; a backfill gives exactly the rows
the nights one by one would have.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from probcep.errors import ProbcepError
from probcep.pipeline.context import RunContext
from probcep.pipeline.correlate_day import CorrelateReport, correlate_day
from probcep.pipeline.group_day import GroupDayReport, group_day
from probcep.pipeline.publish_alerts import AlertChanges, publish_alerts


@dataclass(frozen=True)
class DayReport:
    grouped: GroupDayReport
    alerts: AlertChanges
    correlated: tuple[CorrelateReport, ...] = ()

    def line(self) -> str:
        g = self.grouped
        text = (f"{g.day}: {g.result.groups} groups final over {g.result.streams} streams "
                f"(validated), alerts +{self.alerts.added} -{self.alerts.retracted}")
        if g.approx_matches is not None:
            text += f", approximate match classes {g.approx_matches}"
        for c in self.correlated:
            text += f"; {c.correlation}: {c.rows} rows, alerts +{c.alerts_added} " \
                    f"-{c.alerts_retracted}"
        return text


def run_day(ctx: RunContext, day: dt.date) -> DayReport:
    """The whole night: silver, groups (validated), alerts, correlations."""
    ctx.source.prepare(ctx, day)
    grouped, alerts = group_day(ctx, day), publish_alerts(ctx, day)
    return DayReport(grouped, alerts, tuple(correlate_day(ctx, day)))


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    if last < first:
        raise ProbcepError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(d) for d in range((last - first).days + 1)]


def run_days(ctx: RunContext, first: dt.date, last: dt.date) -> list[DayReport]:
    """A backfill: every day from first to last, in order, each under its own run id;
    the Data Docs pages of its validations are built once, at its end."""
    from tqdm import tqdm

    from probcep.lake.expectations import data_docs_once

    reports = []
    with data_docs_once():
        for day in tqdm(days_between(first, last), desc="days", unit="day", leave=False):
            reports.append(run_day(ctx.for_day(day), day))
            ctx.echo(reports[-1].line())
    return reports
