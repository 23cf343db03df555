"""The lake's failures as one `ProbcepError` line, read from what the libraries say.

It is here, not in `probcep.errors` (which the engine imports), because it knows the
message text of Spark, Hadoop, delta-rs and Arrow, which changes with them.

A full disk is one such failure, whichever library hit it: Python and pyarrow raise
`OSError(ENOSPC)`, delta-rs and Spark only say "No space left on device" in their
message. `writing(path)` turns any of them into one `DiskFullError` line. And a
`ProbcepError` raised in a Spark executor reaches the driver only as the text of a
traceback; `from_executors()` turns it back into one line. A file system that refuses a
write (permissions, a read-only mount, an immutable folder) is one as well: `refused()`.
A data file of a Delta table that cannot be read is `damaged()`'s `DamagedTableError`.
"""

from __future__ import annotations

import errno
import importlib
import re
from contextlib import contextmanager
from pathlib import Path

from probcep.errors import (
    DamagedTableError,
    DiskFullError,
    ProbcepError,
    RefusedError,
    first_line,
)

#: What every library's message says when the disk is full (Python, Java, Rust).
NO_SPACE = "No space left on device"
#: The last line of a Python traceback that ends in a probcep error: module, class, message.
_REMOTE = re.compile(r"^(probcep(?:\.\w+)*)\.(\w+): (.+)$", re.MULTILINE)
#: The file a failed Spark write task names (TASK_WRITE_FAILED).
_SPARK_FILE = re.compile(r"while writing rows to (?:file:)?(\S+?)\.?(?:\s|$)")
#: How Java (Hadoop's local file system, java.nio), Rust (delta-rs's object store) and
#: Python in a traceback's text say a file system refused a path.
_REFUSED_TEXT = re.compile(
    r"(?:Mkdirs failed to create|mkdir of) (?:file:)?(?P<mkdirs>\S+)"
    r"|(?:file:)?(?P<path>/\S+) \((?P<why>Permission denied|Operation not permitted|"
    r"Read-only file system)\)"
    r"|AccessDeniedException: (?:file:)?(?P<denied>\S+)"
    r"|Unable to open file (?P<rust>/\S+?)(?:#\d+)?:?\s.*?"
    r"(?P<rust_why>Operation not permitted|Permission denied|Read-only file system) "
    r"\(os error \d+\)"
    # Python's own, as the text of an exception raised in live mode's micro-batch
    r"|(?:PermissionError|OSError): \[Errno (?P<errno>1|13|30)\] [^:\n]+: '(?P<py>/[^']+)'",
    re.DOTALL)
#: How Arrow and Spark name a Parquet file they could not read (truncated, not Parquet,
#: gone), and why.
_UNREADABLE_TEXT = re.compile(
    r"Could not open Parquet input source '(?P<arrow>[^']+)': (?P<arrow_why>[^.\n]+)"
    r"|(?:file:)?(?P<spark>/\S+?) is not a Parquet file"
    r"|File (?:file:)?(?P<gone>/\S+?) does not exist"
    r"|Path does not exist: (?:file:)?(?P<nopath>/\S+?)\.?(?:\s|$)")
#: The path Python's and Arrow's OSErrors name in their message alone.
_QUOTED_PATH = re.compile(r"'(/[^']+)'")
#: The errors by which an OSError says the file system refused (not: is missing, is full).
_REFUSING = {errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
             errno.EROFS: "read-only file system"}


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it was raised from) says the disk is full."""
    return any((isinstance(e, OSError) and e.errno == errno.ENOSPC) or NO_SPACE in str(e)
               for e in _chain(exc))


def _named_file(exc: BaseException) -> str | None:
    """The file a full-disk error names itself, if any (an OSError's filename, the file
    of a failed Spark write task)."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.filename:
            return str(e.filename)
        found = _SPARK_FILE.search(str(e))
        if found:
            return found[1]
    return None


@contextmanager
def writing(path: str | Path | None):
    """Run the block; a full disk inside it becomes one DiskFullError line naming the file
    the error names (it may be a temporary file elsewhere than `path`), else `path`."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as exc:
        if not disk_full(exc):
            raise
        where = _named_file(exc) or path
        if where is None:
            raise DiskFullError(f"no space left on device ({first_line(exc)})") from exc
        raise DiskFullError(f"no space left on device writing {where}") from exc


def _remote(exc: BaseException) -> ProbcepError | None:
    """The ProbcepError whose traceback `exc`'s text ends with, if any (the last one:
    an executor's error raised from another names its context last)."""
    for e in _chain(exc):
        found = list(_REMOTE.finditer(str(e)))
        for module, name, message in (m.groups() for m in reversed(found)):
            try:
                cls = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue
            if isinstance(cls, type) and issubclass(cls, ProbcepError):
                return ProbcepError(message.strip())
    return None


