"""The `probcep` command: one entry point, one module per subcommand."""

from __future__ import annotations

import argparse
import importlib
import sys

#: Modules that each define `register(subparsers)`; imported lazily so that
#: `probcep group` never pays for Spark or Airflow imports.
COMMAND_MODULES = (
    "probcep.commands.group",
    "probcep.commands.plot",
    "probcep.commands.demo",
    "probcep.commands.run",
    "probcep.commands.lake",
    "probcep.commands.approx",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probcep", description="Find and group complex events in uncertain sensor data.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, OSError) as exc:  # bad input, bad pattern, unreadable file
        print(f"probcep {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
