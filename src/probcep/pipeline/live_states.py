"""Live mode's engine states: at most a cache's capacity of them in memory, the rest in
the state table `state/live` (the paper's §5), which each micro-batch rewrites a bucket
of streams at a time.

Between micro-batches the matchers of at most `live_cache_streams` streams (one per
exact pattern each) stay in memory, in a `StateCache` with the eviction policy
`live_cache_policy`; every other state is only a row of `state/live`. A micro-batch
needs the state of every stream with readings in it and of every stream with something
open (a live run or an open group: silence may make its groups final, and alerts must
not wait); a *quiet* state (nothing open) of a stream without readings is left as it is
(stepping it over silence later gives the same state) until its day ends, when it is
dropped as the night drops it. A needed state that is not cached is read back from the
table (a *miss*), in bulk for a chunk of at most a cache's worth of streams.

`state/live` is partitioned by `bucket`, crc32(stream id) mod BUCKETS (the complete
mark in bucket MARK). A micro-batch takes the streams it needs in bucket order, in
chunks of at most the cache's capacity, and once a bucket's streams are done writes
the bucket anew (the last chunk's after the batch's alerts) as a Parquet file inside
the table: its rows the batch did not
touch, copied a row group at a time from the bucket's current file, and the states it
changed. The batch's new files and the removal of the files they replace are one Delta
commit, last of its writes, carrying the batch's application transaction: the table
never shows half a batch, and a crash before the commit leaves only files no snapshot
names (vacuum removes them). So what passes through memory at once is a chunk's states
and a bucket file's row group, whatever the number of streams; what remains per stream
is the id of each stream the batch advances (docs/live.md).

After a crash the cache is empty and every state comes from the table: the policy
changes which reads miss, never a row.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from probcep.engine import StreamMatcher
from probcep.engine.state_cache import StateCache
from probcep.errors import ProbcepError
from probcep.lake.delta import add_action
from probcep.lake.failures import damaged
from probcep.lake.tables import LIVE_STATE
from probcep.pipeline.group_day import PROCESSED

#: (pattern, pattern version, stream id)
Key = tuple[str, str, str]
_SEP = "\x1f"
#: Partitions of `state/live`. A batch rewrites every bucket it touches whole, so a
#: bucket should hold few streams (at 40,000 streams, 156); each bucket is a file in the
#: table's snapshot and a file read when a batch looks for open streams, so not too
#: many either. Fixed: changing it means rewriting the table.
BUCKETS = 256
#: Batches between two vacuums of `state/live` (`LiveStates.committed`).
VACUUM_EVERY = 30
#: The bucket of the complete mark (no stream's).
MARK = -1
#: Rows per row group of a bucket file: what a copy of untouched rows holds at once.
ROW_GROUP = 1024
#: The columns of a bucket file (the bucket is the partition value, in the path).
FILE_SCHEMA = pa.schema([f for f in LIVE_STATE.schema if f.name != "bucket"])


def bucket(stream_id: str) -> int:
    """The stream's bucket: stable across processes and machines (unlike `hash`)."""
    return zlib.crc32(stream_id.encode()) % BUCKETS


def _joined(table) -> pa.Array:
    return pc.binary_join_element_wise(table["pattern"], table["pattern_version"],
                                       table["stream_id"], _SEP)


