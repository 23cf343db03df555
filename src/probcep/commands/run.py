"""`probcep run` (a day or a backfill) and `probcep rerun` (after a data fix)."""

from __future__ import annotations

import argparse
import datetime as dt
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _common(p) -> None:
    p.add_argument("--settings", type=Path, help="settings file (default probcep.yaml)")
    p.add_argument("--source", type=Path,
                   help="folder of distributions-YYYY-MM-DD.parquet to use as silver, "
                        "skipping ingest and normalize")
    p.add_argument("--lake", type=Path, help="lake root (default: the settings')")
    p.add_argument("--registry", type=Path, help="patterns registry (default: the settings')")
    p.add_argument("--pattern", action="append", metavar="NAME",
                   help="only this registered pattern (repeatable; default all)")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")


def register(sub) -> None:
    p = sub.add_parser("run", help="group a day (--date) or a range of days (--from/--to)",
                       description="The nightly gold work for a day, or for every day of "
                                   "a range in order (a backfill).")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--date", type=dt.date.fromisoformat)
    when.add_argument("--from", dest="first", type=dt.date.fromisoformat)
    p.add_argument("--to", dest="last", type=dt.date.fromisoformat)
    _common(p)
    p.set_defaults(handler=run)
    g = sub.add_parser("group-day", help="group a day of silver (no ingest, no alerts)",
                       description="Group a day of silver for the registered patterns and "
                                   "check the gold rows; the Airflow DAG maps it per pattern.")
    g.add_argument("--date", type=dt.date.fromisoformat, required=True)
    _common(g)
    g.set_defaults(handler=group_day)
    v = sub.add_parser("validate-gold", help="check a day's gold groups against the suite",
                       description="Validate the day's gold/groups rows with the gold "
                                   "expectations (expectations/gold_groups.json).")
    v.add_argument("--date", type=dt.date.fromisoformat, required=True)
    _common(v)
    v.set_defaults(handler=validate_gold)
    a = sub.add_parser("alerts", help="publish a day's alerts and print what changed",
                       description="Replace a day's alerts from its groups; print how many "
                                   "were added and retracted.")
    a.add_argument("--date", type=dt.date.fromisoformat, required=True)
    _common(a)
    a.set_defaults(handler=alerts)
    r = sub.add_parser("rerun", help="recompute days after a data fix and report alert changes",
                       description="Recompute groups, states and alerts from --from on, "
                                   "stopping once the engine states agree again.")
    r.add_argument("--from", dest="first", type=dt.date.fromisoformat, required=True)
    r.add_argument("--to", dest="last", type=dt.date.fromisoformat, required=True)
    r.add_argument("--reason", default="", help="why (kept in the commit metadata)")
    _common(r)
    r.set_defaults(handler=rerun)


def _setup(args):
    import dataclasses

    from probcep.gold.batch import Clock
    from probcep.nightly import DistributionFiles, LakeSilver
    from probcep.registry import load_registry
    from probcep.settings import load_settings
    from probcep.spark import spark_session

    settings = load_settings(args.settings)
    if args.lake:
        settings = dataclasses.replace(settings, lake_root=args.lake)
    source = DistributionFiles(args.source) if args.source else LakeSilver(settings)
    domain = source.domain()
    registry_path = args.registry or settings.registry
    registry = load_registry(registry_path, domain)
    unknown = [n for n in args.pattern or [] if n not in registry]
    if unknown:
        raise ValueError(f"{registry_path}: no pattern(s) {unknown}; known: {list(registry)}")
    entries = [registry[n] for n in (args.pattern or registry)]
    spark = spark_session(args.master or settings.spark_master)
    args.lake = settings.lake_root
    return spark, source, domain, entries, Clock(settings.epoch, settings.step)


def run(args: argparse.Namespace) -> int:
    from probcep.nightly import run_range

    first = args.date or args.first
    last = args.date or args.last
    if last is None:
        raise ValueError("--from needs --to")
    spark, source, domain, entries, clock = _setup(args)
    run_range(spark, source, args.lake, entries, domain, first, last,
              f"run-{uuid.uuid4().hex[:8]}", clock)
    return 0


def rerun(args: argparse.Namespace) -> int:
    from probcep.nightly import rerun as rerun_days

    spark, source, domain, entries, clock = _setup(args)
    run_id = f"rerun-{uuid.uuid4().hex[:8]}"
    done = rerun_days(spark, source, args.lake, entries, domain, args.first, args.last,
                      run_id, clock, reason=args.reason)
    added = sum(d.alerts.added for d in done)
    retracted = sum(d.alerts.retracted for d in done)
    print(f"{run_id}: {len(done)} days recomputed, alerts added {added}, retracted "
          f"{retracted} (gold/alert_changes, changed_by_run = '{run_id}')"
          + (f"; reason: {args.reason}" if args.reason else ""))
    return 0


def group_day(args: argparse.Namespace) -> int:
    from probcep.nightly import group_patterns

    spark, source, domain, entries, clock = _setup(args)
    result, found = group_patterns(spark, source, args.lake, entries, domain, args.date,
                                   f"group-{uuid.uuid4().hex[:8]}", clock)
    print(f"{args.date}: {result.groups} groups final over {result.streams} streams "
          f"(validated)" + ("" if found is None else f", approximate match classes {found}"))
    return 0


def alerts(args: argparse.Namespace) -> int:
    from probcep.gold.batch import publish_alerts
    from probcep.nightly import split

    _, _, _, entries, _ = _setup(args)
    run_id = f"alerts-{uuid.uuid4().hex[:8]}"
    changes = publish_alerts(args.lake, split(entries)[0], args.date, run_id)
    print(f"{args.date}: alerts added {changes.added}, retracted {changes.retracted} "
          f"(run {run_id})")
    return 0


def validate_gold(args: argparse.Namespace) -> int:
    from probcep.gold.batch import read_day_groups
    from probcep.gold.validate import validate_groups
    from probcep.nightly import split

    _, _, _, entries, _ = _setup(args)
    rows = read_day_groups(args.lake, split(entries)[0], args.date).to_pandas()
    validate_groups(rows, docs_dir=args.lake / "gx")
    print(f"{args.date}: {len(rows)} gold groups passed the gold expectations")
    return 0
