"""The demo's sample: people walking a hallway and now and then visiting a room.

The people are seen by RFID readers that miss and misread, more so in the room (as in
the real-data study of the grouping paper, whose readers hang in the hallway).
`generate_landing` writes raw long-format readings, one folder per day (bundled with the
package: `probcep/demo/landing/`, three days, four people, three readers), with the true
visits in `episodes.csv`; `generate_sample` writes per-timestep distributions instead
(silver-like files, for `run --source`).
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


@dataclass(frozen=True)
class Sample:
    folder: Path
    days: list[dt.date]
    episodes: Path


def _walks(rng, n: int, streams: int):
    """True places per minute (0 Hallway, 1 Door, 2 Room) and the visits (episodes)."""
    truths, episodes = [], []
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
        truths.append(truth)
    return truths, pd.DataFrame(episodes, columns=["stream_id", "t_start", "t_end"])


#: The registry entry the sample's true visits are true cases of.
VISIT_PATTERN = "room_visit"


def episodes_file(episodes: pd.DataFrame, path: Path) -> Path:
    """The visits as a true-episodes file (stream_id, start, end, pattern; timestamps),
    the format `probcep evaluate` reads."""
    def stamp(t):
        return (pd.Timestamp(EPOCH) + pd.to_timedelta(t * STEP.total_seconds(), "s")) \
            .dt.strftime("%Y-%m-%dT%H:%M:%S")

    pd.DataFrame({"stream_id": episodes.stream_id, "start": stamp(episodes.t_start),
                  "end": stamp(episodes.t_end), "pattern": VISIT_PATTERN}).to_csv(
        path, index=False)
    return path


def generate_sample(out: Path, days: int = 3, streams: int = 4, seed: int = 2015) -> Sample:
    """Write `days` daily Parquet files of distributions (t = 0 at EPOCH) and a CSV of
    true visits."""
    rng = np.random.default_rng(seed)
    per_day = int(dt.timedelta(days=1) / STEP)
    n = days * per_day
    out.mkdir(parents=True, exist_ok=True)
    truths, episodes = _walks(rng, n, streams)
    data = pd.concat([_readings(rng, truth, f"person-{k}") for k, truth in enumerate(truths)],
                     ignore_index=True)
    data["ts"] = pd.Timestamp(EPOCH) + pd.to_timedelta(data["t"] * STEP.total_seconds(), "s")
    files = {}
    for d in range(days):
        day = EPOCH.date() + dt.timedelta(d)
        part = data[(data.t >= d * per_day) & (data.t < (d + 1) * per_day)]
        files[day] = out / f"distributions-{day.isoformat()}.parquet"
        part.to_parquet(files[day], index=False, coerce_timestamps="us")
    truth_path = episodes_file(episodes, out / "episodes.csv")
    return Sample(out, sorted(files), truth_path)


def generate_landing(out: Path, days: int = 3, streams: int = 4, sensors: int = 3,
                     seed: int = 2015, bad_fraction: float = 0.001) -> Path:
    """Raw long-format RFID readings, one CSV per day under out/YYYY-MM-DD/, plus
    out/episodes.csv. Each reader misses some minutes and misreads some places (more so
    in the room); a few rows are malformed (bad time, negative score, unknown symbol,
    missing stream id), as they are in real feeds."""
    rng = np.random.default_rng(seed)
    per_day = int(dt.timedelta(days=1) / STEP)
    truths, episodes = _walks(rng, days * per_day, streams)
    rows = []
    for k, truth in enumerate(truths):
        for sensor in range(sensors):
            in_room = truth == 2
            seen = rng.random(len(truth)) > np.where(in_room, 0.35, 0.15)
            right = rng.random(len(truth)) < np.where(in_room, 0.65, 0.9)
            other = (truth + rng.integers(1, len(DOMAIN), len(truth))) % len(DOMAIN)
            symbol = np.where(right, truth, other)
            t = np.flatnonzero(seen)
            rows.append(pd.DataFrame({
                "stream_id": f"person-{k}", "sensor_id": f"reader-{sensor}",
                "ts": pd.Timestamp(EPOCH) + pd.to_timedelta(
                    t * STEP.total_seconds() + rng.uniform(0, STEP.total_seconds(), len(t)),
                    "s"),
                "symbol": np.array(DOMAIN)[symbol[t]],
                "score": rng.uniform(0.3, 1.0, len(t)).round(3)}))
    raw = pd.concat(rows, ignore_index=True).sort_values("ts", kind="stable")
    raw["ts"] = raw["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f")
    bad = rng.random(len(raw)) < bad_fraction
    kinds = rng.integers(0, 4, len(raw))
    raw.loc[bad & (kinds == 0), "ts"] = "yesterday-ish"
    raw.loc[bad & (kinds == 1), "score"] = -1.0
    raw.loc[bad & (kinds == 2), "symbol"] = "Kitchen"
    raw.loc[bad & (kinds == 3), "stream_id"] = None
    day_of = pd.to_datetime(raw["ts"], errors="coerce").dt.date.fillna(EPOCH.date())
    for day, part in raw.groupby(day_of):
        folder = out / day.isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        part.to_csv(folder / "readings.csv", index=False)
    episodes_file(episodes, out / "episodes.csv")
    return out


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
