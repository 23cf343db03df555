"""The table catalog: every Delta table of the lake, its name, schema and day column,
and the few operations the pipeline needs on them.

Each table lives at `<lake root>/<name>` and is partitioned (or at least filtered) by a
day column. `Table.replace_day` is the one way a step swaps a day's rows for some keys
(the patterns it ran) in a single commit that names the run; it skips the commit when
nothing would change, so a rerun of unchanged data leaves the table's version alone.
Large tables (bronze, silver) are written by Spark's executors and committed from
staging (`probcep.lake.delta`); small ones (gold, state) go from Arrow straight in.

Runs may write different slices of a table at once (the nightly DAG's `group_day` tasks,
one per pattern). Each write holds its slice's lock (`probcep.lake.locks`) and commits
through Delta's optimistic concurrency: delta-rs (1.6) refuses a predicate overwrite
when another writer's commit of the same day landed first, even for disjoint patterns
("a concurrent transactions added new data"), so the write is redone, a bounded number
of times with jittered backoff, from a fresh read of the table (`commit_with_retries`).
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from probcep.config.readings import READING_COLUMNS
from probcep.errors import DamagedTableError, ProbcepError, first_line
from probcep.lake.failures import damaged, disk_full, refused, writing
from probcep.lake.locks import ConcurrentWriteError, slice_lock
from probcep.lake.log_faults import log_fault

#: Columns that describe a run, not a result: ignored when deciding whether rows changed.
RUN_COLUMNS = ("run_id", "ingest_time", "normalize_time")
UTC_MICROS = pa.timestamp("us", tz="UTC")
#: Attempts at a write whose commit loses the race to other writers' commits, and the
#: backoff before the next attempt: doubling from the first value up to the second,
#: each wait drawn between its half and itself.
COMMIT_ATTEMPTS = 12
#: The commits delta-rs' vacuum adds to a table's log; they change no row.
VACUUM_OPERATIONS = ("VACUUM START", "VACUUM END")
BACKOFF_SECONDS = (0.05, 2.0)


@dataclass(frozen=True)
class Table:
    """One Delta table of the lake."""

    name: str  # its folder under the lake root, e.g. "gold/groups"
    day_column: str  # the day its rows belong to (the partition column of large tables)
    schema: pa.Schema | None = None  # None: it depends on the domain (silver)

    def path(self, lake: str | Path) -> Path:
        return Path(lake) / self.name

    def exists(self, lake) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(str(self.path(lake)))

    @contextmanager
    def log(self, lake, version: int | None = None):
        """Run the block that reads the table's log; a log delta-rs cannot read (bad JSON
        in a commit, a commit or checkpoint gone, a version that is not there) becomes
        one `DamagedTableError` line naming the table and the file, not a Rust traceback.
        A refused path or a full disk stays what it is."""
        from deltalake.exceptions import DeltaError

        try:
            with refused():
                yield
        except DeltaError as exc:
            if disk_full(exc):
                raise
            fault = log_fault(self.path(lake), version)
            if fault is None:  # delta-rs' first line, without its structures' dumps
                first = first_line(exc)
                fault = (first if len(first) <= 200 else first[:197] + "...",
                         "restore its log from a copy")
            at = "" if version is None else f" at version {version}"
            raise DamagedTableError(f"{self.path(lake)}: its Delta log cannot be read{at} "
                                    f"({fault[0]}): the table is damaged ({fault[1]})") \
                from exc

    def opened(self, lake, version: int | None = None):
        """The table's delta-rs handle (at `version`), its log read under `log`."""
        from deltalake import DeltaTable

        with self.log(lake, version):
            return DeltaTable(str(self.path(lake)), version=version)

    def version(self, lake) -> int | None:
        """The current Delta version (None when the table does not exist yet)."""
        return self.opened(lake).version() if self.exists(lake) else None

    def rows_per_day(self, lake) -> dict[dt.date, int]:
        """Rows per day of a table partitioned by its day column, from the log's add
        actions (their `numRecords`): no data file is read. Empty without a table."""
        if not self.exists(lake):
            return {}
        added = pa.table(self.opened(lake).get_add_actions(flatten=True))
        out: dict[dt.date, int] = {}
        for day, n in zip(added[f"partition.{self.day_column}"].to_pylist(),
                          added["num_records"].to_pylist()):
            out[day] = out.get(day, 0) + (n or 0)
        return out

    def data_version(self, lake) -> int | None:
        """The newest version whose commit changed the rows: the current one, less the
        commits a vacuum adds after it (its start and end change no row), so that what
        pins a table's rows by version does not see a vacuum as new data."""
        if not self.exists(lake):
            return None
        table = self.opened(lake)
        version, limit = table.version(), 8
        while True:
            with self.log(lake):
                history = table.history(limit)
            for commit in history:  # newest first
                if commit.get("operation") not in VACUUM_OPERATIONS:
                    return int(commit.get("version", version))
                version = int(commit.get("version", version)) - 1
            if len(history) < limit:
                return max(version, 0)
            limit *= 8

    def read(self, lake, filters=None, version: int | None = None,
             columns: Sequence[str] | None = None) -> pa.Table:
        """Rows matching delta-rs tuple `filters` (empty, with the schema, when the table
        does not exist yet), with `columns` (default: all)."""
        if not self.exists(lake):
            if self.schema is None:
                raise FileNotFoundError(f"{self.path(lake)}: no Delta table here")
            return self.schema.empty_table().select(columns or self.schema.names)
        import pyarrow.fs as pafs

        # Arrow's own local files: through deltalake's default (a Python file system),
        # Arrow's threads free the bytes read after the result is back, taking the GIL;
        # a process exiting at once then aborted in 1 of 17 errors (exit 134, QA)
        folder = self.path(lake).absolute()
        files = pafs.SubTreeFileSystem(str(folder), pafs.LocalFileSystem())
        with damaged(folder):  # Arrow names a file of the table relative to it
            rows = self.opened(lake, version).to_pyarrow_table(
                filters=filters or None, columns=columns, filesystem=files)
        if self.schema is None or columns:
            return rows
        for f in self.schema:  # a column added since this version was written: nulls
            if f.name not in rows.schema.names and f.nullable:
                rows = rows.append_column(f, pa.nulls(rows.num_rows, f.type))
        return rows.select(self.schema.names)

    def recorded(self, lake, keys: Sequence[str], depth: int = 50) -> dict[str, str | None]:
        """Each key's value in the newest commit whose metadata has it (None when none
        has, or there is no table): the last `depth` commits read first, then eight times
        as many while a key is missing (commits without it, such as a vacuum's two, once
        hid silver's clock behind 50 of them: QA, 2026-11-28)."""
        if not self.exists(lake):
            return dict.fromkeys(keys)
        table = self.opened(lake)
        while True:
            with self.log(lake):
                history = table.history(depth)
            found = {key: next((c[key] for c in history if key in c), None) for key in keys}
            if None not in found.values() or len(history) < depth:
                return found
            depth *= 8

    def first_day(self, lake, version: int | None = None) -> dt.date | None:
        """The earliest day with a file (None: no file, or no table), from the log."""
        return min(self.days(lake, version), default=None)

    def days(self, lake, version: int | None = None) -> set[dt.date]:
        """The days with a file (none when there is no table), from the log."""
        if not self.exists(lake):
            return set()
        return {dt.date.fromisoformat(p[self.day_column]) for p in
                self.opened(lake, version).partitions()}

    def files(self, lake, filters=None, version: int | None = None) -> list[str]:
        """The files of the current snapshot (or of `version`) that may hold rows matching
        `filters` (partition values select files exactly; other columns prune by Delta's
        min/max statistics)."""
        return self.file_lister(lake, version)(filters)

    def file_lister(self, lake, version: int | None = None):
        """`files` as a function of `filters` over one snapshot, whose log is read once
        however many times it is asked (a walk back day by day asks once a day)."""
        if not self.exists(lake):
            return lambda filters=None: []
        table = self.opened(lake, version)
        return lambda filters=None: local_files(table, filters)

    def scan(self, lake, filters=None, where: pc.Expression | None = None,
             columns: Sequence[str] | None = None,
             batch_rows: int = 8192) -> Iterator[pa.RecordBatch]:
        """The rows matching `where` of the files `files(filters)` may hold, a batch of
        at most `batch_rows` at a time, with `columns` (default: all) of the table's
        schema (`where` may use only those): what memory holds is a batch
        and a 1 MiB read buffer, however many rows a file or a row group has (Arrow's
        dataset scanner reads ahead, and a whole row group at once without a buffered
        stream: reading a 120 MiB row group that way cost about 4 times its size)."""
        import pyarrow.parquet as pq

        schema = pa.schema([self.schema.field(c) for c in columns or self.schema.names])
        for uri in self.files(lake, filters):
            with damaged(file=uri):
                source = pq.ParquetFile(uri, pre_buffer=False, buffer_size=1 << 20)
            have = set(source.schema_arrow.names)
            for part in source.iter_batches(batch_size=batch_rows,
                                            columns=[n for n in schema.names if n in have]):
                rows = pa.Table.from_batches([part])
                for f in schema:  # a column added since this file was written: nulls
                    if f.name not in have:
                        rows = rows.append_column(f, pa.nulls(rows.num_rows, f.type))
                rows = rows.select(schema.names).cast(schema)
                if where is not None:
                    rows = rows.filter(where)
                yield from rows.to_batches()

    def day_filter(self, day: dt.date, keys: dict[str, Sequence]) -> list:
        return [(self.day_column, "=", day), *((k, "in", list(v)) for k, v in keys.items())]

    def day_predicate(self, day: dt.date, keys: dict[str, Sequence]) -> str:
        return " AND ".join([f"{self.day_column} = '{day.isoformat()}'",
                             *(sql_in(k, v) for k, v in keys.items())])

    def add_missing_columns(self, lake, metadata: dict) -> list[str]:
        """Add the schema's nullable columns the stored table lacks (a table written
        before they were added), in one commit; returns their names. Older rows read
        them as null."""
        from deltalake import Field

        if self.schema is None or not self.exists(lake):
            return []
        table = self.opened(lake)
        stored = set(table.schema().to_arrow().names)
        missing = [f for f in self.schema if f.name not in stored and f.nullable]
        if missing:
            table.alter.add_columns([Field.from_arrow(f) for f in missing],
                                    commit_properties=commit_properties(metadata))
        return [f.name for f in missing]

    def lock(self, lake, day: dt.date, **keys: Sequence):
        """Hold the slice lock of the day's rows with these key values (the whole day
        without keys) for a `with` block: see `probcep.lake.locks.slice_lock`."""
        return slice_lock(lake, [self], day, keys)

    def replace_day(self, lake, day: dt.date, rows: pa.Table, metadata: dict,
                    **keys: Sequence) -> bool:
        """Replace the day's rows whose key columns hold the given values (for example
        `pattern=["room_visit"]`) by `rows`, in one commit whose metadata is `metadata`,
        holding the slice's lock.

        Returns False, writing nothing, when the new rows equal the stored ones apart
        from run columns (and the table exists). A commit that loses the race to another
        writer's is redone from a fresh read; should the slice's own rows have changed
        meanwhile (a writer that ignored the lock), it stops with ConcurrentWriteError
        instead."""
        return self.replace_days(lake, [day], rows, metadata, **keys)

    def replace_days(self, lake, days: Sequence[dt.date], rows: pa.Table, metadata: dict,
                     **keys: Sequence) -> bool:
        """`replace_day` for the slices of several days at once (`rows` holds those of
        each), in one commit, holding each day's slice lock: a cache filled for many days
        costs one commit, not one a day."""
        from deltalake import write_deltalake

        days = sorted(set(days))
        path = self.path(lake)
        if len(days) == 1:
            selected = self.day_filter(days[0], keys)
            predicate = self.day_predicate(days[0], keys)
            what = str(days[0])
        else:
            selected = [(self.day_column, "in", days), *((k, "in", list(v))
                                                         for k, v in keys.items())]
            predicate = " AND ".join([sql_in(self.day_column, [d.isoformat() for d in days]),
                                      *(sql_in(k, v) for k, v in keys.items())])
            what = f"{days[0]}..{days[-1]} ({len(days)} days)"
        seen: list[pa.Table] = []

        def attempt() -> bool:
            stored = self.read(lake, selected)
            if seen and not same_rows(stored, seen[-1], ignore=()):
                raise ConcurrentWriteError(
                    f"another run is writing {self.name} for {what}: the rows of "
                    f"{predicate} changed while this run committed")
            seen.append(stored)
            exists = self.exists(lake)
            if same_rows(rows, stored) and exists:  # a first day with no rows still
                return False  # makes the table: its readers find it empty, not missing
            if exists:
                write_deltalake(str(path), rows, mode="overwrite", predicate=predicate,
                                commit_properties=commit_properties(metadata))
            else:
                path.mkdir(parents=True, exist_ok=True)
                write_deltalake(str(path), rows, mode="append",
                                commit_properties=commit_properties(metadata))
            return True

        with ExitStack() as held:
            for day in days:
                held.enter_context(self.lock(lake, day, **keys))
            held.enter_context(writing(path))
            return commit_with_retries(attempt, f"{self.name} for {what}")

    def clear_day(self, lake, day: dt.date, metadata: dict) -> bool:
        """Delete the day's rows (a day that turned out silent), in one commit, holding
        the day's lock; returns False, committing nothing, when there are none."""
        from deltalake import DeltaTable

        def attempt() -> bool:
            if not self.files(lake, [(self.day_column, "=", day.isoformat())]):
                return False
            DeltaTable(str(self.path(lake))).delete(
                self.day_predicate(day, {}), commit_properties=commit_properties(metadata))
            return True

        with self.lock(lake, day), writing(self.path(lake)):
            return commit_with_retries(attempt, f"{self.name} for {day}")

    def append(self, lake, rows: pa.Table, metadata: dict) -> None:
        """Append rows in one commit that names the run (redone if it loses a race)."""
        from deltalake import write_deltalake

        path = self.path(lake)
        with writing(path):
            path.mkdir(parents=True, exist_ok=True)
            commit_with_retries(lambda: write_deltalake(
                str(path), rows, mode="append", commit_properties=commit_properties(metadata)),
                self.name)


