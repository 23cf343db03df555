"""Ingest and normalize on local Spark and a temporary lake."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from deltalake import DeltaTable

from probcep.cli import main
from probcep.config.settings import load_settings
from probcep.demo.sample import generate_landing
from probcep.lake.expectations import (
    BRONZE_SUITE,
    SILVER_SUITE,
    ExpectationError,
    validate,
)
from probcep.lake.slices import silver_slice, with_silence
from probcep.lake.tables import BRONZE, QUARANTINE, SILVER
from probcep.pipeline.context import LakeSilver, RunContext
from probcep.pipeline.ingest import IngestError, ingest_day
from probcep.pipeline.normalize import normalize_day

pytestmark = pytest.mark.slow
DAY = dt.date(2026, 1, 1)


@pytest.fixture
def settings(tmp_path):
    return dataclasses.replace(load_settings(), landing_dir=tmp_path / "landing",
                               lake_root=tmp_path / "lake", max_quarantine_fraction=0.5)


def long_rows():
    return pd.DataFrame({
        "stream_id": ["a", "a", "a", "b", None, "b", "b", "b"],
        "sensor_id": ["r1", "r2", "r1", "r1", "r1", "r1", "r2", "r1"],
        "ts": ["2026-01-01T00:00:10", "2026-01-01T00:00:50", "2026-01-01T00:02:05",
               "2026-01-01T00:01:00", "2026-01-01T00:01:00", "not a time",
               "2026-01-01T00:03:00", "2026-01-01T00:04:00"],
        "symbol": ["Door", "Room", "Room", "Hallway", "Door", "Door", "Kitchen", "Door"],
        "score": ["0.5", "1.5", "2", "1", "1", "1", "1", "-3"],
    })


def write(settings, frame, name):
    folder = settings.landing_dir / DAY.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if name.endswith(".csv"):
        frame.to_csv(path, index=False)
    elif name.endswith(".jsonl"):
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)


def table(settings, t):
    return DeltaTable(str(t.path(settings.lake_root))).to_pandas()


def run(settings, run_id="r") -> RunContext:
    """A run of the steps (no patterns) on these settings."""
    return RunContext(settings, (), LakeSilver(settings), run_id)


def silver_rows(spark, settings, day):
    return spark.read.parquet(*LakeSilver(settings).files(day))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_bad_row_is_quarantined_and_nothing_is_lost(spark, settings, fmt):
    write(settings, long_rows(), f"r.{fmt}")
    report = ingest_day(run(settings, "run-1"), DAY)
    assert (report.rows, report.bronze, report.quarantined) == (8, 4, 4)
    (count,) = report.per_file  # rows conserved: 8 records = 4 to bronze + 4 quarantined
    assert (count.records, count.bronze_records, count.quarantined) == (8, 4, 4)
    assert report.reasons == {"missing stream_id": 1, "unparseable timestamp": 1,
                              "unknown symbol": 1, "negative score": 1}
    bronze, quarantine = table(settings, BRONZE), table(settings, QUARANTINE)
    assert len(bronze) + len(quarantine) == len(long_rows())
    assert set(quarantine.source_file.map(lambda p: p.rsplit("/", 1)[-1])) == {f"r.{fmt}"}
    ingest_day(run(settings, "run-2"), DAY)  # a rerun replaces the day
    assert len(table(settings, BRONZE)) == 4 and len(table(settings, QUARANTINE)) == 4


def test_ingest_holds_the_days_bronze_until_its_log_is_written(spark, settings, monkeypatch):
    """Live mode, holding the same locks, reads a landing file only while the log does
    not hold it: between ingest's bronze commit and its log, it could take a file just
    ingested for new and append it again (QA, 2026-11-27)."""
    from probcep.lake.locks import lock_path, slice_labels
    from probcep.pipeline import ingest

    held, real = [], ingest._log

    def logged(ctx, report, landing):
        held.append([lock_path(t.path(settings.lake_root), report.day, label).exists()
                     for t in (BRONZE, QUARANTINE) for label in slice_labels(None)])
        return real(ctx, report, landing)

    monkeypatch.setattr(ingest, "_log", logged)
    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    assert held == [[True, True]]


def test_wide_rows_become_readings(spark, settings):
    wide = pd.DataFrame({"stream_id": ["w", "w"], "ts": ["2026-01-01T00:00:00",
                                                         "2026-01-01T00:01:00"],
                         "Hallway": [0.2, 0.0], "Door": [0.8, 0.5], "Room": [0.0, 0.5]})
    write(settings, wide, "wide.csv")
    report = ingest_day(run(settings, "r"), DAY)
    assert (report.rows, report.bronze, report.per_file[0].bronze_records) == (2, 6, 2)
    assert "bronze 6 readings of 2 records" in report.line()


@pytest.mark.soak  # 90 s; `tests/lake/test_expectations.py` checks the sums at once
def test_a_domain_of_300_symbols_runs(spark, settings):
    """A row's sum over the domain was a chain of `+` one level per symbol: at 300 the
    JVM's stack overflowed in Spark's analyzer (QA, 2026-11-27)."""
    domain = tuple(f"S{i}" for i in range(300))
    wide = dataclasses.replace(settings, domain=domain, wide_sum="renormalize")
    values = np.random.default_rng(7).random(300)
    write(wide, pd.DataFrame([{"stream_id": "w", "ts": "2026-01-01T00:00:00",
                               **dict(zip(domain, values))}]), "wide.csv")
    ctx = run(wide, "r")
    assert ingest_day(ctx, DAY).bronze == 300
    normalize_day(ctx, DAY)
    (row,) = silver_rows(spark, wide, DAY).toPandas().to_dict("records")
    np.testing.assert_allclose([row[s] for s in domain], values / values.sum(),
                               rtol=1e-12, atol=0)


def test_too_much_quarantine_fails(spark, settings):
    """The line names the file most of the quarantine came from: with several files a
    day, the refused (uncommitted) quarantine is not there to look in."""
    write(settings, long_rows(), "r.csv")
    (settings.landing_dir / DAY.isoformat() / "x.csv").write_text("a,b,c\n1,2,3\n4,5,6\n")
    strict = dataclasses.replace(settings, max_quarantine_fraction=0.1)
    with pytest.raises(IngestError, match=r"exceeds max_quarantine_fraction 0.1 \(most from "
                                          r"\S+/2026-01-01/r.csv: 4 of its 8 records\)"):
        ingest_day(run(strict, "r"), DAY)


@pytest.mark.parametrize("gap,expected_t2,stored", [
    ("no_reading", {"NoReading": 1.0}, 3),
    ("uniform", {"Hallway": 1 / 3, "Door": 1 / 3, "Room": 1 / 3}, 3),
    ("hold_last", {"Room": 1.0}, 8 + 6),  # a: t=0..2+5, b: t=1..1+5
])
def test_normalize_aggregates_normalizes_and_fills_gaps(spark, settings, gap, expected_t2,
                                                        stored):
    """Silver is sparse: rows only for timesteps with readings (and, under hold_last,
    those holding one); the settings' silence fills the rest when a reader asks."""
    settings = dataclasses.replace(settings, gap_policy=gap)
    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    made = normalize_day(run(settings, "r"), DAY)
    assert (made.rows, made.streams) == (stored, 2)
    silver = table(settings, SILVER).sort_values(["stream_id", "t"]).set_index(["stream_id",
                                                                               "t"])
    cols = list(settings.silver_domain)
    assert len(silver) == stored
    assert np.allclose(silver[cols].sum(axis=1), 1.0, atol=1e-12)
    # stream a, t=0: Door 0.5 and Room 1.5 summed over readers -> 0.25 / 0.75
    assert silver.loc[("a", 0), "Door"] == pytest.approx(0.25)
    assert silver.loc[("a", 0), "Room"] == pytest.approx(0.75)
    a = silver.loc["a"]
    dense = with_silence(a.index.to_numpy(), a[cols].to_numpy(), 0, 1439, settings.silence)
    want = pd.Series({c: expected_t2.get(c, 0.0) for c in cols})
    assert np.allclose(dense[3], want[cols].to_numpy())  # a read Room at t=2, nothing at 3
    assert np.allclose(dense.sum(axis=1), 1.0)
    validate(silver_rows(spark, settings, DAY), SILVER_SUITE, settings.silver_domain)


