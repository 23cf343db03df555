"""Evaluation of RC-ACEP shedding policies (the approximate-matching paper, Section 6).

For each stream kind (tweet-like letters with the buy-point pattern; most-likely-symbol
sensor streams) a history is learned from an unbudgeted run over a training stream,
then a separate test stream is matched without a budget (the reference) and with
budgets of 5%, 10%, 25% and 50% of the reference's work, by the history policy and the
two baselines (random shedding, averaged over seeds; oldest-first shedding). It prints
bundle recall (reference bundles in which at least one match was found), match recall
(distinct critical subsequences found / in the reference), the work units used and the
wall-clock time, as a Markdown table, and draws the bundle recall as a PNG.

    .venv/bin/python benchmarks/approx_eval.py [--quick] [--seeds TRAIN TEST]
        [--plot docs/approx_eval.png]

Work units are node expansions, so every number here is reproducible; only the seconds
vary. The sensor streams are generated here (`approx_generators.sensor_stream`): the
sample data under `data/sample/` was not available when this was written. With
`--sensor-file F` they come from a probabilistic stream file instead (the `probcep
group` input: stream_id, t, one probability column per symbol), most likely symbol per
timestep; even-numbered streams train, odd-numbered ones test (one stream: first half
trains, second half tests).
"""

from __future__ import annotations

import argparse
import bisect
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from approx_generators import (  # noqa: E402
    BUY_PATTERN,
    SENSOR_PATTERN,
    sensor_stream,
    tweet_stream,
)

from probcep.engine.approx import (  # noqa: E402
    Budget,
    ErrorAutomaton,
    History,
    HistoryPolicy,
    default_domain,
    make_policy,
    run_stream,
)
from probcep.engine.approx.policies import ONLINE_LEARN_EVERY  # noqa: E402

FRACTIONS = (0.05, 0.10, 0.25, 0.50)
POLICIES = ("history", "random", "oldest")
#: Ablations of the history policy: no training run (learns online only), no online
#: update (the trained history is frozen), and no feasibility check or seed reserve.
ABLATIONS = ("history-untrained", "history-frozen", "history-nofeasibility")
RANDOM_SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class Kind:
    name: str
    pattern: str
    k: int
    window: int
    train: list
    test: list


def kinds(quick: bool, train_seed: int = 101, test_seed: int = 202) -> list[Kind]:
    n_tweets, n_steps = (800, 3000) if quick else (3000, 12000)
    return [
        Kind("tweets", BUY_PATTERN, 2, 14, tweet_stream(n_tweets, seed=train_seed),
             tweet_stream(n_tweets, seed=test_seed)),
        Kind("sensor", SENSOR_PATTERN, 1, 12, sensor_stream(n_steps, seed=train_seed),
             sensor_stream(n_steps, seed=test_seed)),
    ]


def _chain(pieces: list[list[tuple[str, int]]], window: int) -> list[tuple[str, int]]:
    """Concatenate streams, shifting tags so that consecutive streams are more than a
    window apart: no match spans two of them and no bundle chains across them."""
    out: list[tuple[str, int]] = []
    for piece in pieces:
        shift = 0 if not out else out[-1][1] + window + 1 - piece[0][1]
        out += [(sym, tag + shift) for sym, tag in piece]
    return out


def sensor_file_kind(path: Path, pattern: str, k: int, window: int,
                     silence: str | None = None) -> Kind:
    """A sensor kind from a probabilistic stream file: most likely symbol per timestep.
    With `silence` the file is sparse (silver: a silent timestep has no row), and every
    timestep of a stream between its first and last row that has none holds that
    symbol."""
    from probcep.cli.stream_files import read_blocks

    if silence is None:
        domain, blocks = read_blocks(path)
        seqs = [[(domain[i], block.t0 + t) for t, i in enumerate(block.probs.argmax(axis=1))]
                for block in blocks]
    else:
        seqs = _sparse_symbols(path, silence)
    if len(seqs) >= 2:
        train, test = seqs[0::2], seqs[1::2]
    else:
        half = len(seqs[0]) // 2
        train, test = [seqs[0][:half]], [seqs[0][half:]]
    return Kind(f"sensor ({path.name})", pattern, k, window, _chain(train, window),
                _chain(test, window))


