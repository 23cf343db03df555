"""`probcep demo`: every day of the bundled landing sample through the whole pipeline, then
the room-visit alerts scored against the sample's true visits, and a correlation a
person can check by eye: a room visit with another visit in the six hours before it."""

from __future__ import annotations

import datetime as dt

from probcep.demo.sample import VISIT_PATTERN

#: The demo's correlation (docs/semantics.md §8), in the registry's `correlations:` form.
REVISIT = ("revisit", {
    "live": VISIT_PATTERN, "archive_pattern": "Door Room+ Door", "archive_window": 60,
    "lookback": "6h", "gap": 1, "mode": "exists", "min_probability": 0.3,
    "alert_threshold": 0.5, "strategy": "auto",
    "description": "A room visit with another visit in the six hours before it."})


def run_demo(ctx):
    """Every day of the landing folder through the whole pipeline; score the visits.

    Returns the room-visit scorecard (None when the run has no `room_visit`)."""
    from probcep.errors import ProbcepError
    from probcep.lake.expectations import GOLD_SUITE, days_name, validate
    from probcep.lake.tables import ALERTS, CATALOG, GROUPS
    from probcep.pipeline.evaluate import evaluate, read_episodes
    from probcep.pipeline.run import run_days

    days = sorted(dt.date.fromisoformat(p.name) for p in ctx.settings.landing_dir.iterdir()
                  if p.is_dir())
    if not days:
        raise ProbcepError(f"{ctx.settings.landing_dir}: no YYYY-MM-DD folders of readings")
    lake, echo = ctx.lake, ctx.echo
    echo(f"lake: {lake.resolve()}   days: {days[0]}..{days[-1]}   "
         f"patterns: {', '.join(p.name for p in ctx.patterns)}")
    run_days(ctx, days[0], days[-1])
    groups = GROUPS.read(lake).to_pandas()
    # named like the pipeline's pages: the days and the run
    validate(groups, GOLD_SUITE, docs_dir=ctx.docs_dir, day=days_name(days), run_id=ctx.run_id)
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
        echo(card.shown(ctx.clock).head(10).to_string(index=False, na_rep=""))
    if VISIT_PATTERN in [p.name for p in ctx.exact]:
        show_correlation(ctx, days, groups)
    echo(f"\ntables under {lake}: {', '.join(t.name for t in CATALOG if t.exists(lake))}")
    docs = sorted(ctx.docs_dir.rglob("index.html"))
    if docs:
        echo(f"Data Docs: {docs[0]}")
    return card


def show_correlation(ctx, days, groups) -> None:
    """Correlate every day with REVISIT and print its most probable rows with what
    explains them: the earlier visits inside each archive range."""
    from probcep.config.correlations import parse_correlation
    from probcep.lake.tables import CORRELATIONS
    from probcep.pipeline.correlate_day import correlate_day

    name, entry = REVISIT
    corr = parse_correlation(name, entry, ctx.domain, {p.name: p for p in ctx.exact},
                             ctx.settings.step, source="demo")
    for day in days:
        correlate_day(ctx, day, [corr])
    rows = CORRELATIONS.read(ctx.lake, [("correlation", "=", name)]).to_pandas()
    ctx.echo(f"\n{name}: {entry['description']} ({entry['live']} x `{entry['archive_pattern']}`"
             f" within {entry['archive_window']} min over [t_start - 6 h, t_start - 1 min], "
             f"probability = live x archive, kept at >= {entry['min_probability']}): "
             f"{len(rows)} rows")
    visits = groups[groups.pattern == VISIT_PATTERN]
    ordered = rows.sort_values("probability", ascending=False)
    picked = ordered.iloc[sorted({0, len(ordered) // 2, len(ordered) - 1})] if len(rows) \
        else ordered  # the most probable, the median and the least probable kept
    for r in picked.itertuples():
        ctx.echo(f"  {r.stream_id} visit {r.ts_start:%H:%M}-{r.ts_end:%H:%M} "
                 f"(P {r.live_probability:.3f}) x archive {_clock(ctx, r.r_lo)} .. "
                 f"{_clock(ctx, r.r_hi)} (P_A {r.archive_probability:.3f}) = "
                 f"{r.probability:.3f}")
        inside = visits[(visits.stream_id == r.stream_id) & (visits.t_start >= r.r_lo)
                        & (visits.t_end <= r.r_hi)]
        for v in inside.sort_values("probability", ascending=False).head(2).itertuples():
            ctx.echo(f"      earlier visit {v.ts_start:%H:%M}-{v.ts_end:%H:%M} inside the "
                     f"range: P {v.probability:.3f} <= P_A")


def _clock(ctx, t) -> str:
    return f"{ctx.clock.epoch + int(t) * ctx.clock.step:%m-%d %H:%M}"
