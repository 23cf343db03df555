"""Nights of gold work over generated silver, shared by the group-day and killed-night
tests: silver rows come from a frame through a `SilverSource` that writes each day's rows
as Parquet files (shuffled, small row groups), as the grouping job must not rely on
order or size."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from probcep.config.registry import parse_entry
from probcep.config.settings import load_settings
from probcep.lake.tables import GROUPS
from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import group_exact
from probcep.pipeline.publish_alerts import publish_alerts

DOMAIN = ("Hallway", "Door", "Room")
STEPS_PER_DAY = 144  # ten-minute timesteps
DAY0 = dt.date(2026, 3, 1)
PATTERNS = (
    parse_entry("visit", {"pattern": "Door Room+ Door", "policy": "complete",
                          "threshold": 0.02, "window": 30, "alert_threshold": 0.3}, DOMAIN),
    parse_entry("pass", {"pattern": "Hallway Door Hallway", "policy": "single",
                         "threshold": 0.05, "window": 5, "alert_threshold": 0.5}, DOMAIN),
)


def make_silver(days=10, streams=4, seed=1):
    rng = np.random.default_rng(seed)
    n = days * STEPS_PER_DAY
    frames = []
    for k in range(streams):
        true = rng.integers(0, 3, n)
        for start in rng.integers(0, n - 40, size=days * 2):  # planted visits
            length = int(rng.integers(3, 20))
            true[start] = 1
            true[start + 1:start + 1 + length] = 2
            true[start + 1 + length] = 1
        p = rng.uniform(0, 0.12, (n, 3))
        p[np.arange(n), true] = 0
        p[np.arange(n), true] = 1 - p.sum(axis=1)
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(n),
                                    **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pd.concat(frames, ignore_index=True)


def day_of(silver, k, upto=None):
    lo, hi = k * STEPS_PER_DAY, (upto or k + 1) * STEPS_PER_DAY
    return silver[(silver.t >= lo) & (silver.t < hi)]


def as_files(frame, folder, name):
    """Silver rows as Parquet files of small row groups, so the job splits them by stream
    (rows shuffled: the job must not rely on their order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{uuid.uuid4().hex[:6]}.parquet"
    rows = frame.sample(frac=1.0, random_state=len(frame))
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), path, row_group_size=200)
    return [str(path)]


@dataclass(frozen=True)
class FrameSilver:
    """A SilverSource over a frame: `rows(day)` are the day's silver rows."""

    rows: Callable[[dt.date], pd.DataFrame]
    folder: Path
    symbols: tuple = DOMAIN
    fill: tuple | None = None  # what a timestep without a row holds (None: gap-free)
    start: dt.date | None = None  # the first day with rows (None: not known)

    def domain(self):
        return self.symbols

    def prepare(self, ctx, days):
        pass

    def files(self, day):
        rows = self.rows(day)
        return as_files(rows, self.folder, day.isoformat()) if len(rows) else []

    def days_with_rows(self, first, last):
        days = (first + dt.timedelta(n) for n in range((last - first).days + 1))
        return [d for d in days if len(self.rows(d))]

    def version(self):
        return None

    def first_day(self, version):
        return self.start

    def silence(self):
        return self.fill

    def unready(self, day):
        return ""


def daily(silver, folder) -> FrameSilver:
    return FrameSilver(lambda day: day_of(silver, (day - DAY0).days), folder)


def context(lake, source, run_id, patterns=PATTERNS) -> RunContext:
    """A run on `lake` with ten-minute timesteps from DAY0."""
    settings = dataclasses.replace(load_settings(), lake_root=Path(lake),
                                   epoch=dt.datetime(2026, 3, 1), timestep_seconds=600)
    return RunContext(settings, tuple(patterns), source, run_id)


def night(lake, silver, k, run="night"):
    """Group day k of `silver` and publish its alerts."""
    day = DAY0 + dt.timedelta(k)
    ctx = context(lake, daily(silver, Path(lake) / "silver-input"), f"{run}-{k}")
    result, _, _ = group_exact(ctx, day)
    return result, publish_alerts(ctx, day)


def group_rows(lake, version=None):
    rows = GROUPS.read(lake, version=version)
    frame = rows.to_pandas().drop(columns=["run_id", "batch_date"])
    return frame.sort_values(["pattern", "stream_id", "t_start", "t_first"]).reset_index(
        drop=True)
