"""`probcep demo`: every day of the bundled landing sample through the whole pipeline, then
the room-visit alerts scored against the sample's true visits."""

from __future__ import annotations

import datetime as dt

from probcep.demo.sample import VISIT_PATTERN


def run_demo(ctx):
    """Every day of the landing folder through the whole pipeline; score the visits.

    Returns the room-visit scorecard (None when the run has no `room_visit`)."""
    from probcep.errors import ProbcepError
    from probcep.lake.tables import ALERTS, CATALOG, GROUPS
    from probcep.pipeline.evaluate import evaluate, read_episodes
    from probcep.pipeline.run import run_days
    from probcep.pipeline.validate_gold import check_groups

    days = sorted(dt.date.fromisoformat(p.name) for p in ctx.settings.landing_dir.iterdir()
                  if p.is_dir())
    if not days:
        raise ProbcepError(f"{ctx.settings.landing_dir}: no YYYY-MM-DD folders of readings")
    lake, echo = ctx.lake, ctx.echo
    echo(f"lake: {lake.resolve()}   days: {days[0]}..{days[-1]}   "
         f"patterns: {', '.join(p.name for p in ctx.patterns)}")
    run_days(ctx, days[0], days[-1])
    groups = GROUPS.read(lake).to_pandas()
    check_groups(groups, docs_dir=ctx.docs_dir)
    alerts = ALERTS.read(lake).to_pandas()
    echo("")
    for entry in ctx.exact:
        mine = groups[groups.pattern == entry.name]
        echo(f"{entry.name} `{entry.pattern}` ({entry.query.policy}, "
             f"θ={entry.query.threshold}, w={entry.query.window}): {len(mine)} groups, "
             f"{int((alerts.pattern == entry.name).sum())} alerts at >= "
             f"{entry.alert_threshold}")
    card = None
    truth = ctx.settings.landing_dir / "episodes.csv"
    if VISIT_PATTERN in [p.name for p in ctx.exact] and truth.exists():
        episodes = read_episodes(truth, ctx.clock)  # the sample's truth: room visits
        episodes = episodes[episodes.t_end < ctx.clock.day_range(days[-1])[1]]
        card = evaluate(episodes, groups, alerts, [VISIT_PATTERN])[1][VISIT_PATTERN]
        echo(f"\n{VISIT_PATTERN} against the true visits: {card.summary()}")
        echo("true visit -> most probable group overlapping it (as in the grouping paper's "
             "real-data table):")
        echo(card.episodes.head(10).to_string(index=False))
    echo(f"\ntables under {lake}: {', '.join(t.name for t in CATALOG if t.exists(lake))}")
    docs = sorted(ctx.docs_dir.rglob("index.html"))
    if docs:
        echo(f"Data Docs: {docs[0]}")
    return card
