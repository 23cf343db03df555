"""`state/live` by bucket, without Spark: a micro-batch rewrites only the buckets it
touched (the others keep their files), as one commit carrying its application
transaction; files written by a batch that never committed change nothing, and its
retry commits once."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake

from probcep.engine import Query, StreamMatcher
from probcep.errors import ProbcepError
from probcep.lake.tables import LIVE_STATE, commit_once
from probcep.pipeline.live_states import BUCKETS, MARK, LiveStates, bucket

APP = "probcep-live-test"
PATTERN = SimpleNamespace(name="p", version="1",
                          query=Query.build("a b+ a", "ab", policy="complete", threshold=0.0))


def batch(states: LiveStates, batch_id: int, fed: dict[str, int], complete: int,
          commit: bool = True) -> bool:
    """Advance the streams `fed` (stream -> how many timesteps of "a" to feed), the
    way live mode's `advance` does, and commit (or not: a crash before the commit)."""
    states.begin(batch_id)
    for _, chunk in states.chunks(states.needed(sorted(fed), ends_day=False)):
        for sid in chunk:
            key = ("p", "1", sid)
            matcher = states.matcher(key)
            if sid in fed:
                t = matcher.next_t or 0
                matcher.feed_columns(t, np.tile([[1.0, 0.0]], (fed[sid], 1)))
                states.keep(key, matcher, quiet=False)
    files, replaced = states.written(complete)
    if not commit:  # its files are written
        states.abandon()
        return False
    done = commit_once(LIVE_STATE, states.lake, files, {"batch_id": batch_id}, APP, batch_id,
                       mode="overwrite", partition_by=["bucket"], partition_filters=replaced)
    states.committed(complete)
    return done


def saved(lake) -> dict[str, int]:
    rows = LIVE_STATE.read(lake)
    rows = rows.filter(pc.not_equal(rows["pattern"], ""))
    return {s: StreamMatcher.from_bytes(PATTERN.query, b).next_t
            for s, b in zip(rows["stream_id"].to_pylist(), rows["state"].to_pylist())}


def files_by_bucket(lake) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for uri in LIVE_STATE.files(lake):
        b = int(uri.split("bucket=")[1].split("/")[0])
        out.setdefault(b, []).append(uri)
    return out


def test_a_batch_rewrites_only_the_buckets_it_touched_in_one_commit(tmp_path):
    ids = [f"s{i}" for i in range(40)]
    states = LiveStates(tmp_path, [PATTERN], streams=3, policy="lru")
    assert batch(states, 0, {s: 2 for s in ids}, complete=2)
    assert saved(tmp_path) == {s: 2 for s in ids}
    before = files_by_bucket(tmp_path)
    assert set(before) == {bucket(s) for s in ids} | {MARK}
    assert all(0 <= b < BUCKETS for b in before if b != MARK)

    assert batch(states, 1, {"s3": 1}, complete=3)
    after = files_by_bucket(tmp_path)
    assert saved(tmp_path) == {**{s: 2 for s in ids}, "s3": 3}
    changed = {b for b in after if after[b] != before.get(b)}
    assert changed == {bucket("s3"), MARK}
    assert LIVE_STATE.version(tmp_path) == 1 + 1  # the table's creation, two commits

    # a fresh process (empty cache): every state comes from the table
    again = LiveStates(tmp_path, [PATTERN], streams=3, policy="priority")
    assert batch(again, 2, {"s3": 1, "s7": 1}, complete=4)
    assert saved(tmp_path) == {**{s: 2 for s in ids}, "s3": 4, "s7": 3}
    assert again.cache.misses == len(ids)  # all open: every one is needed


def test_files_of_a_batch_that_never_committed_change_nothing_and_its_retry_commits_once(
        tmp_path):
    ids = [f"s{i}" for i in range(10)]
    states = LiveStates(tmp_path, [PATTERN], streams=4, policy="creation")
    assert batch(states, 0, {s: 1 for s in ids}, complete=1)
    version = LIVE_STATE.version(tmp_path)
    assert not batch(states, 1, {s: 1 for s in ids}, complete=2, commit=False)  # a crash
    assert LIVE_STATE.version(tmp_path) == version
    assert saved(tmp_path) == {s: 1 for s in ids}
    assert batch(states, 1, {s: 1 for s in ids}, complete=2)  # the retry
    assert saved(tmp_path) == {s: 2 for s in ids}
    assert not batch(states, 1, {s: 1 for s in ids}, complete=2)  # written already
    assert saved(tmp_path) == {s: 2 for s in ids}
    assert states.complete == 2


