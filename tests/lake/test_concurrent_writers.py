"""Writers of one table at once, as real processes (no Spark).

Writers of disjoint slices (three `group-day`s of one night, one pattern each) all land,
round after round, whatever delta-rs makes of their racing commits; writers of the same
slice take turns on its lock, or the second stops with "another run is writing ...",
and the table holds exactly one writer's complete rows, never an empty or mixed day. A
lock or a staging folder left by a dead process is cleared; a live run's never is.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from probcep.errors import ProbcepError
from probcep.lake import locks
from probcep.lake.delta import commit_staged, staging_folder
from probcep.lake.locks import ConcurrentWriteError, Owner
from probcep.lake.tables import BRONZE, GROUPS, UTC_MICROS, same_rows

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SPAWN = mp.get_context("spawn")
DAY = dt.date(2026, 1, 5)
PATTERNS = ("room_visit", "door_loop", "hall_walk")
BARRIER_SECONDS = 120


def group_rows(pattern: str, rnd: int, writer: str = "w", n: int | None = None) -> pa.Table:
    """A day's groups of one pattern, telling apart the round and the writer (by count
    and values) that wrote them."""
    n = n if n is not None else 20 + (rnd * 7 + len(pattern)) % 13
    t = pa.array([rnd * 1000 + i for i in range(n)], pa.int64())
    ts = pa.array([dt.datetime(2026, 1, 5, tzinfo=dt.UTC)] * n, UTC_MICROS)
    return pa.table({
        "pattern": [pattern] * n, "pattern_version": [writer] * n,
        "stream_id": [f"s{i % 4}" for i in range(n)], "t_start": t, "t_first": t,
        "t_end": t, "ts_start": ts, "ts_first": ts, "ts_end": ts,
        "probability": [0.5] * n, "n_matches": [1] * n, "max_match_probability": [0.25] * n,
        "batch_date": pa.array([DAY] * n, pa.date32()),
        "run_id": [f"{writer}-{pattern}-{rnd}"] * n,
    }, schema=GROUPS.schema)


def bronze_rows(day: dt.date, writer: str, n: int) -> pa.Table:
    ts = pa.array([dt.datetime(2026, 1, 5, tzinfo=dt.UTC)] * n, UTC_MICROS)
    return pa.table({
        "stream_id": [f"s{i}" for i in range(n)], "sensor_id": [writer] * n, "ts": ts,
        "symbol": ["Door"] * n, "score": [1.0] * n, "batch_date": pa.array([day] * n, pa.date32()),
        "source_file": [f"{writer}.csv"] * n, "ingest_time": ts,
    }, schema=BRONZE.schema)


def of_pattern(rows: pa.Table, pattern: str) -> pa.Table:
    return rows.filter(pc.equal(rows["pattern"], pattern))


# --- children (spawned: importable, module level) --------------------------------------


def _disjoint_writer(lake, pattern, rounds, barrier, out):
    import deltalake

    real, lost = deltalake.write_deltalake, []

    def counted(*args, **kwargs):  # counts the commits that lost a race
        try:
            return real(*args, **kwargs)
        except deltalake.exceptions.CommitFailedError:
            lost.append(1)
            raise

    deltalake.write_deltalake = counted
    for r in range(rounds):
        lost.clear()
        barrier.wait(BARRIER_SECONDS)
        try:
            GROUPS.replace_day(lake, DAY, group_rows(pattern, r), {"run_id": r},
                               pattern=[pattern])
            out.put((pattern, len(lost), None))
        except BaseException as e:  # the parent reports it
            out.put((pattern, len(lost), f"{type(e).__name__}: {e}"))
        barrier.wait(BARRIER_SECONDS)


def _day_writer(lake, day, rounds, barrier, out):
    """An ingest of its own day: staged Parquet committed into a day-partitioned table."""
    for r in range(rounds):
        barrier.wait(BARRIER_SECONDS)
        try:
            with BRONZE.lock(lake, day), staging_folder(BRONZE.path(lake)) as folder:
                folder.mkdir()
                rows = bronze_rows(day, f"r{r}", 10 + r)
                pq.write_table(rows, folder / "part-00000.parquet")
                commit_staged(folder, rows.schema, BRONZE, lake, day, {"run_id": r})
            out.put((day, r, None))
        except BaseException as e:
            out.put((day, r, f"{type(e).__name__}: {e}"))
        barrier.wait(BARRIER_SECONDS)


def _same_slice_writer(lake, writer, wait, rounds, barrier, out):
    """Writes the same slice as its twin, holding the lock a while (a slow write): gold
    rows in even rounds, a bronze day through staging in odd ones."""
    import deltalake

    locks.WAIT_SECONDS = wait
    waited = []

    class Seen(logging.Handler):
        def emit(self, record):
            waited.append(record.getMessage())

    logging.getLogger(locks.__name__).addHandler(Seen())
    real = deltalake.write_deltalake

    def slow(*args, **kwargs):
        time.sleep(0.25)
        return real(*args, **kwargs)

    deltalake.write_deltalake = slow
    n = 30 if writer == "A" else 45
    for r in range(rounds):
        waited.clear()
        barrier.wait(BARRIER_SECONDS)
        try:
            if r % 2 == 0:
                GROUPS.replace_day(lake, DAY, group_rows("room_visit", r, writer, n),
                                   {"run_id": r}, pattern=["room_visit"])
            else:  # as ingest does: lock, stage, commit
                with BRONZE.lock(lake, DAY), staging_folder(BRONZE.path(lake)) as folder:
                    folder.mkdir()
                    rows = bronze_rows(DAY, f"{writer}{r}", n)
                    pq.write_table(rows, folder / "part-00000.parquet")
                    commit_staged(folder, rows.schema, BRONZE, lake, DAY, {"run_id": r})
            out.put((writer, r, None, bool(waited)))
        except BaseException as e:
            out.put((writer, r, f"{type(e).__name__}: {e}", bool(waited)))
        barrier.wait(BARRIER_SECONDS)


def _run(children, rounds, check):
    """Starts the children (target, args) with a shared barrier and queue; after each
    round, `check(round, [reports])`."""
    barrier, out = SPAWN.Barrier(len(children) + 1), SPAWN.Queue()
    procs = [SPAWN.Process(target=t, args=(*a, rounds, barrier, out)) for t, a in children]
    for p in procs:
        p.start()
    try:
        for r in range(rounds):
            barrier.wait(BARRIER_SECONDS)
            reports = [out.get(timeout=BARRIER_SECONDS) for _ in procs]
            barrier.wait(BARRIER_SECONDS)
            check(r, reports)
    finally:
        barrier.abort()
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()


# --- disjoint slices -----------------------------------------------------------------


def test_group_days_of_three_patterns_at_once_all_land(tmp_path):
    """Three writers replace the same day's rows for their own pattern at once, round
    after round (the first round creates the table): every round, each pattern holds
    exactly its writer's rows of that round.

    Between rounds the day is rewritten as one file, as a night of all the patterns
    writes it: delta-rs then refuses all but the first of the racing commits (each
    rewrites that file), and the others are redone."""
    from deltalake import write_deltalake

    lake, lost = tmp_path / "lake", []

    def check(r, reports):
        assert [e for *_, e in reports if e] == [], reports
        lost.append(sum(n for _, n, _ in reports))
        stored = GROUPS.read(lake, GROUPS.day_filter(DAY, {}))
        assert stored.num_rows == sum(group_rows(p, r).num_rows for p in PATTERNS)
        for p in PATTERNS:
            assert same_rows(of_pattern(stored, p), group_rows(p, r), ignore=()), (p, r)
        write_deltalake(str(GROUPS.path(lake)), stored, mode="overwrite",
                        predicate=GROUPS.day_predicate(DAY, {}))

    _run([(_disjoint_writer, (lake, p)) for p in PATTERNS], 6, check)
    assert sum(n > 0 for n in lost) >= len(lost) // 2, lost  # races lost, and redone


def test_ingests_of_three_days_at_once_all_land(tmp_path):
    """Staged commits of different days into a day-partitioned table, at once."""
    lake = tmp_path / "lake"
    days = [DAY + dt.timedelta(k) for k in range(3)]

    def check(r, reports):
        assert [e for *_, e in reports if e] == [], reports
        for day in days:
            assert same_rows(BRONZE.read(lake, [("batch_date", "=", day)]),
                             bronze_rows(day, f"r{r}", 10 + r), ignore=()), (day, r)
        assert not list(lake.glob("bronze/_staging-*"))

    _run([(_day_writer, (lake, day)) for day in days], 3, check)


# --- the same slice ------------------------------------------------------------------


@pytest.mark.parametrize("wait", [60.0, 0.0])
def test_two_writers_of_one_slice_take_turns_or_the_second_stops(tmp_path, wait):
    """Gold through `Table.replace_day` and bronze as ingest stages and commits it, in
    turns; the writers wait for each other's lock, or do not wait at all."""
    lake = tmp_path / "lake"
    blocked = []

    def expected(writer, r):
        n = 30 if writer == "A" else 45
        return (group_rows("room_visit", r, writer, n) if r % 2 == 0
                else bronze_rows(DAY, f"{writer}{r}", n))

    def check(r, reports):
        table = GROUPS if r % 2 == 0 else BRONZE
        ok = [w for w, _, e, _ in reports if e is None]
        failed = [e for _, _, e, _ in reports if e is not None]
        blocked.extend(failed if wait == 0 else [w for w, *_, waited in reports if waited])
        assert ok, reports
        if wait:
            assert failed == [], reports
        for e in failed:
            assert e.startswith(f"ConcurrentWriteError: another run is writing {table.name} "
                                f"for {DAY}"), e
            assert "\n" not in e
        stored = table.read(lake, table.day_filter(DAY, {}))
        assert stored.num_rows in (30, 45), stored.num_rows  # never empty, never mixed
        writer = "A" if stored.num_rows == 30 else "B"
        assert writer in ok
        assert same_rows(stored, expected(writer, r), ignore=())

    _run([(_same_slice_writer, (lake, w, wait)) for w in "AB"], 4, check)
    assert blocked, "the two writers never met on the lock"
    assert not list(lake.rglob("*.lock"))


