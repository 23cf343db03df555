"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism. Silver stays where it is:
the driver cuts the stream ids into contiguous ranges of about equal rows, using only the
Parquet footers (each row group's min and max `stream_id`), and each Spark task reads the
rows of its range straight from the batch's Parquet files with pyarrow (row groups
outside the range are skipped by their statistics), sorts them and runs every pattern
over every stream of the range, resuming from the saved states the driver sends along.
Spark schedules and retries the tasks and brings back their output; it never converts
silver rows itself, which would cost more than the engine's work (see
`benchmarks/grouping_job.py`).

One output table carries both kinds of rows (`kind` = "group" or "state") so the batch
is read once; the caller splits it and writes each to its Delta table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.engine import StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.registry import RegisteredPattern

#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT = pa.schema([
    ("kind", pa.string()), ("pattern", pa.string()), ("pattern_version", pa.string()),
    ("stream_id", pa.string()), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()), ("next_t", pa.int64()), ("state", pa.binary()),
])
#: Saved engine states as the grouping reads them (one row per pattern version and stream).
STATES = pa.schema([("pattern", pa.string()), ("pattern_version", pa.string()),
                    ("stream_id", pa.string()), ("next_t", pa.int64()),
                    ("state", pa.binary())])
#: One Spark task: a range of stream ids [lo, hi) (None: unbounded), the files to read
#: and the saved states of the range as an Arrow IPC stream.
_TASK_SCHEMA = "lo string, hi string, files array<string>, states binary"
#: Output rows per IPC block a task hands back.
BLOCK_ROWS = 1 << 16


@dataclass(frozen=True)
class StreamRange:
    """Stream ids in [lo, hi); None leaves that side open."""

    lo: str | None
    hi: str | None

    def expression(self):
        """As a filter on a `stream_id` column, for datasets and tables alike."""
        import pyarrow.dataset as ds

        expr = ds.field("stream_id").is_valid()
        if self.lo is not None:
            expr &= ds.field("stream_id") >= self.lo
        if self.hi is not None:
            expr &= ds.field("stream_id") < self.hi
        return expr