def test_broken_silver_fails_with_a_readable_report(spark, settings):
    from pyspark.sql import functions as F

    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    normalize_day(run(settings, "r"), DAY)
    rows = silver_rows(spark, settings, DAY)
    broken = rows.withColumn("Door", F.when(F.col("t") == 0, F.lit(0.9))
                             .otherwise(F.col("Door"))).unionByName(rows.where("t = 2"))
    with pytest.raises(ExpectationError) as err:
        validate(broken, SILVER_SUITE, settings.silver_domain)
    text = str(err.value)
    assert "each row sums to 1 within 1e-9: 1 rows break it" in text
    assert "expect_compound_columns_to_be_unique" in text


def test_silver_failing_its_suite_is_never_committed(spark, settings, monkeypatch):
    """Normalize validates the staged rows before its commit: when they fail, the day's
    silver stays as it was and no staging folder is left."""
    import probcep.lake.expectations as V

    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    normalize_day(run(settings, "r"), DAY)
    path = SILVER.path(settings.lake_root)
    version, before = DeltaTable(str(path)).version(), table(settings, SILVER)
    real = V.validate

    def on_broken_rows(frame, *args, **kwargs):  # as if normalize had repeated a timestep
        assert isinstance(frame, pd.DataFrame)  # a small day is checked on the driver
        return real(pd.concat([frame, frame[frame.t == 2]]), *args, **kwargs)

    monkeypatch.setattr(V, "validate", on_broken_rows)
    with pytest.raises(ExpectationError, match="expect_compound_columns_to_be_unique"):
        normalize_day(run(settings, "r2"), DAY)
    assert DeltaTable(str(path)).version() == version
    pd.testing.assert_frame_equal(table(settings, SILVER), before)
    assert not list(path.parent.glob("_staging-*"))