def _refusal(exc: BaseException) -> str | None:
    """What and where, when `exc` (or one it was raised from) says the file system refused
    a path. Hadoop names the deepest folder of a write it could not create: the folder
    named is the nearest that exists, in which the refused one was to be made."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _REFUSING:
            quoted = _QUOTED_PATH.search(str(e))
            where = e.filename or (quoted[1] if quoted else None)
            return _REFUSING[e.errno] + (f": {where}" if where else "")
        found = _REFUSED_TEXT.search(str(e))
        if found is None:
            continue
        if found["mkdirs"]:
            folder = Path(found["mkdirs"])
            while not folder.is_dir() and folder != folder.parent:
                folder = folder.parent
            return f"the file system refused to create a folder in {folder}"
        why = _REFUSING[int(found["errno"])] if found["errno"] else \
            (found["why"] or found["rust_why"] or "permission denied").lower()
        return f"{why}: {found['path'] or found['denied'] or found['rust'] or found['py']}"
    return None


@contextmanager
def refused():
    """Run the block; the file system refusing a path inside it becomes one
    `RefusedError` line naming it (the lake's staging folder, an output file)."""
    try:
        yield
    except ProbcepError:
        raise
    except Exception as exc:
        why = _refusal(exc)
        if why is None:
            raise
        raise RefusedError(why) from exc


def delta_table_of(path: str | Path) -> Path | None:
    """The Delta table (a folder with a `_delta_log`) that holds `path`, if any."""
    for folder in Path(path).parents:
        if (folder / "_delta_log").is_dir():
            return folder
    return None


def _named_unreadable(e: BaseException) -> tuple[str | None, str]:
    """The Parquet file an exception says it could not read, and why (None: it names none)."""
    if isinstance(e, FileNotFoundError):
        quoted = _QUOTED_PATH.search(str(e))
        return str(e.filename or (quoted[1] if quoted else str(e).strip())), "it is missing"
    found = _UNREADABLE_TEXT.search(str(e))
    if found is None:
        return None, ""
    if found["arrow"]:
        return found["arrow"], found["arrow_why"]
    if found["spark"]:
        return found["spark"], "it is not a Parquet file"
    return found["gone"] or found["nopath"], "it is missing"


def _unreadable(exc: BaseException, within: Path | None, file: str | Path | None
                ) -> str | None:
    """What and where, when `exc` (or one it was raised from) says a data file of a Delta
    table cannot be read: truncated or overwritten (Arrow's, Spark's message names it),
    or gone while the table's log still names it. A relative path is taken in `within`;
    an Arrow error of the block that names no file is `file`'s."""
    for e in _chain(exc):
        path, why = _named_unreadable(e)
        if path is None and e is exc and file is not None and isinstance(
                e, (OSError, ValueError)) and not disk_full(e) and _refusal(e) is None:
            path = str(file)  # Arrow's ArrowInvalid is a ValueError, its IO errors OSErrors
            why = first_line(e).split(". ")[0]
        if path is None:
            continue
        if within is not None and not path.startswith("/"):
            path = str(within / path)
        table = delta_table_of(path) if path.startswith("/") else None
        if table is not None and not Path(path).relative_to(table).parts[0].startswith(
                "_staging"):  # a step's own staged files, not the table's
            return (f"{table}: its data file {Path(path).relative_to(table)} cannot be read "
                    f"({why.strip().rstrip('.')}): the table is damaged (restore the file "
                    f"from a copy)")
    return None


@contextmanager
def damaged(within: Path | None = None, file: str | Path | None = None):
    """Run the block; a data file of a Delta table that cannot be read becomes one
    `DamagedTableError` line naming the table and the file (a path the error gives
    relative is taken in the folder `within`; an Arrow error that names no file is the
    block's `file`). A table's log that delta-rs cannot read is named by `Table.log`,
    which knows the table."""
    try:
        yield
    except ProbcepError:
        raise
    except Exception as exc:
        why = _unreadable(exc, within, file)
        if why is None:
            raise
        raise DamagedTableError(why) from exc


@contextmanager
def from_executors():
    """Run the block; an exception that carries a probcep error raised elsewhere (in a
    Spark executor, arriving as its traceback's text) becomes that error's one line."""
    try:
        yield
    except ProbcepError:
        raise
    except Exception as exc:
        remote = _remote(exc)
        if remote is None:
            raise
        raise remote from exc


def first_line_not_utf8(path: str | Path) -> int | str:
    """The first line of `path` holding bytes that are not UTF-8, or "?" when every line
    decodes: a decoder's error gives a position within its buffer, not in the file (a line
    break is ASCII, so no character spans two lines)."""
    with open(path, "rb") as raw:
        for number, line in enumerate(raw, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return "?"
