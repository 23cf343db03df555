"""`probcep demo`: the bundled sample through the pipeline on the embedded default."""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def register(sub) -> None:
    p = sub.add_parser("demo", help="run several days of the bundled sample end to end",
                       description="Group the registered patterns over the bundled sample, "
                                   "day after day, into a local Delta lake; print groups, "
                                   "alerts and how they compare with the true visits.")
    p.add_argument("--sample", type=Path, default=ROOT / "data" / "demo")
    p.add_argument("--lake", type=Path, default=ROOT / "lake" / "demo")
    p.add_argument("--registry", type=Path, default=ROOT / "patterns.yaml")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--fresh", action="store_true", help="delete the demo lake first")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import shutil

    from probcep.demo import load_sample, run_demo

    if args.fresh and args.lake.exists():
        shutil.rmtree(args.lake)
    run_demo(load_sample(args.sample), args.lake, args.registry, args.master)
    return 0