def _sparse_symbols(path: Path, silence: str) -> list[list[tuple[str, int]]]:
    """Each stream's most likely symbol per timestep, its gaps filled with `silence`."""
    import pandas as pd

    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    domain = [c for c in frame.columns if c not in ("stream_id", "t", "ts", "date")]
    seqs = []
    for _, rows in frame.sort_values(["stream_id", "t"]).groupby("stream_id", sort=True):
        t = rows["t"].to_numpy()
        symbols = np.full(t[-1] - t[0] + 1, silence, dtype=object)
        symbols[t - t[0]] = np.asarray(domain, dtype=object)[
            rows[domain].to_numpy().argmax(axis=1)]
        seqs.append(list(zip(symbols.tolist(), range(int(t[0]), int(t[-1]) + 1))))
    return seqs


def _split(events):
    return [e[0] for e in events], [e[1] for e in events]


def learn_history(kind: Kind, ea: ErrorAutomaton) -> History:
    history = History(kind.window)
    symbols, tags = _split(kind.train)
    run_stream(ea, kind.window, symbols, tags, policy=HistoryPolicy(history))
    history.refresh_maps()
    return history


def recalls(reference, result, window: int) -> tuple[float, float]:
    firsts = [b.first_point for b in reference.bundles]
    hit = set()
    for m in result.matches:
        i = bisect.bisect_right(firsts, m.match_point) - 1
        assert i >= 0 and m.match_point <= reference.bundles[i].last_point
        hit.add(i)
    bundle_recall = len(hit) / len(reference.bundles) if reference.bundles else 1.0
    match_recall = result.n_matches / reference.n_matches if reference.n_matches else 1.0
    return bundle_recall, match_recall


def evaluate(kind: Kind) -> list[dict]:
    domain = sorted({e[0] for e in kind.train + kind.test})
    ea = ErrorAutomaton.build(kind.pattern, kind.k, default_domain(kind.pattern, domain))
    history = learn_history(kind, ea)
    symbols, tags = _split(kind.test)
    reference = run_stream(ea, kind.window, symbols, tags)
    rows = [{"stream": kind.name, "policy": "unbudgeted", "fraction": 1.0,
             "bundle_recall": 1.0, "match_recall": 1.0, "work": reference.stats.work,
             "seconds": reference.stats.seconds, "events": len(symbols),
             "bundles": len(reference.bundles), "matches": reference.n_matches}]
    for fraction in FRACTIONS:
        per_event = fraction * reference.stats.work / len(symbols)
        for name in POLICIES + ABLATIONS:
            seeds = RANDOM_SEEDS if name == "random" else (0,)
            runs = []
            for seed in seeds:
                policy = _policy(name, history, kind.window, seed)
                result = run_stream(ea, kind.window, symbols, tags, policy=policy,
                                    budget=Budget(per_event))
                runs.append((*recalls(reference, result, kind.window), result.stats.work,
                             result.stats.seconds))
            rows.append({"stream": kind.name, "policy": name, "fraction": fraction,
                         "bundle_recall": statistics.mean(r[0] for r in runs),
                         "match_recall": statistics.mean(r[1] for r in runs),
                         "work": round(statistics.mean(r[2] for r in runs)),
                         "seconds": statistics.mean(r[3] for r in runs)})
    return rows


