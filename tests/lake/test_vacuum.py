"""`probcep vacuum`: the files replaced days left behind go, and so do files no version
names once older than the table's retention (a removal a checkpoint dropped, a killed
writer's); what any version of the retention period reads stays, as do a writer's files
not committed yet and the `_` folders. What is reported is what went."""

from __future__ import annotations

import datetime as dt
import json
import os
import time

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from probcep.cli import main
from probcep.errors import ProbcepWarning
from probcep.lake.tables import ALERTS, GROUPS, UTC_MICROS
from probcep.lake.vacuum import _run, retention_hours, vacuum_lake

DAY = dt.date(2026, 1, 5)
MONTH_AGO = time.time() - 30 * 24 * 3600


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


def current_files(path) -> set[str]:
    return {os.path.relpath(f.removeprefix("file://"), path)
            for f in DeltaTable(str(path)).file_uris()}


def replaced(lake, rounds: int = 3):
    """gold/groups with one day written `rounds` times: rounds - 1 files left behind."""
    for rnd in range(rounds):
        GROUPS.replace_day(lake, DAY, groups(rnd), {"run_id": f"r{rnd}"}, pattern=["room_visit"])
    return GROUPS.path(lake)


def removed_long_ago(path, days: int = 8) -> None:
    """Date every removal in the log `days` ago, and its file's writing before that, as if
    the rerun that replaced them had run then."""
    then = int((time.time() - days * 24 * 3600) * 1000)
    for commit in (path / "_delta_log").glob("*.json"):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for a in actions:
            if "remove" in a:
                a["remove"]["deletionTimestamp"] = then
                os.utime(path / a["remove"]["path"], (MONTH_AGO, MONTH_AGO))
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))


def test_replaced_files_go_current_and_young_unknown_files_stay(tmp_path, capsys):
    lake = tmp_path / "lake"
    path = replaced(lake)
    current, before = current_files(path), data_files(path)
    assert len(before) == len(current) + 2
    young = path / "part-uncommitted.parquet"  # a writer's, moved in, not committed yet
    young.write_bytes(b"PAR1")
    staged = path / "_staging" / "run" / "part-0.parquet"  # a writer's staging folder
    staged.parent.mkdir(parents=True)
    staged.write_bytes(b"PAR1")
    os.utime(staged, (MONTH_AGO, MONTH_AGO))

    kept = vacuum_lake(lake)  # replaced just now: all kept
    assert [(v.table, v.files) for v in kept] == [("gold/groups", ())]
    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0", "--dry-run",
                 "--list"]) == 0
    out, err = capsys.readouterr()
    assert "gold/groups: would remove 2 files" in out
    assert all(f"  {path / f}" in out.splitlines() for f in before - current)
    assert "a retention of 0 h is under the tables' own (168 h" in err
    assert data_files(path) == before | {young.name, "_staging/run/part-0.parquet"}

    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0"]) == 0
    assert "gold/groups: removed 2 files" in capsys.readouterr().out
    assert data_files(path) == current | {young.name, "_staging/run/part-0.parquet"}
    assert GROUPS.read(lake).sort_by("t_start").equals(groups(2))  # the table reads whole
    version = GROUPS.version(lake)
    with pytest.warns(ProbcepWarning, match="a retention of 0 h"):
        assert vacuum_lake(lake, retain_hours=0)[0].files == ()  # nothing left to remove
    # and no commit says it removed them again (QA, 2026-11-28: two a vacuum, each time)
    assert GROUPS.version(lake) == version


def test_files_a_checkpoint_forgot_and_old_orphans_go(tmp_path):
    """delta-rs drops removals older than the retention from each checkpoint: their files
    are then in no version, and go by their age, as a killed writer's do."""
    lake = tmp_path / "lake"
    path = replaced(lake, rounds=2)
    forgotten = data_files(path) - current_files(path)
    removed_long_ago(path)
    DeltaTable(str(path)).create_checkpoint()
    assert forgotten and DeltaTable(str(path)).vacuum(dry_run=True) == []  # lite: blind
    orphan = path / "part-killed-writer.parquet"
    orphan.write_bytes(b"PAR1")
    os.utime(orphan, (MONTH_AGO, MONTH_AGO))

    dry = vacuum_lake(lake, dry_run=True)[0]
    assert set(dry.files) == forgotten | {orphan.name}
    done = vacuum_lake(lake)[0]
    assert done == dry
    assert data_files(path) == current_files(path)
    assert GROUPS.read(lake).sort_by("t_start").equals(groups(1))


def test_a_tables_own_retention_is_kept_and_a_shorter_one_warned(tmp_path, capsys):
    lake = tmp_path / "lake"
    path = replaced(lake, rounds=2)
    removed_long_ago(path, days=8)
    DeltaTable(str(path)).alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 30 days"})
    assert retention_hours(DeltaTable(str(path))) == 720
    assert vacuum_lake(lake)[0].files == ()  # removed 8 days ago: within its 30 days
    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "168"]) == 0
    out, err = capsys.readouterr()
    assert "gold/groups: removed 1 files" in out
    assert "a retention of 168 h is under the tables' own (720 h" in err