def test_bronze_failing_its_suite_is_never_committed(spark, settings, monkeypatch):
    """Ingest validates the staged bronze files before its commit: when they fail,
    bronze and quarantine stay as they were and no staged file is left."""
    from pyspark.sql import functions as F

    import probcep.lake.expectations as V

    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    path = BRONZE.path(settings.lake_root)
    versions = [DeltaTable(str(t.path(settings.lake_root))).version()
                for t in (BRONZE, QUARANTINE)]
    before = table(settings, BRONZE)
    real = V.validate
    seen = []

    def on_broken_rows(frame, *args, **kwargs):  # as if a check had let a symbol through
        seen.append(frame.count())
        return real(frame.withColumn("symbol", F.lit("Attic")), *args, **kwargs)

    monkeypatch.setattr(V, "validate", on_broken_rows)
    with pytest.raises(ExpectationError, match="expect_column_values_to_be_in_set"):
        ingest_day(run(settings, "r2"), DAY)
    assert seen == [len(before)]  # the staged rows, all of them
    assert [DeltaTable(str(t.path(settings.lake_root))).version()
            for t in (BRONZE, QUARANTINE)] == versions
    pd.testing.assert_frame_equal(table(settings, BRONZE), before)
    assert not list((path / "_staging").rglob("*.parquet"))


def _immutable(folder: Path) -> bool:
    """Whether `folder` could be made immutable (`chattr +i`: root on ext4 and the like;
    root writes into a read-only folder, not into an immutable one)."""
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0


