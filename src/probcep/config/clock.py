"""Timesteps and wall-clock time: t = floor((ts - epoch) / step), all in UTC."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa


def iso_day(text: str) -> dt.date:
    """A day written YYYY-MM-DD, as landing folders and `--date` write it; ValueError
    otherwise (`date.fromisoformat` alone also takes 20260101 and 2026-W01-4, which would
    make a folder so named a day's live input that the night never reads)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text, re.ASCII):
        raise ValueError(f"{text!r} is not a date (YYYY-MM-DD)")
    return dt.date.fromisoformat(text)


@dataclass(frozen=True)
class Clock:
    """Maps integer timesteps to wall-clock time and back: ts = epoch + t * step."""

    epoch: dt.datetime  # naive, UTC
    step: dt.timedelta

    @property
    def label(self) -> str:
        """How silver's commits record the clock its t were counted with."""
        return f"{self.step.total_seconds():g} s from {self.epoch.isoformat()} UTC"

    @property
    def epoch_micros(self) -> int:
        return int(self.epoch.replace(tzinfo=dt.UTC).timestamp() * 1_000_000)

    @property
    def step_micros(self) -> int:
        return int(self.step / dt.timedelta(microseconds=1))

    def timestep(self, ts: dt.datetime) -> int:
        """The timestep holding `ts` (naive times are UTC)."""
        if ts.tzinfo is not None:
            ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
        return (ts - self.epoch) // self.step

    def day_range(self, day: dt.date) -> tuple[int, int]:
        """[first t, last t + 1) of a calendar day (UTC)."""
        first = self.timestep(dt.datetime.combine(day, dt.time()))
        return first, first + int(dt.timedelta(days=1) / self.step)

    def time(self, t: int) -> dt.datetime:
        """When timestep t starts (UTC)."""
        return (self.epoch + t * self.step).replace(tzinfo=dt.UTC)

    def day_of(self, t: int) -> dt.date:
        """The calendar day (UTC) timestep t starts in."""
        return (self.epoch + t * self.step).date()

    def times(self, t: pa.Array) -> pa.Array:
        """Timesteps (nulls kept) as UTC timestamps."""
        t = np.asarray(t.to_numpy(zero_copy_only=False), dtype="float64")
        mask = np.isnan(t)
        micros = (np.nan_to_num(t) * self.step_micros).astype("int64")
        return pa.array(self.epoch_micros + micros, pa.timestamp("us", tz="UTC"), mask=mask)
