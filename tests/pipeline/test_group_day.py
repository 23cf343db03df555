"""Nightly gold work on local Spark and a temporary lake: invariance, idempotence, reruns."""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from probcep.errors import ProbcepWarning
from probcep.lake import tables
from probcep.lake.tables import ALERT_CHANGES, ALERTS, GROUP_KEY, GROUPS, STATES
from probcep.pipeline.group_day import group_exact
from probcep.pipeline.rerun import rerun_days
from tests.pipeline.nights import (
    DAY0,
    DOMAIN,
    PATTERNS,
    STEPS_PER_DAY,
    FrameSilver,
    context,
    daily,
    day_of,
    group_rows,
    make_silver,
    night,
)

pytestmark = pytest.mark.slow


def test_nights_equal_one_batch_and_midnight_groups_once(spark, tmp_path):
    silver = make_silver()
    for k in range(10):
        night(tmp_path / "nightly", silver, k)
    once = FrameSilver(lambda day: day_of(silver, 0, upto=10), tmp_path / "silver-files")
    group_exact(context(tmp_path / "once", once, "once"), DAY0)
    nightly, once = group_rows(tmp_path / "nightly"), group_rows(tmp_path / "once")
    assert len(nightly) > 50
    pd.testing.assert_frame_equal(nightly, once)
    assert not nightly.duplicated(subset=list(GROUP_KEY)).any()
    spans = nightly[(nightly.t_start // STEPS_PER_DAY) != (nightly.t_end // STEPS_PER_DAY)]
    assert len(spans) > 0, "some group should span midnight"
    stored = GROUPS.read(tmp_path / "nightly")
    last_day = (stored["t_end"].to_numpy() // STEPS_PER_DAY)
    reported = np.array([(d - DAY0).days for d in stored["batch_date"].to_pylist()])
    assert (reported >= last_day).all()  # reported by the night it became final, not before
    assert str(stored["ts_start"].type) == "timestamp[us, tz=UTC]"


def test_groups_failing_the_gold_suite_are_never_committed(spark, tmp_path, monkeypatch):
    """A night's groups that fail the suite leave the day's gold and states as they were
    (alerting reads gold: checking after the commit would have published them)."""
    from probcep.lake.expectations import ExpectationError
    from probcep.pipeline import group_day

    silver = make_silver(days=1)
    night(tmp_path, silver, 0, run="good")
    before = {t.name: t.version(tmp_path) for t in (GROUPS, STATES)}
    stored = GROUPS.read(tmp_path)

    def refuse(frame, *args, **kwargs):
        assert len(frame) == stored.num_rows  # the groups about to be committed
        raise ExpectationError("gold suite failed (for the test)")
    monkeypatch.setattr(group_day, "validate", refuse)
    with pytest.raises(ExpectationError):
        group_exact(context(tmp_path, daily(silver, tmp_path / "in"), "bad"), DAY0)
    assert {t.name: t.version(tmp_path) for t in (GROUPS, STATES)} == before
    assert GROUPS.read(tmp_path).equals(stored)


def test_commit_metadata_names_the_run(spark, tmp_path):
    night(tmp_path, make_silver(days=1), 0, run="meta")
    history = DeltaTable(str(GROUPS.path(tmp_path))).history()
    assert history[0]["run_id"] == "meta-0"
    assert "visit=" in history[0]["pattern_versions"]


def test_same_day_again_changes_nothing(spark, tmp_path):
    silver = make_silver(days=2)
    night(tmp_path, silver, 0)
    night(tmp_path, silver, 1)
    versions = {t.name: t.version(tmp_path) for t in (GROUPS, STATES)}
    result, alerts = night(tmp_path, silver, 1, run="again")
    assert not result.groups_written and not result.states_written
    assert (alerts.added, alerts.retracted) == (0, 0)
    assert versions == {t.name: t.version(tmp_path) for t in (GROUPS, STATES)}


def test_crash_between_writes_then_rerun_is_as_if_once(spark, tmp_path, monkeypatch):
    silver = make_silver(days=3)
    for k in range(3):
        night(tmp_path / "clean", silver, k)
    night(tmp_path / "crash", silver, 0)
    real = tables.Table.replace_day

    def crash_on_states(table, *args, **kwargs):
        if table == STATES:
            raise KeyboardInterrupt("killed while writing states")
        return real(table, *args, **kwargs)

    monkeypatch.setattr(tables.Table, "replace_day", crash_on_states)
    with pytest.raises(KeyboardInterrupt):
        night(tmp_path / "crash", silver, 1)
    monkeypatch.setattr(tables.Table, "replace_day", real)
    night(tmp_path / "crash", silver, 1)
    night(tmp_path / "crash", silver, 2)
    pd.testing.assert_frame_equal(group_rows(tmp_path / "crash"), group_rows(tmp_path / "clean"))


def test_rerun_after_fix_reports_alert_changes_and_keeps_history(spark, tmp_path):
    silver = make_silver(days=4, seed=3)
    for k in range(4):
        night(tmp_path, silver, k)
    before = group_rows(tmp_path)
    version = GROUPS.version(tmp_path)
    fixed = silver.copy()
    day1 = (fixed.t >= STEPS_PER_DAY) & (fixed.t < 2 * STEPS_PER_DAY) & (fixed.stream_id == "s0")
    fixed.loc[day1, list(DOMAIN)] = [0.0, 0.0, 1.0]  # the fix: s0 stayed in the room all day
    done = rerun_days(context(tmp_path, daily(fixed, tmp_path / "fixed"), "rerun-1"),
                      DAY0 + dt.timedelta(1), DAY0 + dt.timedelta(1))
    assert [d.day for d in done][0] == DAY0 + dt.timedelta(1)
    after = group_rows(tmp_path)
    assert not after.equals(before)
    changes = ALERT_CHANGES.read(tmp_path)
    mine = changes.filter(pc.equal(changes["changed_by_run"], "rerun-1"))
    assert mine.num_rows == sum(d.alerts.added + d.alerts.retracted for d in done) > 0
    pd.testing.assert_frame_equal(group_rows(tmp_path, version=version), before)  # time travel
    # the whole history recomputed in one pass over the fixed data agrees with the rerun
    for k in range(4):
        night(tmp_path / "fresh", fixed, k)
    pd.testing.assert_frame_equal(after, group_rows(tmp_path / "fresh"))


def test_rerun_of_unchanged_data_changes_no_rows(spark, tmp_path):
    silver = make_silver(days=3, seed=5)
    for k in range(3):
        night(tmp_path, silver, k)
    versions = {t.name: t.version(tmp_path) for t in (GROUPS, STATES, ALERTS)}
    done = rerun_days(context(tmp_path, daily(silver, tmp_path / "same"), "noop"), DAY0, DAY0)
    assert len(done) == 2  # day 0 recomputed, day 1 matched its stored state: stop
    assert all(not d.result.groups_written and not d.result.states_written for d in done)
    assert versions == {t.name: t.version(tmp_path) for t in (GROUPS, STATES, ALERTS)}


def test_a_day_grouped_after_a_later_one_warns_and_a_rerun_makes_it_right(spark, tmp_path):
    """Day 2 grouped before day 1 resumed from day 0's states: its groups lack day 1's
    readings. Grouping day 1 then says so and names the way out, which restores the rows
    of the nights in order."""
    from probcep.pipeline.group_day import group_day
    from probcep.pipeline.publish_alerts import AlertChanges
    from probcep.pipeline.run import DayReport, run_days

    silver = make_silver(days=3, seed=7)
    source = FrameSilver(lambda day: day_of(silver, (day - DAY0).days), tmp_path / "in",
                         fill=(1 / 3, 1 / 3, 1 / 3))  # sparse: a day not seen is silence
    for k in range(3):
        group_exact(context(tmp_path / "in_order", source, f"o{k}"), DAY0 + dt.timedelta(k))
    for k, warned in ((0, ()), (2, ()), (1, (DAY0 + dt.timedelta(2),))):
        with warnings.catch_warnings(record=True) as caught:  # day 2 passes over day 1:
            warnings.simplefilter("always")                   # it starts afresh, and says so
            report = group_day(context(tmp_path / "jumbled", source, f"n{k}"),
                               DAY0 + dt.timedelta(k))
        assert report.grouped_after == warned
        said = [str(w.message).split("; ")[1] for w in caught
                if issubclass(w.category, ProbcepWarning)]
        assert len(said) == (len(PATTERNS) if k == 2 else 0), k
        assert all(m.startswith(f"{DAY0 + dt.timedelta(1)} holds readings") for m in said)
    assert (f"warning: {DAY0 + dt.timedelta(2)} was grouped before {DAY0 + dt.timedelta(1)}"
            in report.line())
    assert f"probcep rerun --from {DAY0 + dt.timedelta(1)} --to" in report.line()
    night = DayReport(report, AlertChanges(0, 0)).line()  # what `probcep run` prints
    assert night.splitlines()[1] == report.line().splitlines()[1] == f"warning: {report.warning()}"
    assert not group_rows(tmp_path / "jumbled").equals(group_rows(tmp_path / "in_order"))
    rerun_days(context(tmp_path / "jumbled", source, "fix"), DAY0 + dt.timedelta(1),
               DAY0 + dt.timedelta(1))
    pd.testing.assert_frame_equal(group_rows(tmp_path / "jumbled"),
                                  group_rows(tmp_path / "in_order"))
    # grouping a day again that wrote its states before the later days resumed from them
    # (a backfill run again in order) leaves them right: no warning
    again = group_day(context(tmp_path / "in_order", source, "again"), DAY0 + dt.timedelta(1))
    assert again.grouped_after == () and again.warning() is None
    # a backfill over day 1 and the later day regroups that day from day 1's states
    # at once: nothing is left to warn of (QA, 2026-11-26)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProbcepWarning)  # day 2 passes over day 1, as above
        for k in (0, 2):
            group_day(context(tmp_path / "backfilled", source, f"b{k}"),
                      DAY0 + dt.timedelta(k))
    nights = run_days(context(tmp_path / "backfilled", source, "fill"), DAY0 + dt.timedelta(1),
                      DAY0 + dt.timedelta(2))
    assert [n.grouped.warning() for n in nights] == [None, None]
    assert "warning" not in nights[0].line()
    pd.testing.assert_frame_equal(group_rows(tmp_path / "backfilled"),
                                  group_rows(tmp_path / "in_order"))


def test_a_rerun_killed_on_its_walk_and_run_again_walks_on(spark, tmp_path, monkeypatch):
    """Killed after writing the new states of the day after the fix, a rerun run again
    finds them equal to what it computes: without the earlier run's mark it stopped there
    and left the later days on the old data (QA, 2026-11-26). With the mark it walks on
    to the last processed day."""
    from probcep.pipeline import rerun

    silver = make_silver(days=4, seed=3)
    for k in range(4):
        night(tmp_path, silver, k)
    fixed = silver.copy()
    day1 = (fixed.t >= STEPS_PER_DAY) & (fixed.t < 2 * STEPS_PER_DAY) & (fixed.stream_id == "s0")
    fixed.loc[day1, list(DOMAIN)] = [0.0, 0.0, 1.0]
    real, fix_day = rerun.publish_alerts, DAY0 + dt.timedelta(1)

    def killed_after_day_2s_states(ctx, day, *args):
        if day == DAY0 + dt.timedelta(2):
            raise KeyboardInterrupt("killed after writing day 2's groups and states")
        return real(ctx, day, *args)

    monkeypatch.setattr(rerun, "publish_alerts", killed_after_day_2s_states)
    with pytest.raises(KeyboardInterrupt):
        rerun_days(context(tmp_path, daily(fixed, tmp_path / "fixed"), "try-1"), fix_day,
                   fix_day, reason="s0 stayed in")
    assert [m["run_id"] for m in rerun.unfinished_reruns(tmp_path)] == ["try-1"]
    monkeypatch.setattr(rerun, "publish_alerts", real)
    # a rerun of fewer patterns leaves the mark (QA, 2026-11-27: it removed it)
    rerun_days(context(tmp_path, daily(fixed, tmp_path / "fixed1"), "some", PATTERNS[:1]),
               fix_day, fix_day)
    assert [m["run_id"] for m in rerun.unfinished_reruns(tmp_path)] == ["try-1"]
    done = rerun_days(context(tmp_path, daily(fixed, tmp_path / "fixed2"), "try-2"), fix_day,
                      fix_day, reason="s0 stayed in")
    assert [d.day for d in done] == [DAY0 + dt.timedelta(k) for k in (1, 2, 3)]
    for table in (ALERTS, ALERT_CHANGES):  # the reason in their commits, as in groups'
        mine = [c for c in DeltaTable(str(table.path(tmp_path))).history()
                if c.get("run_id") == "try-1"]
        assert mine and all(c["rerun_reason"] == "s0 stayed in" for c in mine)
    assert rerun.unfinished_reruns(tmp_path) == []
    for k in range(4):
        night(tmp_path / "fresh", fixed, k)
    pd.testing.assert_frame_equal(group_rows(tmp_path), group_rows(tmp_path / "fresh"))


def test_publish_killed_between_its_two_commits_records_the_changes_once(spark, tmp_path,
                                                                          monkeypatch):
    """publish-alerts commits the changes, then the alerts; killed between the two and run
    again, it records each change once (QA, 2026-11-26: alerts first, the changes were lost
    for good, the retry finding nothing to change)."""
    from probcep.pipeline import publish_alerts as step

    silver = make_silver(days=2, seed=3)
    for lake in (tmp_path / "killed", tmp_path / "clean"):
        for k in range(2):
            night(lake, silver, k)
    fixed = silver.copy()
    day1 = (fixed.t >= STEPS_PER_DAY) & (fixed.t < 2 * STEPS_PER_DAY) & (fixed.stream_id == "s0")
    fixed.loc[day1, list(DOMAIN)] = [0.0, 0.0, 1.0]
    fix_day = DAY0 + dt.timedelta(1)
    rerun_days(context(tmp_path / "clean", daily(fixed, tmp_path / "f1"), "clean"), fix_day,
               fix_day)
    writes = []

    def second_dies(real, mine):  # whichever of the two commits comes second dies
        def write(table, *args, **kwargs):
            if table is mine:
                writes.append(table.name)
                if len(writes) == 2:
                    raise KeyboardInterrupt(f"killed before the commit of {table.name}")
            return real(table, *args, **kwargs)
        return write

    with monkeypatch.context() as patched:
        patched.setattr(tables.Table, "replace_day", second_dies(tables.Table.replace_day,
                                                                 ALERTS))
        patched.setattr(tables.Table, "append", second_dies(tables.Table.append,
                                                            ALERT_CHANGES))
        if hasattr(step, "commit_once"):
            patched.setattr(step, "commit_once", second_dies(step.commit_once, ALERT_CHANGES))
        with pytest.raises(KeyboardInterrupt):
            rerun_days(context(tmp_path / "killed", daily(fixed, tmp_path / "f2"), "try-1"),
                       fix_day, fix_day)
    assert len(writes) == 2
    rerun_days(context(tmp_path / "killed", daily(fixed, tmp_path / "f3"), "try-2"), fix_day,
               fix_day)

    def changes(lake):
        frame = ALERT_CHANGES.read(lake).to_pandas().drop(columns=["changed_by_run", "run_id"])
        return frame.sort_values(list(frame.columns)).reset_index(drop=True)

    assert len(changes(tmp_path / "clean")) > 0
    pd.testing.assert_frame_equal(changes(tmp_path / "killed"), changes(tmp_path / "clean"))
    pd.testing.assert_frame_equal(group_rows(tmp_path / "killed"), group_rows(tmp_path / "clean"))
    alerts = [ALERTS.read(lake).to_pandas().drop(columns=["run_id"]) for lake in
              (tmp_path / "killed", tmp_path / "clean")]
    pd.testing.assert_frame_equal(*(a.sort_values(list(a.columns)).reset_index(drop=True)
                                    for a in alerts))


def test_two_publishes_of_a_day_at_once_take_turns(spark, tmp_path, monkeypatch):
    """Two publish-alerts of one day at once: the second reads the alerts after the
    first's commit and reports no change (QA, 2026-11-27: both read before either
    committed and both said "added 28", where only one run's changes were recorded)."""
    import threading
    import time

    from probcep.pipeline.publish_alerts import publish_alerts

    silver = make_silver(days=1, seed=3)
    source = daily(silver, tmp_path / "silver-input")
    group_exact(context(tmp_path, source, "night"), DAY0)
    version = tables.Table.version

    def slow(table, lake):  # widens the window between reading the alerts and committing
        time.sleep(0.3)
        return version(table, lake)

    monkeypatch.setattr(tables.Table, "version", slow)
    said = {}

    def publish(run_id):
        said[run_id] = publish_alerts(context(tmp_path, source, run_id), DAY0).added

    runs = [threading.Thread(target=publish, args=(f"publish-{k}",)) for k in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    added = sorted(said.values())
    assert added[0] == 0 and added[1] > 0
    changes = ALERT_CHANGES.read(tmp_path).to_pandas()
    assert len(changes) == added[1]
    assert set(changes.changed_by_run) == {k for k, v in said.items() if v}


def test_a_first_night_without_groups_makes_empty_gold_tables(spark, tmp_path):
    """Readers of gold (alerting, dashboards) find a night that found nothing as an empty
    table: the tables were made only by a first row, and reading them raised
    TableNotFoundError after validated nights (QA, 2026-11-27)."""
    silver = make_silver(days=1, seed=5)
    silver[list(DOMAIN)] = [1.0, 0.0, 0.0]  # Hallway only: no pattern can match
    result, alerts = night(tmp_path, silver, 0)
    assert result.groups_written and (alerts.added, alerts.retracted) == (0, 0)
    for table in (GROUPS, ALERTS):
        assert table.exists(tmp_path) and table.read(tmp_path).num_rows == 0
    versions = [t.version(tmp_path) for t in (GROUPS, ALERTS, STATES)]
    night(tmp_path, silver, 0, run="again")  # nothing new: no commit
    assert [t.version(tmp_path) for t in (GROUPS, ALERTS, STATES)] == versions


def first_pass_meanwhile(monkeypatch, action) -> list:
    """`group_day.run_grouping` with `action` run at its first call (another process's
    step landing while this one groups); the calls, counted."""
    from probcep.pipeline import group_day

    real, calls = group_day.run_grouping, []

    def patched(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(group_day, "run_grouping", patched)
    return calls


def door_at_midnight(silver):
    """`silver` fixed as a rerun of day 0 would see it: s0 at the door over its last
    hour, so runs are open at midnight and day 1's groups follow from day 0's states."""
    fixed = silver.copy()
    late = (fixed.t >= STEPS_PER_DAY - 6) & (fixed.t < STEPS_PER_DAY) & (fixed.stream_id == "s0")
    fixed.loc[late, list(DOMAIN)] = [0.0, 1.0, 0.0]
    return fixed


def test_a_night_whose_earlier_day_a_rerun_replaces_meanwhile_groups_again(
        spark, tmp_path, monkeypatch):
    """A night of day 1 read day 0's states, then a rerun of day 0 replaced them before
    the night committed: the night's groups and states followed from states no longer in
    the lake, and the rerun, which listed its days before the night's commit, never
    walked day 1 (QA, 2026-11-28)."""

    silver = make_silver(days=2, seed=3)
    fixed = door_at_midnight(silver)
    for k in range(2):  # the lake as a rerun alone leaves it, and one stale night
        night(tmp_path / "fresh", fixed, k)
        night(tmp_path / "stale", silver, k)
    day1 = DAY0 + dt.timedelta(1)

    def rows_of(lake):
        frame = group_rows(lake)
        return frame[frame.t_end >= STEPS_PER_DAY].reset_index(drop=True)

    assert not rows_of(tmp_path / "fresh").equals(rows_of(tmp_path / "stale"))

    lake = tmp_path / "raced"
    night(lake, silver, 0)
    calls = first_pass_meanwhile(monkeypatch, lambda: rerun_days(  # the rerun of day 0
        context(lake, daily(fixed, lake / "fixed"), "rerun"), DAY0, DAY0))  # lands
    said = []
    ctx = dataclasses.replace(context(lake, daily(silver, lake / "silver-input"), "night-1"),
                              echo=said.append)
    group_exact(ctx, day1)
    assert len(calls) == 3  # the night's first pass, the rerun's day 0, the night again
    assert said == [f"{day1}: the states it resumed from were replaced while it ran (a "
                    "rerun of an earlier day): grouping it again from the new ones"]
    pd.testing.assert_frame_equal(rows_of(lake), rows_of(tmp_path / "fresh"))


def test_a_rerun_walks_a_day_a_night_grouped_from_the_states_it_replaced(
        spark, tmp_path, monkeypatch):
    """The other order of the same race: the night of day 1 commits from day 0's old
    states while the rerun of day 0 runs, after the rerun listed its days; the rerun then
    finds day 1 processed and regroups it (QA, 2026-11-28)."""

    silver = make_silver(days=2, seed=3)
    fixed = door_at_midnight(silver)
    for k in range(2):
        night(tmp_path / "fresh", fixed, k)
    lake = tmp_path / "raced"
    night(lake, silver, 0)
    first_pass_meanwhile(monkeypatch, lambda: night(lake, silver, 1))  # while day 0 reruns
    done = rerun_days(context(lake, daily(fixed, lake / "fixed"), "rerun"), DAY0, DAY0)
    assert [d.day for d in done] == [DAY0, DAY0 + dt.timedelta(1)]
    pd.testing.assert_frame_equal(group_rows(lake), group_rows(tmp_path / "fresh"))


def test_a_night_is_not_regrouped_when_only_a_day_before_the_one_it_resumes_from_changes(
        spark, tmp_path, monkeypatch):
    """The re-check compares the day a night resumes from, not every earlier day: a
    rerun's pass over day 0 leaves the night of day 2, which resumes from day 1, alone
    (review, 2026-11-28: it grouped twice, and a long rerun failed the night)."""
    from probcep.pipeline.group_day import previous_states

    silver = make_silver(days=3, seed=3)
    fixed = door_at_midnight(silver)
    lake = tmp_path / "lake"
    for k in range(2):
        night(lake, silver, k)
    rerun = context(lake, daily(fixed, lake / "fixed"), "rerun")
    calls = first_pass_meanwhile(
        monkeypatch, lambda: group_exact(rerun, DAY0, states=previous_states(rerun, DAY0)))
    said = []
    ctx = dataclasses.replace(context(lake, daily(silver, lake / "in"), "night-2"),
                              echo=said.append)
    group_exact(ctx, DAY0 + dt.timedelta(2))
    assert len(calls) == 2 and said == []  # the night's pass and the rerun's, no more


#: How a full disk in a grouping task's staged file reaches the driver (QA, 2026-11-28, a
#: tmpfs lake): the executor's traceback as text, naming no file.
EXECUTOR_FULL = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/src/probcep/pipeline/group_tasks.py", line 183, in _stage
    out.write_table(table, max_chunksize=BLOCK_ROWS)
OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device
"""


def test_a_full_disk_in_a_grouping_task_names_the_groups_table(spark, tmp_path, monkeypatch):
    """It named the lake root, as if nothing more were known (docs/pipeline.md §1: the
    file the error names, else the table being written)."""
    from probcep.errors import DiskFullError
    from probcep.pipeline import group_day

    silver = make_silver(days=1)

    def full(*args, **kwargs):
        raise RuntimeError(EXECUTOR_FULL)
    monkeypatch.setattr(group_day, "run_grouping", full)
    with pytest.raises(DiskFullError) as raised:
        group_exact(context(tmp_path, daily(silver, tmp_path / "in"), "full"), DAY0)
    assert str(raised.value).startswith(
        f"no space left on device writing {GROUPS.path(tmp_path) / '_staging'}/")
    assert not GROUPS.exists(tmp_path) and not STATES.exists(tmp_path)