def commit_with_retries(attempt: Callable[[], object], where: str):
    """`attempt()`, a whole write from reading the table to its commit, redone while its
    commit fails on a conflict with other writers' commits (deltalake's
    CommitFailedError: nothing of it was committed), up to COMMIT_ATTEMPTS times with
    jittered exponential backoff; its result. Then a ConcurrentWriteError naming `where`.
    """
    from deltalake.exceptions import CommitFailedError

    first, cap = BACKOFF_SECONDS
    for n in range(COMMIT_ATTEMPTS):
        try:
            return attempt()
        except CommitFailedError as e:
            last = str(e).splitlines()[0] if str(e) else type(e).__name__
            if n + 1 < COMMIT_ATTEMPTS:
                delay = min(cap, first * 2 ** n)
                time.sleep(random.uniform(delay / 2, delay))
    raise ConcurrentWriteError(f"{where}: the commit still conflicted with other writers' "
                               f"after {COMMIT_ATTEMPTS} attempts ({last})")


def commit_properties(metadata: dict):
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={k: str(v) for k, v in metadata.items()})


def same_rows(a: pa.Table, b: pa.Table, ignore: Sequence[str] = RUN_COLUMNS) -> bool:
    """Whether two sets of rows are equal, in any order, apart from the `ignore` columns
    (run columns by default)."""
    if a.num_rows != b.num_rows:
        return False
    if a.num_rows == 0:
        return True
    names = [n for n in a.schema.names if n not in ignore]
    return _sorted(a.select(names)).equals(_sorted(b.select(names)))


