"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism. Silver rows and saved
engine states travel in one DataFrame (their union by name), hash-partitioned on
`stream_id`, so every row and state of a stream lands in the same task. The task splits
its partition into streams itself, with NumPy, and runs every registered pattern over each
stream with `StreamMatcher`, resuming from the saved state. One output DataFrame carries
both kinds of rows (`kind` = "group" or "state") so the batch is read once; the caller
splits it and writes each to its Delta table.

Why not `groupBy().cogroup().applyInArrow()`: that sorts both sides by stream in the JVM
and ships each stream to Python as its own Arrow batches; on the benchmark
(benchmarks/grouping_job.py) the sort and the per-stream round trips cost more than the
engine itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.engine import StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.registry import RegisteredPattern

#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT_SCHEMA = (
    "kind string, pattern string, pattern_version string, stream_id string, "
    "t_start long, t_first long, t_end long, probability double, n_matches long, "
    "max_match_probability double, next_t long, state binary"
)
STATE_SCHEMA = "pattern string, pattern_version string, stream_id string, next_t long, " \
               "state binary"
_OUTPUT = pa.schema([
    ("kind", pa.string()), ("pattern", pa.string()), ("pattern_version", pa.string()),
    ("stream_id", pa.string()), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()), ("next_t", pa.int64()), ("state", pa.binary()),
])
_STATE_COLUMNS = ["stream_id", "pattern", "pattern_version", "next_t", "state"]


def group_partition(table: pa.Table, patterns: list[RegisteredPattern],
                    domain: tuple[str, ...], final: bool) -> pa.Table:
    """All patterns over every stream in one partition, resumed from the saved states.

    table: the union of silver rows (`stream_id`, `t`, one probability column per domain
    symbol; `pattern` null) and state rows (STATE_SCHEMA; `t` null), holding every row of
    each stream it mentions. States of pattern versions not in `patterns` are ignored.
    final: the batch ends the streams, so every open group is emitted and no state kept.
    Returns rows of OUTPUT_SCHEMA, built column-wise (no Python object per group).
    """
    encoded = pc.dictionary_encode(table["stream_id"].combine_chunks())
    names, codes = encoded.dictionary, encoded.indices.to_numpy()
    is_state = table["pattern"].is_valid().to_numpy(zero_copy_only=False)
    rows = table.filter(pa.array(~is_state))
    t, probs, bounds = _streams(codes[~is_state], rows["t"].to_numpy(),
                                [rows[d].to_numpy() for d in domain], len(names))
    saved = _saved_states(table.filter(pa.array(is_state)), codes[is_state], patterns)
    out = _Output(patterns)
    matchers = [StreamMatcher(p.query) for p in patterns]  # shares each transducer's memo
    for code in range(len(names)):
        lo, hi = bounds[code], bounds[code + 1]
        _check_contiguous(names[code].as_py(), t[lo:hi])
        for k, entry in enumerate(patterns):
            blob = saved.get((code, k))
            transducer = matchers[k].transducer
            matcher = (StreamMatcher(entry.query, transducer) if blob is None
                       else StreamMatcher.from_bytes(entry.query, blob, transducer))
            if hi > lo:
                out.add_groups(k, code, matcher.feed_columns(int(t[lo]), probs[lo:hi]))
            if final:
                out.add_groups(k, code, matcher.finish_columns())
            elif matcher.next_t is not None:
                out.add_state(k, code, matcher)
    return out.table(names)


def _streams(codes: np.ndarray, t: np.ndarray, columns: list[np.ndarray], n_streams: int):
    """Silver rows ordered by (stream, t), and where each stream's rows begin and end.

    Returns (t, probs, bounds): stream `code` holds rows bounds[code]:bounds[code + 1].
    """
    order = np.lexsort((t, codes))
    probs = np.empty((len(t), len(columns)))
    for i, column in enumerate(columns):
        probs[:, i] = column[order]
    bounds = np.searchsorted(codes[order], np.arange(n_streams + 1))
    return t[order], probs, bounds


def _check_contiguous(stream_id: str, t: np.ndarray) -> None:
    """The engine needs every timestep of a stream's batch, without holes or repeats."""
    steps = np.diff(t)
    if (steps != 1).any():
        k = int(np.flatnonzero(steps != 1)[0])
        raise ValueError(f"stream {stream_id!r}: gap in t after t={t[k]} (next t={t[k + 1]})")


