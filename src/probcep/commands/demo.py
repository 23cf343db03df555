"""`probcep demo`: the bundled sample through the whole pipeline on the embedded default."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the bundled sample end to end",
                       description="Ingest, normalize, validate and group every day of the "
                                   "bundled landing sample into a local Delta lake; print "
                                   "groups, alerts and how they compare with the true visits.")
    p.add_argument("--settings", type=Path, help="settings file (default probcep.yaml)")
    p.add_argument("--lake", type=Path, default=ROOT / "lake" / "demo")
    p.add_argument("--master", help="Spark master (default: the settings', else local[*])")
    p.add_argument("--fresh", action="store_true", help="delete the demo lake first")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import shutil

    from probcep.demo import run_demo
    from probcep.settings import load_settings

    settings = dataclasses.replace(load_settings(args.settings), lake_root=args.lake)
    if args.master:
        settings = dataclasses.replace(settings, spark_master=args.master)
    if args.fresh and args.lake.exists():
        shutil.rmtree(args.lake)
    run_demo(settings)
    return 0
