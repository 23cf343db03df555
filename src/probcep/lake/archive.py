"""Silver as a correlation's archive (docs/semantics.md §8): stored rows read by stream and
time range, from the files of the days the range covers (at the run's pinned silver
version), each file pruned by its Parquet statistics on `stream_id` and `t`.

It is the lake's row source for `probcep.engine.read_plans`: the plan decides which
ranges are read; this class reads them and counts what it read. A stream's first
timestep (where ranges are clipped) is found by scanning only `stream_id` and `t`,
backwards from the night, and only as far as the earliest range needs; `StreamStarts`
keeps what was scanned from one archive to the next (live mode builds one every
micro-batch, and silver's files are immutable).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np

from probcep.config.clock import Clock

#: Timesteps of planned spans one scan serves (`SilverArchive.prefetch`): what memory
#: holds at once is at most this many rows (about 128 MiB over three symbols). A scan
#: decodes its days' files whatever it keeps, so fewer, larger scans read less.
PREFETCH_ROWS = 4_000_000
#: Days whose streams' first timesteps `StreamStarts` holds (the least recently used go).
STARTS_DAYS = 32


class StreamStarts:
    """Each stream's first timestep per day of silver, with the files it was read from: a
    day that gained files since (a micro-batch's) scans only them; one that lost a file
    (a rerun, a compaction) is read again. Shared by the archives of one live process."""

    def __init__(self):
        self._days: dict[dt.date, tuple[frozenset[str], dict[str, int]]] = {}

    def of_day(self, day: dt.date, files: list[str]) -> dict[str, int]:
        if not files:
            return {}
        held = self._days.pop(day, None)
        have = frozenset(files)
        if held is not None and held[0] <= have:
            seen, firsts = held
        else:
            seen, firsts = frozenset(), {}
        new = [f for f in files if f not in seen]
        if new:
            import pyarrow.dataset as ds

            keys = ds.dataset(new, format="parquet").to_table(
                columns=["stream_id", "t"]).group_by("stream_id").aggregate([("t", "min")])
            for sid, t in zip(keys["stream_id"].to_pylist(), keys["t_min"].to_pylist()):
                if t < firsts.get(sid, t + 1):
                    firsts[sid] = t
        self._days[day] = (have, firsts)
        while len(self._days) > STARTS_DAYS:
            del self._days[next(iter(self._days))]
        return firsts


class SilverArchive:
    """Rows of silver for correlations over [horizon, end]: `files_of_day(day)` lists a
    day's files; `silence` is what a timestep without a row holds (None: gap-free)."""

    def __init__(self, files_of_day: Callable[[dt.date], list[str]], clock: Clock,
                 domain: tuple[str, ...], silence, horizon: int, end: int,
                 starts: StreamStarts | None = None):
        self.files_of_day, self.clock, self.domain = files_of_day, clock, tuple(domain)
        self.silence = tuple(np.full(len(domain), np.nan) if silence is None else silence)
        self.horizon, self.end = horizon, end
        self.reads = self.rows_read = self.files_read = 0
        self._files: dict[dt.date, list[str]] = {}
        self.starts = StreamStarts() if starts is None else starts
        self._firsts: dict[dt.date, dict[str, int]] = {}
        self._plan: list[tuple[str, int, int]] = []  # (stream, span lo, span hi) in order
        self._at: dict[str, int] = {}
        self._held: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def day(self, t: int) -> dt.date:
        return (self.clock.epoch + t * self.clock.step).date()

    def days(self, lo: int, hi: int) -> list[dt.date]:
        first, last = self.day(lo), self.day(hi)
        return [first + dt.timedelta(d) for d in range((last - first).days + 1)]

    def files(self, day: dt.date) -> list[str]:
        if day not in self._files:
            self._files[day] = list(self.files_of_day(day))
        return self._files[day]

    def prefetch(self, plan: dict[str, list[tuple[int, int]]]) -> None:
        """The reads to come, in order: each stream's are then served from one scan for
        the next planned streams whose spans add up to PREFETCH_ROWS timesteps, not a
        scan per range (a scan decodes the days' files whatever rows it keeps: over 15
        micro-batch files of live mode, 0.12 s a range, against 0.16 s for 100 streams
        at once)."""
        self._plan = [(sid, min(lo for lo, _ in r), max(hi for _, hi in r))
                      for sid, r in plan.items() if r]
        self._at = {sid: i for i, (sid, _, _) in enumerate(self._plan)}
        self._held = {}

    def read(self, stream_id: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        files = [f for d in self.days(lo, hi) for f in self.files(d)]
        self.reads += 1
        if not files:
            return np.zeros(0, np.int64), np.zeros((0, len(self.domain)))
        self.files_read += len(files)
        i = self._at.get(stream_id)
        if i is not None and self._plan[i][1] <= lo and hi <= self._plan[i][2]:
            if stream_id not in self._held:
                j, rows = i, 0
                while j < len(self._plan) and (j == i or rows < PREFETCH_ROWS):
                    rows += self._plan[j][2] - self._plan[j][1] + 1
                    j += 1
                self._scan(self._plan[i:j])
            t, probs = self._held[stream_id]
            a, b = np.searchsorted(t, lo, "left"), np.searchsorted(t, hi, "right")
            t, probs = t[a:b], probs[a:b]
        else:
            t, probs = self._rows(files, [stream_id], lo, hi)[stream_id]
        self.rows_read += len(t)
        return t, probs

    def _scan(self, planned: list[tuple[str, int, int]]) -> None:
        """Hold the rows of these planned streams over their spans, read in one scan."""
        lo, hi = min(p[1] for p in planned), max(p[2] for p in planned)
        files = [f for d in self.days(lo, hi) for f in self.files(d)]
        got = self._rows(files, [p[0] for p in planned], lo, hi)
        self._held = {sid: (t[(t >= a) & (t <= b)], probs[(t >= a) & (t <= b)])
                      for sid, a, b in planned for t, probs in [got[sid]]}

    def _rows(self, files: list[str], streams: list[str], lo: int,
              hi: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each stream's rows with lo <= t <= hi in the files, sorted by t (stream ids
        read as dictionary indices: no Python string per row)."""
        import pyarrow as pa
        import pyarrow.dataset as ds

        empty = (np.zeros(0, np.int64), np.zeros((0, len(self.domain))))
        out = dict.fromkeys(streams, empty)
        if not files:
            return out
        fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
            dictionary_columns={"stream_id"}))
        rows = ds.dataset(files, format=fmt).to_table(
            columns=["stream_id", "t", *self.domain],
            filter=(ds.field("stream_id").isin(streams) if len(streams) > 1 else
                    ds.field("stream_id") == streams[0])
            & (ds.field("t") >= lo) & (ds.field("t") <= hi))
        if not rows.num_rows:
            return out
        ids = rows["stream_id"]
        if not pa.types.is_dictionary(ids.type):
            ids = ids.dictionary_encode()
        ids = ids.unify_dictionaries().combine_chunks()
        key = ids.indices.to_numpy(zero_copy_only=False)
        t = rows["t"].to_numpy().astype(np.int64)
        order = np.lexsort((t, key))
        key, t = key[order], t[order]
        probs = np.column_stack([rows[c].to_numpy() for c in self.domain])[order]
        names = ids.dictionary.to_pylist()
        cuts = np.flatnonzero(key[1:] != key[:-1]) + 1
        for a, b in zip([0, *cuts], [*cuts, len(key)]):
            out[names[key[a]]] = (t[a:b], probs[a:b])
        return out

    def _first_of_day(self, day: dt.date) -> dict[str, int]:
        """Each stream's first t on a day (reading stream_id and t only, once a file)."""
        if day not in self._firsts:
            self._firsts[day] = self.starts.of_day(day, self.files(day))
        return self._firsts[day]

    def stream_ids(self) -> list[str]:
        """Streams with a row between the horizon and the end."""
        return sorted({s for d in self.days(self.horizon, self.end)
                       for s in self._first_of_day(d)})

    def first_t(self, stream_id: str) -> int | None:
        """The stream's first timestep, or any t <= horizon when it began before it (the
        ranges start at the horizon or later, so clipping is the same); None: no row up
        to the end."""
        for d in self.days(self.horizon, self.end):
            t = self._first_of_day(d).get(stream_id)
            if t is not None:
                before = self._heard_before(stream_id) if t > self.horizon else None
                return t if before is None else before
        return self._heard_before(stream_id)

    def _heard_before(self, stream_id: str) -> int | None:
        """A t before the horizon's day at which the stream has a row (walking back to
        the clock's epoch), or None."""
        day = self.day(self.horizon) - dt.timedelta(1)
        while day >= self.clock.epoch.date():
            t = self._first_of_day(day).get(stream_id)
            if t is not None:
                return t
            day -= dt.timedelta(1)
        return None
