"""The demo: several days of a bundled sample through the gold pipeline, scored.

The sample (`data/demo/`) is people walking a hallway and now and then visiting a room
through its door, seen by readers that are sure in the hallway and unsure in the room
(seed 000's real-data study: the readers hang in the hallway). It holds per-timestep
distributions over Hallway, Door and Room, one day per file, and the true visits.
`generate_sample` makes it (or a larger one); `run_demo` groups every registered pattern
day after day on local Spark into the local Delta lake and compares the alerts with the
true visits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DOMAIN = ("Hallway", "Door", "Room")
EPOCH = dt.datetime(2026, 1, 1)
STEP = dt.timedelta(minutes=1)
#: The registry entry the sample's ground truth (room visits) is scored against.
VISIT_PATTERN = "room_visit"


@dataclass(frozen=True)
class Sample:
    folder: Path
    days: list[dt.date]
    episodes: Path


def generate_sample(out: Path, days: int = 3, streams: int = 4, seed: int = 2015) -> Sample:
    """Write `days` daily Parquet files of distributions (t = 0 at EPOCH) and a CSV of
    true visits."""
    rng = np.random.default_rng(seed)
    per_day = int(dt.timedelta(days=1) / STEP)
    n = days * per_day
    out.mkdir(parents=True, exist_ok=True)
    frames, episodes = [], []
    for k in range(streams):
        truth = np.zeros(n, dtype=np.int64)  # 0 Hallway, 1 Door, 2 Room
        t = int(rng.integers(20, 200))
        while t < n - 80:
            doors_in, stay, doors_out = (int(rng.integers(1, 3)), int(rng.integers(5, 40)),
                                         int(rng.integers(1, 3)))
            end = t + doors_in + stay + doors_out - 1
            truth[t:t + doors_in] = 1
            truth[t + doors_in:t + doors_in + stay] = 2
            truth[t + doors_in + stay:end + 1] = 1
            episodes.append((f"person-{k}", t, end))
            t = end + int(rng.integers(60, 600))
        frames.append(_readings(rng, truth, f"person-{k}"))
    data = pd.concat(frames, ignore_index=True)
    data["ts"] = pd.Timestamp(EPOCH) + pd.to_timedelta(data["t"] * STEP.total_seconds(), "s")
    files = {}
    for d in range(days):
        day = EPOCH.date() + dt.timedelta(d)
        part = data[(data.t >= d * per_day) & (data.t < (d + 1) * per_day)]
        files[day] = out / f"distributions-{day.isoformat()}.parquet"
        part.to_parquet(files[day], index=False, coerce_timestamps="us")
    truth_path = out / "episodes.csv"
    pd.DataFrame(episodes, columns=["stream_id", "t_start", "t_end"]).to_csv(truth_path,
                                                                           index=False)
    return Sample(out, sorted(files), truth_path)


def _readings(rng, truth: np.ndarray, stream_id: str) -> pd.DataFrame:
    """Distributions: the true place gets most of the mass, less so in the room."""
    n = len(truth)
    sure = np.where(truth == 2, rng.uniform(0.6, 0.97, n), rng.uniform(0.8, 0.99, n))
    rest = rng.dirichlet(np.ones(len(DOMAIN) - 1), size=n) * (1.0 - sure)[:, None]
    probs = np.empty((n, len(DOMAIN)))
    for i in range(len(DOMAIN)):
        others = [j for j in range(len(DOMAIN)) if j != i]
        rows = truth == i
        probs[rows, i] = sure[rows]
        probs[np.ix_(rows, others)] = rest[rows]
    probs[:, -1] = 1.0 - probs[:, :-1].sum(axis=1)  # rows sum to 1 exactly
    return pd.DataFrame({"stream_id": stream_id, "t": np.arange(n),
                         **{d: probs[:, i] for i, d in enumerate(DOMAIN)}})


def load_sample(folder: Path) -> Sample:
    files = {dt.date.fromisoformat(p.stem.removeprefix("distributions-")): p
             for p in sorted(folder.glob("distributions-*.parquet"))}
    if not files:
        raise FileNotFoundError(f"{folder}: no distributions-<date>.parquet files")
    return Sample(folder, sorted(files), folder / "episodes.csv")


def run_demo(sample: Sample, lake: Path, registry_path: Path, master: str | None = None,
             echo=print) -> dict:
    """Group every registered pattern day after day, publish alerts, score the visits."""
    from probcep.evaluation import score
    from probcep.gold import batch
    from probcep.gold import tables as T
    from probcep.gold.validate import validate_groups
    from probcep.nightly import DistributionFiles, run_range, split
    from probcep.registry import load_registry
    from probcep.spark import spark_session

    registry = load_registry(registry_path, DOMAIN)
    exact, _ = split(registry.values())
    spark = spark_session(master, app="probcep-demo")
    echo(f"lake: {lake.resolve()}   patterns: {', '.join(registry)}")
    run_range(spark, DistributionFiles(sample.folder), lake, list(registry.values()), DOMAIN,
              sample.days[0], sample.days[-1], "demo", batch.Clock(EPOCH, STEP), echo=echo)
    groups = T.read_rows(T.table_path(lake, T.GROUPS), T.GROUP_SCHEMA).to_pandas()
    validate_groups(groups, docs_dir=lake / "gx")
    alerts = T.read_rows(T.table_path(lake, T.ALERTS), T.ALERT_SCHEMA).to_pandas()
    episodes = pd.read_csv(sample.episodes)
    last = max(sample.days)
    per_day = int(dt.timedelta(days=1) / STEP)
    episodes = episodes[episodes.t_end < ((last - EPOCH.date()).days + 1) * per_day]
    echo("")
    for entry in exact:
        mine = groups[groups.pattern == entry.name]
        echo(f"{entry.name} `{entry.pattern}` ({entry.query.policy}, θ={entry.query.threshold},"
             f" w={entry.query.window}): {len(mine)} groups, "
             f"{int((alerts.pattern == entry.name).sum())} alerts at >= {entry.alert_threshold}")
    card = None
    if VISIT_PATTERN in registry:  # the sample's ground truth is room visits
        card = score(episodes, groups[groups.pattern == VISIT_PATTERN],
                     alerts[alerts.pattern == VISIT_PATTERN])
        echo(f"\n{VISIT_PATTERN} against the true visits: {card.summary()}")
        echo("true visit -> most probable group overlapping it (cf. seed 000, Table 4):")
        echo(card.episodes.head(12).to_string(index=False))
    echo(f"\ntables: {', '.join(str(T.table_path(lake, n)) for n in (T.GROUPS, T.ALERTS))}")
    docs = sorted((lake / "gx").rglob("index.html"))
    if docs:
        echo(f"Data Docs (gold expectations): {docs[0]}")
    return card