def _saved_states(states: pa.Table, codes: np.ndarray,
                  patterns: list[RegisteredPattern]) -> dict[tuple[int, int], bytes]:
    """Saved state blobs by (stream code, index in `patterns`), for these versions only."""
    index = {(p.name, p.version): k for k, p in enumerate(patterns)}
    keys = zip(states["pattern"].to_pylist(), states["pattern_version"].to_pylist())
    return {(int(code), index[key]): blob
            for code, key, blob in zip(codes, keys, states["state"].to_pylist())
            if key in index}


class _Output:
    """Collects one partition's groups and states as NumPy parts, then builds one table."""

    def __init__(self, patterns: list[RegisteredPattern]):
        self.patterns = patterns
        self.groups: list[GroupColumns] = []
        self.group_keys: list[np.ndarray] = []  # (pattern index, stream code) per group
        self.states: list[tuple[int, int, int, bytes]] = []

    def add_groups(self, pattern: int, code: int, groups: GroupColumns) -> None:
        if len(groups):
            self.groups.append(groups)
            self.group_keys.append(np.tile(np.array([pattern, code]), (len(groups), 1)))

    def add_state(self, pattern: int, code: int, matcher: StreamMatcher) -> None:
        self.states.append((pattern, code, matcher.next_t, matcher.to_bytes()))

    def table(self, names: pa.Array) -> pa.Table:
        parts = []
        if self.groups:
            parts.append(self._group_table(names))
        if self.states:
            parts.append(self._state_table(names))
        return pa.concat_tables(parts) if parts else _OUTPUT.empty_table()

    def _keys(self, pattern: np.ndarray, code: np.ndarray, names: pa.Array) -> dict:
        return {"pattern": pc.take(pa.array([p.name for p in self.patterns]), pattern),
                "pattern_version": pc.take(pa.array([p.version for p in self.patterns]),
                                           pattern),
                "stream_id": pc.take(names, code)}

    def _group_table(self, names: pa.Array) -> pa.Table:
        g = GroupColumns.concat(self.groups)
        keys = np.concatenate(self.group_keys)
        n = len(g)
        return pa.table({
            "kind": pa.repeat("group", n), **self._keys(keys[:, 0], keys[:, 1], names),
            "t_start": g.t_start, "t_first": pa.array(g.t_first, mask=g.t_first == NONE),
            "t_end": g.t_end, "probability": g.probability, "n_matches": g.n_matches,
            "max_match_probability": g.max_match_probability,
            "next_t": pa.nulls(n, pa.int64()), "state": pa.nulls(n, pa.binary()),
        }, schema=_OUTPUT)

    def _state_table(self, names: pa.Array) -> pa.Table:
        pattern, code, next_t, blob = (list(c) for c in zip(*self.states))
        n = len(blob)
        columns = {name: pa.nulls(n, _OUTPUT.field(name).type) for name in _OUTPUT.names}
        columns.update(kind=pa.repeat("state", n), **self._keys(pa.array(pattern),
                                                                pa.array(code), names),
                       next_t=pa.array(next_t, pa.int64()), state=pa.array(blob, pa.binary()))
        return pa.table(columns, schema=_OUTPUT)


def run_grouping(silver, states, patterns: list[RegisteredPattern], domain, final=False):
    """Spark: bring each stream's silver rows and states into one task, group them there.

    silver: DataFrame with `stream_id`, `t` and the domain's probability columns.
    states: DataFrame of STATE_SCHEMA (may be empty). Returns a DataFrame of OUTPUT_SCHEMA.
    One hash shuffle on `stream_id` (partitions: `spark.sql.shuffle.partitions`) and
    no sort; each task holds its partition in memory while it groups it.
    """
    domain = tuple(domain)
    rows = silver.select("stream_id", "t", *[f"`{d}`" for d in domain])
    both = rows.unionByName(states.select(*_STATE_COLUMNS), allowMissingColumns=True)

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = list(batches)
        if batches:
            table = pa.Table.from_batches(batches)
            yield from group_partition(table, patterns, domain, final).to_batches()

    return both.repartition("stream_id").mapInArrow(per_partition, schema=OUTPUT_SCHEMA)
