"""Silver as a correlation's archive (docs/semantics.md §8): stored rows read by stream and
time range, from the files of the days the range covers (at the run's pinned silver
version), each file pruned by its Parquet statistics on `stream_id` and `t`.

It is the lake's row source for `probcep.engine.read_plans`: the plan decides which
ranges are read; this class reads them and counts what it read. A stream's first
timestep (where ranges are clipped) is found by scanning only `stream_id` and `t`,
backwards from the night, and only as far as the earliest range needs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np

from probcep.config.clock import Clock


class SilverArchive:
    """Rows of silver for correlations over [horizon, end]: `files_of_day(day)` lists a
    day's files; `silence` is what a timestep without a row holds (None: gap-free)."""

    def __init__(self, files_of_day: Callable[[dt.date], list[str]], clock: Clock,
                 domain: tuple[str, ...], silence, horizon: int, end: int):
        self.files_of_day, self.clock, self.domain = files_of_day, clock, tuple(domain)
        self.silence = tuple(np.full(len(domain), np.nan) if silence is None else silence)
        self.horizon, self.end = horizon, end
        self.reads = self.rows_read = self.files_read = 0
        self._files: dict[dt.date, list[str]] = {}
        self._firsts: dict[dt.date, dict[str, int]] = {}

    def day(self, t: int) -> dt.date:
        return (self.clock.epoch + t * self.clock.step).date()

    def days(self, lo: int, hi: int) -> list[dt.date]:
        first, last = self.day(lo), self.day(hi)
        return [first + dt.timedelta(d) for d in range((last - first).days + 1)]

    def files(self, day: dt.date) -> list[str]:
        if day not in self._files:
            self._files[day] = list(self.files_of_day(day))
        return self._files[day]

    def read(self, stream_id: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        files = [f for d in self.days(lo, hi) for f in self.files(d)]
        self.reads += 1
        if not files:
            return np.zeros(0, np.int64), np.zeros((0, len(self.domain)))
        dataset = ds.dataset(files, format="parquet")
        rows = dataset.to_table(columns=["t", *self.domain], filter=(
            (ds.field("stream_id") == stream_id) & (ds.field("t") >= lo) & (ds.field("t") <= hi)))
        rows = rows.take(pc.sort_indices(rows, [("t", "ascending")]))
        self.rows_read += rows.num_rows
        self.files_read += len(files)
        probs = np.column_stack([rows[c].to_numpy() for c in self.domain]) if rows.num_rows \
            else np.zeros((0, len(self.domain)))
        return rows["t"].to_numpy().astype(np.int64), probs

    def _first_of_day(self, day: dt.date) -> dict[str, int]:
        """Each stream's first t on a day (reading stream_id and t only)."""
        if day not in self._firsts:
            import pyarrow.dataset as ds

            firsts: dict[str, int] = {}
            if self.files(day):
                keys = ds.dataset(self.files(day), format="parquet").to_table(
                    columns=["stream_id", "t"]).group_by("stream_id").aggregate([("t", "min")])
                firsts = dict(zip(keys["stream_id"].to_pylist(), keys["t_min"].to_pylist()))
            self._firsts[day] = firsts
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
