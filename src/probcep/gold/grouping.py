"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism. Every row and state of a
stream must reach the same task, which needs one shuffle on `stream_id`; what goes
through it is kept small in rows, because Spark's cost is per row (UnsafeRow, shuffle
records, Arrow conversion) far more than per byte:

1. map side, over the silver rows as they are stored: each Arrow batch is packed into one
   row per stream it holds (`stream_id`, the block's `t` values and its probabilities as
   raw bytes);
2. the packed blocks and the saved states (their union by name) are hash-partitioned on
   `stream_id`; each task unpacks its blocks, orders every stream by `t` with NumPy and
   runs every registered pattern over it with `StreamMatcher`, resuming from the saved
   state.

One output DataFrame carries both kinds of rows (`kind` = "group" or "state") so the batch
is read once; the caller splits it and writes each to its Delta table.

Why not `groupBy().cogroup().applyInArrow()` over the rows: that shuffles and sorts every
silver row in the JVM and ships each stream to Python as its own Arrow batches; on the
benchmark (benchmarks/grouping_job.py) that costs several times the engine itself.
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
_BLOCKS = pa.schema([("stream_id", pa.string()), ("t_block", pa.binary()),
                     ("p_block", pa.binary())])
_STATE_COLUMNS = ["stream_id", "pattern", "pattern_version", "next_t", "state"]
#: The map side's rows: one block of one stream's silver rows, as raw little-endian bytes.
BLOCK_SCHEMA = "stream_id string, t_block binary, p_block binary"


def pack_blocks(batch: pa.RecordBatch, domain: tuple[str, ...]) -> pa.RecordBatch:
    """One row per stream in a batch of silver rows: its `t` (int64) and probabilities
    (float64, row-major, one column per domain symbol) as bytes, in the batch's order."""
    encoded = pc.dictionary_encode(batch["stream_id"])
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    stored_by_stream = (np.diff(codes) >= 0).all()  # codes number streams as they appear
    order = slice(None) if stored_by_stream else np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
    t = np.ascontiguousarray(batch["t"].to_numpy(zero_copy_only=False)[order], np.int64)
    probs = np.empty((len(t), len(domain)))
    for i, d in enumerate(domain):
        probs[:, i] = batch[d].to_numpy(zero_copy_only=False)[order]
    return pa.record_batch({"stream_id": encoded.dictionary,
                            "t_block": _binary(t, bounds * t.itemsize),
                            "p_block": _binary(probs, bounds * probs[:1].nbytes)},
                           schema=_BLOCKS)


def _binary(values: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """A binary array over `values`' bytes, element k being bytes offsets[k]:offsets[k+1]."""
    return pa.Array.from_buffers(pa.binary(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(values)])


def _streams(blocks: pa.Table, codes: np.ndarray, n_streams: int, n_symbols: int):
    """The blocks' rows ordered by stream and, within a stream, by block start; and where
    each stream's rows begin and end. `codes` gives each block's stream.

    Rows are only moved when blocks arrive out of that order. Returns (t, probs, bounds):
    stream `code` holds rows bounds[code]:bounds[code + 1].
    """
    t = _values(blocks["t_block"], np.int64)
    probs = _values(blocks["p_block"], np.float64).reshape(-1, n_symbols)
    lengths = pc.binary_length(blocks["t_block"]).to_numpy() // t.itemsize
    starts = np.cumsum(lengths) - lengths
    order = np.lexsort((t[starts], codes))
    if (order != np.arange(len(order))).any():
        rows = _ranges(starts[order], lengths[order])
        t, probs = t[rows], probs[rows]
    counts = np.bincount(codes, weights=lengths, minlength=n_streams).astype(np.int64)
    return t, probs, np.r_[0, np.cumsum(counts)]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The row numbers of ranges starts[k]:starts[k] + lengths[k], one after another."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1]) + np.repeat(starts - (ends - lengths), lengths)


def _values(column: pa.ChunkedArray, dtype) -> np.ndarray:
    """All elements of a binary column, concatenated, viewed as `dtype`."""
    array = column.combine_chunks()
    if not len(array):
        return np.zeros(0, dtype)
    offsets = np.frombuffer(array.buffers()[1], np.int32, len(array) + 1, array.offset * 4)
    data = np.frombuffer(array.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
    return data.view(dtype)


def group_partition(table: pa.Table, patterns: list[RegisteredPattern],
                    domain: tuple[str, ...], final: bool) -> pa.Table:
    """All patterns over every stream in one partition, resumed from the saved states.

    table: the union of packed silver blocks (BLOCK_SCHEMA; `pattern` null) and state rows
    (STATE_SCHEMA; `t_block` null), holding every block and state of each stream it
    mentions. States of pattern versions not in `patterns` are ignored.
    final: the batch ends the streams, so every open group is emitted and no state kept.
    Returns rows of OUTPUT_SCHEMA, built column-wise (no Python object per group).
    """
    encoded = pc.dictionary_encode(table["stream_id"].combine_chunks())
    names, codes = encoded.dictionary, encoded.indices.to_numpy()
    is_state = table["pattern"].is_valid().to_numpy(zero_copy_only=False)
    blocks = table.filter(pa.array(~is_state))
    t, probs, bounds = _streams(blocks, codes[~is_state], len(names), len(domain))
    saved = _saved_states(table.filter(pa.array(is_state)), codes[is_state], patterns)
    out = _Output(patterns)
    matchers = [StreamMatcher(p.query) for p in patterns]  # shares each transducer's memo
    for code in range(len(names)):
        lo, hi = bounds[code], bounds[code + 1]
        t_s, probs_s = _in_time_order(t[lo:hi], probs[lo:hi])
        _check_contiguous(names[code].as_py(), t_s)
        for k, entry in enumerate(patterns):
            blob = saved.get((code, k))
            transducer = matchers[k].transducer
            matcher = (StreamMatcher(entry.query, transducer) if blob is None
                       else StreamMatcher.from_bytes(entry.query, blob, transducer))
            if hi > lo:
                out.add_groups(k, code, matcher.feed_columns(int(t_s[0]), probs_s))
            if final:
                out.add_groups(k, code, matcher.finish_columns())
            elif matcher.next_t is not None:
                out.add_state(k, code, matcher)
    return out.table(names)


def _in_time_order(t: np.ndarray, probs: np.ndarray):
    """One stream's rows sorted by t; only when its blocks overlap in time (silver stored
    in another order than by stream and t)."""
    if (np.diff(t) > 0).all():
        return t, probs
    order = np.argsort(t, kind="stable")
    return t[order], probs[order]


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
    """Spark: pack silver into per-stream blocks, bring each stream's blocks and states
    into one task (one hash shuffle on `stream_id`, no sort), group them there.

    silver: DataFrame with `stream_id`, `t` and the domain's probability columns.
    states: DataFrame of STATE_SCHEMA (may be empty). Returns a DataFrame of OUTPUT_SCHEMA.
    Partitions: `spark.sql.shuffle.partitions`; each task holds its partition in memory.
    """
    domain = tuple(domain)

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pack_blocks(batch, domain)

    def group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = list(batches)
        if batches:
            table = pa.Table.from_batches(batches)
            yield from group_partition(table, patterns, domain, final).to_batches()

    blocks = (silver.select("stream_id", "t", *[f"`{d}`" for d in domain])
              .mapInArrow(pack, schema=BLOCK_SCHEMA))
    both = blocks.unionByName(states.select(*_STATE_COLUMNS), allowMissingColumns=True)
    return both.repartition("stream_id").mapInArrow(group, schema=OUTPUT_SCHEMA)
