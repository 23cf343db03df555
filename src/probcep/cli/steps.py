"""The pipeline's steps as `probcep` verbs, each named like its `jobs/` file and Airflow
task: `ingest`, `normalize`, `group-day`, `validate-gold`, `publish-alerts`,
`correlate-day`, `run` (a night or a backfill), `rerun` (after a data fix) and `live`
(readings matched as they land)."""

from __future__ import annotations

import argparse
import datetime as dt
from contextlib import contextmanager
from pathlib import Path

from probcep.cli.options import LAKE, REGISTRY
from probcep.config.clock import iso_day
from probcep.errors import ProbcepError
from probcep.lake.failures import writing


def _options(p, patterns: bool = True) -> None:
    """Those beside --settings, --lake and --registry (`options.REGISTRY`)."""
    p.add_argument("--master", help="Spark master (default: the settings', spark-submit's, "
                                    "else local[*])")
    if patterns:
        p.add_argument("--pattern", action="append", metavar="NAME",
                       help="only this registered pattern (repeatable; default all)")
        p.add_argument("--source", type=Path,
                       help="folder of distributions-YYYY-MM-DD.parquet to use as silver, "
                            "skipping ingest and normalize")


def written_day(text: str) -> dt.date:
    try:
        return iso_day(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def begun_day(text: str) -> dt.date:
    """A day argument: an ISO date no later than today (UTC). A later day has not begun:
    a step that recorded it as done would put every real night after it out of order,
    and a year's typo (2062 for 2026) would have a lookback reach across decades."""
    day = written_day(text)
    today = dt.datetime.now(dt.UTC).date()
    if day > today:
        raise argparse.ArgumentTypeError(f"{day} has not begun (today is {today}, UTC)")
    return day


def _day(sub, name: str, text: str, handler, patterns: bool = True):
    p = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                       parents=[REGISTRY])
    # ingest names the landing folder a later day cannot have yet (`ingest`)
    p.add_argument("--date", type=written_day if name == "ingest" else begun_day, required=True)
    _options(p, patterns)
    p.set_defaults(handler=handler, holds_locks=True)
    return p


def register(sub) -> None:
    _day(sub, "ingest", "landing files of a day into bronze (bad rows to quarantine)", ingest,
         patterns=False)
    _day(sub, "normalize", "a day of bronze into validated silver distributions", normalize,
         patterns=False)
    _day(sub, "group-day", "group a day of silver for the registered patterns and check the "
                           "gold rows (the Airflow DAG maps it per pattern)", group_day)
    _day(sub, "validate-gold", "check a day's gold groups against the gold expectations",
         validate_gold)
    _day(sub, "publish-alerts", "replace a day's alerts from its groups and record what "
                                "changed", publish_alerts)
    c = _day(sub, "correlate-day", "join a day's groups with the registry's correlations' "
                                   "archive patterns over their lookback ranges "
                                   "(docs/semantics.md §8)", correlate_day)
    c.add_argument("--correlation", action="append", metavar="NAME",
                   help="only this registered correlation (repeatable; default all)")
    p = sub.add_parser("run", help="the night of a day (--date) or of a range (--from/--to)",
                       description="The nightly work for a day, or for every day of a range "
                                   "in order (a backfill).", parents=[REGISTRY])
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--date", type=begun_day)
    when.add_argument("--from", dest="first", type=begun_day)
    p.add_argument("--to", dest="last", type=begun_day)
    _options(p)
    p.set_defaults(handler=run, holds_locks=True)
    r = sub.add_parser("rerun", help="recompute days after a data fix and report alert changes",
                       description="Recompute groups, states and alerts from --from on, "
                                   "stopping once the engine states agree again.",
                       parents=[REGISTRY])
    r.add_argument("--from", dest="first", type=begun_day, required=True)
    r.add_argument("--to", dest="last", type=begun_day, required=True)
    r.add_argument("--reason", default="", help="why (kept in the commit metadata)")
    _options(r)
    r.set_defaults(handler=rerun, holds_locks=True)
    m = sub.add_parser("vacuum", help="remove data files no recent table version needs "
                                      "(Delta VACUUM; no Spark)",
                       description="Delete the data files that replaced days left behind "
                                   "(reruns, nights over live mode's rows), and files writers "
                                   "left without committing them, once no version of the "
                                   "retention period needs them, in every table of the "
                                   "lake.", parents=[LAKE])
    m.add_argument("--retain-hours", type=_hours, default=None,
                   help="keep what versions this recent need (default: each table's "
                        "delta.deletedFileRetentionDuration, else 168, Delta's week)")
    m.add_argument("--dry-run", action="store_true", help="count what would go, remove nothing")
    m.add_argument("--list", action="store_true",
                   help="also print the path of every file removed (or, with --dry-run, "
                        "that would be)")
    m.set_defaults(handler=vacuum, holds_locks=True)
    v = sub.add_parser("live", help="match readings as they land (Spark Structured Streaming)",
                       description="Live mode: a streaming query over the landing folder that "
                                   "appends bronze, normalizes complete timesteps, advances "
                                   "every exact pattern and writes final groups and alerts, "
                                   "exactly once, until stopped (docs/live.md).",
                       parents=[REGISTRY])
    v.add_argument("--once", action="store_true",
                   help="process what the landing folder holds, then stop (availableNow)")
    v.add_argument("--status", action="store_true",
                   help="print the latest micro-batches from state/live_status and exit")
    _options(v, patterns=False)
    v.set_defaults(handler=live, holds_locks=True)