def test_vacuum_with_lake_still_checks_the_settings(tmp_path, capsys, monkeypatch):
    """`--lake` names the lake, but a settings file that is not there or a bad setting
    is refused as by every command (QA, 2026-11-27: exit 0 without a word)."""
    lake = tmp_path / "lake"
    replaced(lake)
    assert main(["vacuum", "--lake", str(lake), "--settings", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml" in capsys.readouterr().err
    monkeypatch.setenv("PROBCEP_GAP_POLICY", "guess")
    assert main(["vacuum", "--lake", str(lake)]) == 2
    assert "guess" in capsys.readouterr().err
    monkeypatch.delenv("PROBCEP_GAP_POLICY")
    assert main(["vacuum", "--lake", str(tmp_path / "a#b")]) == 2
    assert "'#'" in capsys.readouterr().err


def test_not_a_lake_a_folder_without_log_and_a_broken_log(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["vacuum", "--lake", str(empty)]) == 2
    assert "holds none of the lake's tables" in capsys.readouterr().err

    lake = tmp_path / "lake"
    replaced(lake)
    ALERTS.path(lake).mkdir(parents=True)  # a table folder whose log is gone
    (ALERTS.path(lake) / "part-0.parquet").write_bytes(b"PAR1")
    broken = replaced(tmp_path / "other").parent  # a second gold folder, to break
    (lake / "gold" / "alert_changes").mkdir()
    (broken / "groups" / "_delta_log").rename(lake / "gold" / "alert_changes" / "_delta_log")
    log = sorted((lake / "gold" / "alert_changes" / "_delta_log").glob("*.json"))[-1]
    log.write_text("garbage\n")
    assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0"]) == 2
    out, err = capsys.readouterr()
    assert "gold/groups: removed 2 files" in out  # the others are vacuumed first
    assert "gold/alerts: a folder without a Delta log, not a table" in err
    assert ("1 table(s) not vacuumed: gold/alert_changes (its Delta log cannot be read: "
            in err)
    assert len(err.strip().splitlines()) == 3  # the warnings and one error line


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only folder")
def test_a_read_only_table_is_refused_before_anything_goes(tmp_path, capsys):
    lake = tmp_path / "lake"
    path = replaced(lake)
    before = data_files(path)
    path.chmod(0o555)
    try:
        assert main(["vacuum", "--lake", str(lake), "--retain-hours", "0"]) == 2
    finally:
        path.chmod(0o755)
    assert "cannot write" in capsys.readouterr().err
    assert data_files(path) == before


def test_a_vacuum_whose_closing_commit_conflicts_reports_what_went(tmp_path):
    from deltalake.exceptions import CommitFailedError

    (tmp_path / "a.parquet").write_bytes(b"PAR1")
    (tmp_path / "b.parquet").write_bytes(b"PAR1")

    def deletes_then_conflicts():
        (tmp_path / "a.parquet").unlink()
        raise CommitFailedError("a concurrent transaction deleted data this operation read")

    gone, note = _run(deletes_then_conflicts, tmp_path, "gold/groups")
    assert gone == {"a.parquet"} and "closing commit conflicted" in note
    assert _run(lambda: ["b.parquet"], tmp_path, "gold/groups") == ({"b.parquet"}, "")


def test_a_vacuum_is_not_new_data_for_what_pins_a_version(tmp_path):
    """Correlations pin silver by its version; a vacuum's commits change no row."""
    lake = tmp_path / "lake"
    replaced(lake)
    written = GROUPS.version(lake)
    assert GROUPS.data_version(lake) == written
    with pytest.warns(ProbcepWarning):
        vacuum_lake(lake, retain_hours=0)
    assert GROUPS.version(lake) == written + 2  # its start and end
    assert GROUPS.data_version(lake) == written
    GROUPS.replace_day(lake, DAY, groups(7), {"run_id": "r7"}, pattern=["room_visit"])
    assert GROUPS.data_version(lake) == GROUPS.version(lake) == written + 3
    assert ALERTS.data_version(lake) is None


def test_a_key_is_found_behind_commits_that_lack_it(tmp_path):
    """Silver's clock, recorded by its writes, was looked for in its last 50 commits only:
    25 vacuums hid it, and a night on another clock was let in (QA, 2026-11-28)."""
    lake = tmp_path / "lake"
    GROUPS.replace_day(lake, DAY, groups(0), {"run_id": "r0", "clock": "60 s"},
                       pattern=["room_visit"])
    for rnd in range(1, 6):
        GROUPS.replace_day(lake, DAY, groups(rnd), {"run_id": f"r{rnd}"}, pattern=["room_visit"])
    assert GROUPS.recorded(lake, ("clock", "run_id"), depth=2) == {"clock": "60 s",
                                                                   "run_id": "r5"}
    assert GROUPS.recorded(lake, ("gaps",), depth=2) == {"gaps": None}


def test_files_moved_in_but_not_committed_yet_outlive_a_vacuum(tmp_path, monkeypatch):
    """A writer moves its staged files into the table, then commits them. A file staged
    longer ago than the table's own retention kept its staging time, so a vacuum between
    the move and the commit took it for an orphan (QA, 2026-11-28, by reading the code)."""
    import pyarrow.parquet as pq

    from probcep.lake import delta

    lake = tmp_path / "lake"
    path = replaced(lake, rounds=1)
    DeltaTable(str(path)).alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    went = []
    real = delta.add_action

    def vacuum_first(file, *args):  # runs after the move, before the commit
        went.extend(f for v in vacuum_lake(lake) for f in v.files)
        return real(file, *args)

    monkeypatch.setattr(delta, "add_action", vacuum_first)
    with delta.staging_folder(path) as folder:
        folder.mkdir()
        rows = groups(1)
        pq.write_table(rows, folder / "part-00000.parquet")
        os.utime(folder / "part-00000.parquet", (MONTH_AGO, MONTH_AGO))
        assert delta.commit_staged(folder, rows.schema, GROUPS, lake, DAY, {"run_id": "r1"})
    assert went == []
    assert GROUPS.read(lake).sort_by("t_start").equals(groups(1))
