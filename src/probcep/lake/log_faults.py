"""What is wrong in a Delta log that delta-rs could not read, by file.

delta-rs says "Json error: Encountered unexpected 'b'" without the commit, or dumps a
kilobyte of its internal structures for a commit that is gone (QA, 2026-11-28). Only
called once a read has failed, so reading every commit here costs nothing on the way
that works. The checks follow what a reader needs: the checkpoint `_last_checkpoint`
names (a missing checkpoint is fatal to delta-rs even when every commit it summarizes is
still there, and removing the hint is then the whole repair), then every commit after
it, without a gap, each a file of JSON lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

COMMIT = re.compile(r"(\d{20})\.json")


def log_fault(table: Path, version: int | None = None) -> tuple[str, str] | None:
    """(what is wrong, what to do) for the table's `_delta_log`, or None when every file a
    reader needs is there and parses (the fault is then delta-rs' own to say)."""
    log = table / "_delta_log"
    commits = {int(m[1]): log / m[0] for f in log.glob("*.json")
               if (m := COMMIT.fullmatch(f.name))}
    hint = log / "_last_checkpoint"
    checkpoint = _hinted(hint)
    if checkpoint is None:  # without a hint a reader takes the newest checkpoint listed
        listed = [int(m[1]) for f in log.glob("*.checkpoint*.parquet")
                  if (m := re.match(r"(\d{20})\.checkpoint", f.name))]
        checkpoint = max(listed, default=None)
    if checkpoint is not None:
        broken = _broken_checkpoint(log, checkpoint, hint.exists())
        if broken is not None:
            if all(v in commits for v in range(checkpoint + 1)):
                return broken[0], (f"remove {broken[1]}: the commits it summarizes are all "
                                   f"there")
            return broken[0], "restore it from a copy"
    first = checkpoint + 1 if checkpoint is not None else 0
    newest = max(commits, default=checkpoint if checkpoint is not None else -1)
    if version is not None and version > newest:
        return (f"version {version} is not there, the newest is {newest}",
                "ask for a version the table has")
    gone = [v for v in range(first, newest + 1) if v not in commits]
    if gone:
        return (f"commit _delta_log/{gone[0]:020d}.json is missing, and {newest - gone[0]} "
                f"commit(s) follow it", "restore it from a copy")
    for v in sorted((v for v in commits if v >= first), reverse=True):
        with open(commits[v], encoding="utf-8", errors="replace") as text:
            for n, line in enumerate(text, 1):
                try:
                    if line.strip():
                        json.loads(line)
                except ValueError:
                    return (f"commit _delta_log/{commits[v].name} does not parse at line {n}",
                            "restore it from a copy")
    return None


def _hinted(hint: Path) -> int | None:
    """The checkpoint version `_last_checkpoint` names; None without one, or for a hint
    that does not parse (delta-rs then lists the log, as without one)."""
    try:
        return int(json.loads(hint.read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _broken_checkpoint(log: Path, version: int, hinted: bool) -> tuple[str, str] | None:
    """What is wrong with checkpoint `version`'s files, if anything, and what to remove
    so that a reader goes by the commits instead (`hinted`: `_last_checkpoint` exists)."""
    import pyarrow.parquet as pq

    parts = sorted(log.glob(f"{version:020d}.checkpoint*.parquet"))
    if not parts:
        return (f"checkpoint _delta_log/{version:020d}.checkpoint.parquet, which "
                f"_delta_log/_last_checkpoint names, is missing"), "_delta_log/_last_checkpoint"
    for part in parts:
        try:
            pq.read_metadata(part)
        except (OSError, ValueError):
            return (f"checkpoint _delta_log/{part.name} is not a readable Parquet file",
                    "it and _delta_log/_last_checkpoint" if hinted else "it")
    return None