def _writes(step: str):
    """The tables a step writes (`run` and `rerun`: any of the catalog's)."""
    from probcep.lake import tables as t

    return {"ingest": (t.BRONZE, t.QUARANTINE, t.INGEST_LOG),
            "normalize": (t.SILVER, t.NORMALIZE_LOG),
            "group-day": (t.GROUPS, t.STATES, t.APPROX_MATCHES, t.APPROX_BUNDLES,
                          t.APPROX_HISTORY),
            "validate-gold": (), "publish-alerts": (t.ALERTS, t.ALERT_CHANGES),
            "live": (*t.CATALOG, t.LIVE_STATE, t.LIVE_STATUS),
            }.get(step, t.CATALOG)


@contextmanager
def _context(args: argparse.Namespace, step: str):
    """The step's run context, once the lake folders it writes (tables, Data Docs) are
    known to be writable: before any work, no Spark yet. A full disk in the block is one
    error line naming the file, else the lake."""
    from probcep.lake.access import check_writable
    from probcep.pipeline.context import RunContext

    ctx = RunContext.open(step, settings=args.settings, lake=args.lake,
                          registry=args.registry, patterns=getattr(args, "pattern", None),
                          source=getattr(args, "source", None), master=args.master)
    docs = step in ("normalize", "validate-gold", "run", "rerun")  # they write Data Docs
    folders = [ctx.docs_dir] if docs else [ctx.settings.checkpoint] if step == "live" else []
    check_writable(ctx.lake, _writes(step), folders=folders)
    with writing(ctx.lake):
        yield ctx


def ingest(args: argparse.Namespace) -> int:
    from probcep.config.settings import load_settings
    from probcep.pipeline.ingest import ingest_day

    today = dt.datetime.now(dt.UTC).date()
    if args.date > today:  # one line naming the folder, before any work (issue 13)
        folder = load_settings(args.settings).landing_dir / args.date.isoformat()
        raise ProbcepError(f"{folder}: no landing folder: {args.date} has not begun "
                           f"(today is {today}, UTC)")
    with _context(args, "ingest") as ctx:
        print(ingest_day(ctx, args.date).line())
    return 0


def normalize(args: argparse.Namespace) -> int:
    from probcep.pipeline.normalize import normalize_day

    with _context(args, "normalize") as ctx:
        made = normalize_day(ctx, args.date)
    print(f"{args.date}: silver {made.rows} rows over {made.streams} streams, validated; "
          f"Data Docs under {ctx.docs_dir}")
    return 0


def group_day(args: argparse.Namespace) -> int:
    from probcep.pipeline.group_day import group_day as group

    with _context(args, "group-day") as ctx:
        print(group(ctx, args.date).line())
    return 0


def validate_gold(args: argparse.Namespace) -> int:
    from probcep.pipeline.validate_gold import validate_gold as validate

    with _context(args, "validate-gold") as ctx:
        rows = validate(ctx, args.date)
    print(f"{args.date}: {rows} gold groups passed the gold expectations")
    return 0