class LiveStates:
    """The engine states of live mode over one lake (see the module's docstring)."""

    def __init__(self, lake, patterns, streams: int, policy: str):
        self.lake, self.patterns = lake, patterns
        self.path = LIVE_STATE.path(lake)
        self.capacity_streams = streams
        self.cache = StateCache(streams * max(1, len(patterns)), policy,
                                load=self._load, spill=self._spill)
        self.queries = {(p.name, p.version): p.query for p in patterns}
        self.shared = {k: StreamMatcher(q).transducer for k, q in self.queries.items()}
        self.version: int | None = -1  # the state/live version the cache agrees with
        self.complete: int | None = None
        self.peak = 0  # the most states the cache ever held
        self.batch_id = -1
        self.files: dict[int, list[str]] = {}  # bucket -> its current files
        self._begin_clean()

    def _begin_clean(self):
        #: per bucket, the keys this batch changed and has not written yet: quiet or
        #: not (None: dropped)
        self.touched: dict[int, dict[Key, bool | None]] = {}
        self.evicted: dict[Key, bytes] = {}  # changed, then evicted, not yet written
        self.staged: dict[Key, bytes] = {}  # read from the table for the current chunk
        #: bucket -> the add action of its new file, not yet committed (None: emptied)
        self.pending: dict[int, object] = {}

    # --- a micro-batch ----------------------------------------------------------------

    def begin(self, batch_id: int) -> None:
        """Start a micro-batch: list the table's files by bucket and read the complete
        mark; when the table's rows moved on without this cache (a restart, a failed
        batch), forget the cache. A `probcep vacuum` run beside live mode commits too, but
        changes no row: the cache stands (QA: every state was read back after one)."""
        self._begin_clean()
        self.batch_id = batch_id
        version = LIVE_STATE.version(self.lake)
        if version != self.version:
            rows = LIVE_STATE.data_version(self.lake)  # None: no table
            if rows is None or self.version is None or rows > self.version:
                self.cache._entries.clear()
            self.version = version
        self.files, self.complete = {}, None
        if version is None:
            return
        table = LIVE_STATE.opened(self.lake, version)
        if table.metadata().partition_columns != ["bucket"]:
            raise ProbcepError(f"{self.path}: written before state/live was partitioned by "
                             f"bucket; stop live mode and start it with a fresh checkpoint "
                             f"and without this table (the night's states seed it again)")
        added = pa.table(table.get_add_actions(flatten=True)) \
            .select(["path", "partition.bucket"])
        for rel, b in zip(added["path"].to_pylist(), added["partition.bucket"].to_pylist()):
            self.files.setdefault(b, []).append(str(self.path / rel))
        if self.files.get(MARK):
            mark = ds.dataset(self.files[MARK], format="parquet").to_table(
                columns=["next_t"])
            self.complete = mark["next_t"][0].as_py() if mark.num_rows else None

    def seed(self, states: Iterable[pa.RecordBatch]) -> None:
        """The first batch: start from these saved states (the night's of the day
        before, `saved_states`; never quiet, the night keeps no quiet state), written
        into their buckets' new files as they come, a batch of rows at a time. The table
        holds no state yet (no engine ran before the first complete mark)."""
        writers: dict[int, tuple[str, Path, pq.ParquetWriter]] = {}
        try:
            for part in states:
                where = np.array([bucket(s) for s in part.column("stream_id").to_pylist()])
                rows = pa.table({
                    "pattern": part.column("pattern"),
                    "pattern_version": part.column("pattern_version"),
                    "stream_id": part.column("stream_id"),
                    "next_t": pa.nulls(part.num_rows, pa.int64()),
                    "state": part.column("state"),
                    "batch_id": pa.array(np.full(part.num_rows, self.batch_id, np.int64)),
                    "quiet": pa.array(np.zeros(part.num_rows, bool))}, schema=FILE_SCHEMA)
                for b in np.unique(where).tolist():
                    if b not in writers:
                        rel, path = self._new_file(b)
                        writers[b] = rel, path, pq.ParquetWriter(path, FILE_SCHEMA,
                                                                 compression="snappy")
                    writers[b][2].write_table(rows.filter(pa.array(where == b)),
                                              row_group_size=ROW_GROUP)
        finally:
            for _, _, out in writers.values():
                out.close()
        for b, (rel, path, _) in sorted(writers.items()):
            self.pending[b] = add_action(path, rel, {"bucket": str(b)}, LIVE_STATE.schema,
                                         "bucket")
            self.files[b] = [str(path)]

    def needed(self, with_rows: list[str], ends_day: bool) -> list[str]:
        """The streams a piece must advance, in bucket order: those with readings, those
        with something open, and, when the piece ends a day, every stream with a state
        (read from the buckets' files: the stream ids only)."""
        for b in sorted(self.touched):  # an earlier piece's last chunk: its buckets'
            self._write_bucket(b)  # files must say what that piece left open or dropped
        ids = set(with_rows)
        files = [f for b, fs in self.files.items() if b != MARK for f in fs]
        if files:
            scan = ds.dataset(files, format="parquet")
            where = None if ends_day else pc.field("quiet") == pa.scalar(False)
            for part in scan.to_batches(columns=["stream_id"], filter=where):
                ids.update(part.column(0).to_pylist())
        return sorted(ids, key=lambda s: (bucket(s), s))

    def chunks(self, ids: list[str]):
        """(offset, chunk) of the streams `ids` (in bucket order), a cache's capacity at
        a time, their states not cached read first; after each chunk but the last, the
        buckets whose streams are all done are written (`_write_bucket`). The last
        chunk's, at most a cache's worth, are written by `written`, after the batch's
        alerts and status: when the cache holds every stream the batch needs, writing
        state is off the path from a reading to its alert."""
        step = self.capacity_streams
        for c in range(0, len(ids), step):
            chunk = ids[c:c + step]
            self._prefetch(chunk)
            yield c, chunk
            if c + step < len(ids):
                following = bucket(ids[c + step])
                for b in sorted(b for b in self.touched if b < following):
                    self._write_bucket(b)

    def _prefetch(self, ids: list[str]) -> None:
        """Read the saved states of these streams that are not cached from their
        buckets' current files, in one read."""
        self.staged.clear()
        want = {s for s in ids for p in self.patterns
                if (p.name, p.version, s) not in self.cache._entries}
        files = sorted({f for s in want for f in self.files.get(bucket(s), [])})
        if not files:
            return
        rows = ds.dataset(files, format="parquet").to_table(
            columns=["pattern", "pattern_version", "stream_id", "state"],
            filter=pc.field("stream_id").isin(sorted(want)))
        for p, v, s, b in zip(rows["pattern"].to_pylist(),
                              rows["pattern_version"].to_pylist(),
                              rows["stream_id"].to_pylist(), rows["state"].to_pylist()):
            if (p, v, s) not in self.cache._entries:
                self.staged[(p, v, s)] = b

    def matcher(self, key: Key) -> StreamMatcher:
        """The key's matcher: cached, read back (a miss), or fresh."""
        saved = key in self.cache._entries or key in self.evicted or key in self.staged
        found = self.cache.get(key) if saved else None
        return found or StreamMatcher(self.queries[key[:2]], self.shared[key[:2]])

    def keep(self, key: Key, matcher: StreamMatcher, quiet: bool) -> None:
        self.touched.setdefault(bucket(key[2]), {})[key] = quiet
        self.evicted.pop(key, None)
        self.cache.put(key, matcher)
        self.peak = max(self.peak, len(self.cache))

    def drop(self, key: Key) -> None:
        self.touched.setdefault(bucket(key[2]), {})[key] = None
        self.evicted.pop(key, None)
        self.staged.pop(key, None)
        self.cache.drop(key)

    def written(self, complete: int | None) -> tuple[list, list]:
        """Write the complete mark's file; the batch's commit of `state/live`: (add
        actions of its new files, the partition filter of the buckets they replace)."""
        for b in sorted(self.touched):  # the last chunk's (`chunks`)
            self._write_bucket(b)
        mark = pa.table({"pattern": [""], "pattern_version": [""], "stream_id": [PROCESSED],
                         "next_t": pa.array([complete], pa.int64()),
                         "state": pa.nulls(1, pa.binary()),
                         "batch_id": pa.array([self.batch_id], pa.int64()),
                         "quiet": pa.nulls(1, pa.bool_())}).cast(FILE_SCHEMA)
        rel, path = self._new_file(MARK)
        pq.write_table(mark, path)
        adds = [a for a in self.pending.values() if a is not None]
        adds.append(add_action(path, rel, {"bucket": str(MARK)}, LIVE_STATE.schema, "bucket"))
        replaced = [str(b) for b in sorted(self.pending)] + [str(MARK)]
        return adds, [("bucket", "in", replaced)]

    def committed(self, complete: int | None) -> None:
        """The batch's `state/live` is written: the cache agrees with the new version.
        Every VACUUM_EVERY batches the files no longer in it are deleted: each batch
        replaces up to BUCKETS files, and only this process reads the table, always at
        its newest version, between batches (no file of a batch in progress exists)."""
        self.version = LIVE_STATE.version(self.lake)
        self.complete = complete
        self._begin_clean()
        if self.version is not None and (self.batch_id + 1) % VACUUM_EVERY == 0:
            from deltalake import DeltaTable

            table = DeltaTable(str(self.path))
            table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False,
                         full=True)  # full: files of batches that never committed too
            self.version = LIVE_STATE.version(self.lake)  # vacuum may commit (its start, end)

    def abandon(self) -> None:
        """The batch failed: the next one starts from the table alone (its files not
        committed stay unreferenced: vacuum removes them)."""
        self.version = -1
        self.cache._entries.clear()
        self._begin_clean()

    # --- a bucket's new file ------------------------------------------------------------

    def _write_bucket(self, b: int) -> None:
        """Write bucket b's new file: its current rows the batch did not change, copied a
        row group at a time, then the states the batch changed (those cached serialized
        now); the file replaces the bucket's in the batch's commit."""
        changed = self.touched.pop(b)
        gone = pa.array([_SEP.join(k) for k in changed], pa.string())
        rel, path = self._new_file(b)
        rows = 0
        with pq.ParquetWriter(path, FILE_SCHEMA, compression="snappy") as out:
            for source in self.files.get(b, []):
                with damaged(file=source):
                    reader = pq.ParquetFile(source)
                for part in reader.iter_batches(
                        batch_size=ROW_GROUP, columns=FILE_SCHEMA.names):
                    part = part.filter(pc.invert(pc.is_in(_joined(part), value_set=gone)))
                    if part.num_rows:
                        out.write_batch(part.cast(FILE_SCHEMA), row_group_size=ROW_GROUP)
                        rows += part.num_rows
            keys = [k for k in sorted(changed) if changed[k] is not None]
            for i in range(0, len(keys), ROW_GROUP):
                some = keys[i:i + ROW_GROUP]
                blobs = [self.evicted.pop(k) if k not in self.cache._entries
                         else self.cache._entries[k].matcher.to_bytes() for k in some]
                out.write_table(pa.table({
                    "pattern": pa.array([k[0] for k in some], pa.string()),
                    "pattern_version": pa.array([k[1] for k in some], pa.string()),
                    "stream_id": pa.array([k[2] for k in some], pa.string()),
                    "next_t": pa.nulls(len(some), pa.int64()),
                    "state": pa.array(blobs, pa.binary()),
                    "batch_id": pa.array([self.batch_id] * len(some), pa.int64()),
                    "quiet": pa.array([changed[k] for k in some], pa.bool_())},
                    schema=FILE_SCHEMA), row_group_size=ROW_GROUP)
                rows += len(some)
        earlier = self.pending.get(b)
        if earlier is not None:  # an earlier piece of this batch wrote it: never committed
            (self.path / earlier.path).unlink(missing_ok=True)
        if rows:
            self.pending[b] = add_action(path, rel, {"bucket": str(b)}, LIVE_STATE.schema,
                                         "bucket")
            self.files[b] = [str(path)]
        else:
            path.unlink()
            self.pending[b] = None
            self.files[b] = []

    def _new_file(self, b: int) -> tuple[str, Path]:
        rel = f"bucket={b}/part-{self.batch_id:08d}-{uuid.uuid4().hex}.parquet"
        (self.path / f"bucket={b}").mkdir(parents=True, exist_ok=True)
        return rel, self.path / rel

    # --- the cache's callbacks ----------------------------------------------------------

    def _load(self, key: Key) -> StreamMatcher | None:
        if key in self.evicted:
            blob = self.evicted.pop(key)
        else:
            blob = self.staged.pop(key, None)
        if blob is None:
            return None
        return StreamMatcher.from_bytes(self.queries[key[:2]], blob, self.shared[key[:2]])

    def _spill(self, key: Key, matcher: StreamMatcher) -> None:
        if self.touched.get(bucket(key[2]), {}).get(key) is not None:
            self.evicted[key] = matcher.to_bytes()  # else its bucket's file holds it
