"""Where a command writes: an output file checked before any work is done and written
whole or not at all, and a standard output whose reader has gone (`probcep group … |
head`), which ends the command quietly. Light on imports: `probcep.cli.main` uses it for
every command."""

from __future__ import annotations

import itertools
import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from probcep.errors import ProbcepError

_WRITES = itertools.count()


def output_path(text: str) -> Path | None:
    """An `-o` value: `-` is standard output, as for most commands, not a file named -."""
    return None if text == "-" else Path(text)


output_path.__name__ = "path"  # what argparse calls the type in a refusal


def check_output(path: Path, inputs=()) -> None:
    """Refuse an output file that cannot be written: a folder, one of the command's
    `inputs` (it would be replaced by what is read from it), or a file in a folder that
    does not exist or is not writable (a file is written beside its final name first,
    then moved into place). A device or FIFO is written as it is."""
    path = Path(path)
    if path.is_dir():
        raise ProbcepError(f"cannot write {path}: it is a folder")
    for source in inputs:
        if path.exists() and Path(source).exists() and path.samefile(source):
            raise ProbcepError(f"cannot write {path}: it is the input {source}, which "
                               f"would be lost; nothing read")
    if path.exists() and not path.is_file():
        return
    try:
        folder = path.resolve().parent
    except (RuntimeError, OSError) as exc:  # a loop of links (RuntimeError to 3.12)
        raise ProbcepError(f"cannot write {path}: {exc}") from None
    if not folder.is_dir():
        raise ProbcepError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ProbcepError(f"cannot write {path}: folder {folder} is not writable")


def check_distinct(path: Path, flag: str, written: dict[str, Path]) -> None:
    """Refuse a file that another output option of the command (in `written`, by flag)
    names too: one would replace the other (QA: `--save-state X -o X` left the groups
    where the state belonged); `flag` and `path` are then added to `written`."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a device (/dev/null) takes both
        return
    for other, earlier in written.items():
        same = (path.samefile(earlier) if path.exists() and earlier.exists()
                else path.resolve() == earlier.resolve())
        if same:
            raise ProbcepError(f"cannot write {path}: {other} writes it too, and one "
                               f"would replace the other; nothing read")
    written[flag] = path


def outside_lake(path: Path | None, lake: Path) -> None:
    """Refuse an output inside the lake a command reads: a file of a table (its log's
    latest commit, say) would be replaced by the output, and the table lost with it."""
    if path is None:
        return
    try:
        inside = Path(path).resolve().is_relative_to(Path(lake).resolve())
    except (RuntimeError, OSError):  # a loop of links: check_output said it already
        return
    if inside:
        raise ProbcepError(f"cannot write {path}: it is inside the lake {lake}, which the "
                           f"command reads; nothing read")


@contextmanager
def replacing(output: Path) -> Iterator[Path]:
    """The path to write `output`'s new content to: a temporary file beside it, moved
    into place when the block ends and removed if it fails, so that an error halfway (a
    full disk, a bad value met late) leaves an earlier file as it was. A device or FIFO
    (`/dev/full`) is written as it is; a symbolic link stays, its target is replaced."""
    output = Path(output)
    output = output.resolve() if output.is_symlink() else output
    if output.exists() and not output.is_file():
        yield output
        return
    # one name per write, also within a process (two writes of one file must not share it)
    target = output.with_name(f".{output.name}.{os.getpid()}.{next(_WRITES)}.partial")
    try:
        yield target
        _move_into_place(target, output)
    finally:
        target.unlink(missing_ok=True)


def _move_into_place(done: Path, output: Path) -> None:
    """Rename the finished `done` to `output`, an earlier `output` first renamed aside
    and removed after. Renaming straight over an existing file makes ext4 start writing
    the new file's data to disk then and there (its `auto_da_alloc` guard against
    truncated files after a crash): 9.5 ms for 21 MiB here, a seventh of `probcep
    group`'s time on a million timesteps (docs/performance.md §1). Nothing here is
    synced, so power-loss durability is not promised either way; between the two
    renames (two system calls) `output` does not exist.

    An exception anywhere here (a SIGTERM is raised between any two bytecodes, even
    right after the first rename) puts the earlier `output` back: whether it was moved
    aside is read from the file system, not from a variable the exception can beat."""
    aside = done.with_suffix(".old")  # .NAME.PID.N.old: only this write makes it
    aside.unlink(missing_ok=True)
    try:
        try:
            os.rename(output, aside)
        except FileNotFoundError:
            pass
        os.rename(done, output)
        aside.unlink(missing_ok=True)
    except BaseException:
        if aside.exists():
            os.rename(aside, output)
        raise


def stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone; if so it is pointed at
    /dev/null, so that nothing fails again at exit."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        closed = any(event & select.POLLERR for _, event in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (a test)
        return False
    if closed:
        drop_stdout()
    return closed


def drop_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered goes nowhere at exit
    instead of failing again (the Python docs' advice for a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (a test)
        pass