def publish_alerts(args: argparse.Namespace) -> int:
    from probcep.pipeline.publish_alerts import publish_alerts as publish

    with _context(args, "publish-alerts") as ctx:
        changes = publish(ctx, args.date)
    print(f"{args.date}: alerts added {changes.added}, retracted {changes.retracted} "
          f"(run {ctx.run_id})")
    return 0


def correlate_day(args: argparse.Namespace) -> int:
    from probcep.pipeline.correlate_day import correlate_day as correlate

    with _context(args, "correlate-day") as ctx:
        chosen = ctx.correlations
        if args.correlation:
            unknown = sorted(set(args.correlation) - {c.name for c in chosen})
            if unknown:
                raise ProbcepError(f"{ctx.settings.registry}: no correlation(s) {unknown} "
                                   f"over the chosen patterns; known: "
                                   f"{[c.name for c in chosen]}")
            chosen = [c for c in chosen if c.name in args.correlation]
        if not chosen:  # an empty line would look like a day without groups
            print(f"{args.date}: no correlation registered over the chosen patterns "
                  f"({ctx.settings.registry}): nothing to join")
        for report in correlate(ctx, args.date, chosen):
            print(report.line())
    return 0


def _hours(text: str) -> int:
    try:
        hours = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of hours") from None
    if not 0 <= hours <= 10**6:
        raise argparse.ArgumentTypeError(f"{hours} is not between 0 and 1000000 hours")
    return hours


def vacuum(args: argparse.Namespace) -> int:
    from probcep.config.settings import load_settings
    from probcep.lake.vacuum import VacuumError, report, vacuum_lake
    from probcep.pipeline.context import new_run_id

    lake = load_settings(args.settings, lake=args.lake).lake_root  # checked, as everywhere
    if not Path(lake).is_dir():
        raise ProbcepError(f"{lake}: no lake here (not a folder): nothing to vacuum")
    meta = {"run_id": new_run_id("vacuum")}
    try:
        with writing(lake):
            done = vacuum_lake(lake, args.retain_hours, args.dry_run, meta)
    except VacuumError as partly:  # what the other tables lost is said before the error
        print("\n".join(report(lake, partly.done, args.retain_hours, args.dry_run,
                               args.list)))
        raise
    print("\n".join(report(lake, done, args.retain_hours, args.dry_run, args.list)))
    return 0


def run(args: argparse.Namespace) -> int:
    from probcep.pipeline.run import run_days

    if args.date and args.last:
        raise ProbcepError("--to goes with --from, not --date (a range: --from D1 --to D2)")
    first, last = args.date or args.first, args.date or args.last
    if last is None:
        raise ProbcepError("--from needs --to")
    with _context(args, "run") as ctx:
        run_days(ctx, first, last)
    return 0


def rerun(args: argparse.Namespace) -> int:
    from probcep.pipeline.rerun import rerun_days

    with _context(args, "rerun") as ctx:
        done = rerun_days(ctx, args.first, args.last, reason=args.reason)
    added = sum(d.alerts.added for d in done)
    retracted = sum(d.alerts.retracted for d in done)
    print(f"{ctx.run_id}: {len(done)} days recomputed, alerts added {added}, retracted "
          f"{retracted} (gold/alert_changes, changed_by_run = '{ctx.run_id}')"
          + (f"; reason: {args.reason}" if args.reason else ""))
    return 0


def live(args: argparse.Namespace) -> int:
    from probcep.pipeline.live import LiveQuery, status

    if args.status:  # it reads one table: the lake is all it needs (not the registry)
        from probcep.config.settings import load_settings
        from probcep.lake.tables import LIVE_STATUS

        lake = load_settings(args.settings, lake=args.lake).lake_root
        if not lake.is_dir():
            raise ProbcepError(f"{lake}: no such lake (--lake, or lake_root of the settings)")
        rows = status(lake)
        print(rows.to_pandas().to_string(index=False) if rows.num_rows else
              f"no micro-batch recorded in {LIVE_STATUS.path(lake)}: live mode has not run "
              "on this lake")
        return 0
    with _context(args, "live") as ctx:
        s = ctx.settings
        print(f"live: landing {s.landing_dir} -> lake {ctx.lake}, checkpoint "
              f"{s.checkpoint}" + (" (once)" if args.once else
                                   f", every {s.live_trigger_seconds} s")
              + f"; cache {s.live_cache_streams} streams ({s.live_cache_policy})", flush=True)
        LiveQuery(ctx).run(once=args.once)
    return 0
