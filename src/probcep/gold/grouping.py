"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism. Silver stays where it is:
the driver cuts the stream ids into contiguous ranges of about equal rows, using only the
Parquet footers (each row group's min and max `stream_id`), and each Spark task reads the
rows of its range straight from the batch's Parquet files with pyarrow (row groups
outside the range are skipped by their statistics, `stream_id` is read as dictionary
codes), pieces each stream together in time order and runs every pattern over every
stream of the range, resuming from the saved states the driver sends along. Each task
writes its output as one Arrow IPC file into a staging folder that the driver then reads
back (memory-mapped where local), so Spark only schedules and retries the tasks: it never
converts a silver row or a group, which would cost more than the engine's work (see
`benchmarks/grouping_job.py`).

One output table carries both kinds of rows (`kind` = "group" or "state") so the batch
is read once; the caller splits it and writes each to its Delta table."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.engine import StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.registry import RegisteredPattern

#: Labels repeat over many rows, so they travel dictionary-encoded.
LABEL = pa.dictionary(pa.int32(), pa.string())
#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT = pa.schema([
    ("kind", LABEL), ("pattern", LABEL), ("pattern_version", LABEL),
    ("stream_id", LABEL), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()), ("next_t", pa.int64()), ("state", pa.binary()),
])
KINDS = pa.array(["group", "state"])
#: Saved engine states as the grouping reads them (one row per pattern version and stream).
STATES = pa.schema([("pattern", pa.string()), ("pattern_version", pa.string()),
                    ("stream_id", pa.string()), ("next_t", pa.int64()),
                    ("state", pa.binary())])
#: Output rows per record batch of a task's staged output.
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

    def row_groups(self, meta) -> list[tuple[int, bool]]:
        """The row groups of a Parquet file that may hold rows of the range, in file
        order, each with whether its statistics put it wholly inside (no null id either),
        so that none of its rows needs a filter."""
        k = meta.schema.to_arrow_schema().get_field_index("stream_id")
        kept = []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(k).statistics
            if stats is None or not stats.has_min_max:
                kept.append((g, False))
                continue
            if (self.lo is not None and stats.max < self.lo) or \
                    (self.hi is not None and stats.min >= self.hi):
                continue
            kept.append((g, (self.lo is None or stats.min >= self.lo)
                         and (self.hi is None or stats.max < self.hi)
                         and stats.has_null_count and stats.null_count == 0))
        return kept


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
    """The rows of a stream range, `stream_id` dictionary-encoded (ids repeat over whole
    streams, so it is read as codes, never as one string per row).

    Row groups are chosen by their `stream_id` statistics: those outside the range are
    skipped, and only those that may straddle a bound are filtered row by row. Rows keep
    the files' order; `Streams.of` puts them in time order.
    """
    import pyarrow.parquet as pq

    schema = pa.schema([("stream_id", LABEL), ("t", pa.int64()),
                        *[(d, pa.float64()) for d in domain]])
    parts = [schema.empty_table()]
    fs, paths = located(files) if files else (None, [])
    for path in paths:
        with fs.open_input_file(path) as f:
            parquet = pq.ParquetFile(f, read_dictionary=["stream_id"])
            for g, whole in where.row_groups(parquet.metadata):
                rows = parquet.read_row_group(g, columns=schema.names)
                parts.append((rows if whole else rows.filter(where.expression())).cast(schema))
    return pa.concat_tables(parts)


def located(files: list[str]):
    """The filesystem of the files and their paths on it: local paths, or URIs of one
    object store (`s3://…`, `gs://…`, `file://…`) as Delta lists them on a cluster."""
    import pyarrow.fs as pafs

    if "://" not in files[0]:
        return pafs.LocalFileSystem(use_mmap=True), [str(Path(f).resolve()) for f in files]
    return pafs.FileSystem.from_uri(files[0])[0], [f.split("://", 1)[1] for f in files]


#: Rows fall into more pieces than this (and more than 1 in 64 rows): rows are sorted
#: outright instead of pieced together.
SORT_ABOVE_PIECES = 1024