def test_a_vacuum_every_so_many_batches_deletes_the_replaced_files_and_keeps_the_cache(
        tmp_path, monkeypatch):
    monkeypatch.setattr("probcep.pipeline.live_states.VACUUM_EVERY", 3)
    ids = [f"s{i}" for i in range(12)]
    states = LiveStates(tmp_path, [PATTERN], streams=len(ids), policy="lru")

    def on_disk() -> set[str]:
        return {str(p.relative_to(tmp_path / "state" / "live"))
                for p in (tmp_path / "state" / "live").glob("bucket=*/*.parquet")}

    def in_table() -> set[str]:
        return {u.split("/state/live/")[1] for u in LIVE_STATE.files(tmp_path)}

    for batch_id in range(3):  # batch 2 ends with a vacuum
        assert batch(states, batch_id, {s: 1 for s in ids}, complete=batch_id + 1)
        assert (on_disk() == in_table()) == (batch_id != 1)  # 0: nothing replaced yet
    assert not batch(states, 3, {s: 1 for s in ids}, complete=4, commit=False)  # a crash
    assert on_disk() > in_table()
    misses = states.cache.misses
    for batch_id in (3, 4, 5):  # batch 5 ends with a vacuum
        assert batch(states, batch_id, {s: 1 for s in ids}, complete=batch_id + 1)
    assert on_disk() == in_table()  # the crashed batch's files too
    assert batch(states, 6, {s: 1 for s in ids}, complete=7)
    assert saved(tmp_path) == {s: 7 for s in ids}
    # read back once after the crash; the vacuums did not make the cache look stale
    assert states.cache.misses - misses == len(ids)


def test_a_vacuum_by_another_process_keeps_the_cache_and_new_rows_forget_it(tmp_path):
    """`probcep vacuum` beside live mode commits its start and end to state/live: each
    made the next batch read every state back (QA, 2026-11-27). Rows another writer
    committed still must."""
    from deltalake import DeltaTable

    ids = [f"s{i}" for i in range(8)]
    states = LiveStates(tmp_path, [PATTERN], streams=len(ids), policy="lru")
    assert batch(states, 0, {s: 1 for s in ids}, complete=1)
    assert batch(states, 1, {s: 1 for s in ids}, complete=2)
    for _ in range(2):  # vacuums in a row, as `probcep vacuum` runs them
        version = LIVE_STATE.version(tmp_path)
        DeltaTable(str(LIVE_STATE.path(tmp_path))).vacuum(
            retention_hours=0, dry_run=False, enforce_retention_duration=False)
        assert LIVE_STATE.version(tmp_path) > version  # it committed
        misses = states.cache.misses
        assert batch(states, 2 + _, {s: 1 for s in ids}, complete=3 + _)
        assert states.cache.misses == misses
    assert saved(tmp_path) == {s: 4 for s in ids}
    other = LiveStates(tmp_path, [PATTERN], streams=len(ids), policy="lru")
    assert batch(other, 4, {"s0": 1}, complete=5)  # another writer's rows
    misses = states.cache.misses
    assert batch(states, 5, {s: 1 for s in ids}, complete=6)
    assert states.cache.misses == misses + len(ids)
    assert saved(tmp_path) == {**{s: 5 for s in ids}, "s0": 6}


def test_a_state_table_from_before_the_buckets_is_refused_in_one_line(tmp_path):
    """A lake upgraded in place (QA, 2026-11-28): an unpartitioned `state/live` stops
    live mode with what to do, an error the command prints as one line (exit 2)."""
    write_deltalake(str(LIVE_STATE.path(tmp_path)), LIVE_STATE.schema.empty_table()
                    .drop_columns(["bucket"]))
    states = LiveStates(tmp_path, [PATTERN], streams=3, policy="lru")
    with pytest.raises(ProbcepError, match="written before state/live was partitioned by "
                       "bucket; stop live mode and start it with a fresh checkpoint"):
        states.begin(0)
