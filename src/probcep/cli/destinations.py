"""Where a command writes: an output file checked before any work is done, and a standard
output whose reader has gone (`probcep group … | head`), which ends the command quietly.
Light on imports: `probcep.cli.main` uses it for every command."""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path

from probcep.errors import ProbcepError


def check_output(path: Path) -> None:
    """Refuse an output file that cannot be written: a folder, or a file in a folder that
    does not exist or is not writable (a file is written beside its final name first,
    then moved into place). A device or FIFO is written as it is."""
    path = Path(path)
    if path.is_dir():
        raise ProbcepError(f"cannot write {path}: it is a folder")
    if path.exists() and not path.is_file():
        return
    folder = path.resolve().parent
    if not folder.is_dir():
        raise ProbcepError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ProbcepError(f"cannot write {path}: folder {folder} is not writable")


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
