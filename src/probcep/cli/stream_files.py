"""Read probabilistic streams from files and check them against docs/semantics.md §1.

A file holds one row per stream and timestep: `stream_id`, integer `t`, and one column
per symbol with its probability; the symbol columns, in file order, are the domain.
Every problem is reported with the file, the stream and the timestep it concerns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from probcep.errors import InputError

#: Rows must sum to 1 within this tolerance (docs/semantics.md §1).
SUM_TOLERANCE = 1e-9
KEY_COLUMNS = ("stream_id", "t")


@dataclass(frozen=True)
class StreamBlock:
    """Consecutive timesteps of one stream: rows of `probs` are times t0, t0+1, ..."""

    stream_id: str
    t0: int
    probs: np.ndarray


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a .csv, .parquet or .jsonl file into a DataFrame."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.exists():
        raise InputError(f"{path}: no such file")
    try:
        if suffix == ".csv":
            return pd.read_csv(path, dtype={"stream_id": str}, float_precision="round_trip")
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(path, lines=True, dtype={"stream_id": str}, precise_float=True)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read as {suffix[1:]}: {exc}") from exc
    raise InputError(f"{path}: unsupported format {suffix!r} (use .csv, .parquet or .jsonl)")


def blocks_from_frame(frame: pd.DataFrame, source: str = "input") -> tuple[tuple[str, ...],
                                                                          list[StreamBlock]]:
    """Validate a stream table; return the domain and one block per stream (sorted)."""
    missing = [c for c in KEY_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
    domain = tuple(str(c) for c in frame.columns if c not in KEY_COLUMNS)
    if not domain:
        raise InputError(f"{source}: no symbol columns besides stream_id and t")
    if frame["stream_id"].isna().any():
        row = int(np.flatnonzero(frame["stream_id"].isna().to_numpy())[0])
        raise InputError(f"{source}: row {row}: stream_id is missing")
    frame = frame.assign(stream_id=frame["stream_id"].astype(str))
    t = pd.to_numeric(frame["t"], errors="coerce")
    bad = t.isna() | (t != np.floor(t))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"{source}: stream {frame['stream_id'].iloc[i]!r}: "
                         f"t={_plain(frame['t'].iloc[i])!r} is not an integer")
    huge = outside_int64(t)  # would wrap around in int64
    if huge.any():
        i = int(np.flatnonzero(huge.to_numpy())[0])
        raise InputError(f"{source}: stream {frame['stream_id'].iloc[i]!r}: "
                         f"t={_plain(frame['t'].iloc[i])} is outside the 64-bit integer "
                         f"range")
    frame = frame.assign(t=t.astype(np.int64)).sort_values(["stream_id", "t"], kind="stable")
    probs = _probabilities(frame, domain, source)
    streams = frame["stream_id"].to_numpy()
    times = frame["t"].to_numpy()
    blocks = []
    if not len(frame):
        return domain, blocks
    bounds = np.flatnonzero(streams[1:] != streams[:-1]) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(frame)]):
        sid, ts = streams[lo], times[lo:hi]
        step = np.diff(ts)
        if (step == 0).any():
            k = int(np.flatnonzero(step == 0)[0])
            raise InputError(f"{source}: stream {sid!r}: t={ts[k]} appears more than once")
        if (step != 1).any():
            k = int(np.flatnonzero(step != 1)[0])
            raise InputError(f"{source}: stream {sid!r}: gap in t after t={ts[k]} "
                             f"(next is t={ts[k + 1]})")
        blocks.append(StreamBlock(str(sid), int(ts[0]), probs[lo:hi]))
    return domain, blocks


def _probabilities(frame: pd.DataFrame, domain, source: str) -> np.ndarray:
    values = frame[list(domain)].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)

    def where(mask, what):
        r, c = np.argwhere(mask)[0]
        return (f"{source}: stream {frame['stream_id'].iloc[r]!r}, t={frame['t'].iloc[r]}: "
                f"{what(r, c)}")

    if np.isnan(values).any():
        raise InputError(where(np.isnan(values),
                               lambda r, c: f"probability of {domain[c]!r} is missing or "
                                            f"not a number ({_plain(frame[domain[c]].iloc[r])!r})"))
    outside = (values < 0) | (values > 1)
    if outside.any():
        raise InputError(where(outside, lambda r, c: f"probability of {domain[c]!r} is "
                                                     f"{float(values[r, c])!r}, outside [0, 1]"))
    sums = values.sum(axis=1)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    if off.any():
        raise InputError(where(off[:, None] & np.ones_like(values, bool),
                               lambda r, c: f"probabilities sum to {float(sums[r])!r}, not 1"))
    return values


def outside_int64(t: pd.Series) -> pd.Series:
    """Which integer-valued times int64 cannot hold, compared exactly: pandas reads a
    time above 2**63 - 1 as uint64 and one beyond uint64 as float, and a float compare
    would also refuse the largest int64 times (2**63 - 1 rounds up to 2**63)."""
    if pd.api.types.is_signed_integer_dtype(t):
        return pd.Series(False, index=t.index)
    if pd.api.types.is_unsigned_integer_dtype(t):
        return t > np.iinfo(np.int64).max
    return ~((t >= -(2.0 ** 63)) & (t < 2.0 ** 63))


def _plain(value):
    """A NumPy scalar as the Python value it holds, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def read_blocks(path: str | Path):
    """Read and validate a stream file: (domain, blocks sorted by stream_id)."""
    return blocks_from_frame(read_table(path), source=str(path))