def _policy(name: str, history: History, window: int, seed: int):
    if name == "history-untrained":
        return HistoryPolicy(History(window), learn_every=ONLINE_LEARN_EVERY)
    if name == "history-frozen":
        return HistoryPolicy(history.copy(), learn_online=False)
    if name == "history-nofeasibility":
        return HistoryPolicy(history.copy(), feasibility=False, learn_every=ONLINE_LEARN_EVERY)
    return make_policy(name, history=history.copy(), seed=seed)


def print_table(rows: list[dict]) -> None:
    print("| stream | budget | policy | bundle recall | match recall | work units | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        budget = "none" if r["policy"] == "unbudgeted" else f"{r['fraction']:.0%}"
        print(f"| {r['stream']} | {budget} | {r['policy']} | {r['bundle_recall']:.3f} | "
              f"{r['match_recall']:.4f} | {r['work']} | {r['seconds']:.2f} |")
    for r in rows:
        if r["policy"] == "unbudgeted":
            print(f"\n{r['stream']}: {r['events']} events, {r['bundles']} bundles, "
                  f"{r['matches']} matches, {r['work']} work units unbudgeted", end="")
    print()


def print_summary(rows: list[dict]) -> None:
    """Bundle recall only, one row per stream and policy, one column per budget."""
    names = ("history", "random", "oldest", *ABLATIONS)
    print("\n| stream | policy | " + " | ".join(f"{f:.0%}" for f in FRACTIONS) + " |")
    print("| --- | --- |" + " --- |" * len(FRACTIONS))
    for stream in dict.fromkeys(r["stream"] for r in rows):
        for name in names:
            cells = [f"{r['bundle_recall']:.3f}" for r in rows
                     if r["stream"] == stream and r["policy"] == name]
            print(f"| {stream} | {name} | " + " | ".join(cells) + " |")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    streams = list(dict.fromkeys(r["stream"] for r in rows))
    fig, axes = plt.subplots(1, len(streams), figsize=(5 * len(streams), 3.6), sharey=True)
    for ax, stream in zip(axes, streams, strict=True):
        for name, marker in zip(POLICIES, "os^", strict=True):
            pts = [(r["fraction"], r["bundle_recall"]) for r in rows
                   if r["stream"] == stream and r["policy"] == name]
            ax.plot([100 * p[0] for p in pts], [p[1] for p in pts], marker=marker, label=name)
        ax.set_title(f"{stream} stream")
        ax.set_xlabel("budget (% of unbudgeted work)")
        ax.set_xticks([100 * f for f in FRACTIONS])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("bundle recall")
    axes[0].set_ylim(0, 1.02)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter streams")
    parser.add_argument("--plot", type=Path, help="write the bundle-recall plot here (PNG)")
    parser.add_argument("--seeds", type=int, nargs=2, default=(101, 202),
                        metavar=("TRAIN", "TEST"), help="seeds of the generated streams")
    parser.add_argument("--sensor-file", type=Path, metavar="F",
                        help="also evaluate on the most likely symbols of this stream file")
    parser.add_argument("--sensor-pattern", default=SENSOR_PATTERN,
                        help=f"pattern for --sensor-file (default {SENSOR_PATTERN!r})")
    parser.add_argument("--sensor-window", type=int, default=12,
                        help="window for --sensor-file, in timesteps (default 12)")
    parser.add_argument("--sensor-errors", type=int, default=1,
                        help="max errors for --sensor-file (default 1)")
    parser.add_argument("--sensor-silence", metavar="SYMBOL",
                        help="--sensor-file is sparse (silver): a timestep without a row "
                             "holds SYMBOL (the settings' no_reading_symbol, NoReading)")
    args = parser.parse_args(argv)
    todo = kinds(args.quick, *args.seeds)
    if args.sensor_file:
        todo.append(sensor_file_kind(args.sensor_file, args.sensor_pattern,
                                      args.sensor_errors, args.sensor_window,
                                      args.sensor_silence))
    rows = [row for kind in todo for row in evaluate(kind)]
    print_table(rows)
    print_summary(rows)
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
