"""`probcep plot`: one stream's distributions and groups over a time range, as a PNG."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import numpy as np

from probcep.cli.numbers import positive_int, probability
from probcep.cli.stream_files import read_blocks
from probcep.engine import Query, StreamMatcher
from probcep.errors import ProbcepError, first_few

#: The most timesteps one plot of the lake draws (its silent ones filled in).
MAX_STEPS = 1_000_000


def when(text: str) -> int | dt.datetime:
    """A time argument: a timestep (an integer) or an ISO timestamp (UTC unless it says
    otherwise)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        stamp = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a timestep nor an ISO timestamp") from None
    try:  # 0001-01-01T00:00+01:00 is before year 1 in UTC, where a timestep is counted
        return stamp if stamp.tzinfo is None else stamp.astimezone(dt.UTC)
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{text!r} is outside the years 1 to 9999 in "
                                         f"UTC") from None


def register(sub) -> None:
    p = sub.add_parser("plot", help="draw one stream's distributions and its groups as a PNG",
                       description="Draw one stream with its groups: from the lake (silver "
                                   "and gold/groups of the registered pattern NAME, with "
                                   "--lake; alerts outlined), or by running PATTERN over a "
                                   "stream file INPUT (the format of `probcep group`).")
    p.add_argument("input", metavar="INPUT", type=Path, nargs="?")
    p.add_argument("--lake", type=Path, help="read silver and gold from this lake instead")
    p.add_argument("--settings", type=Path,
                   help="with --lake: settings for the clock and the gap policy (default: "
                        "$PROBCEP_SETTINGS, ./probcep.yaml, packaged)")
    p.add_argument("--stream", required=True, help="stream_id to draw")
    p.add_argument("--pattern", required=True,
                   help="a pattern (with INPUT) or a registered pattern's name (with --lake)")
    p.add_argument("--policy", choices=("single", "complete"),
                   help="with INPUT (default complete; --lake: the registered pattern's)")
    p.add_argument("--threshold", type=probability, metavar="θ",
                   help="with INPUT (default 0; --lake: the registered pattern's)")
    p.add_argument("--window", type=positive_int, metavar="W", help="with INPUT (default none)")
    p.add_argument("--from", dest="t_from", type=when, metavar="WHEN",
                   help="first time to draw: a timestamp (with --lake) or a timestep")
    p.add_argument("--to", dest="t_to", type=when, metavar="WHEN",
                   help="last time to draw: a timestamp (with --lake) or a timestep")
    p.add_argument("--episodes", type=Path, metavar="FILE",
                   help="with --lake: shade the stream's true episodes of the pattern "
                        "(the file `probcep evaluate` reads)")
    p.add_argument("-o", "--output", type=Path, default=Path("probcep-plot.png"),
                   help="the image, in the format its extension names (default probcep-plot.png)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from probcep.cli.figure import image_format

    if (args.input is None) == (args.lake is None):
        raise ProbcepError("give either INPUT (a stream file) or --lake (silver and gold)")
    image_format(args.output)
    return from_lake(args) if args.lake else from_file(args)


def from_lake(args: argparse.Namespace) -> int:
    """Silver (silent timesteps filled by the gap policy), the stored groups of one
    stream and pattern, its alerts, and, if given, its true episodes."""

    from probcep.cli.destinations import outside_lake
    from probcep.cli.figure import plot_stream
    from probcep.config.registry import RegisteredApprox, load_registry
    from probcep.config.settings import load_settings
    from probcep.errors import warn
    from probcep.lake.slices import with_silence
    from probcep.lake.tables import (
        ALERTS,
        GROUPS,
        NORMALIZE_LOG,
        SILVER,
        SILVER_KEYS,
        refuse_other_silver,
    )
    from probcep.pipeline.evaluate import read_episodes

    settings = load_settings(args.settings, lake=args.lake)
    clock = settings.clock
    registered = load_registry(settings.registry, settings.domain)
    if args.pattern not in registered:  # a misspelt name would draw no groups, unsaid
        raise ProbcepError(f"{settings.registry}: no registered pattern {args.pattern!r} "
                           f"(registered: {', '.join(registered)})")
    if isinstance(registered[args.pattern], RegisteredApprox):  # so would an approximate one
        raise ProbcepError(f"--pattern {args.pattern} is an approximate pattern: plot draws "
                           f"the groups and alerts of exact patterns")
    given = [f"--{o}" for o in ("policy", "threshold", "window") if getattr(args, o) is not None]
    if given:  # the lake's groups are the registered pattern's: they would be drawn unsaid
        raise ProbcepError(f"{', '.join(given)}: with --lake the groups drawn are the "
                           f"registered pattern's (its policy, θ and window)")
    outside_lake(args.output, settings.lake_root)

    def step(value, default):
        if value is None:
            return default
        return value if isinstance(value, int) else clock.timestep(value)

    if not SILVER.exists(args.lake):
        raise ProbcepError(f"{SILVER.path(args.lake)}: no silver table here")
    refuse_other_silver(args.lake, clock.label, settings.gap_label)
    ours = [("stream_id", "=", args.stream)]
    known = SILVER.read(args.lake, ours).to_pandas().sort_values("t")
    if not len(known):
        raise ProbcepError(f"{SILVER.path(args.lake)}: no silver rows for stream "
                           f"{args.stream!r}")
    lo = step(args.t_from, int(known.t.iloc[0]))
    hi = step(args.t_to, int(known.t.iloc[-1]))
    if hi < lo:
        raise ProbcepError(f"--to {args.t_to} is before --from {args.t_from}")
    if hi - lo + 1 > MAX_STEPS:  # silence is drawn too: the range, not the data, costs
        raise ProbcepError(f"t={lo}..{hi} is {hi - lo + 1:,} timesteps, more than a plot "
                           f"draws ({MAX_STEPS:,}): narrow --from/--to")
    first, last = clock.day_of(lo), clock.day_of(hi)
    made = SILVER.days(args.lake) | set(NORMALIZE_LOG.read(args.lake, columns=["date"])
                                         ["date"].to_pylist())
    never = [first + dt.timedelta(d) for d in range((last - first).days + 1)
             if first + dt.timedelta(d) not in made]
    if never:  # drawn as silence, they would look like quiet days (QA, 2026-11-27)
        warn(f"{first_few(never)}: {len(never)} day(s) of the range with no silver in this "
             f"lake (never normalized here): drawn as silence")
    domain = [c for c in known.columns if c not in SILVER_KEYS]
    probs = with_silence(known.t.to_numpy(), known[domain].to_numpy(), lo, hi,
                         settings.silence)
    mine = [("pattern", "=", args.pattern), *ours, ("t_end", ">=", lo), ("t_start", "<=", hi)]
    groups = GROUPS.read(args.lake, mine).to_pylist()
    alerted = {(a["t_start"], a["t_first"], a["t_end"])
               for a in ALERTS.read(args.lake, mine).to_pylist()}
    for g in groups:
        g["alerted"] = (g["t_start"], g["t_first"], g["t_end"]) in alerted
    spans = []
    if args.episodes:
        truth = read_episodes(args.episodes, clock)
        truth = truth[(truth.stream_id == args.stream) & (truth.pattern == args.pattern)]
        spans = [(int(a), int(b)) for a, b in zip(truth.t_start, truth.t_end)
                 if b >= lo and a <= hi]
    title = (f"{args.stream}: {args.pattern} (from {args.lake}) — {len(groups)} groups, "
             f"{len(alerted)} alerts" + (f", {len(spans)} true episodes" if args.episodes
                                         else ""))
    start = clock.epoch + lo * clock.step
    out = plot_stream(args.output, lo + np.arange(hi - lo + 1), probs, domain, groups, title,
                      episodes=spans, start=start, step=clock.step)
    alerts = f"{len(alerted)} alert" + ("" if len(alerted) == 1 else "s")
    print(f"wrote {out} ({len(groups)} groups, {alerts} in t={lo}..{hi}, "
          f"{start:%Y-%m-%d %H:%M:%S} onwards)")
    return 0


def from_file(args: argparse.Namespace) -> int:
    from probcep.cli.figure import plot_stream

    if args.episodes:
        raise ProbcepError("--episodes needs --lake (episodes are timestamps)")
    for value in (args.t_from, args.t_to):
        if isinstance(value, dt.datetime):
            raise ProbcepError(f"{value}: a stream file has no clock; give a timestep")
    domain, blocks = read_blocks(args.input)
    block = next((b for b in blocks if b.stream_id == args.stream), None)
    if block is None:
        known = ", ".join(repr(b.stream_id) for b in blocks[:10])
        more = " …" if len(blocks) > 10 else ""
        raise ProbcepError(f"{args.input}: no stream {args.stream!r} " + (
            f"(streams: {known}{more})" if blocks else "(the file holds no stream)"))
    policy, threshold = args.policy or "complete", args.threshold or 0.0
    query = Query.build(args.pattern, domain, policy=policy, threshold=threshold,
                        window=args.window)
    matcher = StreamMatcher(query)
    groups = matcher.feed(block.t0, block.probs) + matcher.finish()
    times = block.t0 + np.arange(len(block.probs))
    lo = args.t_from if args.t_from is not None else int(times[0])
    hi = args.t_to if args.t_to is not None else int(times[-1])
    if hi < lo and args.t_from is not None and args.t_to is not None:
        raise ProbcepError(f"--to {hi} is before --from {lo}")  # else: the stream's end
    keep = (times >= lo) & (times <= hi)
    if not keep.any():  # an empty figure would look like a stream without groups
        raise ProbcepError(f"t={lo}..{hi} holds no timestep of stream {args.stream!r} "
                           f"(t={times[0]}..{times[-1]})")
    shown = [g for g in groups if g.t_end >= lo and g.t_start <= hi]
    title = (f"{args.stream}: {args.pattern} ({policy}, θ={threshold}, "
             f"w={args.window}) — {len(shown)} groups")
    out = plot_stream(args.output, times[keep], block.probs[keep], domain, shown, title)
    print(f"wrote {out} ({len(shown)} groups in t={lo}..{hi})")
    return 0