@dataclass(frozen=True)
class Streams:
    """A batch's rows cut into streams. Stream `ids[i]` starts at time `t0[i]` and is the
    pieces `first[i]:first[i + 1]`, in order; piece j is rows `lo[j]:hi[j]` of `columns`
    (one array per symbol of the domain), one row per consecutive timestep."""

    ids: list[str]
    t0: np.ndarray
    first: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    columns: list[np.ndarray]

    def probs(self, i: int) -> np.ndarray:
        """Stream i's (timesteps, symbols) array, assembled when the engine wants it: one
        stream is small enough to stay in cache, a whole batch as one array is not."""
        pieces = [slice(a, b) for a, b in zip(self.lo[self.first[i]:self.first[i + 1]],
                                               self.hi[self.first[i]:self.first[i + 1]])]
        if len(pieces) == 1:
            return np.column_stack([c[pieces[0]] for c in self.columns])
        return np.column_stack([np.concatenate([c[p] for p in pieces]) for c in self.columns])

    @classmethod
    def of(cls, rows: pa.Table, domain: tuple[str, ...]) -> Streams:
        """Rows in any order; raises ValueError naming the stream on a gap or a repeat.

        Rows are cut where the stream changes or t does not step by one, and the pieces
        (not the rows) are put in order: silver comes as long sorted runs (Spark sorts
        it; delta-rs may interleave its batches), so there are few. Rows in no useful
        order are sorted outright."""
        sid = rows["stream_id"]
        encoded = (sid.unify_dictionaries() if pa.types.is_dictionary(sid.type)
                   else pc.dictionary_encode(sid)).combine_chunks()
        names = encoded.dictionary.to_pylist()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        t = rows["t"].to_numpy()
        columns = [rows[d].to_numpy() for d in domain]
        lo, hi = _pieces(codes, t)
        if len(lo) > max(SORT_ABOVE_PIECES, len(t) / 64):
            order = _sort_order(codes, t)
            codes, t, columns = codes[order], t[order], [c[order] for c in columns]
            lo, hi = _pieces(codes, t)
        code, start = codes[lo], t[lo]
        k = np.lexsort((start, code))
        lo, hi, code, start = lo[k], hi[k], code[k], start[k]
        same = code[1:] == code[:-1]
        broken = np.flatnonzero(same & (start[1:] != start[:-1] + (hi - lo)[:-1]))
        if len(broken):
            j = int(broken[0])
            raise ValueError(f"stream {names[code[j]]!r}: t is not consecutive after "
                             f"t={start[j] + hi[j] - lo[j] - 1} (next t={start[j + 1]})")
        first = np.r_[0, np.flatnonzero(~same) + 1, len(lo)] if len(lo) else np.zeros(1, int)
        heads = first[:-1]
        return cls([names[c] for c in code[heads]], start[heads], first, lo, hi, columns)


def _pieces(codes: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of rows of one stream whose t steps by one: their [lo, hi) rows."""
    if not len(t):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cut = np.flatnonzero((codes[1:] != codes[:-1]) | (np.diff(t) != 1)) + 1
    return np.r_[0, cut], np.r_[cut, len(t)]


def _sort_order(codes: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The order sorting rows by (stream code, t): one argsort of a combined int64 key
    (NumPy sorts those with SIMD), or a lexsort where the key would overflow."""
    lo, span = int(t.min()), int(t.max()) - int(t.min()) + 1
    if span * (int(codes.max()) + 1) < 1 << 62:
        return np.argsort(codes.astype(np.int64) * span + (t - lo))
    return np.lexsort((t, codes))


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
                found.append(matcher.feed_columns(int(streams.t0[k]), streams.probs(k)))
                owner.append((i, j, len(found[-1])))
            if final:
                found.append(matcher.finish_columns())
                owner.append((i, j, len(found[-1])))
            elif matcher.next_t is not None:
                kept.append((i, j, matcher.next_t, matcher.to_bytes()))
    return pa.concat_tables([_group_rows(found, owner, ids, patterns),
                             _state_rows(kept, ids, patterns)])


def _labels(kind: int, ids: list[str], patterns, stream: np.ndarray,
            pattern: np.ndarray) -> dict:
    """The label columns of output rows, from stream and pattern indexes."""
    def label(idx, values):
        return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()),
                                              pa.array(values, pa.string()))
    return {"kind": label(np.full(len(stream), kind, np.int32), KINDS),
            "pattern": label(pattern, [p.name for p in patterns]),
            "pattern_version": label(pattern, [p.version for p in patterns]),
            "stream_id": label(stream, ids)}


