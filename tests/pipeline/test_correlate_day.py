"""`correlate-day` on sparse silver: nights one by one equal one pass of the engine over
the whole timeline, every strategy writes the same rows, auto's statistics prune nothing
that reaches τ, the rows satisfy the correlation suite, a rerun of an archive day updates
the later nights that read it, and a night killed mid-write leaves no trace (soak)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from probcep.config.correlations import parse_correlation
from probcep.engine.grouping import Group
from probcep.engine.read_plans import STRATEGIES, Timeline, correlate
from probcep.engine.transducer import Transducer
from probcep.lake.expectations import ExpectationError
from probcep.lake.tables import (
    ARCHIVE_STATS,
    CORRELATION_ALERT_CHANGES,
    CORRELATION_ALERTS,
    CORRELATIONS,
    GROUPS,
    STATES,
    same_rows,
)
from probcep.pipeline.correlate_day import check_correlations, correlate_day
from probcep.pipeline.group_day import group_exact
from probcep.pipeline.rerun import correlation_days, rerun_days
from tests.pipeline.nights import (
    DAY0,
    DOMAIN,
    PATTERNS,
    STEPS_PER_DAY,
    FrameSilver,
    context,
    day_of,
    make_silver,
)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
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
    # day 1 as live mode leaves it before its night: groups, but no "day processed" row;
    # correlate-day refuses such a day, and the rerun stopped there (QA, 2026-11-27)
    DeltaTable(str(STATES.path(tmp_path / "lake"))).delete(
        f"batch_date = '{DAY0 + dt.timedelta(1)}' AND stream_id = ''")
    said: list[str] = []
    ctx = dataclasses.replace(ctx, echo=said.append)
    ctx.__dict__["correlations"] = correlations
    assert correlation_days(ctx, [DAY0], DAY0) == [DAY0]
    lines = {f"{DAY0 + dt.timedelta(1)}: correlation {c.name} not recomputed: visit not "
             "grouped by a night yet (live mode's day); its night computes it"
             for c in correlations}
    assert said and set(said) <= lines


def test_a_lookback_of_ages_reads_back_to_the_first_day_of_silver_only(spark, tmp_path):
    """A lookback reaching millennia before the archive began (dates Python cannot hold)
    gives the rows of one reaching just before it: no stream's timeline starts earlier,
    and the statistics cover silver's days only."""
    silver = make_silver(days=DAYS, streams=3, seed=5)
    source = FrameSilver(lambda day: day_of(silver, (day - DAY0).days), tmp_path / "in",
                         fill=SILENCE, start=DAY0)
    registry = {p.name: p for p in PATTERNS}
    entry = {"live": "visit", "archive_pattern": "Hallway Door Hallway", "archive_window": 4,
             "gap": 3, "min_probability": 0.05, "strategy": "auto"}
    day = DAY0 + dt.timedelta(DAYS - 1)
    found = {}
    for lookback in ("100000000d", DAYS * STEPS_PER_DAY):
        corr = parse_correlation(f"c_{lookback}", {**entry, "lookback": lookback}, DOMAIN,
                                 registry, dt.timedelta(minutes=10))
        lake = tmp_path / f"lake_{lookback}"
        for k in range(DAYS):
            group_exact(context(lake, source, f"night-{k}"), DAY0 + dt.timedelta(k))
        correlate_day(context(lake, source, "corr"), day, [corr])
        found[lookback] = CORRELATIONS.read(lake).to_pandas().drop(
            columns=["correlation", "correlation_version", "run_id"]).sort_values(
            ["stream_id", "t_start", "t_first"]).reset_index(drop=True)
        stats = ARCHIVE_STATS.read(lake).to_pandas()
        assert set(stats.date) <= {DAY0 + dt.timedelta(k) for k in range(DAYS)}
        assert ARCHIVE_STATS.version(lake) == 0  # every day's statistics in one commit
    assert len(found[DAYS * STEPS_PER_DAY]) > 5
    assert found["100000000d"].equals(found[DAYS * STEPS_PER_DAY])


def _set(frame, stream, times, rows):
    spot = (frame.stream_id == stream) & frame.t.isin(times)
    frame.loc[spot, list(DOMAIN)] = rows


