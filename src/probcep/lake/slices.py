"""One stream's time slice of silver, reading only the files that can hold it, and the
slice with its silent timesteps filled in.

Silver is partitioned by date and each day's rows are sorted by stream and t before
Delta cuts them into files (`target_file_mb`), so every file covers a narrow range of
streams and timesteps. Delta keeps each file's min/max per column; a slice keeps only
the files whose ranges meet the stream and the t range, so an hour of one stream reads
one or two files whatever the size of the archive.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from probcep.config.settings import Settings
from probcep.errors import ProbcepError
from probcep.lake.tables import SILVER, local_files, refuse_other_silver


@dataclass(frozen=True)
class SilverSlice:
    stream_id: str
    t_first: int
    t_last: int
    files: list[str]
    files_in_table: int
    schema: object  # silver's pyarrow schema: an empty slice still has its columns
    #: Whether some silver file may hold the stream at any time (its min/max say so):
    #: an empty slice of a stream no file holds is a mistyped id, not a quiet hour.
    stream_seen: bool = True

    def line(self) -> str:
        return (f"stream {self.stream_id!r}, t={self.t_first}..{self.t_last}: read "
                f"{len(self.files)} of {self.files_in_table} silver files")

    def read(self):
        """The slice's stored rows (pyarrow), sorted by t: timesteps with readings only
        (see `with_silence` for every timestep)."""
        import pyarrow.dataset as ds

        if not self.files:
            return self.schema.empty_table()
        rows = ds.dataset(self.files, format="parquet").to_table(
            filter=(ds.field("stream_id") == self.stream_id)
            & (ds.field("t") >= self.t_first) & (ds.field("t") <= self.t_last))
        return rows.sort_by("t")


def with_silence(t: np.ndarray, probs: np.ndarray, lo: int, hi: int,
                 silence) -> np.ndarray:
    """Every timestep of [lo, hi] as a (timesteps, symbols) array: silver's rows where
    it has them (times `t`, rows `probs`), the settings' `silence` everywhere else."""
    dense = np.tile(np.asarray(silence, dtype=np.float64), (hi - lo + 1, 1))
    inside = (t >= lo) & (t <= hi)
    dense[t[inside] - lo] = probs[inside]
    return dense


def silver_slice(settings: Settings, stream_id: str, start: dt.datetime,
                 end: dt.datetime) -> SilverSlice:
    """The silver files holding `stream_id` between `start` (inclusive) and `end`
    (exclusive)."""
    if end <= start:
        raise ProbcepError(f"slice end {end} is not after its start {start}")
    lake = settings.lake_root
    if not SILVER.exists(lake):
        raise ProbcepError(f"{SILVER.path(lake)}: no silver table here")
    refuse_other_silver(lake, settings.clock.label, settings.gap_label)
    clock = settings.clock
    first, last = clock.timestep(start), clock.timestep(end - dt.timedelta(0, 0, 1))
    import pyarrow as pa

    table = SILVER.opened(lake)
    files = local_files(table, [
        ("stream_id", "=", stream_id), ("t", ">=", first), ("t", "<=", last)])
    seen = bool(files) or bool(local_files(table, [("stream_id", "=", stream_id)]))
    return SilverSlice(stream_id, first, last, files, len(local_files(table)),
                       pa.schema(table.schema().to_arrow()), seen)
