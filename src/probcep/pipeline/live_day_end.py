"""The engine states live mode saves in `state/engine` when a day ends, as the night saves
them, gathered a chunk of streams at a time.

A micro-batch that completes a day advances every stream with a state, a cache's capacity
at a time (`LiveStates.chunks`); each chunk's open states go to a local spill file as soon
as the chunk is done, and the batch commits the file to `state/engine` in one Delta
transaction that delta-rs reads a batch of rows at a time. So what passes through memory
is a chunk's states, however many streams are open at midnight (issue 15). The commit
replaces the days' rows of the batch's patterns and carries the batch's application
transaction: a batch retried after a crash does not commit it again.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from probcep.config.registry import RegisteredPattern
from probcep.lake.tables import STATES, commit_once
from probcep.pipeline.group_day import state_rows
from probcep.pipeline.group_tasks import OUTPUT

#: Rows a batch of the spill file holds when delta-rs reads it back, and rows a row group
#: of the files it writes holds (it keeps a row group in memory until it is full).
READ_ROWS = 8192


class DayEndStates:
    """The states of the days one micro-batch completes, on their way to `state/engine`."""

    def __init__(self, patterns: list[RegisteredPattern], run_id: str):
        self.patterns, self.run_id = patterns, run_id
        self.days: list[dt.date] = []
        self._folder: tempfile.TemporaryDirectory | None = None
        self._writer: pq.ParquetWriter | None = None

    def add(self, day: dt.date, rows: pa.Table) -> None:
        """A chunk's open states of the day (the tasks' state rows)."""
        self._write(state_rows(rows, day, self.run_id))

    def end(self, day: dt.date) -> None:
        """The day's last chunk is in: its "day processed" rows."""
        self._write(state_rows(OUTPUT.empty_table(), day, self.run_id, self.patterns))
        self.days.append(day)

    def _write(self, rows: pa.Table) -> None:
        if self._writer is None:
            self._folder = tempfile.TemporaryDirectory(prefix="probcep-day-end-")
            self._writer = pq.ParquetWriter(self._path, STATES.schema)
        self._writer.write_table(rows)

    def commit(self, lake, metadata: dict, app_id: str, batch_id: int) -> bool:
        """Replace the days' states of these patterns by the spilled rows, in one commit
        (none when the batch completed no day, or committed before a restart)."""
        if not self.days:
            return False
        self._writer.close()
        names = [p.name for p in self.patterns]
        predicate = " OR ".join(f"({STATES.day_predicate(d, {'pattern': names})})"
                                for d in self.days)

        def rows() -> pa.RecordBatchReader:
            return pa.RecordBatchReader.from_batches(
                STATES.schema, pq.ParquetFile(self._path, buffer_size=1 << 20)
                .iter_batches(batch_size=READ_ROWS))

        with ExitStack() as held:
            for day in self.days:
                held.enter_context(STATES.lock(lake, day, pattern=names))
            return commit_once(STATES, lake, rows, {
                **metadata, "batch_date": ",".join(d.isoformat() for d in self.days)},
                app_id, batch_id, mode="overwrite", predicate=predicate,
                row_group_rows=READ_ROWS)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._folder is not None:
            self._folder.cleanup()

    @property
    def _path(self) -> Path:
        return Path(self._folder.name) / "states.parquet"

