"""`validate-gold`: a day's gold groups against the gold suite (`gold_groups.json`).

A day's gold rows are few, so they are checked as a pandas frame on the driver, without
Spark. `group-day` checks the groups it makes the same way before it commits them.
"""

from __future__ import annotations

import datetime as dt

from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import day_groups, refuse_ungrouped


def check_groups(frame, docs_dir=None, *, day: str | None = None, run_id: str | None = None):
    """Validate gold.groups rows (pandas); raises ExpectationError listing each failed
    expectation with a few offending values."""
    from probcep.lake.expectations import GOLD_SUITE, validate

    return validate(frame, GOLD_SUITE, docs_dir=docs_dir, day=day, run_id=run_id)


def validate_gold(ctx: RunContext, day: dt.date) -> int:
    """Check the day's stored groups of the run's exact patterns, with Data Docs; returns
    how many rows passed."""
    # no rows would pass as a day of no groups, and the step look done
    refuse_ungrouped(ctx, day, "nothing to validate")
    rows = day_groups(ctx, day).to_pandas()
    check_groups(rows, docs_dir=ctx.docs_dir, day=day.isoformat(), run_id=ctx.run_id)
    return len(rows)
