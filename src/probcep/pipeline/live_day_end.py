"""The engine states live mode saves in `state/engine` when a day ends, as the night saves
them, gathered a chunk of streams at a time.

A micro-batch that completes a day advances every stream with a state, a cache's capacity
at a time (`LiveStates.chunks`); each chunk's open states are appended, as a row group, to
a Parquet file written inside the table as soon as the chunk is done, and the batch adds
that file to `state/engine` in one Delta commit (delta-rs `create_write_transaction`,
statistics from the file's footer) carrying the batch's application transaction: a batch
retried after a crash does not add it again. So what passes through memory is a chunk's
states, however many streams are open at midnight (issue 15). (delta-rs's own writer,
given the rows as a stream, held several times their size: 744 MiB for 480 MiB of
states, 2026-11-24.)

The days' stored rows of these patterns, which exist only if another run saved those
days first (the night, or live mode from another checkpoint), are deleted first, in a
commit of their own: the two commits are not atomic, but both are idempotent, and the
slice locks keep other writers out meanwhile.
"""

from __future__ import annotations

import datetime as dt
import uuid
from contextlib import ExitStack

import pyarrow as pa
import pyarrow.parquet as pq

from probcep.config.registry import RegisteredPattern
from probcep.lake.delta import add_action
from probcep.lake.tables import STATES, commit_once, commit_properties, committed
from probcep.pipeline.group_day import state_rows
from probcep.pipeline.group_tasks import OUTPUT


class DayEndStates:
    """The states of the days one micro-batch completes, on their way to `state/engine`."""

    def __init__(self, lake, patterns: list[RegisteredPattern], run_id: str, batch_id: int):
        self.lake, self.patterns, self.run_id = lake, patterns, run_id
        self.days: list[dt.date] = []
        self.rel = f"part-live-{batch_id:08d}-{uuid.uuid4().hex}.parquet"
        self.path = STATES.path(lake) / self.rel
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.path, STATES.schema, compression="snappy")
        self._writer.write_table(rows)

    def commit(self, metadata: dict, app_id: str, batch_id: int) -> bool:
        """Replace the days' states of these patterns by the file's rows (nothing when the
        batch completed no day, or committed them before a restart)."""
        if not self.days:
            return False
        self._writer.close()
        self._writer = None  # from here on the file is the commit's (or vacuum's)
        names = [p.name for p in self.patterns]
        meta = {**metadata, "batch_date": ",".join(d.isoformat() for d in self.days)}
        with ExitStack() as held:
            for day in self.days:
                held.enter_context(STATES.lock(self.lake, day, pattern=names))
            if committed(STATES, self.lake, app_id, batch_id):
                self.path.unlink()
                return False
            if STATES.exists(self.lake) and STATES.files(self.lake, [
                    ("batch_date", "in", self.days)]):
                from deltalake import DeltaTable

                DeltaTable(str(STATES.path(self.lake))).delete(
                    " OR ".join(f"({STATES.day_predicate(d, {'pattern': names})})"
                                for d in self.days),
                    commit_properties=commit_properties(meta))
            return commit_once(STATES, self.lake, [
                add_action(self.path, self.rel, {}, STATES.schema, "")],  # stats of all
                meta, app_id, batch_id)

    def abandon(self) -> None:
        """The batch failed before its commit: the file is no table's."""
        if self._writer is not None:
            self._writer.close()
            self.path.unlink(missing_ok=True)
