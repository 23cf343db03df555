"""One stream's time slice of silver, reading only the files that can hold it.

Silver is partitioned by date and each day's rows are sorted by stream and t before
Delta cuts them into files (`target_file_mb`), so every file covers a narrow range of
streams and timesteps. Delta keeps each file's min/max per column; a slice keeps only
the files whose ranges meet the stream and the t range, so an hour of one stream reads
one or two files whatever the size of the archive.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from probcep.gold import tables as T
from probcep.lake.delta import pruned_files
from probcep.lake.normalize import SILVER
from probcep.settings import Settings


@dataclass(frozen=True)
class SilverSlice:
    stream_id: str
    t_first: int
    t_last: int
    files: list[str]
    files_in_table: int

    def line(self) -> str:
        return (f"stream {self.stream_id!r}, t={self.t_first}..{self.t_last}: read "
                f"{len(self.files)} of {self.files_in_table} silver files")

    def read(self):
        """The slice's rows (pyarrow), sorted by t."""
        import pyarrow.dataset as ds

        if not self.files:
            return None
        rows = ds.dataset(self.files, format="parquet").to_table(
            filter=(ds.field("stream_id") == self.stream_id)
            & (ds.field("t") >= self.t_first) & (ds.field("t") <= self.t_last))
        return rows.sort_by("t")


def timestep(settings: Settings, ts: dt.datetime) -> int:
    """The timestep holding wall-clock time `ts` (naive times are UTC)."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
    return (ts - settings.epoch) // settings.step


def silver_slice(settings: Settings, stream_id: str, start: dt.datetime,
                 end: dt.datetime) -> SilverSlice:
    """The silver files holding `stream_id` between `start` (inclusive) and `end`
    (exclusive)."""
    if end <= start:
        raise ValueError(f"slice end {end} is not after its start {start}")
    first, last = timestep(settings, start), timestep(settings, end - dt.timedelta(0, 0, 1))
    path = T.table_path(settings.lake_root, SILVER)
    files, total = pruned_files(path, [("stream_id", "=", stream_id), ("t", ">=", first),
                                       ("t", "<=", last)])
    return SilverSlice(stream_id, first, last, files, total)
