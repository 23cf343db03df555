"""`validate-gold`: a day's gold groups against the gold suite (`gold_groups.json`).

A day's gold rows are few, so they are checked as a pandas frame on the driver, without
Spark. `group-day` checks the groups it makes the same way before it commits them.
"""

from __future__ import annotations

import datetime as dt

from probcep.lake.expectations import GOLD_SUITE, validate
from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import day_groups, refuse_ungrouped


def validate_gold(ctx: RunContext, day: dt.date) -> int:
    """Check the day's stored groups of the run's exact patterns, with Data Docs; returns
    how many rows passed."""
    # no rows would pass as a day of no groups, and the step look done
    refuse_ungrouped(ctx, day, "nothing to validate")
    rows = day_groups(ctx, day).to_pandas()
    validate(rows, GOLD_SUITE, docs_dir=ctx.docs_dir, day=day.isoformat(), run_id=ctx.run_id)
    return len(rows)
