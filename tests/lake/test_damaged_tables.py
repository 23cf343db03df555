"""A damaged table of the lake (a commit of its log that does not parse, a data file
truncated or gone) is one line naming the table and what is wrong, exit 2, from every
reader: delta-rs' and Arrow's errors name no table, and some no file (QA, 2026-11-27:
`slice`, `plot`, `evaluate` and `group-day` ended in a Rust or Arrow traceback)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from probcep.cli import main
from probcep.errors import DamagedTableError, RefusedError
from probcep.lake.failures import damaged
from probcep.lake.stream_ranges import plan_ranges
from probcep.lake.tables import SILVER, STATES, silver_schema

DAYS = [dt.date(2026, 1, 1), dt.date(2026, 1, 2)]


def _silver(lake):
    """Two days of one stream's silver, a file each."""
    schema = silver_schema(["a", "b"])
    for n, day in enumerate(DAYS):
        ts = [dt.datetime(day.year, day.month, day.day, 0, m, tzinfo=dt.UTC)
              for m in range(3)]
        rows = pa.table({"stream_id": ["s"] * 3, "t": [1440 * n + m for m in range(3)],
                         "ts": ts, "date": [day] * 3, "a": [0.5] * 3, "b": [0.5] * 3},
                        schema)
        write_deltalake(str(SILVER.path(lake)), rows, partition_by=["date"], mode="append")
    return sorted(SILVER.path(lake).glob("date=2026-01-01/*.parquet"))[0]


def _slice(lake, capsys) -> tuple[int, list[str]]:
    code = main(["slice", "--stream", "s", "--start", "2026-01-01", "--end", "2026-01-03",
                 "--lake", str(lake)])
    out, err = capsys.readouterr()
    return code, err.splitlines() if code else out.splitlines()


def test_a_whole_table_reads(tmp_path, capsys):
    _silver(tmp_path)
    code, lines = _slice(tmp_path, capsys)
    assert code == 0 and sum(" s " in f" {line} " for line in lines) == 6


@pytest.mark.parametrize("damage,why", [
    (lambda f: f.write_bytes(f.read_bytes()[:40]), "Parquet magic bytes not found in footer"),
    (lambda f: f.write_bytes(b""), "Parquet file size is 0 bytes"),
    (lambda f: f.unlink(), "it is missing"),
])
def test_a_damaged_data_file_is_named(tmp_path, capsys, damage, why):
    file = _silver(tmp_path)
    damage(file)
    code, lines = _slice(tmp_path, capsys)
    assert code == 2 and lines == [
        f"probcep slice: error: {SILVER.path(tmp_path)}: its data file "
        f"date=2026-01-01/{file.name} cannot be read ({why}): the table is damaged "
        f"(restore the file from a copy)"]
    # the engine's reader of silver (`group-day`) opens each file's footer itself
    with pytest.raises(DamagedTableError, match=f"its data file date=2026-01-01/{file.name} "
                                                f"cannot be read"):
        plan_ranges([str(f) for f in SILVER.files(tmp_path)] + [str(file)], 2)


def test_a_log_that_does_not_parse_is_named(tmp_path, capsys):
    _silver(tmp_path)
    (SILVER.path(tmp_path) / "_delta_log" / "00000000000000000001.json").write_text(
        '{"add": {bad\n')
    code, lines = _slice(tmp_path, capsys)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith(f"probcep slice: error: {SILVER.path(tmp_path)}: its Delta "
                               f"log cannot be read (")
    assert lines[0].endswith("(commit _delta_log/00000000000000000001.json does not parse "
                             "at line 1): the table is damaged (restore it from a copy)")
    assert SILVER.opened(tmp_path, version=0).version() == 0  # before the bad commit
    with pytest.raises(DamagedTableError, match="log cannot be read at version 7 "):
        SILVER.opened(tmp_path, version=7)  # not there: named, with the version


CHECKPOINT = "00000000000000000001.checkpoint.parquet"