def test_a_staging_folder_the_file_system_refuses_is_one_line(spark, settings, capsys,
                                                              monkeypatch):
    """An immutable staging folder is refused before any work; one that turns so while
    the step runs stops Spark's executors creating the write's folders (QA, 2026-11-27:
    a 200-line traceback, exit 1): one line naming where, bronze as it was."""
    from probcep.errors import RefusedError
    from probcep.lake.failures import refused

    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings, "r"), DAY)
    before = table(settings, BRONZE)
    staging = BRONZE.path(settings.lake_root) / "_staging"
    staging.mkdir(exist_ok=True)
    if not _immutable(staging):
        pytest.skip("no chattr +i here")
    monkeypatch.setenv("PROBCEP_LANDING_DIR", str(settings.landing_dir))
    try:
        code = main(["ingest", "--date", DAY.isoformat(), "--lake", str(settings.lake_root)])
        with pytest.raises(RefusedError) as mid_step, refused():  # past the check
            ingest_day(run(settings, "r2"), DAY)
    finally:
        subprocess.run(["chattr", "-i", str(staging)], check=True)
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[-1] == (f"probcep ingest: error: cannot write bronze/readings: {staging} is "
                       f"not writable; checked before any work, nothing was done"), err
    assert str(mid_step.value) == f"the file system refused to create a folder in {staging}"
    pd.testing.assert_frame_equal(table(settings, BRONZE), before)
    assert not any(staging.iterdir())


def test_one_stream_hour_reads_few_files_and_all_its_rows(spark, settings, capsys):
    """Silver is partitioned by date and sorted by stream within a day, so file stats
    let an hour of one stream skip nearly every file, and still return all its rows."""
    settings = dataclasses.replace(settings, landing_dir=generate_landing(
        settings.landing_dir, days=2, streams=12), target_file_mb=0.02)
    for day in (DAY, DAY + dt.timedelta(1)):
        ingest_day(run(settings, "r"), day)
        normalize_day(run(settings, "r"), day)
    start = dt.datetime(2026, 1, 2, 13, 0)
    part = silver_slice(settings, "person-7", start, start + dt.timedelta(hours=1))
    everything = table(settings, SILVER)
    assert part.files_in_table >= 20 and len(part.files) <= 3, part.line()
    want = everything[(everything.stream_id == "person-7") & (everything.ts >= start.isoformat())
                      & (everything.ts < (start + dt.timedelta(hours=1)).isoformat())]
    got = part.read().to_pandas()
    assert 40 < len(got) <= 60 and got.t.tolist() == sorted(want.t.tolist())
    assert part.stream_seen
    np.testing.assert_allclose(got.Room, want.sort_values("t").Room)

    out = settings.lake_root.parent / "slice.csv"
    assert main(["slice", "--stream", "nobody", "--start", start.isoformat(), "--end",
                 "2026-01-03", "--lake", str(settings.lake_root), "-o", str(out)]) == 0
    assert out.read_text().splitlines() == [",".join(f'"{c}"' for c in everything.columns)]
    assert "no silver file holds stream 'nobody' at any time: a mistyped stream_id?" in \
        capsys.readouterr().err  # QA, 2026-11-27: "0 rows" only


def test_bronze_suite_catches_what_ingest_must_never_let_through(spark, settings):
    rows = spark.createDataFrame(
        [("a", "r1", dt.datetime(2026, 1, 1), "Door", 1.0, DAY, "f", dt.datetime(2026, 1, 1)),
         ("a", "r1", dt.datetime(2026, 1, 1), "Kitchen", -1.0, DAY, "f",
          dt.datetime(2026, 1, 1))],
        "stream_id string, sensor_id string, ts timestamp, symbol string, score double, "
        "batch_date date, source_file string, ingest_time timestamp")
    validate(rows.limit(1), BRONZE_SUITE, settings.domain)
    with pytest.raises(ExpectationError) as err:
        validate(rows, BRONZE_SUITE, settings.domain)
    assert str(err.value).startswith("bronze.readings failed its expectations:")
    assert "expect_column_values_to_be_in_set" in str(err.value)