# --- locks of dead and live runs -------------------------------------------------------

HOLD = """
import datetime as dt, os, signal, sys, time
from probcep.lake.tables import GROUPS
with GROUPS.lock(sys.argv[1], dt.date.fromisoformat(sys.argv[2]), pattern=["room_visit"]):
    print("held", flush=True)
    if sys.argv[3] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
"""


def _hold(lake, how) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(lake), DAY.isoformat(), how],
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def _lock_file(lake) -> Path:
    return locks.lock_path(GROUPS.path(lake), DAY, "pattern=room_visit")


def test_a_lock_of_a_killed_run_is_taken_over_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(locks, "WAIT_SECONDS", 0.0)
    child = _hold(tmp_path, "die")
    assert child.wait(30) == -signal.SIGKILL
    assert _lock_file(tmp_path).exists()
    with GROUPS.lock(tmp_path, DAY, pattern=["room_visit"]):
        assert json.loads(_lock_file(tmp_path).read_text())["pid"] == os.getpid()
    assert not _lock_file(tmp_path).exists()


def test_a_live_runs_lock_is_waited_for_then_refused_in_one_line(tmp_path):
    child = _hold(tmp_path, "live")
    try:
        started = time.monotonic()
        with pytest.raises(ConcurrentWriteError) as refused:
            with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["room_visit"]},
                                  wait=0.5):
                pass
        assert time.monotonic() - started >= 0.5
        message = str(refused.value)
        assert message.startswith(f"another run is writing gold/groups for {DAY} "
                                  f"(pattern=room_visit): pid {child.pid} on ")
        assert "\n" not in message
        # other patterns of the same day are free meanwhile
        with GROUPS.lock(tmp_path, DAY, pattern=["door_loop"]):
            pass
    finally:
        child.kill()
        child.wait()


