"""Who may write a slice of a table now, and whose leftovers may be cleared.

A slice is a table's rows of one day, or of one day and some key values (the patterns a
`group-day` runs). Writers of different slices of a table run at once and meet only at
the Delta commit (`probcep.lake.tables.commit_with_retries`). Writers of the same slice
must not: `slice_lock` lets one at a time write it, from staging through commit.

A lock is a small file beside the table, `_locks/<table>/<day>/<key>=<value>.lock` (one
per value, or `day.lock` for a whole day), created atomically (`O_CREAT | O_EXCL`) and
holding its owner: host, pid, the process's start time and the time it was taken. The
owner removes it when done, whatever happened. A run that finds the slice locked waits,
up to `WAIT_SECONDS`, then stops with "another run is writing <table> for <day> ...".
A lock whose owner is provably dead is taken over at once: same host, and its pid gone,
a zombie, or another process's (a different start time: the pid was reused) or the host
rebooted since. An owner on another host is never judged; its lock is waited for.

Staging folders (`probcep.lake.delta.staging_folder`) carry the same owner `tag()` in
their names, so that a run clears only the leftovers of runs that are provably dead.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import os
import random
import socket
import stat
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from probcep.errors import ProbcepError

#: The folder, beside a table, that holds its slice locks.
LOCKS_FOLDER = "_locks"
#: How long a run waits for another run's lock on its slice before it gives up.
WAIT_SECONDS = 600.0
#: A lock file with no readable owner (its writer died between creating and filling it,
#: a matter of microseconds) is stale once it is this old.
UNREADABLE_SECONDS = 30.0

log = logging.getLogger(__name__)


class ConcurrentWriteError(ProbcepError):
    """Another run holds or changed the slice this run writes."""


# --- owners -------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _machine() -> str:
    """This host and pid namespace (two containers sharing a hostname are two machines)."""
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        ns = ""
    return hashlib.sha1(f"{socket.gethostname()}|{ns}".encode()).hexdigest()[:12]


def _boot() -> str:
    return _read("/proc/sys/kernel/random/boot_id").replace("-", "")[:8]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of a live pid, None when no process
    has it; from /proc/<pid>/stat (fields 3 and 22)."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


@dataclass(frozen=True)
class Owner:
    """A process that holds a lock or a staging folder."""

    machine: str  # `_machine()` where it runs
    boot: str  # that machine's boot id (short), "" where unknown
    pid: int
    start: int | None  # its start time (clock ticks after boot), None where unknown

    @classmethod
    def me(cls) -> Owner:
        stat = _stat(os.getpid())
        return cls(_machine(), _boot(), os.getpid(), stat[1] if stat else None)

    def tag(self) -> str:
        """`machine.boot.pid.start`: the owner in a file or folder name."""
        return f"{self.machine}.{self.boot}.{self.pid}.{'' if self.start is None else self.start}"

    @classmethod
    def from_tag(cls, tag: str) -> Owner | None:
        try:
            machine, boot, pid, start = tag.split(".")
            return cls(machine, boot, int(pid), int(start) if start else None)
        except ValueError:
            return None

    def dead(self) -> bool:
        """Provably dead: on this machine, and the machine rebooted since, or its pid is
        gone, a zombie or another process's (a different start time). An owner elsewhere
        is never provably dead."""
        if self.machine != _machine():
            return False
        if self.boot and _boot() and self.boot != _boot():
            return True
        if not Path("/proc/self/stat").exists():  # no /proc: ask the kernel
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return True
            except OSError:
                return False
            return False
        stat = _stat(self.pid)
        if stat is None:
            return True
        state, start = stat
        return state in ("Z", "X") or (self.start is not None and start != self.start)


# --- slice locks -------------------------------------------------------------------

#: Locks this process holds: path -> (pid, thread) holding it, which may re-enter it (the
#: pid: a forked child holds none of its parent's locks).
_held: dict[str, tuple[int, int]] = {}
_held_guard = threading.Lock()


def slice_labels(keys: Mapping[str, Sequence] | None) -> list[str]:
    """One label per value combination of the keys (`pattern=room_visit`); `day` when
    the slice is the whole day."""
    names = sorted(keys or {})
    combos = list(itertools.product(*(sorted({str(v) for v in keys[n]}) for n in names)))
    if not names or not combos:
        return ["day"]
    labels = [",".join(f"{n}={quote(v, safe='')}" for n, v in zip(names, c)) for c in combos]
    return [lb if len(lb) <= 120 else hashlib.sha1(lb.encode()).hexdigest() for lb in labels]


def lock_path(table_path: Path, day: dt.date, label: str) -> Path:
    return table_path.parent / LOCKS_FOLDER / table_path.name / day.isoformat() / f"{label}.lock"


@contextmanager
def slice_lock(lake, tables: Iterable, day: dt.date, keys: Mapping[str, Sequence] | None = None,
               *, wait: float | None = None):
    """Hold the slice (`day`, and each combination of `keys`' values) of every table in
    `tables` (catalog `Table`s) for the block; re-entrant within a thread.

    Waits up to `wait` seconds (default `WAIT_SECONDS`) for another run's lock, taking
    over at once a lock whose owner is provably dead; then raises ConcurrentWriteError
    "another run is writing <table> for <day> (<slice>): ..."."""
    wait = WAIT_SECONDS if wait is None else wait
    deadline = time.monotonic() + wait
    wanted = sorted({(str(lock_path(t.path(lake), day, label)), t.name, label)
                     for t in tables for label in slice_labels(keys)})
    with ExitStack() as stack:
        for path, name, label in wanted:
            stack.enter_context(_lock(Path(path), f"{name} for {day} ({label})", deadline,
                                      wait))
        yield


@contextmanager
def exclusive(path: Path, what: str):
    """Hold `path` for the block, refusing at once (ConcurrentWriteError) while a living
    process holds it: for a process of which one at a time may run at all (live mode:
    a second one on a lake shared its checkpoint and died minutes later with a
    traceback). A dead holder's lock is taken over."""
    with _lock(path, what, time.monotonic(), 0.0):
        yield


@contextmanager
def _lock(path: Path, what: str, deadline: float, wait: float):
    key, me = os.path.abspath(path), (os.getpid(), threading.get_ident())
    with _held_guard:
        again = _held.get(key) == me
    if again:  # this thread holds it already: the outer block releases it
        yield
        return
    token = uuid.uuid4().hex
    try:  # from before the lock exists: a SIGTERM while it is taken still releases it
        _acquire(path, what, deadline, wait, token)
        with _held_guard:
            _held[key] = me
        yield
    finally:
        with _held_guard:
            if _held.get(key) == me:
                _held.pop(key)
        _release(path, token)


def _acquire(path: Path, what: str, deadline: float, wait: float, token: str) -> None:
    """Take the lock at `path` with a record naming this process and `token`. The record
    is written whole to a file of its own first and linked to `path` (which fails if a
    lock is there): a lock file never exists without its owner's record, so whatever
    interrupts this leaves either no lock or one that its `token` releases."""
    owner = Owner.me()
    record = json.dumps({
        "owner": owner.tag(), "host": socket.gethostname(), "pid": owner.pid,
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "slice": what,
        "token": token})
    draft = path.with_name(f".{path.stem}.{token}.draft")
    delay, announced, started = 0.05, False, time.monotonic()
    try:
        while True:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):  # a file where a folder goes
                raise ProbcepError(f"{path.parent} is in the way of the lock on {what}: "
                                   f"a file or part of its path is no folder (remove "
                                   f"it)") from None
            try:
                if not draft.exists():
                    with open(draft, "w") as f:
                        f.write(record)
                        f.flush()
                        os.fsync(f.fileno())
                os.link(draft, path)
            except FileExistsError:
                pass
            except FileNotFoundError:  # its day folder was removed by a releasing run
                continue
            else:
                if announced:  # the wait's end, beside its start: how long it held the run
                    log.warning("took the lock on %s after waiting %.1f s", what,
                                time.monotonic() - started)
                return
            if _wait_for(path, what, deadline, wait, delay, announced):
                delay, announced = min(delay * 2, 1.0), True
    finally:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            draft.unlink()


