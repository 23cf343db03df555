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
from dataclasses import dataclass, replace

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
        warning = g.warning()
        return text + ("" if warning is None else f"\nwarning: {warning}")


def run_day(ctx: RunContext, day: dt.date) -> DayReport:
    """The whole night: silver, groups (validated), alerts, correlations."""
    ctx.source.prepare(ctx, [day])
    return gold_day(ctx, day)


def gold_day(ctx: RunContext, day: dt.date) -> DayReport:
    """The night after its silver is made: groups (validated), alerts, correlations."""
    grouped, alerts = group_day(ctx, day), publish_alerts(ctx, day)
    return DayReport(grouped, alerts, tuple(correlate_day(ctx, day)))


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    if last < first:
        raise ProbcepError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(d) for d in range((last - first).days + 1)]


def run_days(ctx: RunContext, first: dt.date, last: dt.date) -> list[DayReport]:
    """A backfill: the days from first to last, `backfill_days` at a time: their silver
    made in one pass (ingest, then normalize, each one Spark pass and one validation),
    then each day's gold in date order under its own run id; the Data Docs pages of its
    validations are built once, at its end."""
    from tqdm import tqdm

    from probcep.lake.expectations import data_docs_once

    days, per_pass = days_between(first, last), ctx.settings.backfill_days
    reports = []
    # a bar on a terminal only (None): in a log file it would stand before every line
    with data_docs_once(), tqdm(total=len(days), desc="days", unit="day",
                                leave=False, disable=None) as progress:
        for k in range(0, len(days), per_pass):
            chunk = days[k:k + per_pass]
            ctx.source.prepare(ctx, chunk)  # the backfill's run id: one pass, many days
            for day in chunk:
                report = gold_day(ctx.for_day(day), day)
                # later days grouped before this one are regrouped from it by this run
                # unless they lie past its end: only those stay to be warned of
                after = tuple(d for d in report.grouped.grouped_after if d > last)
                reports.append(replace(report, grouped=replace(report.grouped,
                                                               grouped_after=after)))
                ctx.echo(reports[-1].line())
                progress.update()
    return reports