def test_a_rerun_of_an_archive_day_updates_the_later_nights_that_read_it(spark, tmp_path):
    """Stream s0 stays in the Room but for a certain visit on day 1, whose archive range
    (lookback 200) reaches back into day 0. Day 0's silver is then fixed (a certain
    `Hallway Door Hallway` in it): the rerun of day 0 replaces day 1's correlation rows
    with those of one pass over the fixed timeline and records the alert it adds."""
    silver = make_silver(days=DAYS, streams=3, seed=5)
    visit = STEPS_PER_DAY + 56  # Door Room Room Door at 200..203
    _set(silver, "s0", range(2 * STEPS_PER_DAY), [0.0, 0.0, 1.0])
    _set(silver, "s0", [visit, visit + 3], [0.0, 1.0, 0.0])
    lake = tmp_path / "lake"
    correlations = _correlations()[:1]
    for k in range(DAYS):
        day = DAY0 + dt.timedelta(k)
        ctx = context(lake, FrameSilver(lambda d: day_of(silver, (d - DAY0).days),
                                        tmp_path / "in", fill=SILENCE), f"night-{k}")
        group_exact(ctx, day)
        correlate_day(ctx, day, correlations)
    day1 = DAY0 + dt.timedelta(1)
    before = CORRELATIONS.read(lake, [("batch_date", "=", day1)]).to_pandas()
    assert not (before.stream_id == "s0").any()  # P_A(R) = 0: nothing reaches τ_C

    fixed = silver.copy()
    _set(fixed, "s0", [100, 102], [1.0, 0.0, 0.0])
    _set(fixed, "s0", [101], [0.0, 1.0, 0.0])
    source = FrameSilver(lambda d: day_of(fixed, (d - DAY0).days), tmp_path / "fixed",
                         fill=SILENCE)
    ctx = context(lake, source, "rerun")
    ctx.__dict__["correlations"] = correlations
    rerun_days(ctx, DAY0, DAY0, reason="day 0 fixed")

    after = CORRELATIONS.read(lake, [("batch_date", "=", day1)]).to_pandas()
    assert set(after.run_id) == {"rerun"}
    row = after[after.stream_id == "s0"]
    assert row[["t_start", "r_lo", "r_hi"]].values.tolist() == [[visit, visit - 200,
                                                                   visit - 3]]
    assert row.probability.iloc[0] == pytest.approx(1.0)
    corr = correlations[0].correlation  # every row as one pass over the fixed timeline
    timeline = Timeline(SILENCE, {sid: (g.t.to_numpy(), g[list(DOMAIN)].to_numpy())
                                  for sid, g in fixed.sort_values("t").groupby("stream_id")})
    groups = {}
    for r in GROUPS.read(lake, [("pattern", "=", "visit"),
                                ("batch_date", "=", day1)]).to_pylist():
        groups.setdefault(r["stream_id"], []).append(Group(
            r["t_start"], r["t_first"], r["t_end"], r["probability"], r["n_matches"],
            r["max_match_probability"]))
    want = [(c.stream_id, c.group.t_start, c.archive_probability, c.probability)
            for c in correlate(corr, Transducer(corr.dfa, corr.window), groups, timeline,
                               "active", (STEPS_PER_DAY, 2 * STEPS_PER_DAY - 1))]
    got = [(r.stream_id, r.t_start, r.archive_probability, r.probability)
           for r in after.sort_values(["stream_id", "t_start", "t_first"]).itertuples()]
    assert got == want
    changes = CORRELATION_ALERT_CHANGES.read(lake, [("batch_date", "=", day1)]).to_pandas()
    added = changes[(changes.change == "added") & (changes.changed_by_run == "rerun")]
    assert added[["stream_id", "t_start"]].values.tolist() == [["s0", visit]]


# --- a killed correlate-day --------------------------------------------------------------

#: Runs night 0, then night 1 with the write of TABLE killed: the process writes that
#: write's data file into the table folder (as delta-rs does before it commits) and dies
#: by SIGKILL before any log entry.
CHILD = """
import os, signal, sys
from pathlib import Path
import deltalake, pyarrow.parquet as pq
from probcep.lake.spark import spark_session
from tests.pipeline.test_correlate_day import correlated_night

lake, table = Path(sys.argv[1]), sys.argv[2]
spark_session("local[2]", "killed-correlate", shuffle_partitions=2)
correlated_night(lake, 0)
real = deltalake.write_deltalake

def killed(path, data, *args, **kwargs):
    if Path(path) == lake / table:
        pq.write_table(data, Path(path) / "part-00000-killed.parquet")
        os.kill(os.getpid(), signal.SIGKILL)
    return real(path, data, *args, **kwargs)

deltalake.write_deltalake = killed
correlated_night(lake, 1)
"""