def _wait_for(path: Path, what: str, deadline: float, wait: float, delay: float,
              announced: bool) -> bool:
    """One wait for the lock another run holds (taken over at once if that run is dead:
    False, no wait); ConcurrentWriteError past the deadline."""
    if not os.path.lexists(path):
        return False  # released meanwhile
    if not _is_file(path):  # no run makes one: never waited for nor removed
        raise ProbcepError(f"{path} is in the way of the lock on {what}: a lock is a "
                           f"file and this is not one (remove it)")
    held = _read(str(path))
    if _stale(path, held):
        _take_over(path, held)
        return False
    holder = _describe(held)
    if time.monotonic() >= deadline:
        waited = f"; gave up after waiting {wait:g} s" if wait else ""
        raise ConcurrentWriteError(f"another run is writing {what}: {holder} holds {path}"
                                   f"{waited} (remove the file if that run is gone)")
    if not announced:
        log.warning("another run is writing %s: %s holds %s; waiting up to %g s",
                    what, holder, path, wait)
    time.sleep(min(max(deadline - time.monotonic(), 0.0),
                   delay * random.uniform(0.5, 1.0)))
    return True


def _stale(path: Path, held: str) -> bool:
    try:
        owner = Owner.from_tag(json.loads(held)["owner"])
    except (ValueError, KeyError, TypeError):
        owner = None
    if owner is not None:
        return owner.dead()
    try:
        return time.time() - path.stat().st_mtime > UNREADABLE_SECONDS
    except OSError:
        return False


def _take_over(path: Path, held: str) -> None:
    """Remove a dead owner's lock, if it is still that owner's. Takeovers on a host are
    serialised by an flock (which dies with its process), so a run never removes the
    lock that another has just taken in the dead one's place."""
    guard = path.parent.parent / ".takeover"
    with open(guard, "a") as g:
        try:
            import fcntl

            fcntl.flock(g, fcntl.LOCK_EX)
        except ImportError:  # no flock: a narrower race remains
            pass
        if _read(str(path)) == held:
            path.unlink(missing_ok=True)
            log.warning("took over %s from a run that is gone", path)


def _release(path: Path, token: str) -> None:
    held = _read(str(path)) if _is_file(path) else ""  # a FIFO there would block a read
    if f'"token": "{token}"' in held:
        path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()  # the day's folder, once no lock is left in it
    except OSError:
        pass


def _is_file(path: Path) -> bool:
    """A regular file (not a link, directory, FIFO or socket) is at `path`."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _describe(held: str) -> str:
    try:
        info = json.loads(held)
        return f"pid {info['pid']} on {info['host']} since {info['since']}"
    except (ValueError, KeyError, TypeError):
        return "a run"
