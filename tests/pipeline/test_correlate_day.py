"""`correlate-day` on sparse silver: nights one by one equal one pass of the engine over
the whole timeline, every strategy writes the same rows, auto's statistics prune nothing
that reaches τ, the rows satisfy the correlation suite, a rerun reaches later nights."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import pyarrow.compute as pc
import pytest

from probcep.config.correlations import parse_correlation
from probcep.engine.grouping import Group
from probcep.engine.read_plans import STRATEGIES, Timeline, correlate
from probcep.engine.transducer import Transducer
from probcep.lake.expectations import ExpectationError
from probcep.lake.tables import ARCHIVE_STATS, CORRELATION_ALERTS, CORRELATIONS, GROUPS
from probcep.pipeline.correlate_day import check_correlations, correlate_day
from probcep.pipeline.group_day import group_exact
from probcep.pipeline.rerun import correlation_days
from tests.pipeline.nights import (
    DAY0,
    DOMAIN,
    PATTERNS,
    FrameSilver,
    context,
    day_of,
    make_silver,
)

pytestmark = pytest.mark.slow
SILENCE = (1 / 3, 1 / 3, 1 / 3)  # the uniform gap policy
DAYS = 2


def _correlations():
    registry = {p.name: p for p in PATTERNS}
    entry = {"live": "visit", "archive_pattern": "Hallway Door Hallway", "archive_window": 4,
             "lookback": 200, "gap": 3, "min_probability": 0.05, "alert_threshold": 0.2}
    return [parse_correlation(f"c_{s}", {**entry, "strategy": s}, DOMAIN, registry,
                              dt.timedelta(minutes=10)) for s in STRATEGIES]


def test_nights_equal_one_pass_and_strategies_agree(spark, tmp_path):
    silver = make_silver(days=DAYS, streams=3, seed=5)
    rng = np.random.default_rng(2)
    first = silver.groupby("stream_id").t.transform("min")
    silver = silver[(rng.random(len(silver)) < 0.7) | (silver.t == first)]  # sparse
    source = FrameSilver(lambda day: day_of(silver, (day - DAY0).days), tmp_path / "in",
                         fill=SILENCE)
    correlations = _correlations()
    for k in range(DAYS):
        day = DAY0 + dt.timedelta(k)
        ctx = context(tmp_path / "lake", source, f"night-{k}")
        group_exact(ctx, day)
        reports = correlate_day(ctx, day, correlations)
        assert len({r.rows for r in reports}) == 1
    rows = CORRELATIONS.read(tmp_path / "lake").to_pandas()
    assert rows.silver_version.isna().all()
    by = {c.name: rows[rows.correlation == c.name].drop(
        columns=["correlation", "strategy", "run_id"]).sort_values(
        ["stream_id", "t_start", "t_first"]).reset_index(drop=True) for c in correlations}
    first_rows = by["c_active"]
    assert len(first_rows) > 5
    for frame in by.values():
        assert frame.equals(first_rows)
    assert ARCHIVE_STATS.read(tmp_path / "lake").num_rows > 0  # auto used statistics

    # one pass of the engine over the whole timeline, at τ = 0 (so nothing is pruned)
    corr = correlations[0].correlation
    timeline = Timeline(SILENCE, {
        sid: (g.t.to_numpy(), g[list(DOMAIN)].to_numpy())
        for sid, g in silver.sort_values("t").groupby("stream_id")})
    groups = {}
    for r in GROUPS.read(tmp_path / "lake", [("pattern", "=", "visit")]).to_pylist():
        groups.setdefault(r["stream_id"], []).append(Group(
            r["t_start"], r["t_first"], r["t_end"], r["probability"], r["n_matches"],
            r["max_match_probability"]))
    whole = correlate(dataclasses.replace(corr, min_probability=0.0),
                      Transducer(corr.dfa, corr.window), groups, timeline, "active",
                      (0, int(silver.t.max())))
    want = [(c.stream_id, c.group.t_start, c.group.t_first, c.archive_probability,
             c.probability, c.r_lo, c.r_hi) for c in whole if c.probability >= 0.05]
    got = [(r.stream_id, r.t_start, None if np.isnan(r.t_first) else int(r.t_first),
            r.archive_probability, r.probability, r.r_lo, r.r_hi)
           for r in first_rows.itertuples()]
    assert got == want

    # what the suite checks
    assert (first_rows.r_hi < first_rows.t_start).all()
    assert np.allclose(first_rows.probability,
                       first_rows.live_probability * first_rows.archive_probability,
                       rtol=0, atol=1e-12)
    stored = CORRELATIONS.read(tmp_path / "lake").to_pandas()
    check_correlations(stored)  # passes as written
    broken = stored.copy()
    broken.loc[0, "probability"] = 0.99
    broken.loc[1, "r_hi"] = broken.loc[1, "t_start"]
    with pytest.raises(ExpectationError, match="product_error") as failed:
        check_correlations(broken)
    assert "'column_A': 't_start', 'column_B': 'r_hi'" in str(failed.value)
    alerts = CORRELATION_ALERTS.read(tmp_path / "lake")
    assert pc.all(pc.greater_equal(alerts["probability"], 0.2)).as_py() is not False

    # a rerun of day 0 recomputes day 1, whose ranges (lookback 200 > 144 steps) reach it
    ctx = dataclasses.replace(context(tmp_path / "lake", source, "rerun"))
    ctx.__dict__["correlations"] = correlations
    assert correlation_days(ctx, [DAY0], DAY0) == [DAY0, DAY0 + dt.timedelta(1)]
