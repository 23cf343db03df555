"""Nightly gold work on local Spark and a temporary lake: invariance, idempotence, reruns."""

from __future__ import annotations

import datetime as dt
import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from probcep.gold import batch
from probcep.gold import tables as T
from probcep.registry import parse_entry

pytestmark = pytest.mark.slow
DOMAIN = ("Hallway", "Door", "Room")
STEPS_PER_DAY = 144  # ten-minute timesteps
DAY0 = dt.date(2026, 3, 1)
CLOCK = batch.Clock(dt.datetime(2026, 3, 1), dt.timedelta(minutes=10))
PATTERNS = [
    parse_entry("visit", {"pattern": "Door Room+ Door", "policy": "complete",
                          "threshold": 0.02, "window": 30, "alert_threshold": 0.3}, DOMAIN),
    parse_entry("pass", {"pattern": "Hallway Door Hallway", "policy": "single",
                         "threshold": 0.05, "window": 5, "alert_threshold": 0.5}, DOMAIN),
]


def make_silver(days=10, streams=4, seed=1):
    rng = np.random.default_rng(seed)
    n = days * STEPS_PER_DAY
    frames = []
    for k in range(streams):
        true = rng.integers(0, 3, n)
        for start in rng.integers(0, n - 40, size=days * 2):  # planted visits
            length = int(rng.integers(3, 20))
            true[start] = 1
            true[start + 1:start + 1 + length] = 2
            true[start + 1 + length] = 1
        p = rng.uniform(0, 0.12, (n, 3))
        p[np.arange(n), true] = 0
        p[np.arange(n), true] = 1 - p.sum(axis=1)
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(n),
                                    **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pd.concat(frames, ignore_index=True)


def day_of(silver, k, upto=None):
    lo, hi = k * STEPS_PER_DAY, (upto or k + 1) * STEPS_PER_DAY
    return silver[(silver.t >= lo) & (silver.t < hi)]


