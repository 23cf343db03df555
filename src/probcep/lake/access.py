"""Whether a step may write where it will write, checked before it does any work.

A step that finds the lake read-only halfway through (after Spark started, after the
landing files were read and checked) wastes the work and leaves staging behind; so the
lake root and every folder a step will write into are checked first: the table's
folder, its Delta log, the folder beside it that holds staging and `_locks`. A folder
that does not exist yet must be creatable: its nearest existing ancestor must be a
writable folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from probcep.errors import ProbcepError
from probcep.lake.delta import STAGING
from probcep.lake.locks import LOCKS_FOLDER
from probcep.lake.tables import Table


class LakeAccessError(ProbcepError, PermissionError):
    """A lake folder that a step must write into cannot be written or created."""


def check_writable(lake: str | Path, tables: Iterable[Table] = (),
                   folders: Iterable[str | Path] = ()) -> None:
    """Raise LakeAccessError naming the first folder that the lake root, the `tables`
    and the other `folders` need and that cannot be written or created."""
    lake = Path(lake)
    needed = [(lake, "the lake root")]
    for table in tables:
        path = table.path(lake)
        needed += [(path, table.name), (path / "_delta_log", table.name),
                   (path / STAGING, table.name),
                   (path.parent / LOCKS_FOLDER / path.name, table.name)]
    needed += [(Path(f), str(f)) for f in folders]
    for path, what in needed:
        problem = _problem(path)
        if problem:
            raise LakeAccessError(f"cannot write {what}: {problem}; checked before any "
                                  f"work, nothing was done")


def _problem(path: Path) -> str | None:
    """Why `path` cannot be written (or created), None when it can."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link: cannot be created through
            return f"{existing} is a broken symbolic link"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        verb = "is not writable" if existing == path else \
            f"is not writable, so {path} cannot be created"
        return f"{existing} {verb}"
    return None
