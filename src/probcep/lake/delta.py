"""Spark DataFrames in and out of the lake's Delta tables, without the driver holding them.

The embedded default writes Delta with delta-rs (Spark's Delta jars cannot be fetched
where there is no Maven repository; docs/pipeline.md). A large batch must not pass
through the driver as one Arrow table, so Spark's executors first write the rows as
Parquet into a staging folder beside the table; delta-rs then streams those files, one
record batch at a time, into the table in a single commit and the staging folder is
removed. A run killed before the commit leaves only a staging folder, which no reader
sees and a later write of that table on the same host clears away. Staging folders are
named after their run's process (`probcep.lake.locks.Owner.tag`), so that a write clears
only the folders of runs that are provably dead, never a live run's; and a day is
written from staging through commit under that day's slice lock, one run at a time.

Reads go the other way: delta-rs lists the current snapshot's files, pruned by
partition values and by the per-file min/max statistics Delta keeps, and Spark (or
pyarrow) reads only those Parquet files.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from probcep.lake.locks import ConcurrentWriteError, Owner
from probcep.lake.tables import Table, commit_properties, commit_with_retries

STAGING_PREFIX = "_staging-"
BATCH_ROWS = 65_536
#: Rows per Parquet row group: small enough that a day holds many, whose statistics
#: let a time slice skip most of a file and let the grouping job split a day by stream.
ROW_GROUP_ROWS = 131_072
#: A staging folder named without its owner (written before owners were recorded) is
#: cleared once it is this old.
UNOWNED_STAGING_SECONDS = 24 * 3600


def writer_properties(schema):
    """How the lake writes Parquet: silver's row groups, and dictionary encoding only for
    string columns (ids, symbols, sensors), whose values repeat. Timesteps, timestamps
    and probabilities rarely repeat within a row group: a dictionary of them is larger
    than the plain values and slower to write and to read (delta-rs encodes every column
    with one by default)."""
    import pyarrow as pa
    from deltalake import ColumnProperties, WriterProperties

    plain = ColumnProperties(dictionary_enabled=False)
    return WriterProperties(max_row_group_size=ROW_GROUP_ROWS, column_properties={
        f.name: plain for f in schema
        if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                or pa.types.is_dictionary(f.type))})


def spark_read(spark, table: Table, lake, filters=None):
    """The table's current files that may hold rows matching `filters` (see
    `Table.files`), read by Spark. None when there is no table or no such file."""
    files = table.files(lake, filters)
    return spark.read.parquet(*files) if files else None


@contextmanager
def staging_folder(table_path: Path):
    """A fresh folder beside the table for files on their way into it, named after this
    process; removed afterwards, with any that dead runs on this host left behind (no
    reader ever looks there). Other runs' live folders are left alone."""
    table_path.parent.mkdir(parents=True, exist_ok=True)
    clear_dead_staging(table_path)
    folder = table_path.parent / (f"{STAGING_PREFIX}{table_path.name}-{uuid.uuid4().hex}"
                                  f"-{Owner.me().tag()}")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def clear_dead_staging(table_path: Path) -> list[Path]:
    """Remove the table's staging folders whose run is provably dead (`Owner.dead`), and
    those named without an owner once older than UNOWNED_STAGING_SECONDS; returns them."""
    name = re.compile(re.escape(f"{STAGING_PREFIX}{table_path.name}-") +
                      r"[0-9a-f]{32}(?:-(?P<owner>[0-9a-f]*\.[0-9a-f]*\.[0-9]+\.[0-9]*))?")
    cleared = []
    for old in table_path.parent.glob(f"{STAGING_PREFIX}{table_path.name}-*"):
        found = name.fullmatch(old.name)
        if found is None:
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
        shutil.rmtree(old, ignore_errors=True)
        cleared.append(old)
    return cleared


@contextmanager
def staged(frame, table_path: Path):
    """Spark writes `frame` as Parquet into a staging folder beside the table; yields the
    folder."""
    with staging_folder(table_path) as folder:
        frame.write.parquet(str(folder))
        yield folder


def staged_rows(folder: Path) -> int:
    """Rows in a staging folder, from the Parquet footers."""
    import pyarrow.dataset as ds

    return ds.dataset(_parts(folder), format="parquet").count_rows() if _parts(folder) else 0


def commit_staged(folder: Path, schema, table: Table, lake, day: dt.date, metadata: dict,
                  target_file_size: int | None = None) -> None:
    """Replace the day's partition of a table by the staged rows, in one commit whose
    metadata is `metadata`, holding the day's slice lock. Rows stream in the staged
    files' order, which delta-rs (1.6) keeps except that it may interleave batches (200
    sorted batches of 50,000 rows came out with the order broken at 4 places): files cut
    by size stay sorted in long runs and keep narrow statistics, but no reader may
    assume a file wholly sorted.

    A commit that loses the race to another day's commit is redone (the table is
    partitioned by day, so delta-rs rarely refuses one); should the day's own files have
    changed meanwhile, it stops with ConcurrentWriteError. A staging folder that is gone
    stops it too: it never commits an empty day in place of rows it lost."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from deltalake import DeltaTable, write_deltalake

    schema = pa.schema([f.with_nullable(True) for f in schema])
    path, where = table.path(lake), f"{table.name} for {day}"
    seen: list[list[str]] = []

    def attempt() -> None:
        if not folder.is_dir():
            raise ConcurrentWriteError(f"{where}: staging folder {folder} is gone "
                                       f"(removed by another run?); nothing committed")
        files = sorted(table.files(lake, [(table.day_column, "=", day)]))
        if seen and files != seen[-1]:
            raise ConcurrentWriteError(f"another run is writing {where}: the day's files "
                                       f"changed while this run committed")
        seen.append(files)
        parts = _parts(folder)
        if parts:
            scanner = ds.dataset(parts, format="parquet").scanner(
                batch_size=BATCH_ROWS, batch_readahead=1, fragment_readahead=1)
            batches = (b.cast(schema) for b in scanner.to_batches())
        else:
            batches = iter(())
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        options = {"commit_properties": commit_properties(metadata),
                   "target_file_size": target_file_size,
                   "writer_properties": writer_properties(schema)}
        if DeltaTable.is_deltatable(str(path)):
            write_deltalake(str(path), reader, mode="overwrite",
                            predicate=table.day_predicate(day, {}), **options)
        else:
            path.mkdir(parents=True, exist_ok=True)
            write_deltalake(str(path), reader, mode="append",
                            partition_by=[table.day_column], **options)

    with table.lock(lake, day):
        commit_with_retries(attempt, where)


def replace_day(frame, table: Table, lake, day: dt.date, metadata: dict,
                target_file_size: int | None = None, check=None) -> int:
    """Replace the day's partition of a large table by a Spark DataFrame's rows, written
    by the executors and committed from staging, holding the day's slice lock from
    staging through commit; returns the row count.

    `check(staged)`, given the staged rows as a Spark DataFrame, runs before the commit:
    when it raises, nothing is committed and the table stays as it was."""
    schema = frame.limit(0).toArrow().schema
    with table.lock(lake, day), staged(frame, table.path(lake)) as folder:
        if check is not None:
            check(frame.sparkSession.read.parquet(str(folder)))
        commit_staged(folder, schema, table, lake, day, metadata, target_file_size)
        return staged_rows(folder)


def _parts(folder: Path) -> list[str]:
    return [str(p) for p in sorted(folder.glob("part-*.parquet"))]