def _sorted(table: pa.Table) -> pa.Table:
    keys = [(n, "ascending") for n in table.schema.names
            if not pa.types.is_binary(table.schema.field(n).type)]
    return table.take(pc.sort_indices(table, sort_keys=keys))


def sql_in(column: str, values) -> str:
    """`column IN ('a', 'b')` for a Delta predicate; values are quoted, quotes doubled."""
    quoted = ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)
    return f"{column} IN ({quoted})"


# --- bronze and silver ----------------------------------------------------------------

BRONZE = Table("bronze/readings", "batch_date", pa.schema([
    ("stream_id", pa.string()), ("sensor_id", pa.string()), ("ts", UTC_MICROS),
    ("symbol", pa.string()), ("score", pa.float64()), ("batch_date", pa.date32()),
    ("source_file", pa.string()), ("ingest_time", UTC_MICROS),
]))
#: One row per refused input record (or unreadable file). `raw` (added later, so last
#: and null in older rows) keeps what the text columns cannot show: a malformed line's
#: text, a wide row's or unknown columns' fields as JSON, an unreadable file's error.
QUARANTINE = Table("bronze/quarantine", "batch_date", pa.schema([
    *((c, pa.string()) for c in READING_COLUMNS), ("reason", pa.string()),
    ("source_file", pa.string()), ("batch_date", pa.date32()), ("ingest_time", UTC_MICROS),
    ("raw", pa.string()),
]))
#: One row per day ingest has read (or found silent): its counts, why it was silent, and
#: `landing`, a digest of the landing files it read (`pipeline.landing.listing`; added
#: later, so null in older rows). What tells normalize that a day with landing files but
#: nothing in bronze was ingested (every record quarantined, or empty files) rather than
#: never ingested, and that the files it read are still those in the folder.
INGEST_LOG = Table("bronze/ingest_log", "batch_date", pa.schema([
    ("batch_date", pa.date32()), ("files", pa.int64()), ("records", pa.int64()),
    ("bronze", pa.int64()), ("quarantined", pa.int64()), ("silent", pa.string()),
    ("run_id", pa.string()), ("ingest_time", UTC_MICROS), ("landing", pa.string()),
]))
#: One row per stream and timestep; one probability column per silver symbol.
SILVER = Table("silver/distributions", "date")
#: One row per day normalize made (or found silent): its counts, and `bronze`, what the
#: bronze files that may hold the day's readings held then (`lake.delta.contents`), so
#: grouping can tell silver made before bronze changed (a re-ingest after a data fix).
NORMALIZE_LOG = Table("silver/normalize_log", "date", pa.schema([
    ("date", pa.date32()), ("rows", pa.int64()), ("streams", pa.int64()),
    ("bronze", pa.string()), ("run_id", pa.string()), ("normalize_time", UTC_MICROS),
]))
SILVER_KEYS = ("stream_id", "t", "ts", "date")


