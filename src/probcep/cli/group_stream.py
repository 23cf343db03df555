"""`probcep group` on a plain Parquet file in three overlapping stages.

Reading (Arrow decodes a batch of rows; one compiled pass checks it and lays it out as
the engine's rows), the engine and formatting the lines each run in a thread of their
own, and each does its heavy part in Arrow or in compiled code that releases the GIL:
on two cores the command then takes little more than the engine's own time, where one
stage after the other took about three times as long (docs/performance.md §1). The
formatter waits for the reader to finish, so that two threads share the two cores.

This is a fast path, not a second implementation of the checks: the lines are held in
memory until the whole file is read, and anything it does not expect (rows out of
(stream_id, t) order, a gap or a repeated t, a probability outside [0, 1], a row that
does not sum to 1, a null, an error raised by the engine) abandons it. `run_streamed`
then returns False and the caller takes the plain path, which reads the file again and
reports what is wrong exactly as before; nothing has been written. (Once the file is
found valid, lines for `-o FILE` are being written to a temporary file; an engine error
after that, such as a run limit on a later stream, is raised as the plain path words
it, and FILE stays as it was. Standard output gets nothing before the engine is done.)
"""

from __future__ import annotations

import itertools
import queue
import threading
from pathlib import Path

import numpy as np
from numba import njit

from probcep.cli.lines import Arena
from probcep.cli.output import group_lines, sorted_groups, write_text
from probcep.cli.stream_files import KEY_COLUMNS, plain_parquet_domain, where
from probcep.engine import Query, StreamMatcher
from probcep.engine.distributions import SUM_TOLERANCE
from probcep.engine.transducer import Transducer
from probcep.errors import ProbcepError

#: Rows decoded and handed on at a time: small enough that the engine starts early and
#: the last batch's lines are formatted soon after it ends, large enough that per-batch
#: Python costs stay small against the engine's (about 3 ms per 65,536 rows).
BATCH_ROWS = 1 << 16
_END, _ABANDON = object(), object()
#: The last time there is: nothing follows it (t + 1 would wrap around to -2^63).
T_MAX = np.iinfo(np.int64).max


class _Abandon(Exception):
    """The fast path met something it leaves to the plain path."""


def run_streamed(path: Path, build_query, output: Path | None) -> bool:
    """Group every stream of the plain Parquet file `path` with the query that
    `build_query(domain)` makes and write the JSON lines; False (nothing written) if the
    file is not one this path takes as it is, or the query cannot be made (the plain
    path reports a bad file before a bad pattern)."""
    domain = plain_parquet_domain(path)
    if domain is None:
        return False
    try:
        query = build_query(domain)
    except ProbcepError:
        return False
    batches: queue.Queue = queue.Queue()
    groups: queue.Queue = queue.Queue()
    stop, valid = threading.Event(), threading.Event()
    reader = threading.Thread(target=_read, args=(path, domain, batches, stop, valid),
                              daemon=True)
    formatter = _Formatter(groups, valid, output)
    reader.start()
    formatter.start()
    try:
        _match(query, batches, groups, path)
    except BaseException as exc:
        stop.set()
        groups.put(_ABANDON)
        reader.join()
        formatter.join()
        if isinstance(exc, _Abandon) or (isinstance(exc, ProbcepError)
                                         and not formatter.writing):
            return False  # the plain path reads the file again and says what is wrong
        raise
    groups.put(_END)
    reader.join()
    formatter.join()
    if formatter.error is not None:
        raise formatter.error
    return True


def _match(query: Query, batches: queue.Queue, groups: queue.Queue, path: Path) -> None:
    """The engine, on each batch as the reader hands it on; each stream is finished when
    the next one starts (the reader has checked that no stream comes back)."""
    transducer = Transducer(query.dfa, query.window)
    sid, matcher = None, None
    while True:
        item = batches.get()
        if item is _END:
            break
        if item is None:
            raise _Abandon
        name, t0, rows = item
        if name != sid:
            if matcher is not None:
                with where(path, sid):  # as the plain path words it
                    groups.put((sid, matcher.finish_columns()))
            sid, matcher = name, StreamMatcher(query, transducer)
        with where(path, sid):
            groups.put((sid, matcher.feed_columns(t0, rows)))
    if matcher is not None:
        with where(path, sid):
            groups.put((sid, matcher.finish_columns()))


def _read(path: Path, domain: tuple[str, ...], batches: queue.Queue,
          stop: threading.Event, valid: threading.Event) -> None:
    """Put (stream_id, t0, rows) for each stream's run of rows in each batch, then set
    `valid` and put `_END`; None instead if the file is not in order or not valid."""
    try:
        for item in _segments(path, domain, stop):
            batches.put(item)
        valid.set()
        batches.put(_END)
    except Exception:  # _Abandon, or Arrow's: the plain path reads the file again and says
        batches.put(None)  # what is wrong (or fails the same way, with its traceback)