def as_files(frame, folder, name):
    """Silver rows as Parquet files of small row groups, so the job splits them by stream
    (rows shuffled: the job must not rely on their order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{uuid.uuid4().hex[:6]}.parquet"
    rows = frame.sample(frac=1.0, random_state=len(frame))
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), path, row_group_size=200)
    return [str(path)]


def night(spark, lake, silver, k, run="night"):
    day = DAY0 + dt.timedelta(k)
    files = as_files(day_of(silver, k), lake / "silver-input", f"day{k}")
    result, _, _ = batch.group_day(spark, files, lake,
                                   PATTERNS, DOMAIN, day, f"{run}-{k}", CLOCK)
    alerts = batch.publish_alerts(lake, PATTERNS, day, f"{run}-{k}")
    return result, alerts


def group_rows(lake, version=None):
    rows = T.read_rows(T.table_path(lake, T.GROUPS), T.GROUP_SCHEMA, version=version)
    frame = rows.to_pandas().drop(columns=["run_id", "batch_date"])
    return frame.sort_values(["pattern", "stream_id", "t_start", "t_first"]).reset_index(
        drop=True)


def test_nights_equal_one_batch_and_midnight_groups_once(spark, tmp_path):
    silver = make_silver()
    for k in range(10):
        night(spark, tmp_path / "nightly", silver, k)
    one = as_files(day_of(silver, 0, upto=10), tmp_path / "silver-files", "all")
    batch.group_day(spark, one, tmp_path / "once", PATTERNS, DOMAIN, DAY0, "once", CLOCK)
    nightly, once = group_rows(tmp_path / "nightly"), group_rows(tmp_path / "once")
    assert len(nightly) > 50
    pd.testing.assert_frame_equal(nightly, once)
    assert not nightly.duplicated(subset=T.GROUP_KEY).any()
    spans = nightly[(nightly.t_start // STEPS_PER_DAY) != (nightly.t_end // STEPS_PER_DAY)]
    assert len(spans) > 0, "some group should span midnight"
    stored = T.read_rows(T.table_path(tmp_path / "nightly", T.GROUPS), T.GROUP_SCHEMA)
    last_day = (stored["t_end"].to_numpy() // STEPS_PER_DAY)
    reported = np.array([(d - DAY0).days for d in stored["batch_date"].to_pylist()])
    assert (reported >= last_day).all()  # reported by the night it became final, not before
    assert str(stored["ts_start"].type) == "timestamp[us, tz=UTC]"


def test_commit_metadata_names_the_run(spark, tmp_path):
    night(spark, tmp_path, make_silver(days=1), 0, run="meta")
    history = DeltaTable(str(tmp_path / T.GROUPS)).history()
    assert history[0]["run_id"] == "meta-0"
    assert "visit=" in history[0]["pattern_versions"]


def test_same_day_again_changes_nothing(spark, tmp_path):
    silver = make_silver(days=2)
    night(spark, tmp_path, silver, 0)
    night(spark, tmp_path, silver, 1)
    versions = {n: DeltaTable(str(tmp_path / n)).version() for n in (T.GROUPS, T.STATES)}
    result, alerts = night(spark, tmp_path, silver, 1, run="again")
    assert not result.groups_written and not result.states_written
    assert (alerts.added, alerts.retracted) == (0, 0)
    assert versions == {n: DeltaTable(str(tmp_path / n)).version() for n in versions}


def test_crash_between_writes_then_rerun_is_as_if_once(spark, tmp_path, monkeypatch):
    silver = make_silver(days=3)
    for k in range(3):
        night(spark, tmp_path / "clean", silver, k)
    night(spark, tmp_path / "crash", silver, 0)
    real = T.replace_rows

    def crash_on_states(path, *args):
        if path.name == "engine":
            raise KeyboardInterrupt("killed while writing states")
        return real(path, *args)

    monkeypatch.setattr(T, "replace_rows", crash_on_states)
    with pytest.raises(KeyboardInterrupt):
        night(spark, tmp_path / "crash", silver, 1)
    monkeypatch.setattr(T, "replace_rows", real)
    night(spark, tmp_path / "crash", silver, 1)
    night(spark, tmp_path / "crash", silver, 2)
    pd.testing.assert_frame_equal(group_rows(tmp_path / "crash"), group_rows(tmp_path / "clean"))


def test_rerun_after_fix_reports_alert_changes_and_keeps_history(spark, tmp_path):
    silver = make_silver(days=4, seed=3)
    for k in range(4):
        night(spark, tmp_path, silver, k)
    before = group_rows(tmp_path)
    version = DeltaTable(str(tmp_path / T.GROUPS)).version()
    fixed = silver.copy()
    day1 = (fixed.t >= STEPS_PER_DAY) & (fixed.t < 2 * STEPS_PER_DAY) & (fixed.stream_id == "s0")
    fixed.loc[day1, list(DOMAIN)] = [0.0, 0.0, 1.0]  # the fix: s0 stayed in the room all day
    done = batch.rerun_days(
        spark, lambda d: as_files(day_of(fixed, (d - DAY0).days), tmp_path / "fixed", "f"),
        tmp_path,
        PATTERNS, DOMAIN, DAY0 + dt.timedelta(1), DAY0 + dt.timedelta(1), "rerun-1", CLOCK)
    assert [d.day for d in done][0] == DAY0 + dt.timedelta(1)
    after = group_rows(tmp_path)
    assert not after.equals(before)
    changes = T.read_rows(tmp_path / T.ALERT_CHANGES, T.ALERT_CHANGE_SCHEMA)
    mine = changes.filter(pc.equal(changes["changed_by_run"], "rerun-1"))
    assert mine.num_rows == sum(d.alerts.added + d.alerts.retracted for d in done) > 0
    pd.testing.assert_frame_equal(group_rows(tmp_path, version=version), before)  # time travel
    # the whole history recomputed in one pass over the fixed data agrees with the rerun
    for k in range(4):
        night(spark, tmp_path / "fresh", fixed, k)
    pd.testing.assert_frame_equal(after, group_rows(tmp_path / "fresh"))


def test_rerun_of_unchanged_data_changes_no_rows(spark, tmp_path):
    silver = make_silver(days=3, seed=5)
    for k in range(3):
        night(spark, tmp_path, silver, k)
    versions = {n: DeltaTable(str(tmp_path / n)).version() for n in (T.GROUPS, T.STATES,
                                                                      T.ALERTS)}
    done = batch.rerun_days(
        spark, lambda d: as_files(day_of(silver, (d - DAY0).days), tmp_path / "same", "s"),
        tmp_path,
        PATTERNS, DOMAIN, DAY0, DAY0, "noop", CLOCK)
    assert len(done) == 2  # day 0 recomputed, day 1 matched its stored state: stop
    assert all(not d.result.groups_written and not d.result.states_written for d in done)
    assert versions == {n: DeltaTable(str(tmp_path / n)).version() for n in versions}