def local_files(table, filters=None) -> list[str]:
    """The paths of a delta-rs table's files that may hold rows matching `filters`, as
    the file system names them. delta-rs gives the table's own folder URL-encoded (a
    lake under `my lake/` as `my%20lake/`), which Spark and Arrow then cannot find."""
    from urllib.parse import unquote, urlparse

    encoded = urlparse(table.table_uri).path  # the files' paths start with it
    return [unquote(encoded) + f[len(encoded):] if f.startswith(encoded) else f
            for f in table.file_uris(file_pruning_predicate=filters or None)]


def refuse_other_silver(lake, clock: str, gaps: str) -> None:
    """ProbcepError when silver was made on another clock than `clock` (the settings'
    `timestep_seconds` and `epoch`: every t would name another time, and a slice or a
    plot would find no rows where they are), or under another gap policy than `gaps`
    (`Settings.gap_label`: its held rows, groups and engine states are the other
    silence's, and a night would go on from them as if they were this one's)."""
    said = {
        "clock": lambda made: (f"silver's t count timesteps of {made}, the settings' of "
                               f"{clock}: every t would name another time (use the lake's "
                               f"timestep_seconds and epoch, or another lake_root)"),
        "gaps": lambda made: (f"silver was made under gap_policy {made}, the settings' is "
                              f"{gaps}: its rows, groups and engine states hold the other "
                              f"silence (use the lake's gap_policy and hold_last_steps, or "
                              f"another lake_root)")}
    made = SILVER.recorded(lake, ("clock", "gaps"))
    for key, wanted in (("clock", clock), ("gaps", gaps)):
        if made[key] not in (None, wanted):
            raise ProbcepError(f"{SILVER.path(lake)}: {said[key](made[key])}")


