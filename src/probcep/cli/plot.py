"""`probcep plot`: one stream's distributions and groups over a time range, as a PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from probcep.cli.stream_files import read_blocks
from probcep.engine import Query, StreamMatcher
from probcep.errors import ProbcepError


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw one stream's distributions and its groups as a PNG",
                       description="Draw one stream with its groups: from the lake (silver "
                                   "and gold/groups of the registered pattern NAME, with "
                                   "--lake), or by running PATTERN over a stream file INPUT "
                                   "(the format of `probcep group`).")
    p.add_argument("input", metavar="INPUT", type=Path, nargs="?")
    p.add_argument("--lake", type=Path, help="read silver and gold from this lake instead")
    p.add_argument("--stream", required=True, help="stream_id to draw")
    p.add_argument("--pattern", required=True,
                   help="a pattern (with INPUT) or a registered pattern's name (with --lake)")
    p.add_argument("--policy", choices=("single", "complete"), default="complete")
    p.add_argument("--threshold", type=float, default=0.0, metavar="θ")
    p.add_argument("--window", type=int, default=None, metavar="W")
    p.add_argument("--from", dest="t_from", type=int, help="first t to draw")
    p.add_argument("--to", dest="t_to", type=int, help="last t to draw")
    p.add_argument("-o", "--output", type=Path, default=Path("probcep-plot.png"))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.lake is None):
        raise ProbcepError("give either INPUT (a stream file) or --lake (silver and gold)")
    return from_lake(args) if args.lake else from_file(args)


def from_lake(args: argparse.Namespace) -> int:
    """Silver rows and stored groups of one stream and pattern, from the lake's tables."""
    from probcep.cli.figure import plot_stream
    from probcep.lake.tables import GROUPS, SILVER, SILVER_KEYS

    lo = args.t_from if args.t_from is not None else -(2 ** 62)
    hi = args.t_to if args.t_to is not None else 2 ** 62
    if not SILVER.exists(args.lake):
        raise ProbcepError(f"{SILVER.path(args.lake)}: no silver table here")
    silver = SILVER.read(args.lake, [("stream_id", "=", args.stream), ("t", ">=", lo),
                                     ("t", "<=", hi)])
    if not silver.num_rows:
        raise ProbcepError(f"{SILVER.path(args.lake)}: no silver rows for stream {args.stream!r} "
                         f"in t={args.t_from}..{args.t_to}")
    silver = silver.to_pandas().sort_values("t")
    domain = [c for c in silver.columns if c not in SILVER_KEYS]
    groups = GROUPS.read(args.lake, [("pattern", "=", args.pattern),
                                     ("stream_id", "=", args.stream),
                                     ("t_end", ">=", int(silver.t.iloc[0])),
                                     ("t_start", "<=", int(silver.t.iloc[-1]))]).to_pylist()
    title = f"{args.stream}: {args.pattern} (from {args.lake}) — {len(groups)} groups"
    out = plot_stream(args.output, silver.t.to_numpy(), silver[domain].to_numpy(), domain,
                      groups, title)
    print(f"wrote {out} ({len(groups)} groups in t={silver.t.iloc[0]}..{silver.t.iloc[-1]})")
    return 0


def from_file(args: argparse.Namespace) -> int:
    from probcep.cli.figure import plot_stream

    domain, blocks = read_blocks(args.input)
    block = next((b for b in blocks if b.stream_id == args.stream), None)
    if block is None:
        known = ", ".join(b.stream_id for b in blocks[:10])
        raise ProbcepError(f"{args.input}: no stream {args.stream!r} (streams: {known} ...)")
    query = Query.build(args.pattern, domain, policy=args.policy, threshold=args.threshold,
                        window=args.window)
    matcher = StreamMatcher(query)
    groups = matcher.feed(block.t0, block.probs) + matcher.finish()
    times = block.t0 + np.arange(len(block.probs))
    lo = args.t_from if args.t_from is not None else int(times[0])
    hi = args.t_to if args.t_to is not None else int(times[-1])
    if hi < lo:
        raise ProbcepError(f"--to {hi} is before --from {lo}")
    keep = (times >= lo) & (times <= hi)
    shown = [g for g in groups if g.t_end >= lo and g.t_start <= hi]
    title = (f"{args.stream}: {args.pattern} ({args.policy}, θ={args.threshold}, "
             f"w={args.window}) — {len(shown)} groups")
    out = plot_stream(args.output, times[keep], block.probs[keep], domain, shown, title)
    print(f"wrote {out} ({len(shown)} groups in t={lo}..{hi})")
    return 0
