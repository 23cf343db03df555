"""Where a command's JSON lines go: a file, or standard output.

A full disk (or a full pipe target, such as `> /dev/full`) is one error line naming the
file, never a traceback, and never a second error when Python flushes stdout at exit.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from probcep.errors import writing


def write_lines(rows: list[dict], output: Path | None) -> None:
    """One JSON line per row, into `output` or onto stdout."""
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if output is not None:
        with writing(output):
            output.write_text(text)
        return
    with writing("<stdout>"):
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError:
            _drop_stdout()
            raise


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered goes nowhere at exit
    instead of failing again (the Python docs' advice for a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (a test)
        pass