def plan_ranges(files: list[str], n: int,
                max_rows: int = 1 << 22) -> list[tuple[StreamRange, list[str]]]:
    """Up to `n` ranges of stream ids holding about equal numbers of rows (a multiple of
    `n` when a range would exceed `max_rows`, which bounds a task's memory and keeps the
    waves of tasks even), each with the files that can hold it, from the files' footers
    alone (no row is read).

    Every row group's min and max `stream_id` is a candidate cut; a row group counts as
    wholly below a cut when its max is, and as half below when the cut falls inside it.
    Silver sorted by stream gives narrow row groups and so even ranges; without
    statistics there is one range over every file.
    """
    import pyarrow.parquet as pq

    fs, paths = located(files)
    groups, spans = [], []  # (min, max, rows) per row group; (path, min, max) per file
    for path, where in zip(files, paths):
        with fs.open_input_file(where) as f:
            meta = pq.ParquetFile(f).metadata
        k = meta.schema.to_arrow_schema().get_field_index("stream_id")
        mine = []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(k).statistics
            if stats is None or not stats.has_min_max:
                return [(StreamRange(None, None), list(files))]
            mine.append((stats.min, stats.max, meta.row_group(g).num_rows))
        if mine:
            groups += mine
            spans.append((path, min(m[0] for m in mine), max(m[1] for m in mine)))
    below = _rows_below(groups)
    total = below(None)
    n *= max(1, -(-int(total) // (n * max_rows)))
    cuts: list[str] = []
    for cut in sorted({v for lo, hi, _ in groups for v in (lo, hi)}):
        if len(cuts) + 1 < n and below(cut) >= total * (len(cuts) + 1) / n:
            cuts.append(cut)
    bounds = [None, *cuts, None]
    return [(StreamRange(lo, hi),
             [p for p, f_lo, f_hi in spans
              if (lo is None or f_hi >= lo) and (hi is None or f_lo < hi)])
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def _rows_below(groups):
    """f(cut): estimated rows with stream_id < cut (all rows for None); a row group whose
    min and max straddle the cut counts half: f = (rows with max < cut + rows with
    min < cut) / 2."""
    from bisect import bisect_left
    from itertools import accumulate

    by_lo, by_hi = sorted((g[0], g[2]) for g in groups), sorted((g[1], g[2]) for g in groups)
    lo_keys, hi_keys = [k for k, _ in by_lo], [k for k, _ in by_hi]
    lo_cum = [0, *accumulate(r for _, r in by_lo)]
    hi_cum = [0, *accumulate(r for _, r in by_hi)]

    def below(cut):
        if cut is None:
            return lo_cum[-1]
        return (lo_cum[bisect_left(lo_keys, cut)] + hi_cum[bisect_left(hi_keys, cut)]) / 2
    return below


def read_range(files: list[str], domain: tuple[str, ...], where: StreamRange) -> pa.Table:
    """The rows of a stream range (pyarrow; row groups outside it skipped by statistics)."""
    import pyarrow.dataset as ds

    columns = ["stream_id", "t", *domain]
    if not files:
        return pa.schema([("stream_id", pa.string()), ("t", pa.int64()),
                          *[(d, pa.float64()) for d in domain]]).empty_table()
    fs, paths = located(files)
    return ds.dataset(paths, format="parquet", filesystem=fs).to_table(
        columns=columns, filter=where.expression())


def located(files: list[str]):
    """The filesystem of the files and their paths on it: local paths, or URIs of one
    object store (`s3://…`, `gs://…`, `file://…`) as Delta lists them on a cluster."""
    import pyarrow.fs as pafs

    if "://" not in files[0]:
        return pafs.LocalFileSystem(), [str(Path(f).resolve()) for f in files]
    return pafs.FileSystem.from_uri(files[0])[0], [f.split("://", 1)[1] for f in files]


@dataclass(frozen=True)
class Streams:
    """A batch's rows cut into streams: `probs[start[i]:stop[i]]` holds stream `ids[i]`
    from time `t0[i]` on, one row per consecutive timestep."""

    ids: list[str]
    start: np.ndarray
    stop: np.ndarray
    t0: np.ndarray
    probs: np.ndarray

    @classmethod
    def of(cls, rows: pa.Table, domain: tuple[str, ...]) -> Streams:
        """Rows in any order; raises ValueError naming the stream on a gap or a repeat."""
        encoded = pc.dictionary_encode(rows["stream_id"].combine_chunks())
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        t = rows["t"].to_numpy()
        step = np.diff(t)
        grouped = codes[1:] == codes[:-1]
        # first-appearance codes: rows already grouped by stream have non-decreasing codes
        if not ((codes[1:] >= codes[:-1]).all() and (step[grouped] > 0).all()):
            order = np.lexsort((t, codes))
            codes, t = codes[order], t[order]
            rows = rows.take(order)
            step, grouped = np.diff(t), codes[1:] == codes[:-1]
        names = encoded.dictionary.to_pylist()
        broken = np.flatnonzero(grouped & (step != 1))
        if len(broken):
            k = int(broken[0])
            raise ValueError(f"stream {names[codes[k]]!r}: t is not consecutive after "
                             f"t={t[k]} (next t={t[k + 1]})")
        start = np.r_[0, np.flatnonzero(~grouped) + 1] if len(t) else np.zeros(0, np.int64)
        stop = np.r_[start[1:], len(t)]
        probs = np.empty((len(t), len(domain)))
        for k, d in enumerate(domain):
            probs[:, k] = rows[d].to_numpy()
        return cls([names[c] for c in codes[start]], start, stop, t[start], probs)


def group_streams(rows: pa.Table, states: pa.Table, patterns: list[RegisteredPattern],
                  domain: tuple[str, ...], final: bool) -> pa.Table:
    """All patterns over every stream of `rows` (any order) and of `states` (streams
    without new rows keep their state). One transducer per pattern serves all the
    streams, so composite states are built once per task, not once per stream.

    final: the batch ends the streams, so every open group is emitted and no state kept.
    Returns rows of the output schema, built column-wise (no Python object per group).
    """
    streams = Streams.of(rows, domain)
    where = {sid: i for i, sid in enumerate(streams.ids)}
    saved = {(sid, p, v): b for sid, p, v, b in zip(
        states["stream_id"].to_pylist(), states["pattern"].to_pylist(),
        states["pattern_version"].to_pylist(), states["state"].to_pylist())}
    ids = sorted(set(where) | {k[0] for k in saved})
    found: list[GroupColumns] = []
    owner: list[tuple[int, int, int]] = []  # (stream, pattern, groups) per part of `found`
    kept: list[tuple[int, int, int, bytes]] = []  # (stream, pattern, next_t, state)
    for j, entry in enumerate(patterns):
        shared = StreamMatcher(entry.query).transducer
        for i, sid in enumerate(ids):
            blob = saved.get((sid, entry.name, entry.version))
            matcher = (StreamMatcher(entry.query, shared) if blob is None
                       else StreamMatcher.from_bytes(entry.query, blob, shared))
            if sid in where:
                k = where[sid]
                lo, hi = streams.start[k], streams.stop[k]
                found.append(matcher.feed_columns(int(streams.t0[k]), streams.probs[lo:hi]))
                owner.append((i, j, len(found[-1])))
            if final:
                found.append(matcher.finish_columns())
                owner.append((i, j, len(found[-1])))
            elif matcher.next_t is not None:
                kept.append((i, j, matcher.next_t, matcher.to_bytes()))
    return pa.concat_tables([_group_rows(found, owner, ids, patterns),
                             _state_rows(kept, ids, patterns)])


def _labels(ids: list[str], patterns, stream: np.ndarray, pattern: np.ndarray) -> dict:
    """The string columns of output rows, from stream and pattern indexes."""
    take = lambda values, idx: pc.take(pa.array(values, pa.string()), pa.array(idx))  # noqa: E731
    return {"pattern": take([p.name for p in patterns], pattern),
            "pattern_version": take([p.version for p in patterns], pattern),
            "stream_id": take(ids, stream)}


def _group_rows(found: list[GroupColumns], owner, ids, patterns) -> pa.Table:
    g = GroupColumns.concat(found) if found else None
    n = 0 if g is None else len(g)
    counts = np.array([c for _, _, c in owner], np.int64)
    stream = np.repeat(np.array([i for i, _, _ in owner], np.int64), counts)
    pattern = np.repeat(np.array([j for _, j, _ in owner], np.int64), counts)
    if g is None:
        return OUTPUT.empty_table()
    return pa.table({
        "kind": pa.array(np.full(n, "group")), **_labels(ids, patterns, stream, pattern),
        "t_start": g.t_start, "t_first": pa.array(g.t_first, mask=g.t_first == NONE),
        "t_end": g.t_end, "probability": g.probability, "n_matches": g.n_matches,
        "max_match_probability": g.max_match_probability,
        "next_t": pa.nulls(n, pa.int64()), "state": pa.nulls(n, pa.binary()),
    }, schema=OUTPUT)


def _state_rows(kept, ids, patterns) -> pa.Table:
    n = len(kept)
    if not n:
        return OUTPUT.empty_table()
    stream, pattern, next_t, blobs = (list(c) for c in zip(*kept))
    nulls = {name: pa.nulls(n, OUTPUT.field(name).type) for name in OUTPUT.names}
    return pa.table({**nulls, "kind": pa.array(np.full(n, "state")),
                     **_labels(ids, patterns, np.array(stream), np.array(pattern)),
                     "next_t": pa.array(next_t, pa.int64()),
                     "state": pa.array(blobs, pa.binary())}, schema=OUTPUT)


def _ipc(table: pa.Table | pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")  # Spark moves fewer bytes
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def _unipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


def run_grouping(spark, files: list[str], states: pa.Table,
                 patterns: list[RegisteredPattern], domain, final: bool = False,
                 tasks: int | None = None) -> pa.Table:
    """Spark: every pattern over every stream of a batch, one task per stream range.

    files: the batch's silver as Parquet files (`stream_id`, `t`, the domain's columns).
    states: saved states (STATES columns; other pattern versions are ignored).
    tasks: how many stream ranges (default: Spark's default parallelism).
    Returns the groups and new states as one table of the output schema. Tasks hand
    their output back as Arrow IPC blocks, so Spark moves a few large values instead of
    converting every group row.
    """
    domain = tuple(domain)
    versions = {(p.name, p.version) for p in patterns}
    states = states.select(STATES.names).cast(STATES)
    mine = [(p, v) in versions for p, v in zip(states["pattern"].to_pylist(),
                                               states["pattern_version"].to_pylist())]
    states = states.filter(pa.array(mine, pa.bool_()))
    ranges = plan_ranges(files, tasks or spark.sparkContext.defaultParallelism) \
        if files else [(StreamRange(None, None), [])]
    plan = [(r.lo, r.hi, paths, _ipc(states.filter(r.expression())))
            for r, paths in ranges]

    def run(batches):
        for batch in batches:
            for lo, hi, paths, blob in zip(*(batch.column(k).to_pylist() for k in range(4))):
                out = group_streams(read_range(paths, domain, StreamRange(lo, hi)),
                                    _unipc(blob), patterns, domain, final)
                for part in out.to_batches(max_chunksize=BLOCK_ROWS):
                    yield pa.record_batch({"block": pa.array([_ipc(part)], pa.binary())})

    frame = spark.createDataFrame(spark.sparkContext.parallelize(plan, len(plan)),
                                  _TASK_SCHEMA)
    blocks = frame.mapInArrow(run, "block binary").toArrow()["block"].to_pylist()
    return pa.concat_tables([OUTPUT.empty_table(), *map(_unipc, blocks)])