def _group_rows(found: list[GroupColumns], owner, ids, patterns) -> pa.Table:
    if not found:
        return OUTPUT.empty_table()
    g = GroupColumns.concat(found)
    n = len(g)
    counts = np.array([c for _, _, c in owner], np.int64)
    stream = np.repeat(np.array([i for i, _, _ in owner], np.int32), counts)
    pattern = np.repeat(np.array([j for _, j, _ in owner], np.int32), counts)
    return pa.table({
        **_labels(0, ids, patterns, stream, pattern),
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
    return pa.table({**nulls, **_labels(1, ids, patterns, np.array(stream, np.int32),
                                        np.array(pattern, np.int32)),
                     "next_t": pa.array(next_t, pa.int64()),
                     "state": pa.array(blobs, pa.binary())}, schema=OUTPUT)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def _unipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


def _stage(table: pa.Table, staging: str) -> str:
    """Writes a task's output as an Arrow IPC file in the staging folder; returns its
    path. A unique name per attempt: a retried task never meets its failed attempt."""
    fs, (folder,) = located([staging])
    path = f"{folder}/part-{uuid.uuid4().hex}.arrow"
    with fs.open_output_stream(path) as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table, max_chunksize=BLOCK_ROWS)
    return path


def _unstage(path: str, staging: str) -> pa.Table:
    """A staged output file, memory-mapped where the folder is local (no copy)."""
    fs, _ = located([staging])
    return pa.ipc.open_file(fs.open_input_file(path)).read_all()


def run_grouping(spark, files: list[str], states: pa.Table,
                 patterns: list[RegisteredPattern], domain, staging: str,
                 final: bool = False, tasks: int | None = None) -> pa.Table:
    """Spark: every pattern over every stream of a batch, one task per stream range.

    files: the batch's silver as Parquet files (`stream_id`, `t`, the domain's columns).
    states: saved states (STATES columns; other pattern versions are ignored).
    staging: an empty folder (path or URI) that the executors and the driver reach; each
        task writes its output there as one Arrow IPC file, which the driver reads back,
        so no result travels through Spark. The caller removes the folder.
    tasks: how many stream ranges (default: Spark's default parallelism).
    Returns the groups and new states as one table of the output schema.
    """
    domain = tuple(domain)
    versions = {(p.name, p.version) for p in patterns}
    states = states.select(STATES.names).cast(STATES)
    mine = [(p, v) in versions for p, v in zip(states["pattern"].to_pylist(),
                                               states["pattern_version"].to_pylist())]
    states = states.filter(pa.array(mine, pa.bool_()))
    ranges = plan_ranges(files, tasks or spark.sparkContext.defaultParallelism) \
        if files else [(StreamRange(None, None), [])]
    plan = [(r.lo, r.hi, paths, _ipc(states.filter(r.expression()))) for r, paths in ranges]
    staging = str(staging) if "://" in str(staging) else str(Path(staging).resolve())
    fs, (folder,) = located([staging])
    fs.create_dir(folder, recursive=True)

    def run(part):
        for lo, hi, paths, blob in part:
            out = group_streams(read_range(paths, domain, StreamRange(lo, hi)),
                                _unipc(blob), patterns, domain, final)
            yield _stage(out, staging)

    written = spark.sparkContext.parallelize(plan, len(plan)).mapPartitions(run).collect()
    return pa.concat_tables([OUTPUT.empty_table(),
                             *(_unstage(path, staging) for path in written)])