def _segments(path: Path, domain: tuple[str, ...], stop: threading.Event):
    import pyarrow.parquet as pq

    # mapped, not read: the first batch comes in half the time (the engine waits for it)
    reader = pq.ParquetFile(path, read_dictionary=["stream_id"], memory_map=True)
    sid, next_t, arena = None, None, Arena()
    for batch in reader.iter_batches(BATCH_ROWS, columns=[*KEY_COLUMNS, *domain],
                                     use_threads=False):
        if stop.is_set() or any(col.null_count for col in batch.columns):
            raise _Abandon
        ids = batch.column(0)
        codes = ids.indices.to_numpy(zero_copy_only=False)
        times = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        cols = tuple(_floats(batch.column(2 + c)) for c in range(len(domain)))
        rows = arena.take(8 * len(times) * len(domain)).view(np.float64).reshape(
            len(times), len(domain))
        arena.keep(rows.nbytes)
        cuts = np.empty(len(times) + 1, np.int64)
        n_cuts = _layout(codes, times, cols, rows, cuts, SUM_TOLERANCE)
        if n_cuts < 0:
            raise _Abandon
        for lo, hi in zip(cuts[:n_cuts - 1], cuts[1:n_cuts]):
            name = ids.dictionary[int(codes[lo])].as_py()
            if name == sid:
                if times[lo] != next_t:
                    raise _Abandon
            elif sid is not None and not name > sid:
                raise _Abandon  # not sorted by stream_id: the plain path sorts
            sid, next_t = name, int(times[hi - 1]) + 1
            yield sid, int(times[lo]), rows[lo:hi]


def _floats(column) -> np.ndarray:
    """A numeric column as float64, read-only, so that every column has one type."""
    values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    values.flags.writeable = False
    return values


@njit(cache=True, nogil=True)
def _layout(codes, times, cols, rows, cuts, tolerance):
    """Copy the columns into `rows` (row-major) and check them: each probability in
    [0, 1], each row's sum clearly within `tolerance` of 1 (rows near the bound are left
    to the plain path's NumPy check), and within a stream t going up by 1. Writes where
    each stream's run of rows starts into `cuts`, closed by the number of rows; returns
    how many entries of `cuts` it wrote, or -1 if anything is off."""
    n = len(times)
    n_cuts = 0
    for r in range(n):
        total = 0.0
        for c in range(len(cols)):
            v = cols[c][r]
            if not (0.0 <= v <= 1.0):  # also NaN
                return -1
            rows[r, c] = v
            total += v
        if abs(total - 1.0) > 0.5 * tolerance:
            return -1
        if r == 0 or codes[r] != codes[r - 1]:
            cuts[n_cuts] = r
            n_cuts += 1
        elif times[r - 1] == T_MAX or times[r] != times[r - 1] + 1:  # no wrap to -2^63
            return -1
    cuts[n_cuts] = n
    return n_cuts + 1


class _Formatter(threading.Thread):
    """Formats each stream's groups and writes the lines once the reader has found the
    whole file valid (before that, nothing is opened). Until then the groups wait in
    memory unformatted: the reader and the engine have the two cores to themselves, and
    the engine, the one stage the command's time hangs on, is not slowed by a third
    thread; the formatter takes the reader's core when it is done. A file is written as
    the lines come (it is moved into place at the end, or removed); standard output only
    once the engine is done, so that an engine error leaves it empty, as on the plain
    path. The engine emits each stream's groups in the output's order, (t_start,
    t_first), which is checked part by part: a stream that breaks it before any of its
    lines is written is sorted and formatted again when it ends (each line depends on
    its row only); after, it is a bug (RuntimeError)."""

    def __init__(self, groups: queue.Queue, valid: threading.Event, output: Path | None):
        super().__init__(daemon=True)
        self.groups, self.valid, self.output = groups, valid, output
        self.arena = Arena()
        self.writing = False
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            chunks = self._ordered()
            first = next(chunks, None)  # the first chunk to write, once the file is valid
            self.writing = True
            write_text(itertools.chain([] if first is None else [first], chunks), self.output)
        except _Abandon:
            pass
        except BaseException as exc:  # re-raised by the caller
            self.error = exc

    def _ordered(self):
        pending, sid, parts, last, in_order, mark = [], None, [], None, True, 0
        for item in self._after_reading():
            if item is _END or item[0] != sid:
                if not in_order:
                    pending.extend(_sorted_lines(sid, parts))
                if item is _END:
                    yield from pending
                    return
                sid, parts, last, in_order, mark = item[0], [], None, True, len(pending)
            cols = item[1]
            if len(cols):
                parts.append(cols)
                if in_order:
                    in_order, last = _follows(cols, last)
                    if in_order:
                        pending.extend(group_lines(sid, cols, self.arena))
                    elif mark < 0:
                        raise RuntimeError(f"stream {sid!r}: the engine emitted groups out "
                                           "of (t_start, t_first) order")
                    else:
                        del pending[mark:]
            if self.valid.is_set() and self.output is not None and pending:
                yield from pending
                pending, mark = [], -1  # this stream's lines are being written

    def _after_reading(self):
        """The engine's items, held back until the reader is done (`valid`; the engine
        ends after the reader, so `_END` comes after it too)."""
        held = []
        while True:
            item = self.groups.get()
            if item is _ABANDON:
                raise _Abandon
            held.append(item)
            if self.valid.is_set():
                yield from held
                held.clear()
                if item is _END:
                    return


def _follows(cols, last) -> tuple[bool, tuple[int, int]]:
    """Whether `cols` is in (t_start, t_first) order and starts at or after `last`."""
    start, first = cols.t_start, cols.t_first
    step_s, step_f = np.diff(start), np.diff(first)
    ordered = bool(((step_s > 0) | ((step_s == 0) & (step_f >= 0))).all())
    if last is not None and ordered:
        ordered = (int(start[0]), int(first[0])) >= last
    return ordered, (int(start[-1]), int(first[-1]))


def _sorted_lines(sid: str, parts: list) -> list:
    (_, cols), = sorted_groups({sid: parts})
    return list(group_lines(sid, cols))

