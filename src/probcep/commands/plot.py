"""`probcep plot`: one stream's distributions and groups over a time range, as a PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from probcep.engine import Query, StreamMatcher
from probcep.streams import read_blocks


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw one stream's distributions and its groups as a PNG",
                       description="Run PATTERN over one stream of INPUT (the format of "
                                   "`probcep group`) and draw the stream with its groups.")
    p.add_argument("input", metavar="INPUT", type=Path)
    p.add_argument("--stream", required=True, help="stream_id to draw")
    p.add_argument("--pattern", required=True)
    p.add_argument("--policy", choices=("single", "complete"), default="complete")
    p.add_argument("--threshold", type=float, default=0.0, metavar="θ")
    p.add_argument("--window", type=int, default=None, metavar="W")
    p.add_argument("--from", dest="t_from", type=int, help="first t to draw")
    p.add_argument("--to", dest="t_to", type=int, help="last t to draw")
    p.add_argument("-o", "--output", type=Path, default=Path("probcep-plot.png"))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from probcep.plot import plot_stream

    domain, blocks = read_blocks(args.input)
    block = next((b for b in blocks if b.stream_id == args.stream), None)
    if block is None:
        known = ", ".join(b.stream_id for b in blocks[:10])
        raise ValueError(f"{args.input}: no stream {args.stream!r} (streams: {known} ...)")
    query = Query.build(args.pattern, domain, policy=args.policy, threshold=args.threshold,
                        window=args.window)
    matcher = StreamMatcher(query)
    groups = matcher.feed(block.t0, block.probs) + matcher.finish()
    times = block.t0 + np.arange(len(block.probs))
    lo = args.t_from if args.t_from is not None else int(times[0])
    hi = args.t_to if args.t_to is not None else int(times[-1])
    if hi < lo:
        raise ValueError(f"--to {hi} is before --from {lo}")
    keep = (times >= lo) & (times <= hi)
    shown = [g for g in groups if g.t_end >= lo and g.t_start <= hi]
    title = (f"{args.stream}: {args.pattern} ({args.policy}, θ={args.threshold}, "
             f"w={args.window}) — {len(shown)} groups")
    out = plot_stream(args.output, times[keep], block.probs[keep], domain, shown, title)
    print(f"wrote {out} ({len(shown)} groups in t={lo}..{hi})")
    return 0
