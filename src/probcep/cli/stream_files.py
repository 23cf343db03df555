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
from numba import njit

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
        if suffix == ".parquet":  # stream ids as a dictionary: no Python string per row
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
            ids = [n for n in ("stream_id",) if n in schema.names
                   and (pa.types.is_string(schema.field(n).type)
                        or pa.types.is_large_string(schema.field(n).type))]
            return pq.read_table(path, read_dictionary=ids).to_pandas()
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(path, lines=True, dtype={"stream_id": str}, precise_float=True)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read as {suffix[1:]}: {exc}") from exc
    raise InputError(f"{path}: unsupported format {suffix!r} (use .csv, .parquet or .jsonl)")


def blocks_from_frame(frame: pd.DataFrame, source: str = "input") -> tuple[tuple[str, ...],
                                                                          list[StreamBlock]]:
    """Validate a stream table; return the domain and one block per stream (sorted).

    Works on NumPy columns: stream ids are factorized once (no string sort), and rows
    are reordered only when the file is not already in (stream_id, t) order."""
    missing = [c for c in KEY_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
    domain = tuple(str(c) for c in frame.columns if c not in KEY_COLUMNS)
    if not domain:
        raise InputError(f"{source}: no symbol columns besides stream_id and t")
    codes, uniques = _factorized(frame["stream_id"])
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise InputError(f"{source}: row {row}: stream_id is missing")
    names, codes = _ranked(uniques, codes)
    t = pd.to_numeric(frame["t"], errors="coerce")
    bad = t.isna() | (t != np.floor(t))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"{source}: stream {names[codes[i]]!r}: "
                         f"t={_plain(frame['t'].iloc[i])!r} is not an integer")
    huge = outside_int64(t)  # would wrap around in int64
    if huge.any():
        i = int(np.flatnonzero(huge.to_numpy())[0])
        raise InputError(f"{source}: stream {names[codes[i]]!r}: "
                         f"t={_plain(frame['t'].iloc[i])} is outside the 64-bit integer "
                         f"range")
    columns = frame[list(domain)]
    if all(pd.api.types.is_float_dtype(d) or pd.api.types.is_integer_dtype(d)
           for d in columns.dtypes):
        values = columns.to_numpy(np.float64)
    else:
        values = columns.apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    return domain, _blocks(domain, names, codes, t.to_numpy(np.int64), values, source,
                           lambda r, c: _plain(frame[domain[c]].iloc[r]))


def _factorized(ids: pd.Series) -> tuple[np.ndarray, list]:
    """pandas' factorize (missing ids coded -1), unless an id holds a NUL character:
    pandas' hashing stops at it, taking "a" and "a\\x00b" for one stream."""
    if not any(isinstance(s, str) and "\x00" in s for s in ids):
        return pd.factorize(ids, sort=False)
    index: dict = {}
    codes = np.fromiter((-1 if pd.isna(s) else index.setdefault(s, len(index))
                         for s in ids), np.int64, len(ids))
    return codes, list(index)


def _ranked(uniques, codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Stream ids as text in the order of their text, and each row's rank among them."""
    names = sorted({str(u) for u in uniques})
    rank = {name: i for i, name in enumerate(names)}
    return names, np.array([rank[str(u)] for u in uniques], np.int64)[codes]


def _blocks(domain, names, codes, times, values, source, raw) -> list[StreamBlock]:
    """Check the rows (in file order; `raw(row, column)` is a cell as read) and cut
    them into one block per stream, streams in the order of `names`."""
    step_code, step_t = np.diff(codes), np.diff(times)
    order = None
    if not ((step_code > 0) | ((step_code == 0) & (step_t >= 0))).all():
        order = np.lexsort((times, codes))  # stable, like a sort by (stream_id, t)
        codes, times = codes[order], times[order]
        values = values[order]
    _check_probabilities(values, domain, source, names, codes, times,
                         raw if order is None else lambda r, c: raw(order[r], c))
    blocks = []
    if not len(values):
        return blocks
    bounds = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(values)]):
        sid, ts = names[codes[lo]], times[lo:hi]
        step = np.diff(ts)
        if (step == 0).any():
            k = int(np.flatnonzero(step == 0)[0])
            raise InputError(f"{source}: stream {sid!r}: t={ts[k]} appears more than once")
        if (step != 1).any():
            k = int(np.flatnonzero(step != 1)[0])
            raise InputError(f"{source}: stream {sid!r}: gap in t after t={ts[k]} "
                             f"(next is t={ts[k + 1]})")
        blocks.append(StreamBlock(sid, int(ts[0]), values[lo:hi]))
    return blocks