def silver_schema(symbols: Sequence[str]) -> pa.Schema:
    return pa.schema([("stream_id", pa.string()), ("t", pa.int64()), ("ts", UTC_MICROS),
                      ("date", pa.date32()), *((s, pa.float64()) for s in symbols)])


# --- gold and state ----------------------------------------------------------------

#: A group's identity: what it is, independent of which run produced it.
GROUP_KEY = ("pattern", "pattern_version", "stream_id", "t_start", "t_first", "t_end")

GROUPS = Table("gold/groups", "batch_date", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("t_start", pa.int64()), ("t_first", pa.int64()), ("t_end", pa.int64()),
    ("ts_start", UTC_MICROS), ("ts_first", UTC_MICROS), ("ts_end", UTC_MICROS),
    ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()),
    ("batch_date", pa.date32()), ("run_id", pa.string()),
]))
STATES = Table("state/engine", "batch_date", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("batch_date", pa.date32()), ("next_t", pa.int64()), ("state", pa.binary()),
    ("run_id", pa.string()),
]))
ALERTS = Table("gold/alerts", "batch_date", pa.schema([
    *GROUPS.schema, ("alert_threshold", pa.float64())]))
ALERT_CHANGES = Table("gold/alert_changes", "batch_date", pa.schema([
    ("change", pa.string()), ("changed_by_run", pa.string()), *ALERTS.schema]))

