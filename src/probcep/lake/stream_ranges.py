"""A batch of silver as streams: which stream ids each task takes, and each stream's rows
in time order, read from the Parquet files without holding the batch in memory.

The driver cuts the stream ids into contiguous ranges of about equal rows from the
Parquet footers alone (`plan_ranges`). A task reads its range (`Streams.read`) in two
steps: first only `stream_id` (as dictionary codes) and `t` of the row groups whose
statistics may hold the range, from which it learns where each stream's runs of
consecutive timesteps lie; then the probability columns one row group at a time, as the
streams that need them come up, each dropped once its last stream is served. Silver is
sorted by stream in long runs, so a task holds a row group or two at a time: memory
stays flat whatever the range's size and the rows stay in cache on their way to the
engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from probcep.engine.distributions import first_flaw
from probcep.errors import InputError
from probcep.lake.failures import damaged


@dataclass(frozen=True)
class StreamRange:
    """Stream ids in [lo, hi); None leaves that side open."""

    lo: str | None
    hi: str | None

    def holds(self, sid: str) -> bool:
        return (self.lo is None or sid >= self.lo) and (self.hi is None or sid < self.hi)

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
            kept.append((g, self.holds(stats.min) and self.holds(stats.max)
                         and stats.has_null_count and stats.null_count == 0))
        return kept


def plan_ranges(files: list[str], n: int,
                max_rows: int = 1 << 23) -> list[tuple[StreamRange, list[str]]]:
    """Up to `n` ranges of stream ids holding about equal numbers of rows (a multiple of
    `n` when a range would exceed `max_rows`, which keeps the waves of tasks even), each
    with the files that can hold it, from the files' footers alone (no row is read).

    A range of `max_rows` is a few seconds of engine work: Spark's cost of launching a
    task (about 50 ms in local mode) stays a few percent of it, and the task's memory
    (12 bytes of keys per row, plus a row group or two) stays small.

    Every row group's min and max `stream_id` is a candidate cut; a row group counts as
    wholly below a cut when its max is, and as half below when the cut falls inside it.
    Silver sorted by stream gives narrow row groups and so even ranges; without
    statistics there is one range over every file.
    """
    import pyarrow.parquet as pq

    fs, paths = located(files)
    groups, spans = [], []  # (min, max, rows) per row group; (path, min, max) per file
    for path, where in zip(files, paths):
        with damaged(file=where), fs.open_input_file(where) as f:
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


def located(files: list[str]):
    """The filesystem of the files and their paths on it: local paths, or URIs of one
    object store (`s3://…`, `gs://…`, `file://…`) as Delta lists them on a cluster.
    Local files are memory-mapped: reading them copies nothing."""
    import pyarrow.fs as pafs

    if "://" not in files[0]:
        return pafs.LocalFileSystem(use_mmap=True), [str(Path(f).resolve()) for f in files]
    return pafs.FileSystem.from_uri(files[0])[0], [f.split("://", 1)[1] for f in files]


#: Rows fall into more pieces than this (and more than 1 in 64 rows): rows are sorted
#: outright instead of pieced together.
SORT_ABOVE_PIECES = 1024


class Streams:
    """A batch's rows cut into streams, sorted by id. Stream `ids[i]` starts at time
    `t0[i]` and is the pieces `first[i]:first[i + 1]`, in time order; piece j is rows
    `lo[j]:hi[j]` of block `block[j]`, one row per consecutive timestep, starting at time
    `start[j]`. Silver holds only timesteps with readings, so a stream may skip
    timesteps between pieces (never repeat one). A block (a row group, a record batch)
    is loaded as a (rows, symbols) array when a stream first needs it and dropped after
    its last piece is served."""

    def __init__(self, ids: list[str], t0: np.ndarray, first: np.ndarray, block: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray, start: np.ndarray,
                 load: Callable[[int], np.ndarray]):
        self.ids, self.t0, self.first = ids, t0, first
        self.block, self.lo, self.hi, self.start = block, lo, hi, start
        self._load = load
        self._left = np.bincount(block) if len(block) else np.zeros(0, np.int64)
        self._loaded: dict[int, np.ndarray] = {}

    def runs(self, i: int) -> list[tuple[int, np.ndarray]]:
        """Stream i as its runs of consecutive timesteps, in time order: (first t,
        (timesteps, symbols) array). Call once per stream, in any order (a second call
        loads dropped blocks again)."""
        runs: list[tuple[int, list[np.ndarray]]] = []
        for j in range(self.first[i], self.first[i + 1]):
            b = int(self.block[j])
            rows = self._loaded.get(b)
            if rows is None:
                rows = self._loaded[b] = self._load(b)
            t, part = int(self.start[j]), rows[self.lo[j]:self.hi[j]]
            if runs and runs[-1][0] + sum(len(p) for p in runs[-1][1]) == t:
                runs[-1][1].append(part)
            else:
                runs.append((t, [part]))
            self._left[b] -= 1
            if self._left[b] <= 0:
                del self._loaded[b]
        return [(t, parts[0] if len(parts) == 1 else np.concatenate(parts))
                for t, parts in runs]

    @classmethod
    def of(cls, rows: pa.Table, domain: tuple[str, ...]) -> Streams:
        """Rows of a table, in any order; raises InputError naming the stream on a
        repeated timestep."""
        batches = [b for b in rows.to_batches() if b.num_rows]
        names: dict[str, int] = {}
        keys = [_keys(b["stream_id"], b["t"], names, None, f"record batch {k}")[0]
                for k, b in enumerate(batches)]
        return cls._cut(names, keys, lambda b: _matrix(batches[b], domain, None))

    @classmethod
    def read(cls, files: list[str], domain: tuple[str, ...], where: StreamRange) -> Streams:
        """The streams of a range, from Parquet files (paths or URIs of one filesystem).

        Row groups are chosen by their `stream_id` statistics; rows of a row group that
        may straddle a bound are filtered by their id. A null `stream_id` or `t` raises
        InputError naming the file and row group, as does a repeated timestep (naming
        the stream)."""
        import pyarrow.parquet as pq

        names: dict[str, int] = {}
        keys, sources = [], []
        fs, paths = located(files) if files else (None, [])
        for path in paths:
            with damaged(file=path):
                parquet = pq.ParquetFile(fs.open_input_file(path),
                                         read_dictionary=["stream_id"])
            missing = [d for d in domain if d not in parquet.schema_arrow.names]
            if missing:  # silver of a day normalized before the domain changed
                raise InputError(f"{path}: no column {', '.join(map(repr, missing))} of the "
                                 f"domain: its day was normalized under another domain; "
                                 f"normalize it again (probcep rerun --from DAY --to DAY)")
            for g, whole in where.row_groups(parquet.metadata):
                head = parquet.read_row_group(g, columns=["stream_id", "t"])
                block, kept = _keys(head["stream_id"], head["t"], names,
                                    None if whole else where, f"{path}, row group {g}")
                if len(block.t):
                    keys.append(block)
                    sources.append((parquet, g, kept, path))

        def load(b):
            parquet, g, kept, path = sources[b]
            matrix = _matrix(parquet.read_row_group(g, columns=list(domain)), domain, kept)
            flaw = first_flaw(matrix)
            if flaw is not None:  # a `--source` file is not checked by silver's suite
                rows = parquet.read_row_group(g, columns=["stream_id", "t"])
                rows = rows if kept is None else rows.take(kept)
                row = rows.slice(flaw.row, 1).to_pylist()[0]
                raise InputError(f"{path}, row group {g}: stream {row['stream_id']!r}, "
                                 f"t={row['t']}: {flaw.says(domain)}")
            return matrix
        return cls._cut(names, keys, load)

    @classmethod
    def _cut(cls, names: dict[str, int], keys: list[_Keys],
             load: Callable[[int], np.ndarray], ordered: bool = False) -> Streams:
        """Cuts every block's rows where the stream changes or t does not step by one and
        puts the pieces (not the rows) in order: silver comes as long sorted runs (Spark
        sorts it; delta-rs may interleave its batches), so there are few. Rows in no
        useful order are sorted outright, as one block."""
        ids = sorted(names)
        if not keys:
            none = np.zeros(0, np.int64)
            return cls([], none, np.zeros(1, np.int64), none, none, none, none, load)
        rank = np.empty(len(ids), np.int64)
        rank[[names[s] for s in ids]] = np.arange(len(ids))
        cut = [_pieces(k.index, k.t) for k in keys]
        rows = sum(len(k.t) for k in keys)
        if not ordered and sum(len(lo) for lo, _ in cut) > max(SORT_ABOVE_PIECES, rows / 64):
            code = np.concatenate([rank[k.codes[k.index]] for k in keys])
            t = np.concatenate([k.t for k in keys])
            order = _sort_order(code, t)
            matrix = np.concatenate([load(b) for b in range(len(keys))])[order]
            block = _Keys(code[order], np.arange(len(ids)), t[order])
            return cls._cut(dict(zip(ids, range(len(ids)))), [block], lambda b: matrix,
                            ordered=True)
        block = np.repeat(np.arange(len(keys)), [len(lo) for lo, _ in cut])
        lo = np.concatenate([lo for lo, _ in cut])
        hi = np.concatenate([hi for _, hi in cut])
        code = np.concatenate([rank[k.codes[k.index[a]]] for k, (a, _) in zip(keys, cut)])
        start = np.concatenate([k.t[a] for k, (a, _) in zip(keys, cut)])
        k = np.lexsort((start, code))
        block, lo, hi, code, start = block[k], lo[k], hi[k], code[k], start[k]
        same = code[1:] == code[:-1]
        repeated = np.flatnonzero(same & (start[1:] < start[:-1] + (hi - lo)[:-1]))
        if len(repeated):
            j = int(repeated[0])
            raise InputError(f"stream {ids[code[j]]!r}: t={start[j + 1]} appears more than "
                             f"once")
        first = np.r_[0, np.flatnonzero(~same) + 1, len(lo)]
        heads = first[:-1]
        return cls([ids[c] for c in code[heads]], start[heads], first, block, lo, hi, start,
                   load)


class _Keys(NamedTuple):
    """A block's rows as keys: row r is stream `codes[index[r]]` (numbered in the
    reader's `names`; `index` is the block's own dictionary index) at time `t[r]`."""

    index: np.ndarray
    codes: np.ndarray
    t: np.ndarray


def _keys(sid: pa.ChunkedArray | pa.Array, t: pa.ChunkedArray | pa.Array,
          names: dict[str, int], where: StreamRange | None,
          place: str) -> tuple[_Keys, np.ndarray | None]:
    """A block's keys (numbering each new stream id in `names`), keeping only the rows
    in `where` (None: all), with the kept rows' positions (None when all are kept). Ids
    stay dictionary indices: only the block's few distinct ids are looked up."""
    import pyarrow.compute as pc

    if isinstance(sid, pa.ChunkedArray):
        sid = sid.combine_chunks()
    if isinstance(t, pa.ChunkedArray):
        t = t.combine_chunks()
    for name, column in (("stream_id", sid), ("t", t)):
        if column.null_count:
            raise InputError(f"{place}: {column.null_count} rows have no {name}")
    encoded = sid if pa.types.is_dictionary(sid.type) else pc.dictionary_encode(sid)
    values = encoded.dictionary.to_pylist()
    inside = np.array([where is None or where.holds(v) for v in values], bool)
    codes = np.array([names.setdefault(v, len(names)) if ok else -1
                      for v, ok in zip(values, inside)], np.int64)
    index = encoded.indices.to_numpy()
    steps = t.to_numpy()
    if inside.all():
        return _Keys(index, codes, steps), None
    kept = np.flatnonzero(inside[index])
    return _Keys(index[kept], codes, steps[kept]), kept


def _matrix(rows, domain: tuple[str, ...], kept: np.ndarray | None) -> np.ndarray:
    """A block's probability columns as one (rows, symbols) array."""
    columns = [rows[d].to_numpy(zero_copy_only=False) for d in domain]
    if kept is not None:
        columns = [c[kept] for c in columns]
    return np.column_stack(columns)


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
