"""The one error contract: every failure a user can cause or fix is a `ProbcepError`.

Its message says what is wrong and where (file, stream, t, setting, table, day), in one
line where it can. The `probcep` command prints it and exits with code 2; any other
exception is a bug and keeps its traceback (exit code 1). What Spark, Hadoop, delta-rs and
Arrow say when they fail is read in `probcep.lake.failures`, not here: the engine imports
this module.
"""

from __future__ import annotations

import warnings


class ProbcepError(Exception):
    """An expected failure: bad input, a bad setting, missing data, a refused request."""


class ProbcepWarning(UserWarning):
    """Something a user should hear of that stops nothing; the command prints it as
    one line (`probcep STEP: warning: ...`)."""


def warn(message: str, stacklevel: int = 2) -> None:
    """Warn with a ProbcepWarning. Importing GX's validator routes every warning to the
    `py.warnings` logger (`logging.captureWarnings(True)`), which no step shows: a night
    said nothing of what `group-day` alone printed (QA). That is undone first, and only
    then: undone when it is not in force, it puts back whatever hook was there when it
    was called, over the command's own one-line hook (a flaky CI test)."""
    import logging

    if getattr(warnings.showwarning, "__module__", None) == "logging":
        logging.captureWarnings(False)
    warnings.warn(message, ProbcepWarning, stacklevel=stacklevel + 1)


class InputError(ProbcepError, ValueError):
    """Data that breaks the stream model or its file format; names the file, stream and t."""


class DiskFullError(ProbcepError, OSError):
    """No space left on the device a step was writing to."""


class RefusedError(ProbcepError, OSError):
    """The file system refused a path: permissions, a read-only mount, an immutable folder."""


class DamagedTableError(ProbcepError):
    """A Delta table of the lake whose log or one of whose data files cannot be read."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its class's name when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def first_few(items, n: int = 3) -> str:
    """The first `n` items, then `…` when there are more: a message names some of many."""
    return ", ".join(map(str, items[:n])) + (", …" if len(items) > n else "")