APPROX_MATCHES = Table("gold/approx_matches", "batch_date", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("first_tag", pa.int64()), ("match_point", pa.int64()), ("errors", pa.int64()),
    ("n_subsequences", pa.int64()), ("batch_date", pa.date32()), ("run_id", pa.string()),
]))
APPROX_BUNDLES = Table("gold/approx_bundles", "batch_date", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("bundle", pa.int64()), ("first_match_point", pa.int64()),
    ("last_match_point", pa.int64()), ("n_matches", pa.int64()), ("min_errors", pa.int64()),
    ("batch_date", pa.date32()), ("run_id", pa.string()),
]))
APPROX_HISTORY = Table("state/approx_history", "batch_date", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("batch_date", pa.date32()),
    ("history", pa.binary()), ("run_id", pa.string()),
]))

# --- correlations (docs/semantics.md §8) ----------------------------------------------

CORRELATIONS = Table("gold/correlations", "batch_date", pa.schema([
    ("correlation", pa.string()), ("correlation_version", pa.string()),
    ("live_pattern", pa.string()), ("live_version", pa.string()), ("stream_id", pa.string()),
    ("t_start", pa.int64()), ("t_first", pa.int64()), ("t_end", pa.int64()),
    ("ts_start", UTC_MICROS), ("ts_first", UTC_MICROS), ("ts_end", UTC_MICROS),
    ("n_matches", pa.int64()), ("max_match_probability", pa.float64()),
    ("live_probability", pa.float64()), ("archive_probability", pa.float64()),
    ("r_lo", pa.int64()), ("r_hi", pa.int64()), ("mode", pa.string()),
    ("probability", pa.float64()), ("silver_version", pa.int64()), ("strategy", pa.string()),
    ("batch_date", pa.date32()), ("run_id", pa.string()),
]))
CORRELATION_ALERTS = Table("gold/correlation_alerts", "batch_date", pa.schema([
    *CORRELATIONS.schema, ("alert_threshold", pa.float64())]))
CORRELATION_ALERT_CHANGES = Table("gold/correlation_alert_changes", "batch_date", pa.schema([
    ("change", pa.string()), ("changed_by_run", pa.string()), *CORRELATION_ALERTS.schema]))
#: Per correlation version, stream and day: the expected number of archive matches
#: ending that day (an upper bound on P_A of any range inside it, by the union bound);
#: the empty stream id holds the value for a stream silent all day.
ARCHIVE_STATS = Table("state/archive_stats", "date", pa.schema([
    ("correlation", pa.string()), ("correlation_version", pa.string()),
    ("stream_id", pa.string()), ("date", pa.date32()), ("expected_matches", pa.float64()),
    ("silver_version", pa.int64()), ("run_id", pa.string()),
]))

#: Every table, in data-flow order.
CATALOG = (BRONZE, QUARANTINE, INGEST_LOG, SILVER, NORMALIZE_LOG, GROUPS, STATES, ALERTS,
           ALERT_CHANGES, APPROX_MATCHES, APPROX_BUNDLES, APPROX_HISTORY, CORRELATIONS,
           CORRELATION_ALERTS, CORRELATION_ALERT_CHANGES, ARCHIVE_STATS)

