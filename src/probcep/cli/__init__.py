"""The `probcep` command: one entry point, one module per subcommand.

Every expected failure is a `ProbcepError`: its message (what, where) is printed on one
line and the exit code is 2. A full disk is one too, wherever a step hit it
(`probcep.lake.failures.writing`), and so is one raised in a Spark executor
(`probcep.lake.failures.from_executors`). Anything else is a bug and keeps its traceback
(exit 1). The `jobs/` entry points that spark-submit runs call `entry`, as the command
does, so they behave the same.
SIGTERM (Airflow's timeouts, a task marked failed) unwinds the command like an error, so
that it releases its slice locks and staging folders: exit 143, one line; Ctrl-C
(SIGINT, Python's KeyboardInterrupt) the same way, exit 130.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from typing import NoReturn

from probcep.cli.destinations import check_distinct, check_output, stdout_closed
from probcep.errors import ProbcepError, ProbcepWarning
from probcep.lake.failures import damaged, from_executors, refused, writing
from probcep.lake.spark import executors_lost

#: Modules that each define `register(subparsers)`; they import Spark, Delta and GX only
#: inside their handlers, so `probcep group` never pays for them.
COMMAND_MODULES = (
    "probcep.cli.group",
    "probcep.cli.correlate",
    "probcep.cli.approx",
    "probcep.cli.plot",
    "probcep.cli.steps",
    "probcep.cli.slice",
    "probcep.cli.evaluate",
    "probcep.cli.demo",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only up to the module that registers `command`
    (building all of them costs a few ms, a tenth of `probcep group` on 1M timesteps)."""
    parser = argparse.ArgumentParser(
        prog="probcep", description="Find and group complex events in uncertain sensor data.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
        if command is not None and command in sub.choices:
            break
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code. SIGTERM unwinds it from the parser on."""
    argv = sys.argv[1:] if argv is None else argv
    command, holds = "probcep", False  # until the parser knows the step
    with _sigterm_unwinds():
        try:
            parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
            args = parser.parse_args(argv)
            command = f"probcep {args.command}"
            holds = getattr(args, "holds_locks", False)  # a lake step
            with warnings.catch_warnings():  # restores the hook below when the command ends
                warnings.showwarning = _one_line(args.command, warnings.showwarning)
                return _run(args)
        except BaseException as exc:
            stop = _stop_signal(exc)
            if stop is None:
                raise
            return _stopped(command, holds, stop)


def _stop_signal(exc: BaseException) -> signal.Signals | None:
    """The signal that stopped the command, when one did (SIGTERM or SIGINT, taken as
    `Terminated`) or `exc` is, or was raised while unwinding, a `KeyboardInterrupt` (a
    library's, live mode's second signal): an error on the way out then stands for the
    signal (QA: `unpersist` in a `finally` read the answer of the py4j call the signal
    cut, and its KeyError became the exit code 1; pandas' C reader took a Ctrl-C for a
    parse error of a sound file, leaving no trace of it in the exception)."""
    if _STOPPED_BY:
        return signal.Signals(_STOPPED_BY[0])
    seen, chain = set(), [exc]
    while chain:
        exc = chain.pop()
        if exc is None or id(exc) in seen:
            continue
        if isinstance(exc, Terminated):
            return signal.SIGTERM
        if isinstance(exc, KeyboardInterrupt):
            return signal.SIGINT
        seen.add(id(exc))
        chain += [exc.__context__, exc.__cause__]
    return None


def entry(argv: list[str] | None = None) -> NoReturn:
    """`main` as the process (the `probcep` command, `python -m probcep`, `jobs/`): once
    the command is done its exit code stands, SIGTERM or not, while Spark and the
    interpreter shut down (seconds: a step that had finished ended with 143, which an
    Airflow task takes for a failure)."""
    code = main(argv)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


def _one_line(command: str, show):
    """`warnings.showwarning` printing a `ProbcepWarning` as the command's own line."""
    def shown(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ProbcepWarning):
            print(f"probcep {command}: warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)
    return shown


#: The options a command writes a file to, as a refusal names them.
OUTPUT_FLAGS = {"output": "-o", "plot": "--plot", "save_state": "--save-state"}


def _run(args: argparse.Namespace) -> int:
    try:
        read = {name: getattr(args, name, None) for name in
                ("input", "train", "resume_from", "episodes")}
        written = {}
        for option in ("output", "plot", "save_state"):
            target = getattr(args, option, None)
            if target is not None:  # a state is saved over the one it resumed from
                check_output(target, [p for name, p in read.items() if p is not None and (
                    option, name) != ("save_state", "resume_from")])
                check_distinct(target, OUTPUT_FLAGS[option], written)
        with executors_lost(), refused(), writing(getattr(args, "output", None)), \
                from_executors(), damaged():
            return int(args.handler(args) or 0)
    except ProbcepError as exc:
        if _stop_signal(exc) is not None:
            raise
        print(f"probcep {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if not stdout_closed():
            raise
        return 0  # whoever read the output stopped (`| head`): nothing more to say


def _stopped(command: str, holds: bool, stop: signal.Signals) -> int:
    """The line of a command a SIGTERM or a Ctrl-C (SIGINT) unwound; `holds`: a lake
    step, with locks and staged files (the others leave no half-written output file)."""
    signal.setitimer(signal.ITIMER_REAL, 0)  # unwound: no more `Terminated`
    print(f"{command}: error: stopped by {stop.name} ("
          + ("its locks and staged files are released: the step" if holds else
             "no output file is left half-written: it") + " can run again)", file=sys.stderr)
    return 128 + stop


#: How soon a SIGTERM that came during an import is taken again, and for how long after
#: the signal an import may put it off.
IMPORT_RETRY_SECONDS = 0.05
IMPORT_PATIENCE_SECONDS = 3.0
#: How long after `Terminated` was raised it is raised again unless the command has ended
#: (longer than any clean-up a `finally` does on the way out).
RAISE_AGAIN_SECONDS = 5.0


def _importing(frame) -> bool:
    """Whether the main thread is inside Python's import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


#: The stop signals (SIGTERM, SIGINT) the running command took (see `_sigterm_unwinds`).
_STOPPED_BY: list[int] = []


class Terminated(BaseException):
    """SIGTERM or Ctrl-C (SIGINT), raised where the main thread is, so that every
    `finally` runs: by default SIGTERM ends the process at once, leaving a step's slice
    locks to a lock holder that is gone (judged so only on its own host: a retry on
    another Airflow worker waited 600 s and failed). A BaseException, so that no `except
    Exception` keeps it; not a KeyboardInterrupt, which py4j catches and logs as an
    error (some 50 lines for a Ctrl-C in a Spark step, QA 2026-11-28)."""


def _taken_already(signum, frame) -> None:
    """A stop signal after the first: the command is unwinding already."""


@contextmanager
def _sigterm_unwinds():
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals
        return

    first = []  # when the first stop signal came
    # Ctrl-C as SIGTERM, unless it is ignored (a background job, nohup) or someone else's
    ctrl_c = signal.getsignal(signal.SIGINT)
    stop_signals = [signal.SIGTERM] + (
        [signal.SIGINT] if ctrl_c is signal.default_int_handler else [])

    def stop(signum, frame):
        if signum == signal.SIGALRM and not first:  # not our alarm: no SIGTERM came
            return
        first[:] = first or [time.monotonic()]
        if signum != signal.SIGALRM and not _STOPPED_BY:
            _STOPPED_BY.append(signum)
        if _importing(frame) and time.monotonic() - first[0] < IMPORT_PATIENCE_SECONDS:
            # raised inside the import machinery it can leave a module's import lock
            # taken, or become an ImportError (numpy's C extension): taken again soon, by
            # an alarm (a thread started here could wait on a lock the import holds); a
            # main thread blocked in an import for longer is interrupted there all the same
            signal.setitimer(signal.ITIMER_REAL, IMPORT_RETRY_SECONDS)
            return
        # a second signal must not cut the clean-up short (SIGKILL still can); but a
        # library that swallows the exception (a bare `except:`, a `__del__` it came in)
        # leaves the command going on with the signals ignored (QA: a step hung, holding
        # its locks): it comes again, until the command has ended
        for taken in stop_signals:  # a no-op, not SIG_IGN: a signal already pending
            signal.signal(taken, _taken_already)  # found SIG_IGN and CPython printed an
            # `OSError: Signal 15 ignored due to race condition` trace (QA, 2026-11-28)
        signal.setitimer(signal.ITIMER_REAL, RAISE_AGAIN_SECONDS)
        raise Terminated

    unraisable = sys.unraisablehook

    def swallowed(what):
        if isinstance(what.exc_value, Terminated):  # raised where Python prints and drops
            # it (an at-fork hook of `logging` as Spark starts its JVM, a `__del__`): no
            # traceback, and raised again at once rather than RAISE_AGAIN_SECONDS later
            signal.setitimer(signal.ITIMER_REAL, IMPORT_RETRY_SECONDS)
            return
        unraisable(what)

    _STOPPED_BY.clear()
    before = signal.signal(signal.SIGTERM, stop)
    alarm = signal.signal(signal.SIGALRM, stop)
    if signal.SIGINT in stop_signals:
        signal.signal(signal.SIGINT, stop)
    sys.unraisablehook = swallowed
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.unraisablehook = unraisable
        signal.signal(signal.SIGALRM, alarm)
        signal.signal(signal.SIGTERM, before)
        if signal.SIGINT in stop_signals:
            signal.signal(signal.SIGINT, ctrl_c)
        _STOPPED_BY.clear()  # read by this command's `main` only, never by a later one