def _check_probabilities(values, domain, source, names, codes, times, raw) -> None:
    if _plausible(values, SUM_TOLERANCE):  # one compiled pass; NumPy finds what is wrong
        return

    def where(mask, what):
        r, c = np.argwhere(mask)[0]
        return f"{source}: stream {names[codes[r]]!r}, t={times[r]}: {what(r, c)}"

    if np.isnan(values).any():
        raise InputError(where(np.isnan(values),
                               lambda r, c: f"probability of {domain[c]!r} is missing or "
                                            f"not a number ({raw(r, c)!r})"))
    outside = (values < 0) | (values > 1)
    if outside.any():
        raise InputError(where(outside, lambda r, c: f"probability of {domain[c]!r} is "
                                                     f"{float(values[r, c])!r}, outside [0, 1]"))
    sums = values.sum(axis=1)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    if off.any():
        raise InputError(where(off[:, None] & np.ones_like(values, bool),
                               lambda r, c: f"probabilities sum to {float(sums[r])!r}, not 1"))


@njit(cache=True, nogil=True)
def _plausible(values, tolerance):
    """True if every row is in [0, 1] and sums to 1 clearly within `tolerance`; rows
    near the bound are left to the NumPy check, whose summation order decides."""
    for r in range(values.shape[0]):
        total = 0.0
        for c in range(values.shape[1]):
            v = values[r, c]
            if not (0.0 <= v <= 1.0):  # also NaN
                return False
            total += v
        if abs(total - 1.0) > 0.5 * tolerance:
            return False
    return True


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
    path = Path(path)
    if path.suffix.lower() == ".parquet" and path.exists():
        found = _parquet_blocks(path)
        if found is not None:
            return found
    return blocks_from_frame(read_table(path), source=str(path))


def plain_parquet_domain(path: Path) -> tuple[str, ...] | None:
    """The domain of a Parquet file of the plain kind (string ids, integer times, numeric
    symbols, no stored pandas index), read from its schema; None for any other file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (ValueError, OSError):
        return None  # read_table says what is wrong
    index = (schema.pandas_metadata or {}).get("index_columns", [])
    if any(isinstance(i, str) for i in index) or not all(
            name in schema.names for name in KEY_COLUMNS):
        return None  # a stored pandas index (pandas makes it no column) or no keys
    string = pa.types.is_string(schema.field("stream_id").type)
    domain = tuple(name for name in schema.names if name not in KEY_COLUMNS)
    plain = (string and pa.types.is_signed_integer(schema.field("t").type) and domain
             and all(pa.types.is_floating(schema.field(n).type)
                     or pa.types.is_integer(schema.field(n).type) for n in domain))
    return domain if plain else None


def _parquet_blocks(path: Path):
    """A Parquet file of the plain kind, without nulls, read straight from Arrow into the
    engine's arrays, without pandas; None for any other file, which `blocks_from_frame`
    then reads and reports on."""
    import pyarrow.parquet as pq

    domain = plain_parquet_domain(path)
    if domain is None:
        return None
    try:
        table = pq.read_table(path, read_dictionary=["stream_id"]).unify_dictionaries()
    except (ValueError, OSError):
        return None  # read_table says what is wrong
    if any(table[n].null_count for n in (*KEY_COLUMNS, *domain)):
        return None
    ids = table["stream_id"]
    chunks = ids.chunks
    codes = (np.concatenate([c.indices.to_numpy().astype(np.int64) for c in chunks])
             if chunks else np.zeros(0, np.int64))
    uniques = chunks[0].dictionary.to_pylist() if chunks else []
    names, codes = _ranked(uniques, codes)
    times = table["t"].to_numpy().astype(np.int64, copy=False)
    values = np.empty((len(table), len(domain)))
    for c, name in enumerate(domain):
        values[:, c] = table[name].to_numpy()
    return domain, _blocks(domain, names, codes, times, values, str(path),
                           lambda r, c: float(values[r, c]))
