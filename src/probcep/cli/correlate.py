"""`probcep correlate`: each live group of a pattern joined with an archive pattern over
a lookback range of the same stream (docs/semantics.md §8), on a file of whole timelines."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

from probcep.cli.destinations import output_path
from probcep.cli.numbers import positive_int, probability
from probcep.cli.output import write_lines
from probcep.cli.stream_files import read_blocks, unnamed_symbols, where
from probcep.engine import PatternError, Query, StreamMatcher
from probcep.engine.correlate import MODES, Correlation
from probcep.engine.read_plans import STRATEGIES, ArchiveStats, Timeline, correlate
from probcep.engine.transducer import Transducer
from probcep.errors import ProbcepError, ProbcepWarning

#: Timesteps per statistics bucket for `auto` (a day of minutes; any size is sound).
STATS_BUCKET = 1440
#: The columns of `-o FILE.parquet`: the JSON lines' fields, in their order.
CORRELATED = pa.schema([
    ("stream_id", pa.string()), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("n_matches", pa.int64()), ("max_match_probability", pa.float64()),
    ("live_probability", pa.float64()), ("archive_probability", pa.float64()),
    ("r_lo", pa.int64()), ("r_hi", pa.int64()), ("probability", pa.float64())])


def register(sub) -> None:
    p = sub.add_parser(
        "correlate", help="join live groups with an archive pattern over a lookback range",
        description="Group the matches of the live pattern in every stream of INPUT (each "
                    "stream's whole timeline) and join each group with the archive pattern "
                    "over [t_start - N, t_start - G] of the same stream; print one JSON "
                    "line per group whose correlation probability reaches τ.")
    p.add_argument("input", metavar="INPUT", type=Path,
                   help=".csv, .parquet or .jsonl with stream_id, t and one column per symbol")
    p.add_argument("--live-pattern", required=True, metavar="P", help="live pattern")
    p.add_argument("--policy", choices=("single", "complete"), required=True)
    p.add_argument("--threshold", type=probability, default=0.0, metavar="θ",
                   help="live match threshold θ in [0, 1] (default 0)")
    p.add_argument("--window", type=positive_int, default=None, metavar="W",
                   help="longest live match in timesteps (default: no limit)")
    p.add_argument("--archive-pattern", required=True, metavar="PA", help="archive pattern")
    p.add_argument("--archive-window", type=positive_int, default=None, metavar="WA",
                   help="longest archive match in timesteps (default: no limit)")
    p.add_argument("--lookback", type=positive_int, required=True, metavar="N",
                   help="the range starts N timesteps before the group's t_start")
    p.add_argument("--gap", type=positive_int, default=1, metavar="G",
                   help="the range ends G >= 1 timesteps before t_start (default 1)")
    p.add_argument("--mode", choices=MODES, default="exists",
                   help="the archive pattern must occur (exists) or not (absent)")
    p.add_argument("--min-probability", type=probability, default=0.0, metavar="τ",
                   help="print groups whose correlation probability is >= τ (default 0)")
    p.add_argument("--strategy", choices=STRATEGIES, default="auto",
                   help="how the archive is read (the rows never change; default auto)")
    p.add_argument("-o", "--output", type=output_path,
                   help="write JSON lines here, not to stdout (Parquet if it ends in .parquet)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    domain, blocks = read_blocks(args.input)
    try:  # two patterns: the error says which
        query = Query.build(args.live_pattern, domain, policy=args.policy,
                            threshold=args.threshold, window=args.window)
    except PatternError as exc:
        raise ProbcepError(f"--live-pattern: {exc}") from exc
    try:
        corr = Correlation.build(args.archive_pattern, domain, window=args.archive_window,
                                 lookback=args.lookback, gap=args.gap, mode=args.mode,
                                 min_probability=args.min_probability)
    except PatternError as exc:
        raise ProbcepError(f"--archive-pattern: {exc}") from exc
    odd = unnamed_symbols(args.input, domain)
    if odd:
        warnings.warn(ProbcepWarning(odd), stacklevel=2)
    for option, dfa, window in (("--window", query.dfa, query.window),
                                ("--archive-window", corr.dfa, corr.window)):
        if dfa.unfit(window):
            warnings.warn(ProbcepWarning(f"{option}: {dfa.unfit(window)}"), stacklevel=2)
    span = args.lookback - args.gap + 1  # the longest archive range
    if span < corr.dfa.min_length():
        warnings.warn(ProbcepWarning(
            f"--lookback {args.lookback} --gap {args.gap}: an archive range of {span} "
            f"timestep(s) is shorter than the shortest match of {args.archive_pattern!r} "
            f"({corr.dfa.min_length()} timesteps): the archive side is always 0"),
            stacklevel=2)
    live = Transducer(query.dfa, query.window)
    groups = {}
    for block in blocks:
        matcher = StreamMatcher(query, live)
        with where(args.input, block.stream_id):
            groups[block.stream_id] = matcher.feed(block.t0, block.probs) + matcher.finish()
    # Whole timelines: no timestep inside a range is missing, so no silence is ever used.
    timeline = Timeline(np.full(len(domain), np.nan), {
        b.stream_id: (b.t0 + np.arange(len(b.probs)), b.probs) for b in blocks})
    night = (min((b.t0 for b in blocks), default=0),
             max((b.t0 + len(b.probs) - 1 for b in blocks), default=0))
    # the bounds only ever prune below τ_C > 0 (as in the pipeline's correlate-day)
    stats = (ArchiveStats.from_timeline(corr.dfa, corr.window, timeline, STATS_BUCKET)
             if args.strategy == "auto" and corr.min_probability > 0 else None)
    rows = correlate(corr, Transducer(corr.dfa, corr.window), groups, timeline,
                     args.strategy, night, stats)
    write_lines([r.as_dict() for r in rows], args.output, CORRELATED)
    return 0