# --- live mode ----------------------------------------------------------------------

#: Live mode's engine states between micro-batches: one row per pattern version and
#: stream with a state (`batch_id`: the micro-batch that wrote it), plus one row with an
#: empty pattern whose `next_t` is the first timestep not yet complete. Partitioned by
#: `bucket` (a hash of the stream id; the mark's is -1): each micro-batch replaces the
#: buckets it touched and the mark, last of its writes (`probcep.pipeline.live_states`).
LIVE_STATE = Table("state/live", "batch_id", pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("next_t", pa.int64()), ("state", pa.binary()), ("batch_id", pa.int64()),
    ("quiet", pa.bool_()), ("bucket", pa.int32()),
]))
#: One row per live micro-batch: what it read and wrote, and how long it took.
LIVE_STATUS = Table("state/live_status", "batch_date", pa.schema([
    ("batch_id", pa.int64()), ("batch_date", pa.date32()), ("started", UTC_MICROS),
    ("finished", UTC_MICROS), ("files", pa.int64()), ("rows", pa.int64()),
    ("late_rows", pa.int64()), ("quarantined", pa.int64()), ("silver_rows", pa.int64()),
    ("groups", pa.int64()), ("alerts", pa.int64()), ("complete_until", UTC_MICROS),
    ("latency_seconds", pa.float64()), ("cache_misses", pa.int64()), ("run_id", pa.string()),
]))


def commit_once(table: Table, lake, rows: pa.Table | list, metadata: dict, app_id: str,
                version: int, mode: str = "append",
                partition_by: Sequence[str] | None = None,
                partition_filters: list | None = None) -> bool:
    """Append (or overwrite with) `rows` in one commit that carries the Delta application
    transaction (`app_id`, `version`), unless the table already holds a commit of that
    transaction at `version` or later: a micro-batch retried after a crash writes nothing
    twice. Returns whether it committed.

    `rows` may also be the add actions of Parquet files already written into the table
    (a table partitioned by `partition_by`): then an overwrite replaces only the
    partitions `partition_filters` select, and files not committed stay unreferenced.
    Rows for a partitioned table are written as such files first (`partition_by`, the
    table's partition column: its day)."""
    from deltalake import CommitProperties, DeltaTable, Schema, Transaction, write_deltalake
    from deltalake.transaction import create_table_with_add_actions

    path = table.path(lake)
    properties = CommitProperties(custom_metadata={k: str(v) for k, v in metadata.items()},
                                  app_transactions=[Transaction(app_id, version)])
    written: list[list] = []  # a partitioned table's files, written once for all attempts

    def attempt() -> bool:
        if committed(table, lake, app_id, version):
            return False
        if not table.exists(lake):
            path.mkdir(parents=True, exist_ok=True)
        columns = list(partition_by or [])
        actions, schema = rows, table.schema
        if isinstance(rows, pa.Table):
            if not columns:
                write_deltalake(str(path), rows, mode=mode, commit_properties=properties)
                return True
            from probcep.lake.delta import partition_files

            if not written:  # the day partition's files, written as ingest's keep the day
                (column,) = columns
                written.append(partition_files(rows, table, lake, column))
            actions, schema = written[0], rows.schema
        if not table.exists(lake):
            if actions is not rows:  # the rows' first files make the table, in one commit
                create_table_with_add_actions(str(path), Schema.from_arrow(schema), actions,
                                              "append", columns,
                                              commit_properties=properties)
                return True
            DeltaTable.create(str(path), schema, mode="ignore", partition_by=columns)
        DeltaTable(str(path)).create_write_transaction(
            actions, mode, schema, columns, partition_filters,
            commit_properties=properties)
        return True

    with writing(path):  # a full disk names the table
        return commit_with_retries(attempt, table.name)


def committed(table: Table, lake, app_id: str, version: int) -> bool:
    """Whether the table holds a commit of application transaction `app_id` at `version`
    or later."""
    if not table.exists(lake):
        return False
    from deltalake import DeltaTable

    done = DeltaTable(str(table.path(lake))).transaction_version(app_id)
    return done is not None and done >= version