def correlated_night(lake: Path, k: int) -> None:
    """Night k of a fixed two-day silver: the live groups, then their correlations."""
    silver = make_silver(days=DAYS, streams=3, seed=5)
    day = DAY0 + dt.timedelta(k)
    ctx = context(lake, FrameSilver(lambda d: day_of(silver, (d - DAY0).days),
                                    Path(lake).parent / "in", fill=SILENCE), f"night-{k}")
    group_exact(ctx, day)
    correlate_day(ctx, day, _correlations()[:1])


@pytest.mark.soak
@pytest.mark.parametrize("table", [CORRELATIONS, CORRELATION_ALERTS])
def test_correlate_day_killed_mid_write_leaves_no_trace_and_runs_again_as_once(
        spark, tmp_path, table):
    lake = tmp_path / "killed"
    done = subprocess.run([sys.executable, "-c", CHILD, str(lake), table.name], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    day1 = [("batch_date", "=", DAY0 + dt.timedelta(1))]
    assert (lake / table.name / "part-00000-killed.parquet").exists()
    assert table.read(lake, day1).num_rows == 0  # the killed write is in no commit
    # the changes are committed before the alerts (and skipped when the night runs again)
    assert (CORRELATION_ALERT_CHANGES.read(lake, day1).num_rows > 0) == (
        table is CORRELATION_ALERTS)

    correlated_night(lake, 1)  # the night again
    for k in range(DAYS):
        correlated_night(tmp_path / "clean", k)
    for t in (CORRELATIONS, CORRELATION_ALERTS, CORRELATION_ALERT_CHANGES, ARCHIVE_STATS):
        assert same_rows(t.read(lake), t.read(tmp_path / "clean")), t.name


def test_a_rerun_finds_later_days_by_their_groups_and_refuses_a_day_not_grouped(spark,
                                                                                tmp_path):
    """The later days a rerun correlates again are those whose groups' archive ranges
    reach the fixed days, found from the groups: a day whose rows all fell below
    `min_probability` has no row, and was passed over (QA, 2026-11-27). And
    `correlate-day` on a day its live pattern was never grouped on refuses, as
    `publish-alerts` does: it emptied the day's rows and alerts."""
    from probcep.errors import ProbcepError

    silver = make_silver(days=DAYS, streams=3, seed=5)
    visit = STEPS_PER_DAY + 56  # Door Room Room Door early on day 1: its range reaches day 0
    _set(silver, "s0", range(2 * STEPS_PER_DAY), [0.0, 0.0, 1.0])
    _set(silver, "s0", [visit, visit + 3], [0.0, 1.0, 0.0])
    registry = {p.name: p for p in PATTERNS}
    strict = [parse_correlation("c_strict", {
        "live": "visit", "archive_pattern": "Hallway Door Hallway", "archive_window": 4,
        "lookback": 200, "gap": 3, "min_probability": 1.0}, DOMAIN, registry,
        dt.timedelta(minutes=10))]
    lake = tmp_path / "lake"
    source = FrameSilver(lambda d: day_of(silver, (d - DAY0).days), tmp_path / "in",
                         fill=SILENCE)
    ctx = context(lake, source, "night-0")
    ctx.__dict__["correlations"] = strict
    with pytest.raises(ProbcepError, match=f"{DAY0}: not grouped for visit"):
        correlate_day(ctx, DAY0, strict)
    assert not CORRELATIONS.exists(lake)
    for k in range(DAYS):
        day = DAY0 + dt.timedelta(k)
        ctx = context(lake, source, f"night-{k}")
        group_exact(ctx, day)
        correlate_day(ctx, day, strict)
    day1 = DAY0 + dt.timedelta(1)
    assert not len(CORRELATIONS.read(lake, [("batch_date", "=", day1)]))  # no row
    assert GROUPS.read(lake, [("batch_date", "=", day1), ("t_start", "=", visit)]).num_rows
    ctx.__dict__["correlations"] = strict
    assert correlation_days(ctx, [], DAY0) == [day1]
