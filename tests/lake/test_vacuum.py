"""`probcep vacuum`: the files replaced days left behind go, what any current version
reads stays, and files the log does not know (a writer's, not yet committed) are never
touched."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
from deltalake import DeltaTable

from probcep.cli import main
from probcep.lake.tables import GROUPS, UTC_MICROS
from probcep.lake.vacuum import vacuum_lake

DAY = dt.date(2026, 1, 5)


def groups(rnd: int, n: int = 5) -> pa.Table:
    t = pa.array([rnd * 100 + i for i in range(n)], pa.int64())
    ts = pa.array([dt.datetime(2026, 1, 5, tzinfo=dt.UTC)] * n, UTC_MICROS)
    return pa.table({
        "pattern": ["room_visit"] * n, "pattern_version": ["v"] * n,
        "stream_id": [f"s{i}" for i in range(n)], "t_start": t, "t_first": t, "t_end": t,
        "ts_start": ts, "ts_first": ts, "ts_end": ts, "probability": [0.5] * n,
        "n_matches": [1] * n, "max_match_probability": [0.25] * n,
        "batch_date": pa.array([DAY] * n, pa.date32()), "run_id": [f"r{rnd}"] * n,
    }, schema=GROUPS.schema)


def data_files(path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path)
            if "_delta_log" not in d for f in fs if f.endswith(".parquet")}


def test_replaced_files_go_current_and_unknown_files_stay(tmp_path, capsys):
    lake = tmp_path / "lake"
    for rnd in range(3):  # the day replaced twice: two rounds of files left behind
        GROUPS.replace_day(lake, DAY, groups(rnd), {"run_id": f"r{rnd}"}, pattern=["room_visit"])
    path = GROUPS.path(lake)
    current = {os.path.normpath(f) for f in DeltaTable(str(path)).file_uris()}
    current = {os.path.relpath(f.removeprefix("file://"), path) for f in current}
    before = data_files(path)
    assert len(before) > len(current)
    stray = path / "part-uncommitted.parquet"  # a writer's, not committed yet
    stray.write_bytes(b"PAR1")
    old = time.time() - 30 * 24 * 3600
    os.utime(stray, (old, old))

    kept = vacuum_lake(lake, retain_hours=168)  # replaced just now: all kept
    assert [(v.table, v.files) for v in kept] == [("gold/groups", 0)]
    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0", "--dry-run"]) == 0
    assert data_files(path) == before | {os.path.relpath(stray, path)}
    out, err = capsys.readouterr()
    assert f"gold/groups: would remove {len(before - current)} files" in out
    assert "--retain-hours 0 is under Delta's week" in err

    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0"]) == 0
    assert data_files(path) == current | {os.path.relpath(stray, path)}
    assert f"gold/groups: removed {len(before - current)} files" in capsys.readouterr().out
    assert GROUPS.read(lake).sort_by("t_start").equals(groups(2))  # the table reads whole
    assert vacuum_lake(lake, retain_hours=0)[0].files == 0  # nothing left to remove
