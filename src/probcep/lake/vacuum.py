"""Delta's VACUUM over the lake: remove the data files that no table version of the
retention period needs. Every replaced day leaves its old files behind (a rerun, a night
replacing what live mode appended, the live state's buckets), and no commit deletes
them, so without a vacuum the lake only grows.

Each table is vacuumed by delta-rs in two ways, as Delta's own VACUUM does in one:
  - files a commit removed longer than the retention ago (delta-rs' lite vacuum, which
    reads the removals still in the log);
  - files no version of the retention period names, written longer than the table's own
    retention ago (its full vacuum): files whose removal a checkpoint has dropped from
    the log (delta-rs drops removals older than the table's retention at each
    checkpoint, every 100 commits), and files a writer left without committing them (a
    killed write, a commit that lost its race).
The second never goes below the table's own retention (`delta.deletedFileRetentionDuration`,
else Delta's week), whatever `retain_hours` says: a writer's files that are moved into
the table and not committed yet are young, and stay. Folders whose names start with `_`
or `.` (`_staging`, `_locks`, `_delta_log`) are never touched.

What is reported is what went: the files delta-rs deleted (the table folder listed
before and after, when its closing commit conflicted with another writer's), with their
sizes taken before.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from probcep.errors import ProbcepError, first_line, warn
from probcep.lake.access import check_writable
from probcep.lake.failures import writing
from probcep.lake.tables import (
    CATALOG,
    COMMIT_ATTEMPTS,
    LIVE_STATE,
    LIVE_STATUS,
    Table,
    commit_properties,
)

#: Delta's default `deletedFileRetentionDuration`: a reader of a version up to a week old
#: (time travel, a long step that pinned silver's version) still finds its files.
DEFAULT_RETAIN_HOURS = 168
#: Every table a lake may hold.
TABLES = (*CATALOG, LIVE_STATE, LIVE_STATUS)
#: Hours per unit of a Delta interval (`interval 7 days`, Spark's CalendarInterval).
_UNIT_HOURS = {"microsecond": 1 / 3.6e9, "millisecond": 1 / 3.6e6, "second": 1 / 3600,
               "minute": 1 / 60, "hour": 1, "day": 24, "week": 168}
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$", re.I)


class VacuumError(ProbcepError):
    """Some tables could not be vacuumed; `done` holds what the others removed."""

    def __init__(self, message: str, done: list[Vacuumed]):
        super().__init__(message)
        self.done = done


@dataclass(frozen=True)
class Vacuumed:
    table: str
    files: tuple[str, ...]  # removed (or, in a dry run, that would be), relative paths
    bytes: int
    note: str = field(default="")  # e.g. the closing commit conflicted

    def line(self, dry_run: bool) -> str:
        verb = "would remove" if dry_run else "removed"
        return (f"{self.table}: {verb} {len(self.files)} files ({self.bytes / 2**20:.1f} MiB)"
                + (f"; {self.note}" if self.note else ""))


def retention_hours(table) -> int:
    """A table's own retention in whole hours, rounded up (delta-rs takes hours):
    `delta.deletedFileRetentionDuration`, else a week."""
    text = (table.metadata().configuration or {}).get("delta.deletedFileRetentionDuration")
    found = _INTERVAL.match(text or "")
    unit = found and found.group(2).lower()
    if not found or unit not in _UNIT_HOURS:
        return DEFAULT_RETAIN_HOURS
    return math.ceil(float(found.group(1)) * _UNIT_HOURS[unit] - 1e-9)


def vacuum_lake(lake: Path, retain_hours: int | None = None, dry_run: bool = False,
                metadata: dict | None = None) -> list[Vacuumed]:
    """Vacuum every table of the lake, each keeping what versions of the last
    `retain_hours` need (None: the table's own retention); one entry per table. A lake
    holding none of the tables is refused; a table whose log cannot be read is skipped,
    and VacuumError names it once the others are done."""
    from deltalake import DeltaTable

    lake = Path(lake)
    found, skipped = [], []
    for table in TABLES:
        path = table.path(lake)
        if not path.is_dir():
            continue
        if not (path / "_delta_log").is_dir():
            warn(f"{path}: a folder without a Delta log, not a table: left as it is")
            continue
        try:
            found.append((table, DeltaTable(str(path))))
        except Exception as exc:  # delta-rs' errors: a log that does not parse, a gap
            skipped.append(f"{table.name} (its Delta log cannot be read: {first_line(exc)[:300]})")
    if not found and not skipped:
        raise ProbcepError(f"{lake}: holds none of the lake's tables (such as "
                           f"{TABLES[0].name}): not a lake, nothing vacuumed")
    _warn_short(retain_hours, found)
    if not dry_run:  # deleting a file needs its folder writable: all checked first
        check_writable(lake, folders=[d for t, _ in found for d in _data_folders(t.path(lake))])
    done = []
    for table, delta in found:
        try:
            with writing(table.path(lake)):
                done.append(_vacuum(table, delta, lake, retain_hours, dry_run, metadata or {}))
        except ProbcepError:
            raise
        except Exception as exc:  # delta-rs' (a file it may not delete): the others go on
            skipped.append(f"{table.name} (its vacuum failed: {first_line(exc)[:300]})")
    if skipped:
        raise VacuumError(f"{len(skipped)} table(s) not vacuumed: {'; '.join(skipped)}", done)
    return done


def report(lake: Path, done: list[Vacuumed], retain_hours: int | None, dry_run: bool,
           paths: bool = False) -> list[str]:
    """A line per table (with `paths`, each file's path under it) and the total, as
    `probcep vacuum` and the vacuum DAG print them."""
    files, size = sum(len(t.files) for t in done), sum(t.bytes for t in done)
    kept = ("each table's own retention" if retain_hours is None
            else f"the last {retain_hours:g} h")
    lines = []
    for t in done:
        lines.append(t.line(dry_run))
        if paths:
            lines += [f"  {lake / t.table / f}" for f in t.files]
    return [*lines, f"{lake}: {'would remove' if dry_run else 'removed'} {files} files "
                    f"({size / 2**20:.1f} MiB) from {len(done)} tables, keeping what "
                    f"versions of {kept} need"]


def _vacuum(table: Table, delta, lake: Path, retain_hours: int | None, dry_run: bool,
            metadata: dict) -> Vacuumed:
    path = table.path(lake)
    own = retention_hours(delta)
    hours = own if retain_hours is None else int(retain_hours)
    # (retention, full): removals older than `hours`; untracked files older than the
    # table's own retention, never younger (a writer's files not committed yet)
    passes = [(hours, True)] if hours >= own else [(hours, False), (own, True)]
    before = _data_files(path)
    if dry_run:
        gone = set().union(*(_on_disk(delta, hrs, full, before) for hrs, full in passes))
        return Vacuumed(table.name, tuple(sorted(gone)), sum(before[f] for f in gone))
    gone, notes = set(), []
    from deltalake import DeltaTable

    for hrs, full in passes:
        if not _on_disk(DeltaTable(str(path)), hrs, full, _data_files(path)):
            # delta-rs would still commit a start and an end for the removals its log
            # keeps (QA, 2026-11-28: a table's version climbing by two a vacuum, each
            # saying it deleted files long gone)
            continue
        removed, note = _run(lambda h=hrs, f=full: DeltaTable(str(path)).vacuum(
            retention_hours=h, dry_run=False, enforce_retention_duration=False, full=f,
            commit_properties=commit_properties(metadata)), path, table.name)
        gone |= removed
        notes += [note] if note else []
    gone &= set(before)
    return Vacuumed(table.name, tuple(sorted(gone)), sum(before[f] for f in gone),
                    "; ".join(notes))


def _on_disk(delta, hours: int, full: bool, files: dict) -> set[str]:
    """What one delta-rs vacuum pass would delete that is among `files` (a removal the
    log keeps may name a file gone already)."""
    return {unquote(f) for f in delta.vacuum(retention_hours=hours, dry_run=True,
                                             enforce_retention_duration=False,
                                             full=full)} & set(files)


def _run(vacuum, path: Path, where: str) -> tuple[set[str], str]:
    """One delta-rs vacuum, redone while its first commit conflicts with other writers'
    (nothing deleted yet); the files it deleted, and a note when only its closing commit
    conflicted (the files are gone; the table's history lacks that record)."""
    from deltalake.exceptions import CommitFailedError

    for n in range(COMMIT_ATTEMPTS):
        listed = set(_data_files(path))
        try:
            return {unquote(f) for f in vacuum()}, ""
        except CommitFailedError as exc:
            gone = listed - set(_data_files(path))
            if gone:
                return gone, ("its closing commit conflicted with another writer's: the "
                              "files are gone, the table's history does not record it")
            last = first_line(exc)[:300]
            time.sleep(min(2.0, 0.05 * 2 ** n))
    raise ProbcepError(f"{where}: the vacuum's commit still conflicted with other writers' "
                       f"after {COMMIT_ATTEMPTS} attempts ({last}); nothing removed from it")


def _data_files(path: Path) -> dict[str, int]:
    """The table's files as delta-rs' vacuum sees them (folders named `_…` or `.…` left
    out), by path relative to the table, with their sizes."""
    out = {}
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            file = Path(folder) / name
            try:
                out[str(file.relative_to(path))] = file.stat().st_size
            except OSError:  # removed meanwhile
                pass
    return out


def _data_folders(path: Path) -> list[Path]:
    """The table's folder, its log and the folders its data files are in."""
    folders = [path, path / "_delta_log"]
    for folder, dirs, _ in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        folders += [Path(folder) / d for d in dirs]
    return folders


def _warn_short(retain_hours: int | None, found: list) -> None:
    """One warning when `retain_hours` is under some table's own retention."""
    if retain_hours is None:
        return
    longer = sorted({retention_hours(d) for _, d in found if retention_hours(d) > retain_hours})
    if longer:
        own = ", ".join(f"{h:g} h" for h in longer)
        warn(f"a retention of {retain_hours:g} h is under the tables' own ({own}: "
             f"delta.deletedFileRetentionDuration, else Delta's week): a reader of a "
             f"version older than that (time travel, a step that pinned it and still "
             f"runs) will miss its files", stacklevel=3)


