"""`probcep evaluate`: a lake's alerts (or groups at any threshold) against true episodes."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from probcep.cli.numbers import probability
from probcep.cli.options import REGISTRY


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate", help="score alerts or groups against a file of true episodes",
        description="Compare the lake's alerts (default) or its groups at a probability "
                    "threshold with true episodes (CSV: stream_id, start, end, pattern; "
                    "timestamps): found, missed and false alarms per pattern, and each "
                    "episode's best group. Matching rules: docs/pipeline.md.",
        parents=[REGISTRY])
    p.add_argument("--episodes", type=Path, required=True, metavar="FILE")
    p.add_argument("--pattern", action="append", metavar="NAME",
                   help="only this registered pattern (repeatable; default: every "
                        "registered exact pattern the episodes name)")
    at = p.add_mutually_exclusive_group()
    at.add_argument("--threshold", type=probability, metavar="P",
                    help="groups with probability >= P count as raised (default: the "
                         "published alerts, at each pattern's alert threshold)")
    at.add_argument("--sweep", action="store_true",
                    help="every threshold from 0.05 to 0.95 by 0.05")
    p.add_argument("--plot", type=Path, metavar="PNG",
                   help="draw found and false alarms over the sweep's thresholds (without "
                        "--sweep, the sweep is drawn and the threshold scored is marked)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per pattern and threshold instead")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from probcep.cli.destinations import outside_lake
    from probcep.cli.figure import image_format, plot_sweep
    from probcep.errors import ProbcepWarning
    from probcep.pipeline.context import RunContext
    from probcep.pipeline.evaluate import SWEEP, evaluate, read_episodes, tables_to_score

    ctx = RunContext.open("evaluate", settings=args.settings, lake=args.lake,
                          registry=args.registry, patterns=args.pattern)
    outside_lake(args.plot, ctx.lake)
    if args.plot:
        image_format(args.plot)
    episodes = read_episodes(args.episodes, ctx.clock)
    thresholds = SWEEP if args.sweep else (args.threshold,)
    names, groups, alerts, lines = tables_to_score(ctx, episodes, args.episodes,
                                                   args.pattern, thresholds)
    for line in lines:
        warnings.warn(line, ProbcepWarning, stacklevel=1)
    rows, cards = evaluate(episodes, groups, alerts, names, thresholds)
    if args.plot:
        swept = rows if args.sweep else evaluate(episodes, groups, alerts, names, SWEEP)[0]
        marks = {} if args.sweep else {n: args.threshold for n in names} \
            if args.threshold is not None else {p.name: p.alert_threshold
                                                 for p in ctx.exact if p.name in names}
        print(f"wrote {plot_sweep(args.plot, swept, marks)}", file=sys.stderr)
    if args.json:
        for row in rows:
            print(json.dumps(row.as_dict()))
        return 0
    table = pd.DataFrame([r.as_dict() for r in rows])
    table["threshold"] = table["threshold"].map(
        lambda x: "alerts" if x is None or pd.isna(x) else f"{x:.2f}")
    print(table.to_string(index=False))
    for name, card in cards.items():
        shown = card.shown(ctx.clock)
        if args.sweep:  # the best group is the same at every threshold; `alerted` is not
            shown = shown.drop(columns="alerted")
            print(f"\n{name}: {len(shown)} true episodes; best group per episode:")
        else:
            print(f"\n{name}: {card.summary()}; best group per episode:")
        print(shown.to_string(index=False, na_rep="") if len(shown) else "(no episode)")
    return 0
