"""Spark DataFrames in and out of the lake's Delta tables, without the driver holding a row.

Large tables (bronze, quarantine, silver) are written by Spark's executors and only
committed by the driver. The executors write a day's rows as Parquet into a staging
folder inside the table, `<table>/_staging/<id>-<owner>/`; the driver reads the files'
footers (row counts, min/max and null counts per column), moves the files into the day's
partition folder and commits them in one Delta transaction (delta-rs add actions with
those statistics, plus the removal of the day's previous files). No row passes through
the driver, and Spark cuts the files and their row groups itself.

Delta readers see only committed files, so a run killed at any point leaves no partial
day: before the commit its files sit in its staging folder or, moved but not committed,
in the partition folder, listed in the staging folder's `_moved.json`. Staging folders
are named after their run's process (`probcep.lake.locks.Owner.tag`); a later write of
the table clears those of runs that are provably dead, with the moved files of any that
never committed, and never touches a live run's. A day is written from staging through
commit under that day's slice lock, one run at a time.

A rerun of unchanged data commits nothing: the executors also compute a fingerprint of
the staged rows (row count and order-independent aggregates of each row's xxhash64,
run columns left out), and the committed files' names carry it; when the day's current
files carry the new fingerprint, the staged files are dropped and the version stays.

Reads go the other way: delta-rs lists the current snapshot's files, pruned by
partition values and by the per-file min/max statistics Delta keeps, and Spark (or
pyarrow) reads only those Parquet files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
import shutil
import time
import uuid
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from probcep.lake.locks import ConcurrentWriteError, Owner
from probcep.lake.spark import literal
from probcep.lake.tables import (
    RUN_COLUMNS,
    Table,
    commit_properties,
    commit_with_retries,
)

#: The folder inside a table that holds its runs' staging folders (Delta readers and
#: vacuum skip folders whose names start with an underscore).
STAGING = "_staging"
#: Staging folders of an earlier layout, beside the table: `_staging-<table>-<id>-<owner>`.
LEGACY_STAGING_PREFIX = "_staging-"
#: The partition folders of a staging folder holding many days' rows (`staged_days`).
DAY_FOLDER = "_day"
#: A staging folder's record of the rows' fingerprint, and of files moved out of it.
FINGERPRINT_FILE = "_fingerprint.json"
MOVED_FILE = "_moved.json"
#: Rows per Parquet row group: small enough that a day holds many, whose statistics
#: let a time slice skip most of a file and let the grouping job split a day by stream.
ROW_GROUP_ROWS = 131_072
#: Staged rows up to this many are validated on the driver with pandas (`staged_frame`).
DRIVER_CHECK_ROWS = 250_000
#: Delta keeps min/max statistics for this many leading columns (Delta's default).
STATS_COLUMNS = 32
#: A staging folder named without its owner (an older layout) is cleared once it is
#: this old.
UNOWNED_STAGING_SECONDS = 24 * 3600
#: A committed file's name: its index among the write's files, their number, the rows'
#: fingerprint and the write's id.
COMMITTED_NAME = re.compile(r"part-(?P<i>\d{5})-of-(?P<n>\d{5})-(?P<fp>[0-9a-f]{16}|none)"
                            r"-(?P<write>[0-9a-f]{32})\.parquet")


def contents(uris) -> str:
    """What committed files hold, as sorted words `partition/fingerprint`, one per
    partition (a file named by an earlier writer, without a fingerprint: its name). Equal
    words, equal rows: a rewrite of unchanged rows commits nothing, so keeps the files."""
    words = set()
    for uri in uris:
        partition, name = uri.rsplit("/", 2)[-2:]
        found = COMMITTED_NAME.fullmatch(name)
        what = name if found is None else found["write" if found["fp"] == "none" else "fp"]
        words.add(f"{partition}/{what}")
    return " ".join(sorted(words))


def writer_properties(schema):
    """How delta-rs writes Parquet for the lake (benchmarks that build silver with it):
    silver's row groups, and dictionary encoding only for string columns."""
    import pyarrow as pa
    from deltalake import ColumnProperties, WriterProperties

    plain = ColumnProperties(dictionary_enabled=False)
    return WriterProperties(max_row_group_size=ROW_GROUP_ROWS, column_properties={
        f.name: plain for f in schema if not _is_string(pa, f.type)})