def _plant_lock(lake, owner: Owner) -> Path:
    path = _lock_file(lake)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"owner": owner.tag(), "host": "h", "pid": owner.pid,
                                "since": "then", "token": "t"}))
    return path


def test_a_lock_of_a_reused_pid_is_taken_over_one_of_another_host_is_not(tmp_path):
    me = Owner.me()
    _plant_lock(tmp_path, Owner(me.machine, me.boot, me.pid, me.start - 1))  # pid reused
    with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["room_visit"]}, wait=0):
        pass
    _plant_lock(tmp_path, Owner("0" * 12, me.boot, 1, 1))  # elsewhere: cannot be judged
    with pytest.raises(ConcurrentWriteError, match="another run is writing"):
        with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["room_visit"]}, wait=0):
            pass


@pytest.mark.parametrize("kind,age", [("dir", 0), ("dir", 120), ("fifo", 120),
                                      ("link", 120)])
def test_a_lock_path_that_is_no_file_is_refused_at_once_in_one_line(tmp_path, kind, age):
    """A directory there, older than a stale lock's age, was removed with `unlink`: a
    traceback (IsADirectoryError), exit 1; a young one was waited for as a run; a FIFO
    blocked the release's read for good (QA)."""
    path = _lock_file(tmp_path)
    path.parent.mkdir(parents=True)
    {"dir": path.mkdir, "fifo": lambda: os.mkfifo(path),
     "link": lambda: path.symlink_to(tmp_path / "elsewhere")}[kind]()
    if kind != "link":
        os.utime(path, (time.time() - age, time.time() - age))
    started = time.monotonic()
    with pytest.raises(ProbcepError, match=f"^{path} is in the way of the lock on "
                       f"gold/groups for {DAY} \\(pattern=room_visit\\): a lock is a file "
                       r"and this is not one \(remove it\)$"):
        with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["room_visit"]}, wait=60):
            pass
    assert time.monotonic() - started < 30 and os.path.lexists(path)


