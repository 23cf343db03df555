"""Delta's VACUUM over the lake: remove the data files that no version of the last
`retain_hours` needs. Every replaced day leaves its old files behind (a rerun, a night
replacing what live mode appended, the live state's buckets), and no commit deletes
them, so without a vacuum the lake only grows.

Only files a commit removed are deleted (delta-rs' non-full vacuum), never files the log
does not know: a writer's files moved into a table but not yet committed are safe, as are
the `_staging` folders (dead runs' are cleared by the next write to the table)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from probcep.errors import writing
from probcep.lake.tables import (
    CATALOG,
    LIVE_STATE,
    LIVE_STATUS,
    commit_properties,
    commit_with_retries,
)

#: Delta's default `deletedFileRetentionDuration`: a reader of a version up to a week old
#: (time travel, a long step that pinned silver's version) still finds its files.
DEFAULT_RETAIN_HOURS = 168


@dataclass(frozen=True)
class Vacuumed:
    table: str
    files: int  # data files removed (or, in a dry run, that would be)
    bytes: int

    def line(self, dry_run: bool) -> str:
        verb = "would remove" if dry_run else "removed"
        return f"{self.table}: {verb} {self.files} files ({self.bytes / 2**20:.1f} MiB)"


def vacuum_lake(lake: Path, retain_hours: int = DEFAULT_RETAIN_HOURS,
                dry_run: bool = False, metadata: dict | None = None) -> list[Vacuumed]:
    """Vacuum every table of the lake that exists; one entry per table."""
    from deltalake import DeltaTable

    done = []
    for table in (*CATALOG, LIVE_STATE, LIVE_STATUS):
        if not table.exists(lake):
            continue
        path = table.path(lake)
        listed = DeltaTable(str(path)).vacuum(retention_hours=retain_hours, dry_run=True,
                                               enforce_retention_duration=False)
        sizes = {}
        for name in listed:  # tombstones may name files gone already
            file = path / unquote(name)
            if file.is_file():
                sizes[name] = file.stat().st_size
        if sizes and not dry_run:
            with writing(path):
                commit_with_retries(lambda p=path: DeltaTable(str(p)).vacuum(
                    retention_hours=retain_hours, dry_run=False,
                    enforce_retention_duration=False,
                    commit_properties=commit_properties(metadata or {})), table.name)
        done.append(Vacuumed(table.name, len(sizes), sum(sizes.values())))
    return done


def report(lake: Path, done: list[Vacuumed], retain_hours: int, dry_run: bool) -> list[str]:
    """A line per table and the total, as `probcep vacuum` and the vacuum DAG print them."""
    files, size = sum(t.files for t in done), sum(t.bytes for t in done)
    return [*(t.line(dry_run) for t in done),
            f"{lake}: {'would remove' if dry_run else 'removed'} {files} files "
            f"({size / 2**20:.1f} MiB) from {len(done)} tables, keeping what versions of the "
            f"last {retain_hours} h need"]