def spark_parquet_options(schema, target_file_size: int | None = None) -> dict[str, str]:
    """How Spark's executors write the lake's Parquet: row groups of ROW_GROUP_ROWS rows,
    dictionaries only for string columns (ids, symbols, sensors, whose values repeat;
    a dictionary of timesteps, times or probabilities is larger than the plain values
    and slower to write and read), and files cut at about `target_file_size` bytes (a
    row count estimated from the column types)."""
    import pyarrow as pa

    options = {"parquet.block.row.count.limit": str(ROW_GROUP_ROWS),
               "compression": "snappy"}
    for f in schema:
        if not _is_string(pa, f.type):
            options[f"parquet.enable.dictionary#{f.name}"] = "false"
    if target_file_size:
        # about 8 bytes a number and 4 a dictionary-encoded string, before compression
        row_bytes = sum(4 if _is_string(pa, f.type) else 8 for f in schema) or 1
        options["maxRecordsPerFile"] = str(max(1, target_file_size // row_bytes))
    return options


def _is_string(pa, t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)


def spark_read(spark, table: Table, lake, filters=None, version: int | None = None):
    """The table's current files (or `version`'s) that may hold rows matching `filters`
    (see `Table.files`), read by Spark. None when there is no table or no such file."""
    files = table.files(lake, filters, version)
    return spark.read.parquet(*map(literal, files)) if files else None


# --- staging folders ------------------------------------------------------------------


@contextmanager
def staging_folder(table_path: Path):
    """A fresh folder inside the table for files on their way into it, named after this
    process (not created: Spark creates it); removed afterwards, with any that dead runs
    left behind (`clear_dead_staging`). Other runs' live folders are left alone."""
    (table_path / STAGING).mkdir(parents=True, exist_ok=True)
    clear_dead_staging(table_path)
    folder = table_path / STAGING / f"{uuid.uuid4().hex}-{Owner.me().tag()}"
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_OWNED = r"[0-9a-f]{32}(?:-(?P<owner>[0-9a-f]*\.[0-9a-f]*\.[0-9]+\.[0-9]*))?"


def clear_dead_staging(table_path: Path) -> list[Path]:
    """Remove the table's staging folders whose run is provably dead (`Owner.dead`),
    with the files such a run moved into the table but never committed; and folders
    named without an owner once older than UNOWNED_STAGING_SECONDS. Returns them."""
    inside = re.compile(_OWNED)
    beside = re.compile(re.escape(f"{LEGACY_STAGING_PREFIX}{table_path.name}-") + _OWNED)
    candidates = [(p, inside) for p in (table_path / STAGING).glob("*")]
    candidates += [(p, beside) for p in
                   table_path.parent.glob(f"{LEGACY_STAGING_PREFIX}{table_path.name}-*")]
    cleared = []
    for old, name in candidates:
        found = name.fullmatch(old.name)
        if found is None or not old.is_dir():
            continue
        if found["owner"] is not None:
            owner = Owner.from_tag(found["owner"])
            if owner is None or not owner.dead():
                continue
        else:
            try:
                if time.time() - old.stat().st_mtime < UNOWNED_STAGING_SECONDS:
                    continue
            except OSError:
                continue
        _remove_uncommitted(table_path, old)
        shutil.rmtree(old, ignore_errors=True)
        cleared.append(old)
    return cleared


def _remove_uncommitted(table_path: Path, folder: Path) -> None:
    """A dead run's files moved into the table (its `_moved.json`, one per day it
    staged): removed unless a commit after the version it read names its write."""
    for record in [folder / MOVED_FILE, *folder.glob(f"*/{MOVED_FILE}")]:
        try:
            moved = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        _remove_moved(table_path, moved)


def _remove_moved(table_path: Path, moved: dict) -> None:
    from deltalake import DeltaTable

    if DeltaTable.is_deltatable(str(table_path)):
        table = DeltaTable(str(table_path))
        since = table.version() - (moved["version"] if moved["version"] is not None else -1)
        commits = table.history(limit=since) if since > 0 else []
        if len(commits) < since:  # a log read short proves nothing: keep the files
            return
        if any(c.get("write_id") == moved["write"] for c in commits):
            return
    for rel in moved["files"]:
        (table_path / rel).unlink(missing_ok=True)


# --- the executors' write ---------------------------------------------------------------


def day_fingerprints(rows, by: str) -> dict[str, str]:
    """The content of a Spark DataFrame's rows for each value of column `by` (as text),
    in any order, apart from run columns and `by`, as 16 hex digits: the row count and
    the sum and xor of each row's xxhash64 (null cells told apart from values),
    computed by the executors in one job."""
    from pyspark.sql import functions as F

    names = [c for c in rows.columns if c not in RUN_COLUMNS and c != by]
    return {r[0]: _fingerprint(rows.schema, names, r[1], _hash_sum(r[2:5]), r[5]) for r in
            rows.groupBy(F.col(by).cast("string")).agg(*_fingerprint_parts(names)).collect()}


#: The hashes are summed in three pieces of HASH_PIECE bits as 64-bit integers, which
#: cannot overflow below 2^42 rows; a sum as decimal(38,0) cost a third more at 10M rows.
HASH_PIECE = 21


def _fingerprint_parts(names: list[str]):
    """Count, the sum of the rows' hashes in three pieces (`_hash_sum`), their xor."""
    from pyspark.sql import functions as F

    nulls = F.concat_ws("", *[F.when(F.col(f"`{c}`").isNull(), "1").otherwise("0")
                              for c in names])
    h = F.xxhash64(*[F.col(f"`{c}`") for c in names], nulls)
    low = F.lit((1 << HASH_PIECE) - 1)
    return (F.count(F.lit(1)), F.sum(F.shiftright(h, 2 * HASH_PIECE)),
            F.sum(F.shiftright(h, HASH_PIECE).bitwiseAND(low)), F.sum(h.bitwiseAND(low)),
            F.bit_xor(h))


def _hash_sum(pieces) -> int:
    """The exact sum of the hashes from the sums of their pieces (high piece signed)."""
    high, middle, low = (p or 0 for p in pieces)
    return (high << 2 * HASH_PIECE) + (middle << HASH_PIECE) + low


def _fingerprint(schema, names: list[str], n: int, total, xor) -> str:
    described = json.dumps([[f"{f.name}:{f.dataType.simpleString()}"
                             for f in schema if f.name in names],
                            n, str(total or 0), xor or 0])
    return hashlib.sha1(described.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StagedDays:
    """Rows of several days staged at once: one folder per day (`staged_days`)."""

    schema: object  # pyarrow Schema of the rows
    root: Path  # the staging folder
    folders: dict  # day -> its folder in root, holding its part files and fingerprint


@contextmanager
def staged_days(frame, table: Table, lake, days, target_file_size: int | None = None,
                empty: bool = False):
    """Spark's executors write `frame`, rows of the given days (the table's day column),
    as Parquet into a staging folder inside the table in one job: each day's files in a
    folder of their own with the fingerprint of its rows (`day_fingerprints`); a day
    without rows gets an empty folder (committing it empties the day). With `empty` the
    caller knows `frame` has no rows, and no Spark job runs (a clean night's quarantine:
    about a second of a short night). Yields `StagedDays`."""
    from pyspark.sql import functions as F

    schema = frame.limit(0).toArrow().schema
    options = spark_parquet_options(schema, target_file_size)
    day_text = F.col(table.day_column).cast("string")
    with staging_folder(table.path(lake)) as folder:
        if len(days) == 1 and not empty:  # straight into the day's folder: partitionBy
            # would sort the rows by day first, and spill them once they outgrow the memory
            only = days[0].isoformat()
            frame.where(day_text == only).write.options(**options) \
                .parquet(str(folder / f"{DAY_FOLDER}={only}"))
        elif not empty:
            frame.withColumn(DAY_FOLDER, day_text).write.options(**options) \
                .partitionBy(DAY_FOLDER).parquet(str(folder))
        found = [p for p in folder.glob(f"{DAY_FOLDER}=*") if _parts(p)]
        prints = day_fingerprints(frame.sparkSession.read.parquet(literal(folder)),
                                  DAY_FOLDER) if found else {}
        names = [c for c in frame.columns if c not in RUN_COLUMNS]
        folders = {}
        for day in days:
            sub = folder / f"{DAY_FOLDER}={day.isoformat()}"
            sub.mkdir(parents=True, exist_ok=True)
            fp = prints.get(day.isoformat()) or _fingerprint(frame.schema, names, 0, 0, 0)
            (sub / FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": fp}))
            folders[day] = sub
        yield StagedDays(schema, folder, folders)


def staged_frame(spark, folder: Path, driver_rows: int = DRIVER_CHECK_ROWS,
                 schema=None):
    """The staged rows to validate: a pandas frame read on the driver when there are at
    most `driver_rows` (GX's Spark engine spends seconds of Spark jobs on a suite
    whatever the rows; its pandas engine checks a small day in a fraction of that), else a
    Spark DataFrame read by the executors, so the driver never holds a large day. With no
    staged rows, an empty Spark DataFrame of the Spark `schema`, when given."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = _parts(folder, deep=True)
    if not parts and schema is not None:
        return spark.createDataFrame([], schema)
    if not parts or staged_rows(folder) > driver_rows:
        return spark.read.parquet(*map(literal, parts or [folder])) \
            .drop(DAY_FOLDER)
    return pa.concat_tables([pq.read_table(p) for p in parts]).to_pandas()


def staged_rows(folder: Path) -> int:
    """Rows in a staging folder (and its days' folders), from the Parquet footers."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in _parts(folder, deep=True))


def staged_counts(folder: Path, by: str) -> dict[str, int]:
    """Rows per value of column `by` in a staging folder: that column alone is read, a
    row group at a time and kept dictionary-encoded, so the driver's memory does not
    grow with the day."""
    from collections import Counter

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    counts: Counter = Counter()
    for part in sorted(folder.glob("part-*.parquet")):
        file = pq.ParquetFile(part, read_dictionary=[by])
        for g in range(file.num_row_groups):
            column = file.read_row_group(g, columns=[by]).column(by)
            for pair in pc.value_counts(column).to_pylist():
                counts[pair["values"]] += pair["counts"]
    return dict(counts)


# --- the driver's commit -------------------------------------------------------------


def commit_staged(folder: Path, schema, table: Table, lake, day: dt.date, metadata: dict,
                  target_file_size: int | None = None) -> bool:
    """Replace the day's partition of a table by the staged files, in one commit whose
    metadata is `metadata` (and the write's id and fingerprint), holding the day's slice
    lock; returns whether it committed. The files are moved into the day's partition
    folder and committed as they are, with statistics from their footers; no row is read.
    (`target_file_size` is for callers of an earlier writer: Spark cut the files.)

    Nothing is committed when the day's current files hold the staged rows already (same
    fingerprint). A commit that loses the race to another day's commit is redone (the
    table is partitioned by day, so delta-rs rarely refuses one); should the day's own
    files have changed meanwhile, it stops with ConcurrentWriteError. A staging folder
    that is gone stops it too: it never commits an empty day in place of rows it lost."""
    import pyarrow as pa

    schema = pa.schema([f.with_nullable(True) for f in schema])
    path, where = table.path(lake), f"{table.name} for {day}"
    day_filter = [(table.day_column, "=", day.isoformat())]
    with table.lock(lake, day):
        if not folder.is_dir():
            raise ConcurrentWriteError(f"{where}: staging folder {folder} is gone "
                                       f"(removed by another run?); nothing committed")
        known = _read_json(folder / FINGERPRINT_FILE)
        fp = known.get("fingerprint", "none")
        parts = [p for p in _parts(folder) if _footer(p).num_rows]
        current = sorted(table.files(lake, day_filter))
        if table.exists(lake) and _holds(current, fp, len(parts)):
            return False
        version = table.version(lake)
        write = uuid.uuid4().hex
        partition = f"{table.day_column}={day.isoformat()}"
        names = [f"{partition}/part-{i:05d}-of-{len(parts):05d}-{fp}-{write}.parquet"
                 for i in range(len(parts))]
        moved = {"write": write, "version": version, "files": names}
        (folder / MOVED_FILE).write_text(json.dumps(moved))
        try:
            (path / partition).mkdir(parents=True, exist_ok=True)
            for src, rel in zip(parts, names):
                os.replace(src, path / rel)
                # dated now, not when staged: a vacuum spares files younger than the
                # table's retention that no version names yet (this one, until committed);
                # a file an executor wrote as another user moves, but keeps its time
                with suppress(PermissionError):
                    os.utime(path / rel)
            adds = [add_action(path / rel, rel, {table.day_column: day.isoformat()}, schema,
                               table.day_column) for rel in names]
            properties = commit_properties({**metadata, "write_id": write, "fingerprint": fp})
            seen: list[list[str]] = [current]

            def attempt() -> None:
                from deltalake import DeltaTable

                files = sorted(table.files(lake, day_filter))
                if files != seen[-1]:
                    raise ConcurrentWriteError(f"another run is writing {where}: the day's "
                                               f"files changed while this run committed")
                DeltaTable(str(path)).create_write_transaction(
                    adds, mode="overwrite", schema=schema, partition_by=[table.day_column],
                    partition_filters=day_filter, commit_properties=properties)

            _create(path, schema, table.day_column, commit_properties(metadata))
            commit_with_retries(attempt, where)
        except BaseException:
            # a run killed here is cleared by the next write (from MOVED_FILE); one
            # that raised removes its files now: its staging folder, and the record
            # with it, is removed on the way out
            _remove_moved(path, moved)
            raise
        return True


def _create(path: Path, schema, day_column: str, properties) -> None:
    """An empty table partitioned by the day column, unless there is one (writers of
    other days may create it at the same moment: one of them does)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    if DeltaTable.is_deltatable(str(path)):
        return
    try:
        DeltaTable.create(str(path), schema, mode="ignore", partition_by=[day_column],
                          commit_properties=properties)
    except DeltaError:
        if not DeltaTable.is_deltatable(str(path)):
            raise


def _holds(current: list[str], fp: str, n_new: int) -> bool:
    """Whether the day's current files (URIs) are exactly one write's, of fingerprint
    `fp`; an empty day holds an empty write."""
    if not current:
        return n_new == 0
    found = [COMMITTED_NAME.fullmatch(u.rsplit("/", 1)[-1]) for u in current]
    if fp == "none" or any(m is None for m in found):
        return False
    return ({(m["fp"], m["write"], int(m["n"])) for m in found} == {(fp, found[0]["write"],
                                                                     len(current))}
            and sorted(int(m["i"]) for m in found) == list(range(len(current))))


def add_action(file: Path, rel: str, partition_values: dict, schema, day_column: str):
    """A Delta add action for a Parquet file already in the table, its statistics
    (numRecords; min, max and null count of the leading columns) from its footer."""
    from deltalake.transaction import AddAction

    meta = _footer(file)
    st = file.stat()
    return AddAction(rel, st.st_size, partition_values, int(st.st_mtime * 1000), True,
                     json.dumps(footer_stats(meta, schema, day_column)))


def partition_files(rows, table: Table, lake, column: str) -> list:
    """`rows` written as Parquet files into the table's partition folders by `column`
    (a day), one file a partition, each keeping the column: a file read on its own is
    complete, as those the executors write are (delta-rs's own writer leaves it out).
    Returns their add actions, not committed yet (a vacuum spares files younger than
    the table's retention)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path, write = table.path(lake), uuid.uuid4().hex
    strings = [f.name for f in rows.schema if _is_string(pa, f.type)]
    adds = []
    for i, value in enumerate(pc.unique(rows[column]).to_pylist()):
        part = rows.filter(pc.is_null(rows[column]) if value is None
                           else pc.equal(rows[column], pa.scalar(value, rows[column].type)))
        serialized = None if value is None else \
            value.isoformat() if isinstance(value, dt.date) else str(value)
        folder = f"{column}={'__HIVE_DEFAULT_PARTITION__' if value is None else serialized}"
        rel = f"{folder}/part-{i:05d}-{write}.parquet"
        (path / folder).mkdir(parents=True, exist_ok=True)
        pq.write_table(part, path / rel, row_group_size=ROW_GROUP_ROWS,
                       compression="snappy", use_dictionary=strings)
        adds.append(add_action(path / rel, rel, {column: serialized}, rows.schema, column))
    return adds


def footer_stats(meta, schema, day_column: str) -> dict:
    """Delta's per-file statistics from a Parquet footer (pyarrow FileMetaData), over
    the row groups: numRecords, and for the first STATS_COLUMNS data columns minValues,
    maxValues (where every row group has them; none for binary and boolean columns) and
    nullCount. Timestamps are kept to the millisecond, widened outward."""
    import pyarrow as pa

    indexed = [f for f in schema if f.name != day_column][:STATS_COLUMNS]
    where = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    lo, hi, nulls = {}, {}, {}
    for f in indexed:
        k = where.get(f.name)
        if k is None:
            continue
        groups = [meta.row_group(g).column(k).statistics for g in range(meta.num_row_groups)]
        if all(s is not None and s.has_null_count for s in groups):
            nulls[f.name] = sum(s.null_count for s in groups)
        if pa.types.is_binary(f.type) or pa.types.is_boolean(f.type):
            continue
        valued = [s for s in groups if s is not None and s.has_min_max]
        if not valued or any(s is None or (not s.has_min_max and s.null_count != s.num_values)
                             for s in groups):
            continue
        low, high = min(s.min for s in valued), max(s.max for s in valued)
        if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
            continue
        try:
            lo[f.name], hi[f.name] = _stat(low, f.type, up=False), _stat(high, f.type, up=True)
        except OverflowError:  # a time in year 9999's last millisecond, widened outward:
            continue  # no bounds, so no reader skips the file
    return {"numRecords": meta.num_rows, "minValues": lo, "maxValues": hi,
            "nullCount": nulls}


def _stat(value, t, up: bool):
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        micros = value.microsecond
        value = value.replace(microsecond=micros // 1000 * 1000)
        if up and micros % 1000:
            value += dt.timedelta(milliseconds=1)
        value = value.astimezone(dt.UTC)  # strftime's %Y has no leading zeros before 1000
        return f"{value.year:04d}-{value:%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}Z"
    if pa.types.is_date(t):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode()
    return value


def replace_days(frame, table: Table, lake, days, metadata, target_file_size=None,
                 check=None, count: str | None = None) -> dict:
    """Replace each day's partition of a large table by a Spark DataFrame's rows of that
    day, written by the executors in one job and committed from staging a day at a
    time, holding the days' slice locks from staging through commit; returns per day
    (rows, distinct values of column `count`). Unchanged days commit nothing;
    `metadata(day)` is a day's commit metadata.

    `check(staged)`, given all the staged rows (`staged_frame`: pandas when few, else
    Spark), runs before any commit: when it raises, nothing is committed and the table
    stays as it was."""
    from contextlib import ExitStack

    with ExitStack() as held:
        for day in days:
            held.enter_context(table.lock(lake, day))
        rows = held.enter_context(staged_days(frame, table, lake, days, target_file_size))
        spark = frame.sparkSession
        if check is not None:
            check(staged_frame(spark, rows.root))
        out = {}
        for day in days:  # distinct values from the staged column, not a Spark job
            folder = rows.folders[day]
            values = staged_counts(folder, count) if count is not None else {}
            out[day] = (staged_rows(folder), sum(v is not None for v in values))
            commit_staged(folder, rows.schema, table, lake, day, metadata(day))
        return out


def _parts(folder: Path, deep: bool = False) -> list[Path]:
    """A staging folder's part files (with `deep`, its days' folders' too)."""
    return sorted(folder.glob(f"{'**/' if deep else ''}part-*.parquet"))


def _footer(path: Path):
    import pyarrow.parquet as pq

    return pq.read_metadata(path)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
