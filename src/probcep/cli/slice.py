"""`probcep slice`: one stream's time slice of silver, reading only the files that hold it."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from probcep.cli.destinations import output_path
from probcep.cli.options import LAKE


def utc_time(text: str) -> dt.datetime:
    """An ISO time, UTC unless it has an offset: a time with an offset and one without
    then compare."""
    when = dt.datetime.fromisoformat(text)
    try:  # 0001-01-01T00:00+01:00 is before year 1 in UTC, where a timestep is counted
        return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else \
            when.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(text) from None


utc_time.__name__ = "ISO time"  # what argparse calls the type when a value is refused


def register(sub) -> None:
    p = sub.add_parser("slice", help="one stream's time slice of silver, reading only its files",
                       description="Print (or write as CSV) one stream's silver rows between "
                                   "two times, and how many of silver's files were read.",
                       parents=[LAKE])
    p.add_argument("--stream", required=True, help="stream_id")
    p.add_argument("--start", type=utc_time, required=True,
                   help="first time, ISO (UTC unless it has an offset)")
    p.add_argument("--end", type=utc_time, required=True,
                   help="end time (exclusive), ISO (UTC unless it has an offset)")
    p.add_argument("-o", "--output", type=output_path, help="write the rows here as CSV")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import pyarrow.csv as pacsv

    from probcep.cli.destinations import outside_lake, replacing
    from probcep.config.settings import load_settings
    from probcep.lake.slices import silver_slice

    settings = load_settings(args.settings, lake=args.lake)
    outside_lake(args.output, settings.lake_root)
    part = silver_slice(settings, args.stream, args.start, args.end)
    rows = part.read()
    print(part.line() + f", {rows.num_rows} rows", file=sys.stderr)
    if not part.stream_seen:  # as `probcep plot` names a stream it does not find
        print(f"probcep slice: warning: no silver file holds stream {args.stream!r} at "
              "any time: a mistyped stream_id?", file=sys.stderr)
    if args.output:  # with no rows, the header alone: the file says the slice is empty
        with replacing(args.output) as target:
            pacsv.write_csv(rows, target)
    elif rows.num_rows:
        print(rows.to_pandas().to_string(index=False))
    return 0
