"""`probcep approx`: approximate matching (k errors, skip-till-any-match) on event streams."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd

from probcep.cli.approx_output import stream_matches, symbol_codes, write_matches
from probcep.cli.destinations import output_path
from probcep.cli.stream_files import (
    INEXACT,
    factorized,
    inexact_integers,
    no_bools,
    outside_int64,
    ranked,
    read_table,
    record_place,
)
from probcep.engine.approx import (
    Budget,
    ErrorAutomaton,
    History,
    HistoryPolicy,
    MatchLimitError,
    default_domain,
    make_policy,
    run_stream,
)
from probcep.engine.approx.errors import MAX_ERRORS
from probcep.engine.approx.matcher import DEFAULT_BURST, MAX_BUDGET, MAX_WINDOW
from probcep.engine.pattern import SYMBOL_NAME, PatternError
from probcep.errors import InputError, ProbcepError

COLUMNS = ("stream_id", "tag", "symbol")
#: Refuse to print more critical subsequences than this unless told otherwise.
DEFAULT_MAX_MATCHES = 100_000


def register(sub) -> None:
    p = sub.add_parser(
        "approx", help="approximate matches (at most K errors) of a pattern in event streams",
        description="Find every subsequence of each stream of INPUT, within the window, that "
                    "at most K inserted symbols turn into a word of PATTERN (skip-till-any-"
                    "match, docs/semantics.md §7); print one JSON line per match.")
    p.add_argument("input", metavar="INPUT", type=Path,
                   help=".csv, .parquet or .jsonl with columns stream_id, tag, symbol")
    p.add_argument("--pattern", required=True, help="pattern, e.g. 'a ( b | c ) d b'")
    p.add_argument("--max-errors", type=int, required=True, metavar="K",
                   help="most inserted symbols a match may need (0: exact matching)")
    p.add_argument("--window", type=int, required=True, metavar="W",
                   help="a match's tags span less than W: tag(last) - tag(first) < W")
    p.add_argument("--domain", help="comma-separated symbols (default: the pattern's "
                                    "symbols and every symbol in the input and --train)")
    p.add_argument("--budget", type=float, metavar="B",
                   help="work units (match node expansions) per event; unlimited if absent")
    p.add_argument("--burst", type=float, default=DEFAULT_BURST,
                   help=f"unused budget is kept for this many events (default {DEFAULT_BURST:g})")
    p.add_argument("--policy", choices=("history", "random", "oldest"), default="history",
                   help="which partial matches to keep when the budget is short")
    p.add_argument("--train", type=Path, metavar="FILE",
                   help="learn the history policy from an unbudgeted run over FILE first")
    p.add_argument("--seed", type=int, default=0, help="seed of the random policy")
    p.add_argument("--bundles", action="store_true", help="also print one line per bundle")
    p.add_argument("--max-matches", type=int, default=DEFAULT_MAX_MATCHES, metavar="N",
                   help=f"refuse to print more than N matches (default {DEFAULT_MAX_MATCHES})")
    p.add_argument("--stats", action="store_true",
                   help="print work units, candidates and seconds per stream on stderr")
    p.add_argument("-o", "--output", type=output_path,
                   help="write JSON lines here, not to stdout (Parquet if it ends in .parquet)")
    p.set_defaults(handler=run)


def read_events(path: Path) -> dict[str, pd.DataFrame]:
    """One frame (tag, symbol) per stream, in tag order (ties keep file order)."""
    lines = path.suffix.lower() in (".jsonl", ".ndjson")
    if not lines and path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty (not even a header): no events")
    frame = read_table(path, text=("stream_id", "symbol", "tag"))  # tags as written
    if lines and frame.columns.empty:  # no record: JSON lines have no header to miss
        return {}
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    def refuse(mask, what) -> NoReturn:
        row = int(np.flatnonzero(np.asarray(mask))[0])
        raise InputError(f"{path}: {record_place(path, row)}: {what(row)}")

    for col in ("stream_id", "symbol"):
        if frame[col].isna().any():
            refuse(frame[col].isna(), lambda row, col=col: f"{col} is missing")
        # a JSON true, list or object, or a Parquet list, would become its Python text
        odd = frame[col].astype(object).map(lambda v, col=col: not isinstance(v, str) and not (
            col == "stream_id" and isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_))))
        if odd.any():
            refuse(odd, lambda row, col=col: f"{col} {_shown(frame[col].iloc[row])} is not "
                                             f"text")
    names = frame["symbol"].astype(object).map(lambda v: SYMBOL_NAME.fullmatch(v) is not None)
    if not names.all():
        refuse(~names, lambda row: f"symbol {frame['symbol'].iloc[row]!r} is not a symbol "
                                   f"name (letters, digits and _, not starting with a digit)")
    tags = pd.to_numeric(no_bools(frame["tag"]), errors="coerce")
    written = frame["tag"]
    bad = tags.isna() | (tags != tags.round())
    if bad.any():
        refuse(bad, lambda row: "tag is missing" if pd.isna(written.iloc[row])
               else f"tag {_shown(written.iloc[row])} is not an integer")
    huge = outside_int64(tags)
    if huge.any():
        refuse(huge, lambda row: f"tag {written.iloc[row]} is outside the 64-bit integer range")
    inexact = inexact_integers(tags)
    if inexact.any():
        refuse(inexact, lambda row: f"tag {written.iloc[row]} {INEXACT}")
    # each id as its own text: pandas' hashing (a sort, a groupby, a categorical's
    # astype) takes "s" and "s\x00" for one id, and would mix their events
    ids = pd.Series([v if isinstance(v, str) else str(v)
                     for v in frame["stream_id"].astype(object)], dtype=object)
    codes, uniques = factorized(ids)
    names, ranks = ranked(uniques, codes)
    times = tags.astype("int64").to_numpy()
    order = np.lexsort((times, ranks))  # stable: ties keep file order
    ranks, events = ranks[order], pd.DataFrame({
        "tag": times[order],
        "symbol": frame["symbol"].astype(object).to_numpy()[order]})
    cuts = np.flatnonzero(np.diff(ranks)) + 1
    return {names[ranks[lo]]: events.iloc[lo:hi].reset_index(drop=True)
            for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(ranks)]) if hi > lo}


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    streams = read_events(args.input)
    training = read_events(args.train) if args.train else {}
    try:  # a pattern's error named as `correlate` names its two patterns'
        if args.domain is not None:
            domain = parse_domain(args.domain)
        else:
            observed = {s for g in [*streams.values(), *training.values()]
                        for s in g["symbol"]}
            domain = default_domain(args.pattern, observed)
            if not domain:  # `.` over a file of no events
                raise InputError(f"{args.input}: holds no events, and the pattern names "
                                 f"no symbol: give --domain")
        ea = ErrorAutomaton.build(args.pattern, args.max_errors, domain)
    except PatternError as exc:
        raise ProbcepError(f"--pattern: {exc}") from exc
    if args.budget is not None:
        history = History(args.window)
        if training:
            learner = HistoryPolicy(history)
            for sid, g in training.items():
                try:
                    run_stream(ea, args.window, list(g["symbol"]), list(g["tag"]),
                               policy=learner, stream_id=sid)
                except InputError as exc:  # named like INPUT's
                    raise InputError(f"{args.train}: {exc}") from exc
            history.refresh_maps()
    found, n_matches = [], 0
    for sid, g in streams.items():
        budget = Budget(args.budget, args.burst) if args.budget is not None else None
        # each stream from the trained history and the seed, as the pipeline's streams:
        # what one stream learns or draws never reaches another
        policy = None if budget is None else make_policy(
            args.policy, history=history.copy(), seed=args.seed)
        symbols, tags = list(g["symbol"]), [int(t) for t in g["tag"]]
        try:
            result = run_stream(ea, args.window, symbols, tags, budget=budget, policy=policy,
                                trace=True, stream_id=sid,
                                max_matches=args.max_matches - n_matches)
        except MatchLimitError as exc:  # stopped early: the rest is not worth waiting for
            raise InputError(f"{args.input}: more than {args.max_matches} matches (passed in "
                             f"stream {exc.stream_id!r} at event {exc.event}, tag {exc.tag}); "
                             f"narrow the window or the errors, or raise --max-matches") from exc
        except InputError as exc:
            raise InputError(f"{args.input}: {exc}") from exc
        n_matches += result.n_matches
        codes, names = symbol_codes(symbols)
        found.append(stream_matches(sid, result.matches, g["tag"].to_numpy(np.int64), codes,
                                    names, result.bundles if args.bundles else []))
        if args.stats:
            s = result.stats
            print(json.dumps({"stream_id": sid, "events": s.events, "candidates": s.candidates,
                              "work": s.work, "shed": s.shed, "matches": s.matches,
                              "seconds": round(s.seconds, 6)}), file=sys.stderr)
    write_matches(found, args.output)
    return 0


def parse_domain(text: str) -> tuple[str, ...]:
    """`--domain a,b,c`: symbol names, each once."""
    names = tuple(n.strip() for n in text.split(","))
    for i, name in enumerate(names, 1):
        if not SYMBOL_NAME.fullmatch(name):
            raise InputError(f"--domain: name {i} {name!r} is not a symbol name (letters, "
                             f"digits and _, not starting with a digit)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"--domain: {', '.join(twice)} named more than once")
    return names


def _check_options(args: argparse.Namespace) -> None:
    """The numeric options' ranges, before any file is read."""
    for name, value, ok, rule in (
            ("--max-errors", args.max_errors, 0 <= args.max_errors <= MAX_ERRORS,
             f"in 0..{MAX_ERRORS}"),
            ("--window", args.window, 1 <= args.window <= MAX_WINDOW, f"in 1..{MAX_WINDOW}"),
            ("--budget", args.budget, args.budget is None  # its credit cap: B x burst
             or (0 <= args.budget <= MAX_BUDGET), f"a number in 0..{MAX_BUDGET:g}"),
            ("--burst", args.burst, 1 <= args.burst <= MAX_BUDGET, f"a number in "
             f"1..{MAX_BUDGET:g}"),
            ("--max-matches", args.max_matches, args.max_matches >= 0, ">= 0")):
        if not ok:
            raise InputError(f"{name} must be {rule}, got {value}")


def _shown(value) -> str:
    """A value in a message as a file spells it (JSON's `5`, `true`, `["a"]`), not as
    Python or NumPy would (`np.int64(5)`, `True`); text as it is."""
    if isinstance(value, str):
        return value
    value = value.tolist() if isinstance(value, np.ndarray | np.generic) else value
    try:
        return json.dumps(value)
    except (TypeError, ValueError):  # a Parquet timestamp or date as it prints
        return str(value)