def test_a_file_where_a_locks_folder_goes_is_refused_in_one_line(tmp_path):
    """It gave a NotADirectoryError traceback (QA, 2026-11-27)."""
    folder = _lock_file(tmp_path).parent
    folder.parent.mkdir(parents=True)
    folder.write_text("not a folder")
    with pytest.raises(ProbcepError, match=f"^{folder} is in the way of the lock on "
                       f"gold/groups for {DAY} \\(pattern=room_visit\\): a file or part of "
                       r"its path is no folder \(remove it\)$"):
        with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["room_visit"]}, wait=0):
            pass
    assert folder.read_text() == "not a folder"


def test_a_lock_is_reentrant_in_its_thread_and_held_against_others(tmp_path):
    seen = []

    def other():
        try:
            with locks.slice_lock(tmp_path, [GROUPS], DAY, {"pattern": ["a"]}, wait=0):
                seen.append("held")
        except ConcurrentWriteError as e:
            seen.append(str(e))

    with GROUPS.lock(tmp_path, DAY, pattern=["a", "b"]):
        with GROUPS.lock(tmp_path, DAY, pattern=["a"]):  # the same thread: re-entered
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        assert locks.lock_path(GROUPS.path(tmp_path), DAY, "pattern=a").exists()
    assert seen[0].startswith(f"another run is writing gold/groups for {DAY} (pattern=a)")


# --- staging folders -----------------------------------------------------------------


