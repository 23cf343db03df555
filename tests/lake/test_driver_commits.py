"""Rows the driver commits to a day-partitioned table (live mode's micro-batches): each
data file keeps the day column, as the executors' files do, so a file read on its own is
complete; Delta readers see the same rows; a retried micro-batch commits nothing twice.
(delta-rs's own writer left the day out of the files: QA, 2026-11-28.)"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from probcep.lake.tables import BRONZE, SILVER, commit_once

DAYS = [dt.date(2026, 3, 1), dt.date(2026, 3, 2)]


def bronze_rows(days, n: int = 5) -> pa.Table:
    rows = [{"stream_id": f"s{i % 2}", "sensor_id": None, "symbol": "abc"[i % 3],
             "ts": dt.datetime(day.year, day.month, day.day, 0, 0, i, tzinfo=dt.UTC),
             "score": i / n, "batch_date": day, "source_file": f"/land/{day}/f.csv",
             "ingest_time": dt.datetime(2026, 3, 5, tzinfo=dt.UTC)}
            for day in days for i in range(n)]
    return pa.Table.from_pylist(rows, BRONZE.schema.remove_metadata()) \
        .select(BRONZE.schema.names).cast(BRONZE.schema)


def adds(path) -> list[dict]:
    found = []
    for log in sorted((path / "_delta_log").glob("*.json")):
        found += [json.loads(line)["add"] for line in log.read_text().splitlines()
                  if '"add"' in line]
    return found


def test_each_file_keeps_its_partitions_day(tmp_path):
    rows = bronze_rows(DAYS)
    assert commit_once(BRONZE, tmp_path, rows, {"run_id": "live-0"}, "app", 0,
                       partition_by=["batch_date"])
    assert commit_once(BRONZE, tmp_path, bronze_rows(DAYS[1:], 3), {"run_id": "live-1"},
                       "app", 1, partition_by=["batch_date"])
    path = BRONZE.path(tmp_path)
    actions = adds(path)
    assert len(actions) == 3
    for add in actions:
        alone = pq.read_table(path / add["path"])
        day = add["partitionValues"]["batch_date"]
        assert alone["batch_date"].to_pylist() == [dt.date.fromisoformat(day)] * len(alone)
        assert json.loads(add["stats"])["numRecords"] == len(alone)
    table = DeltaTable(str(path))
    assert table.metadata().partition_columns == ["batch_date"]
    read = table.to_pyarrow_table()
    assert read.num_rows == 13
    assert sorted(read.filter(pa.compute.equal(read["batch_date"], DAYS[0]))["ts"]
                  .to_pylist()) == sorted(rows.filter(pa.compute.equal(
                      rows["batch_date"], DAYS[0]))["ts"].to_pylist())


def test_a_retried_batch_commits_nothing_twice_and_an_empty_one_is_recorded(tmp_path):
    rows = bronze_rows(DAYS)
    assert commit_once(BRONZE, tmp_path, rows, {}, "app", 0, partition_by=["batch_date"])
    assert not commit_once(BRONZE, tmp_path, rows, {}, "app", 0, partition_by=["batch_date"])
    empty = BRONZE.schema.empty_table()
    assert commit_once(BRONZE, tmp_path, empty, {}, "app", 1, partition_by=["batch_date"])
    assert not commit_once(BRONZE, tmp_path, empty, {}, "app", 1,
                           partition_by=["batch_date"])
    table = DeltaTable(str(BRONZE.path(tmp_path)))
    assert table.to_pyarrow_table().num_rows == 10
    assert len(table.file_uris()) == 2
    assert table.version() == 1


def test_a_table_first_made_by_the_driver_takes_the_rows_schema(tmp_path):
    """Silver's columns depend on the domain (its Table has no schema of its own)."""
    rows = pa.table({"stream_id": ["s", "s"], "t": [0, 1], "a": [0.5, 1.0], "b": [0.5, 0.0],
                     "date": [DAYS[0], DAYS[1]]})
    assert commit_once(SILVER, tmp_path, rows, {}, "app", 0, partition_by=["date"])
    path = SILVER.path(tmp_path)
    assert DeltaTable(str(path)).schema().to_arrow().names == rows.schema.names
    for add in adds(path):
        assert pq.read_table(path / add["path"])["date"].to_pylist() == [
            dt.date.fromisoformat(add["partitionValues"]["date"])]