def test_a_backfill_makes_silver_in_one_pass_as_nights_and_a_renormalize_would(
        spark, settings, tmp_path, monkeypatch):
    """A backfill's days are ingested and normalized together (one validation per step,
    whatever the number of days): its bronze, quarantine and silver are the nights' one
    by one, a silent day included, except that a late reading landed in a later day of
    the range is in its own day at once, as normalizing that day again puts it."""
    import probcep.lake.expectations as expectations

    landing = generate_landing(tmp_path / "landing", days=3, streams=3)
    shutil.rmtree(landing / "2026-01-02")  # a day without data: silence
    pd.DataFrame({"stream_id": ["person-1"], "sensor_id": ["late"],
                  "ts": ["2026-01-01T12:00:30"], "symbol": ["Room"], "score": ["5"]}
                 ).to_csv(landing / "2026-01-03" / "late.csv", index=False)
    days = [DAY + dt.timedelta(k) for k in range(4)]

    nights = dataclasses.replace(settings, landing_dir=landing, lake_root=tmp_path / "n")
    for day in days:
        LakeSilver(nights).prepare(run(nights), [day])
    normalize_day(run(nights), DAY)  # day 1 again, now with the late reading

    suites = []
    real = expectations.validate
    monkeypatch.setattr(expectations, "validate",
                        lambda frame, suite, *a, **k: suites.append(suite) or
                        real(frame, suite, *a, **k))
    backfill = dataclasses.replace(nights, lake_root=tmp_path / "b")
    LakeSilver(backfill).prepare(run(backfill), days)
    assert suites == [BRONZE_SUITE, SILVER_SUITE]

    def rows(s, t, drop=("ingest_time",)):
        frame = table(s, t).drop(columns=list(drop), errors="ignore")
        return frame.sort_values(list(frame.columns)).reset_index(drop=True)

    for t in (BRONZE, QUARANTINE, SILVER):
        pd.testing.assert_frame_equal(rows(nights, t), rows(backfill, t))
    silver = rows(backfill, SILVER)
    assert not (silver.date == dt.date(2026, 1, 2)).any()
    late_t = settings.clock.timestep(dt.datetime(2026, 1, 1, 12, 0, 30))
    assert silver[(silver.stream_id == "person-1") & (silver.t == late_t)].Room.iloc[0] > 0.5


