"""Live mode's engine states: at most a cache's capacity of them in memory, the rest in
the state table `state/live` (the paper's §5).

Between micro-batches the matchers of at most `live_cache_streams` streams (one per
exact pattern each) stay in memory, in a `StateCache` with the eviction policy
`live_cache_policy`; every other state is only a row of `state/live`, the durable copy
that each micro-batch replaces, last of its writes. A micro-batch needs the state of
every stream with readings in it and of every stream with something open (a live run
or an open group: silence may make its groups final, and alerts must not wait); a
*quiet* state (nothing open) of a stream without readings is left as it is (stepping it
over silence later gives the same state) until its day ends, when it is dropped as the
night drops it. A needed state that is not cached is read back from `state/live` (a
*miss*), in bulk for a chunk of at most a cache's worth of streams.

A state evicted while the micro-batch changed it is kept as bytes until the batch
commits (the table must not see half a batch); the commit writes the table's other rows
unchanged and the changed ones anew. After a crash the cache is empty and every state
comes from the table: the policy changes which reads miss, never a row.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from probcep.engine import StreamMatcher
from probcep.engine.state_cache import StateCache
from probcep.lake.tables import LIVE_STATE
from probcep.pipeline.group_day import PROCESSED

#: (pattern, pattern version, stream id)
Key = tuple[str, str, str]
_SEP = "\x1f"


def _joined(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(table["pattern"], table["pattern_version"],
                                       table["stream_id"], _SEP)


class LiveStates:
    """The engine states of live mode over one lake (see the module's docstring)."""

    def __init__(self, lake, patterns, streams: int, policy: str):
        self.lake, self.patterns = lake, patterns
        self.capacity_streams = streams
        self.cache = StateCache(streams * max(1, len(patterns)), policy,
                                load=self._load, spill=self._spill)
        self.queries = {(p.name, p.version): p.query for p in patterns}
        self.shared = {k: StreamMatcher(q).transducer for k, q in self.queries.items()}
        self.version: int | None = -1  # the state/live version the cache agrees with
        self.index: dict[Key, bool] = {}  # every saved state: is it quiet?
        self.complete: int | None = None
        self.peak = 0  # the most states the cache ever held
        self._begin_clean()

    def _begin_clean(self):
        self.touched: set[Key] = set()  # changed by this batch (value: cache or `evicted`)
        self.evicted: dict[Key, bytes | None] = {}  # changed, then evicted (None: dropped)
        self.staged: dict[Key, bytes] = {}  # read from the table for the current chunk

    # --- a micro-batch ----------------------------------------------------------------

    def begin(self) -> None:
        """Start a micro-batch: when the table moved on without this cache (a restart, a
        failed batch), forget the cache and read the table's index (no state bytes)."""
        self._begin_clean()
        version = self._table_version()
        if version == self.version:
            return
        self.cache._entries.clear()
        self.version = version
        rows = LIVE_STATE.read(self.lake) if version is not None else \
            LIVE_STATE.schema.empty_table()
        rows = rows.select(["pattern", "pattern_version", "stream_id", "next_t", "quiet"])
        mark = pc.equal(rows["pattern"], "")
        self.complete = rows.filter(mark)["next_t"][0].as_py() \
            if pc.any(mark).as_py() else None
        rows = rows.filter(pc.invert(mark))
        self.index = {(p, v, s): bool(q) for p, v, s, q in zip(
            rows["pattern"].to_pylist(), rows["pattern_version"].to_pylist(),
            rows["stream_id"].to_pylist(), rows["quiet"].to_pylist())}

    def seed(self, states: pa.Table) -> None:
        """The first batch: start from these saved states (the night's of the day
        before; never quiet, the night keeps no quiet state)."""
        for p, v, s, b in zip(states["pattern"].to_pylist(),
                              states["pattern_version"].to_pylist(),
                              states["stream_id"].to_pylist(), states["state"].to_pylist()):
            key = (p, v, s)
            self.index[key] = False
            self.touched.add(key)
            self.evicted[key] = b

    def needed(self, with_rows: list[str], ends_day: bool) -> list[str]:
        """The streams a piece must advance: those with readings, those with something
        open, and, when the piece ends a day, every stream with a state."""
        ids = set(with_rows)
        ids.update(s for (_, _, s), quiet in self.index.items() if ends_day or not quiet)
        return sorted(ids)

    def prefetch(self, ids: list[str]) -> None:
        """Read the saved states of these streams that are neither cached nor changed by
        this batch from the table, in one read."""
        self.staged.clear()
        want = {s for s in ids for p in self.patterns
                if (key := (p.name, p.version, s)) in self.index
                and key not in self.cache._entries and key not in self.touched}
        if not want or self.version is None:
            return
        from deltalake import DeltaTable

        table = DeltaTable(str(LIVE_STATE.path(self.lake)), version=self.version)
        rows = table.to_pyarrow_dataset().to_table(
            columns=["pattern", "pattern_version", "stream_id", "state"],
            filter=pc.field("stream_id").isin(sorted(want)) & (pc.field("pattern") != ""))
        for p, v, s, b in zip(rows["pattern"].to_pylist(),
                              rows["pattern_version"].to_pylist(),
                              rows["stream_id"].to_pylist(), rows["state"].to_pylist()):
            self.staged[(p, v, s)] = b

    def matcher(self, key: Key) -> StreamMatcher:
        """The key's matcher: cached, read back (a miss), or fresh."""
        found = self.cache.get(key) if key in self.index else None
        return found or StreamMatcher(self.queries[key[:2]], self.shared[key[:2]])

    def keep(self, key: Key, matcher: StreamMatcher, quiet: bool) -> None:
        self.touched.add(key)
        self.evicted.pop(key, None)
        self.index[key] = quiet
        self.cache.put(key, matcher)
        self.peak = max(self.peak, len(self.cache))

    def drop(self, key: Key) -> None:
        if key in self.index:
            self.touched.add(key)
            self.evicted[key] = None
            del self.index[key]
        self.cache.drop(key)

    def rows(self, complete: int | None, batch_id: int) -> pa.Table:
        """The new content of `state/live`: the rows this batch left alone, the states it
        changed, and the complete mark."""
        keys, blobs = [], []
        for key in sorted(self.touched):
            entry = self.cache._entries.get(key)
            blob = entry.matcher.to_bytes() if entry is not None else self.evicted.get(key)
            if blob is not None:
                keys.append(key)
                blobs.append(blob)
        changed = pa.table({
            "pattern": pa.array([k[0] for k in keys], pa.string()),
            "pattern_version": pa.array([k[1] for k in keys], pa.string()),
            "stream_id": pa.array([k[2] for k in keys], pa.string()),
            "next_t": pa.array([None] * len(keys), pa.int64()),
            "state": pa.array(blobs, pa.binary()),
            "quiet": pa.array([self.index[k] for k in keys], pa.bool_())})
        parts = [changed]
        if self.version is not None:
            old = LIVE_STATE.read(self.lake, version=self.version)
            old = old.filter(pc.not_equal(old["pattern"], ""))
            gone = pa.array([_SEP.join(k) for k in self.touched], pa.string())
            old = old.filter(pc.invert(pc.is_in(_joined(old), value_set=gone)))
            parts.append(old.select(changed.schema.names).cast(changed.schema))
        mark = pa.table({"pattern": [""], "pattern_version": [""], "stream_id": [PROCESSED],
                         "next_t": pa.array([complete], pa.int64()),
                         "state": pa.nulls(1, pa.binary()),
                         "quiet": pa.nulls(1, pa.bool_())})
        parts.append(mark.cast(changed.schema))
        out = pa.concat_tables([p.cast(changed.schema) for p in parts])
        out = out.append_column("batch_id", pa.array([batch_id] * out.num_rows, pa.int64()))
        return out.select(LIVE_STATE.schema.names).cast(LIVE_STATE.schema)

    def committed(self, complete: int | None) -> None:
        """The batch's `state/live` is written: the cache agrees with the new version."""
        self.version = self._table_version()
        self.complete = complete
        self._begin_clean()

    def abandon(self) -> None:
        """The batch failed: the next one starts from the table alone."""
        self.version = -1
        self.cache._entries.clear()
        self._begin_clean()

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
        if key in self.touched:  # else the table holds this very state already
            self.evicted[key] = matcher.to_bytes()

    def _table_version(self) -> int | None:
        if not LIVE_STATE.exists(self.lake):
            return None
        from deltalake import DeltaTable

        return DeltaTable(str(LIVE_STATE.path(self.lake))).version()
