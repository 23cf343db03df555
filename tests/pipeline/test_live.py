"""Live mode (`probcep live --once`, Spark's availableNow) on tiny landing folders: the
groups, alerts, engine states, correlation rows and correlation alerts it writes for a
day equal the night's, whatever the files' arrival order and the micro-batch size; the
night run after live mode writes the tables of the night alone and records no change; a
live process killed with SIGKILL mid-batch and started again writes the tables of an
uninterrupted run; late readings are counted and the night reconciles them."""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest

from probcep.lake.locks import LOCKS_FOLDER, ConcurrentWriteError, exclusive, lock_path
from probcep.lake.tables import (
    ALERT_CHANGES,
    ALERTS,
    ARCHIVE_STATS,
    BRONZE,
    CORRELATION_ALERT_CHANGES,
    CORRELATION_ALERTS,
    CORRELATIONS,
    GROUPS,
    LIVE_STATE,
    LIVE_STATUS,
    QUARANTINE,
    SILVER,
    STATES,
)
from probcep.pipeline.context import RunContext
from probcep.pipeline.live import LiveQuery
from probcep.pipeline.run import run_days

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
DAYS = [dt.date(2026, 1, 1) + dt.timedelta(d) for d in range(3)]
#: One timestep is an hour, so a day is 24 timesteps; files hold 6 hours each.
STEP, CHUNK_HOURS, LATENESS_HOURS = 3600, 6, 13
REGISTRY = """
patterns:
  room_visit: {pattern: "Door Room+ Door", policy: complete, threshold: 0.01, window: 12,
               alert_threshold: 0.2}
  hallway_pass: {pattern: "Hallway Door Hallway", policy: single, threshold: 0.02,
                 alert_threshold: 0.3}
correlations:
  passed_before_visit: {live: room_visit, archive_pattern: "Hallway Door", archive_window: 2,
                        lookback: 30h, gap: 2, min_probability: 0.05, alert_threshold: 0.05}
  no_visit_before_pass: {live: hallway_pass, archive_pattern: "Door Room", lookback: 12,
                         mode: absent, strategy: active, alert_threshold: 0.15}
"""
#: Tables live mode writes for a day as the night does; correlation rows name the silver
#: version they read, which differs between two lakes.
DAY_TABLES = (GROUPS, ALERTS, STATES, CORRELATIONS, CORRELATION_ALERTS)