def test_a_lake_refuses_settings_whose_clock_would_rename_its_times(spark, settings, tmp_path,
                                                                   capsys):
    """Silver's t count timesteps of the clock it was made with; another timestep or
    epoch would stamp every group with another time (group-day did, silently). So with
    the gap policy: a night under another would go on from the states and held rows of
    the lake's (QA, 2026-11-27: `uniform` after `hold_last` ran, alerts +5 -6, unsaid)."""
    from probcep.errors import ProbcepError

    write(settings, long_rows(), "readings.csv")
    ingest_day(run(settings), DAY)
    normalize_day(run(settings), DAY)
    path = tmp_path / "probcep.yaml"

    def settings_file(step, epoch, gaps=""):
        path.write_text(f"lake_root: {settings.lake_root}\nlanding_dir: "
                        f"{settings.landing_dir}\ntimestep_seconds: {step}\nepoch: '{epoch}'\n"
                        f"domain: {list(settings.domain)}\nregistry: {settings.registry}\n"
                        + gaps)
        return path

    same = RunContext.open("group-day", settings=settings_file(60, "2026-01-01T00:00:00"))
    assert same.clock == settings.clock
    assert settings.gap_label == "no_reading"
    RunContext.open("group-day", settings=settings_file(  # no hold under no_reading
        60, "2026-01-01T00:00:00", "hold_last_steps: 9\n"))
    for gaps, label in (("gap_policy: uniform\n", "uniform"),
                        ("gap_policy: hold_last\n", r"hold_last \(5 steps\)")):
        with pytest.raises(ProbcepError, match=f"silver was made under gap_policy no_reading, "
                                               f"the settings' is {label}: its rows"):
            RunContext.open("group-day", settings=settings_file(60, "2026-01-01T00:00:00",
                                                                gaps))
    for step, epoch in ((30, "2026-01-01T00:00:00"), (60, "2025-12-31T00:00:00")):
        with pytest.raises(ProbcepError, match="silver's t count timesteps of 60 s from "
                                               "2026-01-01T00:00:00 UTC, the settings' of"):
            RunContext.open("group-day", settings=settings_file(step, epoch))
    # the commands that read silver with settings of their own: `slice` found "0 rows"
    # where the rows were (QA, 2026-11-27), `plot` drew them at other times
    from probcep.cli import main

    other = settings_file(30, "2026-01-01T00:00:00")
    for argv in (["slice", "--stream", "person-0", "--start", "2026-01-01T00:00",
                  "--end", "2026-01-02T00:00"],
                 ["plot", "--lake", str(settings.lake_root), "--stream", "person-0",
                  "--pattern", "room_visit", "-o", str(tmp_path / "p.png")]):
        assert main([*argv, "--settings", str(other)]) == 2
        assert "silver's t count timesteps of 60 s" in capsys.readouterr().err


def test_a_day_never_ingested_is_refused_and_an_empty_one_ingested_is_silence(spark,
                                                                               settings):
    """Landing files that ingest never read are not silence: normalizing their day
    refuses (it published an empty day). A day ingested whose files hold no record
    leaves no bronze or quarantine row: the ingest log tells it from one never read."""
    from probcep.errors import ProbcepError
    from probcep.lake.tables import INGEST_LOG

    write(settings, long_rows(), "r.csv")
    with pytest.raises(ProbcepError, match=rf"{DAY} was never ingested, yet .*"
                                           rf"{DAY} holds 1 landing file\(s\): run "
                                           rf"`probcep ingest --date {DAY}` first"):
        normalize_day(run(settings), DAY)
    assert not SILVER.exists(settings.lake_root)
    (settings.landing_dir / DAY.isoformat() / "r.csv").write_text(
        "stream_id,sensor_id,ts,symbol,score\n")  # a header and no record
    assert ingest_day(run(settings), DAY).rows == 0
    assert not BRONZE.files(settings.lake_root) and not QUARANTINE.files(settings.lake_root)
    logged = INGEST_LOG.read(settings.lake_root).to_pylist()
    assert [(r["batch_date"], r["files"], r["records"], r["silent"]) for r in logged] == [
        (DAY, 1, 0, None)]
    version = INGEST_LOG.version(settings.lake_root)
    ingest_day(run(settings, "again"), DAY)  # the same counts: no commit
    assert INGEST_LOG.version(settings.lake_root) == version
    assert normalize_day(run(settings), DAY).rows == 0


def test_a_day_grouped_before_its_silver_is_made_is_refused(spark, settings):
    """Grouped before ingest or normalize, a day with readings was grouped as silent
    (and the next day resumed from that)."""
    from probcep.errors import ProbcepError
    from probcep.pipeline.group_day import group_day

    write(settings, long_rows(), "r.csv")
    with pytest.raises(ProbcepError, match=rf"{DAY} was never ingested, yet .* holds 1 "
                                           rf"landing file\(s\): run `probcep ingest --date "
                                           rf"{DAY}` and `probcep normalize --date {DAY}`$"):
        group_day(run(settings), DAY)
    ingest_day(run(settings), DAY)
    with pytest.raises(ProbcepError, match=rf"^{DAY} has bronze readings but no silver: run "
                                           rf"`probcep normalize --date {DAY}` first$"):
        group_day(run(settings), DAY)
    normalize_day(run(settings), DAY)
    group_day(run(settings), DAY)
    group_day(run(settings), DAY + dt.timedelta(days=3))  # no landing folder: silence