def test_staging_cleanup_removes_dead_runs_folders_only(tmp_path):
    table = GROUPS.path(tmp_path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = {p: Owner(Owner.me().machine, Owner.me().boot, p.pid,
                          locks._stat(p.pid)[1]) for p in (live, gone)}
        gone.kill()
        gone.wait()
        me = owner[live]

        def folder(tag: str | None) -> Path:
            name = f"_staging-groups-{uuid.uuid4().hex}" + (f"-{tag}" if tag else "")
            (tmp_path / "gold" / name).mkdir(parents=True)
            (tmp_path / "gold" / name / "part-0.arrow").write_bytes(b"x")
            return tmp_path / "gold" / name

        kept = [folder(owner[live].tag()), folder(Owner.me().tag()),
                folder(Owner("0" * 12, me.boot, gone.pid, 1).tag()),  # another host
                folder(None)]  # no owner, recent
        removed = [folder(owner[gone].tag()),
                   folder(Owner(me.machine, me.boot, live.pid, me.start + 1).tag()),  # reused
                   folder(None)]
        os.utime(removed[-1], (time.time() - 2 * 86400,) * 2)  # no owner, two days old
        other_table = folder(owner[gone].tag()).rename(
            tmp_path / "gold" / f"_staging-groups_v2-{uuid.uuid4().hex}-{owner[gone].tag()}")
        with staging_folder(table) as mine:
            mine.mkdir()
            assert all(f.exists() for f in kept)
            assert not any(f.exists() for f in removed)
            assert other_table.exists()  # another table's
            assert Owner.from_tag(mine.name.rsplit("-", 1)[1]) == Owner.me()
        assert not mine.exists()
    finally:
        for p in (live, gone):
            p.kill()
            p.wait()
        shutil.rmtree(tmp_path / "gold", ignore_errors=True)


def test_a_staging_folder_that_is_gone_commits_nothing(tmp_path):
    rows = bronze_rows(DAY, "first", 12)
    with staging_folder(BRONZE.path(tmp_path)) as folder:
        folder.mkdir()
        pq.write_table(rows, folder / "part-00000.parquet")
        commit_staged(folder, rows.schema, BRONZE, tmp_path, DAY, {"run_id": "first"})
    version = BRONZE.version(tmp_path)
    with pytest.raises(ConcurrentWriteError, match=f"bronze/readings for {DAY}: staging"):
        commit_staged(tmp_path / "_staging-readings-gone", rows.schema, BRONZE, tmp_path, DAY,
                      {"run_id": "second"})
    assert BRONZE.version(tmp_path) == version
    assert same_rows(BRONZE.read(tmp_path), rows, ignore=())


def test_a_commit_that_raises_after_the_move_leaves_no_file_in_the_table(tmp_path,
                                                                         monkeypatch):
    """Files moved into the partition and then not committed (the statistics or the
    commit raised) are removed at once: the staging folder, with its record of them,
    goes on the way out, so no later write could find them, and a plain Parquet reader
    of the folder would count their rows twice."""
    from probcep.lake import delta

    rows = bronze_rows(DAY, "first", 12)
    with staging_folder(BRONZE.path(tmp_path)) as folder:
        folder.mkdir()
        pq.write_table(rows, folder / "part-00000.parquet")
        commit_staged(folder, rows.schema, BRONZE, tmp_path, DAY, {"run_id": "first"})
    on_disk = sorted(BRONZE.path(tmp_path).rglob("*.parquet"))
    version = BRONZE.version(tmp_path)

    def broken(*args, **kwargs):
        raise OverflowError("date value out of range")

    monkeypatch.setattr(delta, "add_action", broken)
    with pytest.raises(OverflowError), staging_folder(BRONZE.path(tmp_path)) as folder:
        folder.mkdir()
        pq.write_table(bronze_rows(DAY, "second", 5), folder / "part-00000.parquet")
        commit_staged(folder, rows.schema, BRONZE, tmp_path, DAY, {"run_id": "second"})
    assert sorted(BRONZE.path(tmp_path).rglob("*.parquet")) == on_disk
    assert BRONZE.version(tmp_path) == version
    assert same_rows(BRONZE.read(tmp_path), rows, ignore=())


# --- commits that lose the race --------------------------------------------------------


def test_a_lost_commit_is_redone_unless_the_slice_itself_changed(tmp_path, monkeypatch):
    import deltalake
    from deltalake.exceptions import CommitFailedError

    from probcep.lake import tables

    monkeypatch.setattr(tables, "BACKOFF_SECONDS", (0.001, 0.002))
    GROUPS.replace_day(tmp_path, DAY, group_rows("room_visit", 0), {}, pattern=["room_visit"])
    real, calls = deltalake.write_deltalake, []

    def loses_once(*args, **kwargs):  # another pattern's commit landed first
        calls.append(1)
        if len(calls) == 1:
            real(*args[:1], group_rows("door_loop", 0), mode="overwrite",
                 predicate=GROUPS.day_predicate(DAY, {"pattern": ["door_loop"]}))
            raise CommitFailedError("a concurrent transactions added new data")
        return real(*args, **kwargs)

    monkeypatch.setattr(deltalake, "write_deltalake", loses_once)
    assert GROUPS.replace_day(tmp_path, DAY, group_rows("room_visit", 1), {},
                              pattern=["room_visit"])
    stored = GROUPS.read(tmp_path)
    assert len(calls) == 2
    assert same_rows(of_pattern(stored, "room_visit"), group_rows("room_visit", 1), ignore=())
    assert same_rows(of_pattern(stored, "door_loop"), group_rows("door_loop", 0), ignore=())

    calls.clear()

    def intruder(*args, **kwargs):  # a writer that ignored the lock wrote this very slice
        calls.append(1)
        real(*args[:1], group_rows("room_visit", 9, "intruder"), mode="overwrite",
             predicate=GROUPS.day_predicate(DAY, {"pattern": ["room_visit"]}))
        raise CommitFailedError("a concurrent transactions added new data")

    monkeypatch.setattr(deltalake, "write_deltalake", intruder)
    with pytest.raises(ConcurrentWriteError, match=f"another run is writing gold/groups for {DAY}"):
        GROUPS.replace_day(tmp_path, DAY, group_rows("room_visit", 2), {},
                           pattern=["room_visit"])
    assert len(calls) == 1  # not redone over the other run's rows


def test_a_dead_runs_moved_files_are_removed_unless_committed(tmp_path):
    """Files a dead run moved into the table (its staging folder's `_moved.json`) are
    removed when no commit names its write, kept when one does; a live run's stay."""
    from probcep.lake.delta import MOVED_FILE, STAGING, clear_dead_staging

    rows = bronze_rows(DAY, "first", 12)
    with staging_folder(BRONZE.path(tmp_path)) as folder:
        folder.mkdir()
        pq.write_table(rows, folder / "part-00000.parquet")
        assert commit_staged(folder, rows.schema, BRONZE, tmp_path, DAY, {"run_id": "first"})
    committed = BRONZE.files(tmp_path)
    write = DeltaTable(str(BRONZE.path(tmp_path))).history(1)[0]["write_id"]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = Owner(Owner.me().machine, Owner.me().boot, gone.pid, 1)

    def leftover(owner, write_id, files):
        folder = BRONZE.path(tmp_path) / STAGING / f"{uuid.uuid4().hex}-{owner.tag()}"
        folder.mkdir()
        (folder / MOVED_FILE).write_text(json.dumps(
            {"write": write_id, "version": BRONZE.version(tmp_path) - 1, "files": files}))
        return folder

    orphan = BRONZE.path(tmp_path) / f"batch_date={DAY}" / "part-orphan.parquet"
    pq.write_table(rows, orphan)
    live_orphan = orphan.with_name("part-live.parquet")
    pq.write_table(rows, live_orphan)
    rel = [c.split("/bronze/readings/")[1] for c in committed]
    leftovers = [leftover(dead, write, rel),  # committed: its files stay
                 leftover(dead, "0" * 32, [f"batch_date={DAY}/part-orphan.parquet"]),
                 leftover(Owner.me(), "1" * 32, [f"batch_date={DAY}/part-live.parquet"])]
    cleared = clear_dead_staging(BRONZE.path(tmp_path))
    assert sorted(cleared) == sorted(leftovers[:2])
    assert not orphan.exists() and live_orphan.exists() and leftovers[2].exists()
    assert same_rows(BRONZE.read(tmp_path), rows, ignore=())


def test_a_dead_runs_files_stay_when_the_log_cannot_be_read_in_full(tmp_path, monkeypatch):
    """A history shorter than the commits since the dead run's read proves nothing: its
    files stay (delta-rs lists no commit under a path with `#`; the cleanup then removed
    the files of the table's current version)."""
    from probcep.lake.delta import MOVED_FILE, STAGING, clear_dead_staging

    rows = bronze_rows(DAY, "first", 12)
    with staging_folder(BRONZE.path(tmp_path)) as folder:
        folder.mkdir()
        pq.write_table(rows, folder / "part-00000.parquet")
        assert commit_staged(folder, rows.schema, BRONZE, tmp_path, DAY, {"run_id": "first"})
    write = DeltaTable(str(BRONZE.path(tmp_path))).history(1)[0]["write_id"]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = Owner(Owner.me().machine, Owner.me().boot, gone.pid, 1)
    folder = BRONZE.path(tmp_path) / STAGING / f"{uuid.uuid4().hex}-{dead.tag()}"
    folder.mkdir()
    rel = [c.split("/bronze/readings/")[1] for c in BRONZE.files(tmp_path)]
    (folder / MOVED_FILE).write_text(json.dumps(
        {"write": write, "version": BRONZE.version(tmp_path) - 1, "files": rel}))
    monkeypatch.setattr(DeltaTable, "history", lambda self, limit=None: [])
    assert clear_dead_staging(BRONZE.path(tmp_path)) == [folder]
    assert same_rows(BRONZE.read(tmp_path), rows, ignore=())


def test_several_days_are_replaced_in_one_commit_and_only_their_slices(tmp_path):
    """`replace_days`: the days named, of the key values named, in one commit; another
    day and another pattern of the same days keep their rows."""
    def on(day, rows):
        return rows.set_column(rows.schema.get_field_index("batch_date"), "batch_date",
                               pa.array([day] * rows.num_rows, pa.date32()))

    days = [DAY + dt.timedelta(k) for k in range(3)]
    for day in days:
        for pattern in ("room_visit", "door_loop"):
            GROUPS.replace_day(tmp_path, day, on(day, group_rows(pattern, 0)), {},
                               pattern=[pattern])
    before = GROUPS.version(tmp_path)
    new = pa.concat_tables([on(days[0], group_rows("room_visit", 1)),
                            on(days[2], group_rows("room_visit", 2))])
    assert GROUPS.replace_days(tmp_path, [days[2], days[0]], new, {},
                               pattern=["room_visit"])
    assert GROUPS.version(tmp_path) == before + 1
    stored = GROUPS.read(tmp_path)
    for day, rnd in zip(days, (1, 0, 2)):
        mine = stored.filter(pc.equal(stored["batch_date"], pa.scalar(day, pa.date32())))
        assert same_rows(of_pattern(mine, "room_visit"),
                         on(day, group_rows("room_visit", rnd)), ignore=())
        assert same_rows(of_pattern(mine, "door_loop"), on(day, group_rows("door_loop", 0)),
                         ignore=())
    assert not GROUPS.replace_days(tmp_path, days[::2], new, {}, pattern=["room_visit"])


@pytest.mark.parametrize("where", ["writing its record", "just after taking it"])
def test_a_lock_interrupted_while_taken_is_not_left(tmp_path, monkeypatch, where):
    """A SIGTERM (here an exception) at any point of taking a lock leaves no lock and no
    draft (QA, 2026-11-27: the lock file was made, then written, and one interrupted in
    between stayed: a retry on another worker waited 600 s for it)."""
    real_link, real_fsync = os.link, os.fsync

    def link(src, dst):
        real_link(src, dst)
        raise KeyboardInterrupt(where)

    def fsync(fd):
        real_fsync(fd)
        raise KeyboardInterrupt(where)

    if where == "writing its record":
        monkeypatch.setattr(os, "fsync", fsync)
    else:
        monkeypatch.setattr(os, "link", link)
    with pytest.raises(KeyboardInterrupt):
        with GROUPS.lock(tmp_path, DAY, pattern=["room_visit"]):
            pass
    monkeypatch.undo()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    with GROUPS.lock(tmp_path, DAY, pattern=["room_visit"]):  # free: taken at once
        assert len(list(tmp_path.rglob("*.lock"))) == 1
    assert list(tmp_path.rglob("*.lock")) == []