@pytest.mark.parametrize("damage,fault,todo", [
    (lambda log: (log / "00000000000000000000.json").unlink(),
     "commit _delta_log/00000000000000000000.json is missing, and 1 commit(s) follow it",
     "restore it from a copy"),
    (lambda log: (log / CHECKPOINT).unlink(),
     f"checkpoint _delta_log/{CHECKPOINT}, which _delta_log/_last_checkpoint names, is "
     f"missing", "remove _delta_log/_last_checkpoint: the commits it summarizes are all there"),
    (lambda log: (log / CHECKPOINT).write_bytes(b"PAR1"),
     f"checkpoint _delta_log/{CHECKPOINT} is not a readable Parquet file",
     "remove it and _delta_log/_last_checkpoint: the commits it summarizes are all there"),
    # the hint removed alone: a reader still takes the checkpoint it lists (QA, 2026-11-28)
    (lambda log: ((log / CHECKPOINT).write_bytes(b"PAR1"), (log / "_last_checkpoint").unlink()),
     f"checkpoint _delta_log/{CHECKPOINT} is not a readable Parquet file",
     "remove it: the commits it summarizes are all there"),
])
def test_the_damaged_file_of_a_log_is_named(tmp_path, damage, fault, todo):
    """delta-rs names no commit (or dumps a kilobyte of its structures for a gone one):
    the fault is found by file, with what repairs it (QA, 2026-11-28)."""
    from deltalake import DeltaTable

    _silver(tmp_path)
    log = SILVER.path(tmp_path) / "_delta_log"
    if "checkpoint" in fault:
        DeltaTable(str(SILVER.path(tmp_path))).create_checkpoint()
    damage(log)
    with pytest.raises(DamagedTableError) as named:
        SILVER.read(tmp_path)
    assert str(named.value) == (f"{SILVER.path(tmp_path)}: its Delta log cannot be read "
                                f"({fault}): the table is damaged ({todo})")
    if todo.startswith("remove"):  # and the repair said is one
        (log / "_last_checkpoint").unlink(missing_ok=True)
        if todo.startswith("remove it"):
            (log / CHECKPOINT).unlink()
        assert SILVER.read(tmp_path).num_rows == 6


def test_a_state_file_scanned_is_named(tmp_path):
    rows = pa.table({"pattern": ["p"], "pattern_version": ["1"], "stream_id": ["s"],
                     "batch_date": [DAYS[0]], "next_t": [3], "state": [b"x"],
                     "run_id": ["r"]}, STATES.schema)
    write_deltalake(str(STATES.path(tmp_path)), rows, partition_by=["batch_date"])
    file = next(STATES.path(tmp_path).rglob("*.parquet"))
    file.write_bytes(b"PAR1")
    with pytest.raises(DamagedTableError, match=f"{STATES.path(tmp_path)}: its data file "
                                                f"batch_date=2026-01-01/{file.name}"):
        list(STATES.scan(tmp_path))


@pytest.mark.parametrize("said,file", [
    # Spark's words for a file of bronze it read (normalize), as py4j hands them over
    ("Caused by: java.lang.RuntimeException: file:{f} is not a Parquet file. Expected "
     "magic number at tail, but found [1, 2, 3, 4]", None),
    ("[PATH_NOT_FOUND] Path does not exist: file:{f}. SQLSTATE: 42K03", None),
    ("File file:{f} does not exist", None),
    ("Couldn't deserialize thrift: TProtocolException: Invalid data", "{f}"),
])
def test_spark_and_arrow_words_name_the_table(tmp_path, said, file):
    f = _silver(tmp_path)
    with pytest.raises(DamagedTableError) as named, damaged(
            file=file and file.format(f=f)):
        raise ValueError(said.format(f=f))
    assert str(named.value).startswith(f"{SILVER.path(tmp_path)}: its data file "
                                       f"date=2026-01-01/{f.name} cannot be read (")


def test_what_is_not_a_damaged_table_stays_what_it_is(tmp_path):
    f = _silver(tmp_path)
    outside = tmp_path / "input.parquet"  # a user's file, in no table: its own error
    with pytest.raises(FileNotFoundError), damaged():
        raise FileNotFoundError(2, "No such file", str(outside))
    staged = SILVER.path(tmp_path) / "_staging" / "x" / "part-0.parquet"
    with pytest.raises(FileNotFoundError), damaged():  # a step's own staging, not the table
        raise FileNotFoundError(2, "No such file", str(staged))
    with pytest.raises(ValueError, match="bad cast"), damaged(file=outside):
        raise ValueError("bad cast")
    with pytest.raises(PermissionError), damaged(file=f):  # the command's `refused` names it
        raise PermissionError(13, "Permission denied", str(f))
    with pytest.raises(RefusedError), SILVER.log(tmp_path):
        from deltalake.exceptions import DeltaError
        raise DeltaError(f"Unable to open file {f}: Permission denied (os error 13)")
