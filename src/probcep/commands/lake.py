"""`probcep ingest` and `probcep normalize`, the bronze and silver steps of one day, and
`probcep slice`, one stream's time slice of silver."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import uuid
from pathlib import Path


def register(sub) -> None:
    for name, text in (("ingest", "landing files of a day into bronze (bad rows to quarantine)"),
                       ("normalize", "a day of bronze into validated silver distributions")):
        p = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("--date", type=dt.date.fromisoformat, required=True)
        p.add_argument("--settings", type=Path, help="settings file (default probcep.yaml)")
        p.add_argument("--lake", type=Path, help="lake root (default: the settings')")
        p.add_argument("--master", help="Spark master (default: the settings', else local[*])")
        p.set_defaults(handler=run, step=name)
    p = sub.add_parser("slice", help="one stream's time slice of silver, reading only its files",
                       description="Print (or write as CSV) one stream's silver rows between "
                                   "two times, and how many of silver's files were read.")
    p.add_argument("--stream", required=True, help="stream_id")
    p.add_argument("--start", type=dt.datetime.fromisoformat, required=True,
                   help="first time, ISO (UTC unless it has an offset)")
    p.add_argument("--end", type=dt.datetime.fromisoformat, required=True,
                   help="end time (exclusive), ISO")
    p.add_argument("--settings", type=Path, help="settings file (default probcep.yaml)")
    p.add_argument("--lake", type=Path, help="lake root (default: the settings')")
    p.add_argument("-o", "--output", type=Path, help="write the rows here as CSV")
    p.set_defaults(handler=run_slice)


def run_slice(args: argparse.Namespace) -> int:
    import sys

    import pyarrow.csv as pacsv

    from probcep.lake.slices import silver_slice
    from probcep.settings import load_settings

    settings = load_settings(args.settings)
    if args.lake:
        settings = dataclasses.replace(settings, lake_root=args.lake)
    part = silver_slice(settings, args.stream, args.start, args.end)
    rows = part.read()
    print(part.line() + f", {0 if rows is None else rows.num_rows} rows", file=sys.stderr)
    if rows is not None:
        if args.output:
            pacsv.write_csv(rows, args.output)
        else:
            print(rows.to_pandas().to_string(index=False))
    return 0


def run(args: argparse.Namespace) -> int:
    from probcep.lake.ingest import ingest_day
    from probcep.settings import load_settings
    from probcep.spark import spark_session

    settings = load_settings(args.settings)
    if args.lake:
        settings = dataclasses.replace(settings, lake_root=args.lake)
    spark = spark_session(args.master or settings.spark_master)
    run_id = f"{args.step}-{uuid.uuid4().hex[:8]}"
    if args.step == "ingest":
        print(ingest_day(spark, settings, args.date, run_id).line())
    else:
        from probcep.lake.normalize import normalize_day

        made = normalize_day(spark, settings, args.date, run_id,
                             docs_dir=settings.lake_root / "gx")
        print(f"{args.date}: silver {made['rows']} rows over {made['streams']} streams, "
              f"validated; Data Docs under {settings.lake_root / 'gx'}")
    return 0