def test_silver_made_before_its_bronze_changed_is_refused_by_group_day(spark, settings):
    """A day ingested again after a data fix, or a later batch holding late readings of
    the day, makes the day's silver stale: grouped, it would miss the fix (and hand the
    next day states that never saw it). The normalize log records the bronze it read."""
    from probcep.errors import ProbcepError
    from probcep.lake.tables import NORMALIZE_LOG
    from probcep.pipeline.group_day import group_day

    write(settings, long_rows(), "r.csv")
    ingest_day(run(settings), DAY)
    made = normalize_day(run(settings), DAY)
    logged = NORMALIZE_LOG.read(settings.lake_root).to_pylist()
    assert [(r["date"], r["rows"], r["streams"]) for r in logged] == [
        (DAY, made.rows, made.streams)]
    assert logged[0]["bronze"].startswith(f"batch_date={DAY}/")
    group_day(run(settings), DAY)
    ingest_day(run(settings, "same"), DAY)  # unchanged: nothing committed, still ready
    group_day(run(settings), DAY)

    fixed = long_rows()
    fixed.loc[2, "score"] = "3"  # a reading's score fixed, in the landing file
    write(settings, fixed, "r.csv")
    changed = (rf"{settings.landing_dir / DAY.isoformat()} changed since {DAY} was ingested "
               rf"\(1 landing file\(s\) then, 1 now, or one rewritten\): run `probcep ingest "
               rf"--date {DAY}`")
    with pytest.raises(ProbcepError, match=changed + " first \\(silver left as it was\\)$"):
        normalize_day(run(settings), DAY)
    with pytest.raises(ProbcepError, match=changed + f" and `probcep normalize --date {DAY}`$"):
        group_day(run(settings), DAY)
    ingest_day(run(settings, "fix"), DAY)
    stale = rf"^{DAY}'s silver is older than its bronze \(batch {{}} ingested since\): run " \
            rf"`probcep normalize --date {DAY}` first, or `probcep rerun --from {DAY} --to {DAY}`$"
    with pytest.raises(ProbcepError, match=stale.format(DAY)):
        group_day(run(settings), DAY)
    normalize_day(run(settings), DAY)
    group_day(run(settings), DAY)
    version = NORMALIZE_LOG.version(settings.lake_root)
    normalize_day(run(settings, "again"), DAY)  # the same silver from the same bronze
    assert NORMALIZE_LOG.version(settings.lake_root) == version

    later = DAY + dt.timedelta(days=1)  # late readings of DAY in the next day's batch
    assert ingest_day(run(settings), later).silent  # no folder yet: silence
    folder = settings.landing_dir / later.isoformat()
    folder.mkdir(parents=True)
    long_rows().iloc[[0, 6]].to_csv(folder / "late.csv", index=False)
    with pytest.raises(ProbcepError, match=rf"{folder} changed since {later} was ingested "
                                           rf"\(0 landing file\(s\) then, 1 now, or one "):
        normalize_day(run(settings), later)  # its files came after the silent ingest
    ingest_day(run(settings), later)
    with pytest.raises(ProbcepError, match=stale.format(later)):
        group_day(run(settings), DAY)
    normalize_day(run(settings), DAY)
    group_day(run(settings), DAY)


