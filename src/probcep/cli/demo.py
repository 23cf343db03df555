"""`probcep demo`: the bundled sample through the whole pipeline on the embedded default."""

from __future__ import annotations

import argparse
from pathlib import Path

from probcep.cli.options import SETTINGS


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the bundled sample end to end",
                       description="Ingest, normalize, validate and group every day of the "
                                   "bundled landing sample into a local Delta lake; print "
                                   "groups, alerts and how they compare with the true visits.",
                       parents=[SETTINGS])
    p.add_argument("--lake", type=Path, default=Path("lake") / "demo",
                   help="lake root (default: lake/demo under the working directory)")
    p.add_argument("--master", help="Spark master (default: the settings', else local[*])")
    p.add_argument("--fresh", action="store_true", help="delete the demo lake first")
    p.set_defaults(handler=run, holds_locks=True)  # it runs the lake steps


def run(args: argparse.Namespace) -> int:
    import shutil

    from probcep.demo.walkthrough import run_demo
    from probcep.lake.access import check_writable
    from probcep.lake.failures import writing
    from probcep.lake.tables import CATALOG
    from probcep.pipeline.context import RunContext

    ctx = RunContext.open("demo", settings=args.settings, lake=args.lake, master=args.master)
    check_writable(ctx.lake, CATALOG, folders=[ctx.docs_dir])  # before any work
    if args.fresh and args.lake.exists():
        shutil.rmtree(args.lake)
    with writing(ctx.lake):
        run_demo(ctx)
    return 0