def landing(folder: Path, seed: int, streams: int = 5) -> list[Path]:
    """Three days of sparse random readings, one CSV per 6-hour chunk in its day's
    folder; returns the files in time order."""
    rng = np.random.default_rng(seed)
    files = []
    for chunk in range(len(DAYS) * 24 // CHUNK_HOURS):
        rows = []
        for s in range(streams):
            for h in range(CHUNK_HOURS):
                if rng.random() < 0.6:
                    hour = chunk * CHUNK_HOURS + h
                    ts = dt.datetime(2026, 1, 1) + dt.timedelta(hours=hour,
                                                                minutes=int(rng.integers(60)))
                    for sym in rng.choice(["Hallway", "Door", "Room"], rng.integers(1, 3),
                                          replace=False):
                        rows.append((f"s{s}", "r1", ts.isoformat(), sym,
                                     round(float(rng.random()) + 0.05, 3)))
        day = DAYS[chunk * CHUNK_HOURS // 24]
        path = folder / day.isoformat() / f"chunk-{chunk:02d}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows, columns=["stream_id", "sensor_id", "ts", "symbol", "score"]) \
            .to_csv(path, index=False)
        files.append(path)
    return files


def arrive(files: list[Path], order: list[int]) -> None:
    """Set modification times so Spark's file source lists the files in this order."""
    base = 1_700_000_000
    for rank, i in enumerate(order):
        os.utime(files[i], (base + rank * 10, base + rank * 10))


def settings_file(tmp: Path, land: Path, lake: Path, max_files: int, extra: str = "") -> Path:
    (tmp / "patterns.yaml").write_text(REGISTRY)
    path = tmp / f"probcep-{lake.name}.yaml"
    path.write_text(f"lake_root: {lake}\nlanding_dir: {land}\ntimestep_seconds: {STEP}\n"
                    f"epoch: '2026-01-01T00:00:00'\ndomain: [Hallway, Door, Room]\n"
                    f"registry: patterns.yaml\nallowed_lateness_seconds: "
                    f"{LATENESS_HOURS * 3600}\nlive_max_files_per_trigger: {max_files}\n"
                    f"max_quarantine_fraction: 0.5\n{extra}")
    return path


def context(spark, settings: Path, step: str) -> RunContext:
    ctx = RunContext.open(step, settings=settings, echo=lambda _: None)
    ctx.__dict__["spark"] = spark
    return ctx


def rows(table, lake: Path, days) -> pd.DataFrame:
    frame = table.read(lake).to_pandas()
    frame = frame[frame["batch_date"].isin(days)].drop(columns=["run_id"])
    frame = frame.drop(columns=["silver_version"], errors="ignore")
    return frame.sort_values([c for c in frame.columns if c != "state"]) \
        .reset_index(drop=True)


def same_day_tables(a: Path, b: Path, days) -> None:
    for table in DAY_TABLES:
        pd.testing.assert_frame_equal(rows(table, a, days), rows(table, b, days),
                                      obj=table.name)


@pytest.fixture(scope="module")
def night(spark, tmp_path_factory):
    """The landing folder, and the nights of its first two days (the third never
    completes in live mode: no reading comes after it)."""
    tmp = tmp_path_factory.mktemp("live")
    files = landing(tmp / "landing", seed=7)
    settings = settings_file(tmp, tmp / "landing", tmp / "night", 1)
    run_days(context(spark, settings, "run"), DAYS[0], DAYS[1])
    assert GROUPS.read(tmp / "night").num_rows > 0
    assert ALERTS.read(tmp / "night").num_rows > 0
    correlated = CORRELATIONS.read(tmp / "night").to_pandas()
    assert set(correlated["correlation"]) == {"passed_before_visit", "no_visit_before_pass"}
    assert set(CORRELATION_ALERTS.read(tmp / "night").to_pandas()["correlation"]) == \
        set(correlated["correlation"])
    assert ARCHIVE_STATS.read(tmp / "night").num_rows > 0  # auto pruned with statistics
    return tmp, files


def live_once(spark, tmp: Path, land: Path, lake: str, max_files: int) -> Path:
    LiveQuery(context(spark, settings_file(tmp, land, tmp / lake, max_files), "live")) \
        .run(once=True)
    return tmp / lake


@pytest.fixture(scope="module")
def in_order(spark, night):
    """Live mode over the files in time order, one file per micro-batch."""
    tmp, files = night
    arrive(files, list(range(len(files))))
    return live_once(spark, tmp, tmp / "landing", "in-order", 1)


def test_live_in_time_order_writes_the_nights_groups_alerts_states_and_correlations(
        night, in_order):
    tmp, files = night
    same_day_tables(in_order, tmp / "night", DAYS[:2])
    assert not ARCHIVE_STATS.exists(in_order)  # live mode prunes by P(g) alone
    status = LIVE_STATUS.read(in_order)
    assert status.num_rows == len(files)  # maxFilesPerTrigger = 1
    assert pc.sum(status["late_rows"]).as_py() == 0
    assert pc.sum(status["rows"]).as_py() == BRONZE.read(in_order).num_rows


def test_the_night_after_live_mode_writes_the_tables_of_the_night_and_no_changes(
        spark, night, in_order):
    """The night replaces live mode's rows of its days (correlation rows too: they name
    another silver version) and, nothing having changed, records no alert change."""
    tmp, files = night
    lake = tmp / "live-then-night"
    shutil.copytree(in_order, lake)
    ctx = context(spark, settings_file(tmp, tmp / "landing", lake, 1), "run")
    run_days(ctx, DAYS[0], DAYS[1])
    same_day_tables(lake, tmp / "night", DAYS[:2])
    for table in (CORRELATIONS, CORRELATION_ALERTS):
        written = table.read(lake, [("batch_date", "in", DAYS[:2])])
        assert written.num_rows
        assert set(written["run_id"].to_pylist()) <= {f"{ctx.run_id}-{d}" for d in DAYS[:2]}
    assert CORRELATION_ALERT_CHANGES.read(lake).num_rows == 0
    assert ALERT_CHANGES.read(lake).num_rows == 0


def test_live_status_on_the_command_line(night, in_order, capsys, monkeypatch):
    from probcep.cli import main

    tmp, files = night
    settings = settings_file(tmp, tmp / "landing", in_order, 1)
    assert main(["live", "--status", "--settings", str(settings)]) == 0
    out = capsys.readouterr().out
    assert "cache_misses" in out and "latency_seconds" in out
    assert len(out.strip().splitlines()) == 1 + len(files)
    with monkeypatch.context() as env:  # it reads no registry (QA, 2026-11-28: "cannot
        env.setenv("PROBCEP_REGISTRY", str(tmp / "gone.yaml"))  # read the patterns registry")
        assert main(["live", "--status", "--settings", str(settings)]) == 0
        assert capsys.readouterr().out == out
    # it only reads: a lake live may not write, as when a refused path stopped it, is
    # where one looks (QA, 2026-11-27: "cannot write gold/alerts", exit 2)
    log = in_order / "gold" / "alerts" / "_delta_log"
    if subprocess.run(["chattr", "+i", str(log)], capture_output=True).returncode:
        pytest.skip("no chattr +i here")
    try:
        assert main(["live", "--status", "--settings", str(settings)]) == 0
        assert capsys.readouterr().out == out
        assert main(["live", "--once", "--settings", str(settings)]) == 2
        assert f"cannot write gold/alerts: {log} is not writable" in capsys.readouterr().err
    finally:
        subprocess.run(["chattr", "-i", str(log)], check=True)


@pytest.mark.parametrize("max_files,order_seed", [(4, 11)])
def test_live_in_shuffled_order_writes_the_nights_groups_alerts_states_and_correlations(
        spark, night, max_files, order_seed):
    tmp, files = night
    # arrival order: chunks out of order by at most one place (within the lateness)
    order = list(range(len(files)))
    rng = np.random.default_rng(order_seed)
    for i in range(0, len(order) - 1, 2):
        if rng.random() < 0.5:
            order[i], order[i + 1] = order[i + 1], order[i]
    assert order != sorted(order)
    arrive(files, order)
    lake = live_once(spark, tmp, tmp / "landing", f"live-{max_files}-{order_seed}", max_files)
    same_day_tables(lake, tmp / "night", DAYS[:2])
    status = LIVE_STATUS.read(lake)
    assert status.num_rows == -(-len(files) // max_files)
    assert pc.sum(status["late_rows"]).as_py() == 0


#: Runs live once with one file per micro-batch; in micro-batch KILL_BATCH it dies by
#: SIGKILL right after committing TABLE (its other writes not yet done).
CHILD = """
import os, signal, sys
from probcep.lake import tables
from probcep.pipeline import live, live_day_end
from probcep.pipeline.context import RunContext

settings, batch, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
real = tables.commit_once

def killed(t, lake, rows, metadata, app_id, version, **kw):
    done = real(t, lake, rows, metadata, app_id, version, **kw)
    if version == batch and t.name == table:
        os.kill(os.getpid(), signal.SIGKILL)
    return done

live.commit_once = killed
live_day_end.commit_once = killed
live.LiveQuery(RunContext.open("live", settings=settings, master="local[1]")).run(once=True)
"""


#: Kill points: after each of a micro-batch's writes, in batches where a day is still
#: open (3, 4), where the first day completes (6: its states are written too, after its
#: alerts) and later (9 makes correlation rows and a correlation alert: the retry writes
#: only the alert).
KILLS = [(3, BRONZE.name), (4, SILVER.name), (5, GROUPS.name), (6, ALERTS.name),
         (6, STATES.name), (7, LIVE_STATUS.name), (8, LIVE_STATE.name),
         (9, CORRELATIONS.name)]


@pytest.mark.soak
@pytest.mark.parametrize("batch,table", KILLS)
def test_live_killed_mid_batch_then_restarted_is_as_if_once(spark, night, in_order, batch,
                                                            table):
    tmp, files = night
    arrive(files, list(range(len(files))))
    lake = tmp / f"killed-{batch}-{table.replace('/', '-')}"
    settings = settings_file(tmp, tmp / "landing", lake, 1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", CHILD, str(settings), str(batch), table],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    # batch `batch` unfinished: its status row written or not
    written = table in (LIVE_STATUS.name, LIVE_STATE.name)
    assert LIVE_STATUS.read(lake).num_rows == batch + written
    LiveQuery(context(spark, settings, "live")).run(once=True)  # Spark retries it
    clean = in_order
    for t in (GROUPS, ALERTS, BRONZE, SILVER, LIVE_STATUS, CORRELATIONS, CORRELATION_ALERTS):
        a, b = t.read(lake), t.read(clean)
        assert a.num_rows == b.num_rows, t.name
    same_day_tables(lake, clean, DAYS)
    same_day_tables(lake, tmp / "night", DAYS[:2])


@pytest.mark.soak
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_the_batch_in_progress_and_exits_quietly(night, sig):
    """`probcep live` stopped as docs/live.md says (SIGTERM, Ctrl-C): exit 0, one line
    said, no trace (QA, 2026-11-26: pages of Java and Python traces, exit 143 or 130)."""
    tmp, files = night
    arrive(files, list(range(len(files))))
    lake = tmp / f"stopped-{sig.name}"
    settings = settings_file(tmp, tmp / "landing", lake, 1, "live_trigger_seconds: 2\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    process = subprocess.Popen([sys.executable, "-m", "probcep", "live", "--settings",
                                str(settings), "--master", "local[1]"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    for line in process.stdout:
        out.append(line)
        if line.startswith("batch 1:"):
            process.send_signal(sig)
            break
    rest, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    said = out + rest.splitlines(keepends=True)
    assert f"live: {sig.name}: stopping after the micro-batch in progress" in "".join(said)
    assert "Traceback" not in err and "Exception" not in err, err[-3000:]
    assert LIVE_STATUS.read(lake).num_rows >= 2


@pytest.mark.parametrize("policy", ["creation", "priority", "lru"])
def test_every_eviction_policy_writes_the_same_rows_with_at_most_its_capacity_in_memory(
        spark, night, in_order, policy):
    """Two streams' states in memory (of five streams, two patterns): every policy
    misses, and writes the rows of the uncached run and of the night."""
    tmp, files = night
    arrive(files, list(range(len(files))))
    lake = tmp / f"cache-{policy}"
    settings = settings_file(tmp, tmp / "landing", lake, 2,
                             f"live_cache_streams: 2\nlive_cache_policy: {policy}\n")
    query = LiveQuery(context(spark, settings, "live"))
    query.run(once=True)
    assert query.states.peak <= 2 * 2  # two streams x two patterns
    status = LIVE_STATUS.read(lake)
    assert pc.sum(status["cache_misses"]).as_py() > 0
    same_day_tables(lake, tmp / "night", DAYS[:2])
    for t in (GROUPS, ALERTS):
        pd.testing.assert_frame_equal(rows(t, lake, DAYS), rows(t, in_order, DAYS),
                                      obj=t.name)


def test_late_readings_are_counted_and_the_night_reconciles_them(spark, night, in_order):
    tmp, files = night
    land = tmp / "landing-late"
    late = landing(land, seed=7)
    extra = pd.DataFrame([("s0", "r1", f"2026-01-01T0{h}:30:00", sym, 5.0)
                          for h in range(2, 6) for sym in ("Door", "Room")],
                         columns=["stream_id", "sensor_id", "ts", "symbol", "score"])
    extra.to_csv(land / DAYS[0].isoformat() / "zz-late.csv", index=False)
    late.append(land / DAYS[0].isoformat() / "zz-late.csv")
    with late[0].open("a") as first:  # a reset clock in the first micro-batch: late, and
        # live starts at its folder's day (it walked every day since 1970, QA 2026-11-26)
        first.write("s0,r1,1970-01-01T00:00:00,Door,0.5\n")
    arrive(late, list(range(len(late))))  # the extra file comes last, a day late
    lake = tmp / "late"
    settings = settings_file(tmp, land, lake, 4)
    LiveQuery(context(spark, settings, "live")).run(once=True)
    assert pc.sum(LIVE_STATUS.read(lake)["late_rows"]).as_py() == len(extra) + 1
    assert BRONZE.read(lake).num_rows == BRONZE.read(in_order).num_rows + len(extra) + 1
    assert pc.min(SILVER.read(lake)["date"]).as_py() == DAYS[0]
    live_alerts = ALERTS.read(lake)
    ctx = context(spark, settings, "run")
    run_days(ctx, DAYS[0], DAYS[0])  # the night reconciles: its alerts replace the live ones
    changes = ALERT_CHANGES.read(lake).to_pandas()
    assert len(changes) and set(changes["changed_by_run"]) == {f"{ctx.run_id}-{DAYS[0]}"}
    day0 = live_alerts.filter(pc.equal(live_alerts["batch_date"], DAYS[0]))
    night_day0 = ALERTS.read(lake, [("batch_date", "=", DAYS[0])])
    added = (changes["change"] == "added").sum()
    retracted = (changes["change"] == "retracted").sum()
    assert night_day0.num_rows == day0.num_rows + added - retracted
    correlation_changes = CORRELATION_ALERT_CHANGES.read(lake).to_pandas()
    assert set(correlation_changes["changed_by_run"]) <= {f"{ctx.run_id}-{DAYS[0]}"}


def test_live_after_the_nights_reads_no_file_again_and_starts_after_them(spark, night):
    """Live mode started after the nights of days 0 and 1 (a process down across them,
    catching up with `--once`): the files those nights ingested are not read again, and it
    starts at day 2 from their states, so no reading, silver row, group or alert of theirs
    is written twice (QA, 2026-11-26: each was, and the next night's archive read the
    doubled silver)."""
    tmp, files = night
    lake = tmp / "after-nights"
    shutil.copytree(tmp / "night", lake)
    before = {t.name: t.read(lake).num_rows for t in (BRONZE, SILVER, GROUPS, ALERTS)}
    said = []
    LiveQuery(context(spark, settings_file(tmp, tmp / "landing", lake, 4), "live"),
              echo=said.append).run(once=True)
    assert any("ingested by the night of their day already, not read again" in line
               for line in said)
    bronze = BRONZE.read(lake).to_pandas()
    assert (bronze["batch_date"] < DAYS[2]).sum() == before["bronze/readings"]
    silver = SILVER.read(lake).to_pandas()
    assert not silver.duplicated(["stream_id", "t"]).any()
    assert (silver["date"] < DAYS[2]).sum() == before["silver/distributions"]
    for table in (GROUPS, ALERTS):
        assert rows(table, lake, DAYS[:2]).equals(rows(table, tmp / "night", DAYS[:2]))


@pytest.mark.parametrize("night_until", ["group-day", "normalize"])
def test_a_night_of_live_modes_day_in_progress_leaves_the_day_to_it(spark, night,
                                                                     night_until):
    """A night (or rerun) of the day live mode is in, run beside it: live mode writes no
    more of that day, and goes on with the next from its own states (QA, 2026-11-27: it
    appended the rest of the day again, doubling silver, groups and alerts, and the next
    correlation rows read the doubled archive). So from the night's normalize on: live
    mode between the night's normalize and its group-day doubled silver, and the night's
    group-day then failed (QA, 2026-11-27)."""
    from probcep.pipeline.group_day import group_day
    from probcep.pipeline.ingest import ingest_day
    from probcep.pipeline.normalize import normalize_day

    tmp, files = night
    land, lake = tmp / f"landing-beside-{night_until}", tmp / f"night-beside-{night_until}"
    for f in files:
        (land / f.parent.name).mkdir(parents=True, exist_ok=True)
    copied = [land / f.parent.name / f.name for f in files]
    settings = settings_file(tmp, land, lake, 4)
    for f, c in zip(files[:3], copied[:3]):  # day 0 until 18:00: live mode is in day 0
        shutil.copy(f, c)
    arrive(copied[:3], [0, 1, 2])
    LiveQuery(context(spark, settings, "live")).run(once=True)
    assert LIVE_STATUS.read(lake)["complete_until"][-1].as_py().date() == DAYS[0]
    if night_until == "group-day":  # its night, beside it
        run_days(context(spark, settings, "run"), DAYS[0], DAYS[0])
    else:  # the night's first tasks, with day 0 landed whole (else its group-day is
        # refused: the day changed since ingest); its group-day after live mode's batch
        shutil.copy(files[3], copied[3])
        arrive(copied[:4], [0, 1, 2, 3])
        ingest_day(context(spark, settings, "run"), DAYS[0])
        normalize_day(context(spark, settings, "run"), DAYS[0])
    for f, c in zip(files[3:], copied[3:]):  # landing after the night, renamed into
        shutil.copy(f, c)  # place with the older times they were written at: not taken
    arrive(copied, list(range(len(copied))))  # for files the night read (QA, 2026-11-27)
    said = []
    LiveQuery(context(spark, settings, "live"), echo=said.append).run(once=True)
    silver = SILVER.read(lake).to_pandas()
    assert not silver.duplicated(["stream_id", "t"]).any()
    how = ("processed by a night or rerun meanwhile" if night_until == "group-day" else
           "normalized by a night or rerun meanwhile, not grouped yet")
    assert any(f"{DAYS[0]} {how}" in line for line in said), said
    for table in (GROUPS, ALERTS):
        assert not table.read(lake).to_pandas().drop(columns=["run_id"]).duplicated().any()
    same_day_tables(lake, tmp / "night", DAYS[1:2])  # day 1 as the night writes it
    if night_until == "normalize":  # the night goes on: day 0 whole, as the night's
        group_day(context(spark, settings, "run"), DAYS[0])
        for table in (GROUPS, STATES):
            pd.testing.assert_frame_equal(rows(table, lake, DAYS[:1]),
                                          rows(table, tmp / "night", DAYS[:1]))
        return
    run_days(context(spark, settings, "run"), DAYS[0], DAYS[0])  # day 0 whole, again
    same_day_tables(lake, tmp / "night", DAYS[:2])


def test_live_reads_and_quarantines_a_days_entries_as_ingest_does(spark, tmp_path,
                                                                  monkeypatch):
    """A compressed file is read, a file of no known format and a sub-folder are
    quarantined with ingest's reasons, files outside a day's folder are reported (no
    night reads them), and a file name that is not UTF-8 (which Spark's listing leaves
    out) stops live mode as it stops the night."""
    import gzip

    from probcep.pipeline.ingest import IngestError

    land = tmp_path / "landing"
    files = landing(land, seed=3)
    day = land / DAYS[0].isoformat()
    plain = pd.read_csv(files[0])
    with gzip.open(day / "chunk-00.csv.gz", "wb") as packed:
        packed.write(files[0].read_bytes())
    files[0].unlink()
    (day / "notes.txt").write_text("not readings\n")
    (day / "sub").mkdir()
    shutil.copy(files[1], day / "sub" / "inner.csv")
    # entries Spark's listing leaves out (QA, 2026-11-27: live passed over them unseen)
    os.mkfifo(day / "pipe.csv")
    (day / "dangling.csv").symlink_to(day / "gone.csv")
    (day / "hollow").mkdir()
    shutil.copy(files[1], land / "stray.csv")
    (land / "not-a-day").mkdir()
    shutil.copy(files[1], land / "not-a-day" / "x.csv")
    week_form = land / DAYS[0].strftime("%G-W%V-%u")  # the day, but no night reads it
    week_form.mkdir()
    shutil.copy(files[1], week_form / "y.csv")
    said: list[str] = []
    lake = tmp_path / "lake"
    ctx = context(spark, settings_file(tmp_path, land, lake, 100), "live")
    held, real = [], LiveQuery.not_ingested

    def checked(query, entries, listed):  # under the locks ingest holds through its log
        held.append(all(lock_path(t.path(lake), DAYS[0], "day").exists()
                        for t in (BRONZE, QUARANTINE)))
        return real(query, entries, listed)

    monkeypatch.setattr(LiveQuery, "not_ingested", checked)
    LiveQuery(ctx, echo=said.append).run(once=True)
    assert held and all(held)
    bronze = BRONZE.read(lake).to_pandas()
    assert (bronze["source_file"].str.endswith("chunk-00.csv.gz")).sum() == len(plain) > 0
    quarantined = QUARANTINE.read(lake).to_pandas()
    reasons = dict(zip(quarantined["source_file"].map(lambda f: Path(f).name),
                       quarantined["reason"]))
    assert "unknown format" in reasons.pop("notes.txt")
    assert "not a regular file" in reasons.pop("sub")
    for name in ("pipe.csv", "dangling.csv", "hollow"):
        assert "not a regular file" in reasons.pop(name)
    assert not any(f in reasons for f in ("inner.csv", "stray.csv", "x.csv", "y.csv"))
    assert not (bronze["source_file"].map(lambda f: Path(f).name)
                .isin(["inner.csv", "stray.csv", "x.csv", "y.csv"]).any())
    outside = [line for line in said if "not in a day's landing folder" in line]
    assert len(outside) == 1 and "3 file(s)" in outside[0] and "stray.csv" in outside[0]
    shutil.copy(files[1], day / "sub" / "inner2.csv")  # lists the sub-folder again
    # a batch of bad rows alone, a small share of its day's: the night takes the day
    plain.head(3).assign(symbol="Kitchen").to_csv(day / "few.csv", index=False)
    LiveQuery(ctx, echo=said.append).run(once=True)
    assert not [line for line in said if "max_quarantine_fraction" in line]
    quarantined = QUARANTINE.read(lake).to_pandas()
    for name in ("sub", "pipe.csv", "dangling.csv", "hollow"):  # once each
        assert (quarantined["source_file"].map(lambda f: Path(f).name) == name).sum() == 1
    # bad rows that make the day's share more than the night takes (0.5 here)
    bad = pd.concat([plain] * 8).assign(symbol="Kitchen")
    bad.to_csv(day / "kitchen.csv", index=False)
    LiveQuery(ctx, echo=said.append).run(once=True)
    warned = [line for line in said if "over max_quarantine_fraction 0.5" in line]
    held, kept = (len(t.read(lake, [("batch_date", "=", DAYS[0])])) for t in (QUARANTINE,
                                                                              BRONZE))
    assert len(warned) == 1 and f": warning: {DAYS[0]}: {held} of its {held + kept} rows so " \
        "far quarantined" in warned[0]
    assert f"{day / 'kitchen.csv'}: {len(bad)})" in warned[0]
    (day / os.fsdecode(b"caf\xe9.csv")).write_bytes(files[2].read_bytes())
    with pytest.raises(IngestError, match=r"caf\\xe9.csv' is not UTF-8"):
        LiveQuery(ctx, echo=said.append).run(once=True)


def test_a_second_live_mode_on_a_lake_is_refused_at_once(spark, tmp_path):
    """A second `probcep live` on a lake started, shared the first one's checkpoint, and
    one of the two (either) died at the next file with a 48-line traceback, exit 1 (QA,
    2026-11-27). Now it is refused before its query starts; a dead holder's lock is
    taken over (`tests/lake/test_concurrent_writers.py`)."""
    land, lake = tmp_path / "landing", tmp_path / "lake"
    landing(land, seed=3)
    ctx = context(spark, settings_file(tmp_path, land, lake, 100), "live")
    lock = lake / LOCKS_FOLDER / "live.lock"
    held, done = threading.Event(), threading.Event()

    def first():
        with exclusive(lock, f"{lake} in live mode"):
            held.set()
            done.wait(60)

    holder = threading.Thread(target=first)
    holder.start()
    try:
        assert held.wait(60)
        with pytest.raises(ConcurrentWriteError, match=(
                f"^another run is writing {lake} in live mode: .* holds {lock} "
                r"\(remove the file if that run is gone\)$")):
            LiveQuery(ctx).run(once=True)
        assert not BRONZE.exists(lake) and not (lake / "_live").exists()
    finally:
        done.set()
        holder.join()
    assert not lock.exists()


class JvmStoppedWithUs:
    """A streaming query whose JVM got the SIGTERM too: once the signal came, every call
    fails as Py4J's do on a stopped SparkContext."""

    def __init__(self):
        self.signalled = False

    def awaitTermination(self, timeout):
        if self.signalled:
            raise RuntimeError("Cannot call methods on a stopped SparkContext.")
        self.signalled = True
        os.kill(os.getpid(), signal.SIGTERM)
        return False

    def stop(self):
        if self.signalled:
            raise RuntimeError("Cannot call methods on a stopped SparkContext.")


@pytest.mark.parametrize("in_batch", [False, True])
def test_a_sigterm_that_also_stopped_the_jvm_ends_in_one_line(in_batch):
    """SIGTERM to the process group (`timeout`, systemd) reaches Spark's JVM, whose
    shutdown hook stops Spark: `query.stop()` raised, a traceback and exit 1 (QA,
    2026-11-27). Idle, the stop is clean; in a micro-batch, it is said in one line."""
    from probcep.errors import ProbcepError

    said, handler = [], signal.getsignal(signal.SIGTERM)
    live = object.__new__(LiveQuery)
    live.echo, live.in_batch = said.append, in_batch
    if in_batch:
        with pytest.raises(ProbcepError, match="before the micro-batch in progress ended: "
                           "the next start redoes it"):
            live._run(JvmStoppedWithUs())
    else:
        live._run(JvmStoppedWithUs())
        assert said[-1] == ("live: Spark's JVM stopped on the same signal; no micro-batch "
                            "was in progress")
    assert said[0].startswith("live: SIGTERM: stopping after the micro-batch in progress")
    assert signal.getsignal(signal.SIGTERM) == handler  # put back
    # py4j's lost calls to the JVM log tracebacks on the root logger (QA, 2026-11-27:
    # some 60 lines before the one above): off from the stop on, the process ending
    assert not logging.getLogger().isEnabledFor(logging.ERROR)
    logging.disable(logging.NOTSET)


def test_an_error_of_the_query_without_a_stop_signal_is_not_taken_for_one():
    class Failing:
        def awaitTermination(self, timeout):
            raise RuntimeError("a micro-batch failed")

        def stop(self):
            pass

    live = object.__new__(LiveQuery)
    live.echo, live.in_batch = print, False
    with pytest.raises(RuntimeError, match="a micro-batch failed"):
        live._run(Failing())


@pytest.mark.parametrize("arrow", [False, True])
def test_an_error_in_a_micro_batch_says_what_becomes_of_the_batch(tmp_path, arrow):
    """A micro-batch that stops on an expected error may have committed bronze already;
    its line said nothing of that (QA, 2026-11-28: a damaged `state/engine`). It says the
    batch's writes stay, once, and that the next start redoes it; also when the error is
    Arrow's, from a damaged `state/live` file that only the command's line named."""
    from probcep.errors import DamagedTableError, ProbcepError

    table = tmp_path / "lake" / "state" / "engine"
    (table / "_delta_log").mkdir(parents=True)

    class States:
        abandoned = 0

        def abandon(self):
            self.abandoned += 1

    class Frame:
        def collect(self):
            return []

    def process(listed, batch_id, started):
        if arrow:
            raise OSError(f"Could not open Parquet input source '{table}/x.parquet': "
                          f"Parquet magic bytes not found in footer. Either the file ...")
        raise DamagedTableError(f"{table}: its data file x.parquet cannot be read (it is "
                                f"missing): the table is damaged (restore the file from a "
                                f"copy)")

    live = object.__new__(LiveQuery)
    live.states, live.day_end, live.in_batch, live.process = States(), None, False, process
    why = "Parquet magic bytes not found in footer" if arrow else "it is missing"
    with pytest.raises(ProbcepError) as said:
        live.batch(Frame(), 7)
    assert str(said.value) == (
        f"{table}: its data file x.parquet cannot be read ({why}): the table is damaged "
        f"(restore the file from a copy); micro-batch 7 stopped there: what it committed "
        f"stays, once, and the next start redoes the batch")
    assert live.states.abandoned == 1 and not live.in_batch