def test_a_day_ingested_from_files_is_not_emptied_by_a_landing_root_without_it(spark,
                                                                               settings):
    """A rerun pointed at the wrong landing folder (one that exists, without the day's
    folder) took the day as silence and emptied it (QA, 2026-11-27): refused, rows kept.
    An empty day folder is still silence."""
    import dataclasses
    import shutil

    from probcep.errors import ProbcepError

    write(settings, long_rows(), "r.csv")
    assert ingest_day(run(settings), DAY).rows > 0
    rows = BRONZE.read(settings.lake_root).num_rows
    (settings.landing_dir.parent / "elsewhere").mkdir()
    wrong = dataclasses.replace(settings, landing_dir=settings.landing_dir.parent / "elsewhere")
    with pytest.raises(ProbcepError, match=rf"yet {DAY} was ingested from 1 landing file"):
        ingest_day(run(wrong), DAY)
    assert BRONZE.read(settings.lake_root).num_rows == rows
    shutil.rmtree(settings.landing_dir / DAY.isoformat())
    (settings.landing_dir / DAY.isoformat()).mkdir()
    assert ingest_day(run(settings), DAY).silent
    assert BRONZE.read(settings.lake_root).num_rows == 0


def test_missing_day_refuse_stops_grouping_a_day_never_normalized(settings):
    """Under `missing_day: refuse` a day without data is an error: ingest refuses it, so
    it is never normalized, and grouping it refuses too (QA, 2026-11-27: it grouped the
    day as silence and recorded it processed). Under `silence` it is a day of silence."""
    from probcep.errors import ProbcepError
    from probcep.pipeline.normalize import unready

    settings.landing_dir.mkdir(parents=True)
    refusing = dataclasses.replace(settings, missing_day="refuse")
    assert unready(settings, DAY) == ""
    assert "missing_day: refuse" in unready(refusing, DAY)
    with pytest.raises(ProbcepError, match=f"{DAY} was never normalized"):
        from probcep.pipeline.group_day import group_day

        group_day(run(refusing), DAY)


def test_a_lake_under_a_folder_with_spaces_and_accents_runs(spark, settings, tmp_path):
    """delta-rs names a table's files with its folder URL-encoded (`my%20lake`): read as
    paths, normalize found no bronze file and failed with a traceback (QA, 2026-11-27)."""
    from probcep.lake.slices import silver_slice

    odd = dataclasses.replace(settings, lake_root=tmp_path / "my lake é+,")
    write(odd, long_rows(), "readings.csv")
    ingest_day(run(odd), DAY)
    report = normalize_day(run(odd), DAY)
    assert report.rows and all(Path(f).is_file() for f in SILVER.files(odd.lake_root))
    part = silver_slice(odd, "a", dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                        dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    assert part.read().num_rows


def test_a_file_that_reaches_an_ingested_days_folder_later_is_said(spark, settings, recwarn):
    """A file dropped into a day's own folder after its night was in no table, and no later
    night said so (QA, 2026-11-28): the next ingest names it and the way to take it."""
    from probcep.errors import ProbcepWarning

    write(settings, long_rows(), "r.csv")
    folder = settings.landing_dir / DAY.isoformat()
    (folder / "empty.csv").touch()  # read on time, yet no table holds a row of it
    ingest_day(run(settings), DAY)
    write(settings, long_rows(), "late.csv")
    elsewhere = settings.landing_dir.parent / "moved.csv"  # renamed in, an old mtime
    long_rows().to_csv(elsewhere, index=False)
    os.utime(elsewhere, (946684800, 946684800))
    os.replace(elsewhere, folder / "moved.csv")
    after = DAY + dt.timedelta(days=1)
    with pytest.warns(ProbcepWarning, match=(
            rf"^2 file\(s\) reached {folder} after {DAY} was ingested and are in no table "
            rf"\(late.csv, moved.csv\): `probcep rerun --from {DAY} --to {DAY}` takes them$")):
        ingest_day(run(settings, "next"), after)
    ingest_day(run(settings, "fix"), DAY)  # as the rerun does
    recwarn.clear()
    ingest_day(run(settings, "again"), after)
    (folder / "moved.csv").unlink()  # the folder changes, its empty file came on time
    ingest_day(run(settings, "later"), after)
    assert not [w for w in recwarn if "reached" in str(w.message)]
