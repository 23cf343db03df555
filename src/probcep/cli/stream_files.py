"""Read probabilistic streams from files and check them against docs/semantics.md §1.

A file holds one row per stream and timestep: `stream_id`, integer `t`, and one column
per symbol with its probability; the symbol columns, in file order, are the domain.
Every problem is reported with the file, the stream and the timestep it concerns.
"""

from __future__ import annotations

import csv
import json
import os
import re
import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd

from probcep.engine.distributions import first_flaw
from probcep.engine.naive import NaiveLimitError
from probcep.engine.runs import RunLimitError
from probcep.engine.transducer import TransducerLimitError
from probcep.errors import InputError
from probcep.lake.failures import first_line_not_utf8

KEY_COLUMNS = ("stream_id", "t")


@dataclass(frozen=True)
class StreamBlock:
    """Consecutive timesteps of one stream: rows of `probs` are times t0, t0+1, ..."""

    stream_id: str
    t0: int
    probs: np.ndarray


def read_table(path: str | Path, text: tuple[str, ...] = ("stream_id",)) -> pd.DataFrame:
    """Read a .csv, .parquet or .jsonl file into a DataFrame, the same data alike in each:
    an empty text is missing (CSV cannot tell the two apart), a repeated column name
    is refused, the CSV columns named in `text` stay as written (`01` is not `1`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    regular_file(path)
    try:
        if suffix == ".csv":
            return _read_csv(path, text)
        if suffix == ".parquet":
            return _empty_as_missing(_read_parquet(path))
        if suffix in (".jsonl", ".ndjson"):
            return _empty_as_missing(_read_jsonl(path))
    except InputError:
        raise
    except UnicodeDecodeError as exc:  # its position is within the decoder's buffer
        raise InputError(f"{path}: line {first_line_not_utf8(path)}: bytes that are not "
                         f"UTF-8 text") from exc
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read as {suffix[1:]}: {_one_line(exc)}") from exc
    raise InputError(f"{path}: unsupported format {suffix!r} (use .csv, .parquet or .jsonl)")


def regular_file(path: Path) -> None:
    """InputError unless `path` is a regular file (or a link to one): a folder cannot be
    read, and a pipe or device would be read once and then wait for more."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file (a folder, pipe or device): give a "
                         f".csv, .parquet or .jsonl file")


def _read_csv(path: Path, text: tuple[str, ...]) -> pd.DataFrame:
    """pandas' reader, told that only an empty field is missing (by default `NA`, `null`,
    `None`, `nan` and more are, losing streams and symbols of those names), and that no
    column is an index (it makes the first one an index when a row has a field more than
    the header, shifting the others). A NUL byte is refused: pandas ends a field at it,
    so `a\0x` and `a\0y` would be one stream `a`."""
    _refuse_nul(path)
    header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
    names = header.iloc[0].tolist() if len(header) else []
    _refuse_repeated(names, path)  # pandas would read a second `a` as a symbol `a.1`
    if "" in names:  # pandas would name it `Unnamed: 3`, a symbol nobody wrote
        raise InputError(f"{path}: column {names.index('') + 1} of the header has no name")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)  # fields beyond the header
        try:
            return pd.read_csv(path, dtype=dict.fromkeys(text, str),
                               float_precision="round_trip",
                               keep_default_na=False, na_values=[""], index_col=False)
        except (pd.errors.ParserWarning, pd.errors.ParserError) as exc:
            _refuse_long_rows(path, len(names))
            raise InputError(f"{path}: cannot read as csv: {_one_line(exc)}") from exc


def _refuse_nul(path: Path) -> None:
    import mmap

    with path.open("rb") as raw:
        if not os.fstat(raw.fileno()).st_size:
            return
        with mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at = data.find(b"\0")
            if at >= 0:
                line = data[:at].count(b"\n") + 1
                raise InputError(f"{path}: line {line}: a NUL byte, which CSV text cannot "
                                 f"hold")


def _refuse_long_rows(path: Path, width: int) -> None:
    """Name the first line with more fields than the header's `width` (pandas warns
    without a line, or counts the index it would make among the fields)."""
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as text:
        rows, line, header = csv.reader(text), 0, True
        try:
            for row in rows:
                first, line = line + 1, rows.line_num
                if row and not header and len(row) > width:
                    raise InputError(f"{path}: line {first} has {len(row)} fields, "
                                     f"the header {width}")
                header = header and not row
        except csv.Error:
            return  # pandas' own message then


def _read_parquet(path: Path) -> pd.DataFrame:
    """Arrow's reader, stream ids as a dictionary (no Python string per row). A column
    pandas stored as the index (`stream_id` after `set_index`) is read as the column it
    is, unnamed row labels are left out, and binary columns are decoded as UTF-8, the
    text a CSV of them holds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    _refuse_repeated(schema.names, path)
    ids = [n for n in ("stream_id",) if n in schema.names
           and (pa.types.is_string(schema.field(n).type)
                or pa.types.is_large_string(schema.field(n).type))]
    table = pq.read_table(path, read_dictionary=ids).drop_columns(_row_labels(schema))
    try:  # Parquet writers need not check that text is UTF-8, nor does Arrow's reader
        table.validate(full=True)
    except pa.ArrowInvalid as exc:
        for i, field in enumerate(table.schema):
            if _text_type(field.type):
                column = table.column(i)
                column = column.cast(field.type.value_type) if pa.types.is_dictionary(
                    field.type) else column
                _utf8(column.cast(pa.large_binary()), field.name, path)
        raise InputError(f"{path}: not a readable Parquet table ({exc})") from exc
    for i, field in enumerate(table.schema):
        if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            table = table.set_column(i, field.name, _utf8(table.column(i), field.name, path))
    return table.to_pandas(ignore_metadata=True)


def _text_type(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _row_labels(schema) -> list[str]:
    """The columns in which pandas stored an unnamed index: row labels, not data."""
    meta = schema.pandas_metadata or {}
    stored = {i for i in meta.get("index_columns", []) if isinstance(i, str)}
    return [c["field_name"] for c in meta.get("columns", [])
            if c.get("field_name") in stored and c.get("name") is None]


def _utf8(column, name: str, path: Path):
    """A binary column as text, or an error naming the first value that is not UTF-8."""
    import pyarrow as pa

    try:
        return column.cast(pa.large_string())
    except pa.ArrowInvalid:
        for row, value in enumerate(column.to_pylist()):
            try:
                if value is not None:
                    value.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}: {record_place(path, row)}: {name} is not UTF-8 "
                                 f"text") from None
        raise


def _read_jsonl(path: Path) -> pd.DataFrame:
    """One JSON object a line, by the json module: pandas' reader keeps the last of a
    repeated key, fails with a traceback on a line that is not an object and reads a
    null stream id as the text "nan". An id that is a number is the text Python gives
    it (`7` is "7", as in CSV; `1e5` is "100000.0": docs/engine.md §1)."""
    with path.open(encoding="utf-8-sig") as text:
        lines = text.read().split("\n")
    decode = json.JSONDecoder(object_pairs_hook=_unique_keys).decode
    try:
        records = [decode(line) for line in lines if line and not line.isspace()]
    except ValueError:
        records = [None]
    if not all(type(r) is dict for r in records):
        _refuse_bad_line(path, lines, decode)
    for i, record in enumerate(records):  # pandas would hold them as doubles, -2^63 - 1
        for key, value in record.items():  # as -2^63
            if type(value) is int and not -2 ** 63 <= value < 2 ** 63:
                raise InputError(f"{path}: {record_place(path, i)}: {key} {value} is "
                                 f"outside the 64-bit integer range")
    if _ESCAPED_SURROGATE.search("\n".join(lines)):
        _refuse_lone_surrogates(path, records)
    frame = pd.DataFrame(records)
    if "stream_id" in frame and pd.api.types.infer_dtype(frame["stream_id"]) != "string":
        for i, record in enumerate(records):  # true, a list or an object: not an id
            if isinstance(record.get("stream_id"), bool | list | dict):
                raise InputError(f"{path}: {record_place(path, i)}: stream_id "
                                 f"{json.dumps(record['stream_id'])} is not text or a number")
        frame["stream_id"] = [_text(r.get("stream_id")) for r in records]  # 7 stays "7"
    return frame


#: an escaped `\uD800` to `\uDFFF`: half of a UTF-16 pair, which JSON may write alone
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(path: Path, records: list[dict]) -> None:
    """An escaped surrogate without its pair is no character: pandas' hashing takes two
    such ids for one stream, and no UTF-8 file can hold it (ingest refuses it too)."""
    for i, record in enumerate(records):
        for key, value in record.items():
            for text in (key, value):
                if isinstance(text, str):
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InputError(f"{path}: {record_place(path, i)}: {key!r} holds an "
                                         f"escaped UTF-16 surrogate without its pair") from None


def _refuse_bad_line(path: Path, lines: list[str], decode) -> NoReturn:
    """Name the first line that is not a JSON object, or holds a repeated key."""
    for n, line in enumerate(lines, 1):
        if not line or line.isspace():
            continue
        try:
            record = decode(line.rstrip())
        except _RepeatedKey as exc:
            raise InputError(f"{path}: line {n}: column {exc.args[0]!r} appears more "
                             f"than once") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n}, column {exc.colno}: {exc.msg}") from None
        if type(record) is not dict:
            raise InputError(f"{path}: line {n}: not a JSON object")
    raise InputError(f"{path}: not one JSON object a line")  # not reached: a line failed


def _text(value):
    """A stream id as text: a number as JSON writes it, missing as missing."""
    return value if value is None or isinstance(value, str) else str(value)


class _RepeatedKey(ValueError):
    """A JSON object names a key twice (json would keep the last silently)."""


def _unique_keys(pairs: list) -> dict:
    keys = dict(pairs)
    if len(keys) < len(pairs):
        raise _RepeatedKey(next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1))
    return keys


def _refuse_repeated(names, path: Path) -> None:
    """Which of two columns of one name holds the symbol (or the key) is anyone's guess."""
    repeated = [n for n, count in Counter(names).items() if count > 1]
    if repeated:
        raise InputError(f"{path}: column {repeated[0]!r} appears more than once")


def _empty_as_missing(frame: pd.DataFrame) -> pd.DataFrame:
    """An empty text as a missing value, as a CSV's empty field reads."""
    for name, column in frame.items():
        if isinstance(column.dtype, pd.CategoricalDtype):
            if "" in column.cat.categories:
                frame[name] = column.cat.remove_categories([""])
        elif column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            empty = column.eq("")
            if empty.any():
                frame[name] = column.mask(empty)
    return frame


def record_place(source: str | Path, i: int) -> str:
    """Where the data record `i` (from 0, in file order) of `source` is, as a person
    finds it: its line in a CSV file (the first, if a quoted field spans lines) or a
    JSON-lines file, blank lines skipped as the readers skip them; its row, from 1, in a
    Parquet file or a table given without a file. Read again only to name an error."""
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".jsonl", ".ndjson") and path.is_file():
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as text:
            seen = -1 if suffix == ".csv" else 0  # records passed; a CSV header is -1
            if suffix == ".csv":
                rows = csv.reader(text)
                try:
                    for row in rows:
                        if row and seen == i:  # a quoted field may have spanned lines
                            breaks = sum(field.count("\n") for field in row)
                            return f"line {rows.line_num - breaks}"
                        seen += bool(row)
                except csv.Error:
                    pass
            else:  # lines as `_read_jsonl` splits them
                for line_no, line in enumerate(text.read().split("\n"), 1):
                    record = bool(line) and not line.isspace()
                    if record and seen == i:
                        return f"line {line_no}"
                    seen += record
    return f"row {i + 1}"


@contextmanager
def where(source, stream_id: str):
    """The engine's errors on one stream (a row it refuses, a limit it meets), with the
    file and the stream they concern in front, their class kept."""
    try:
        yield
    except (InputError, RunLimitError, NaiveLimitError, TransducerLimitError) as exc:
        raise type(exc)(f"{source}: stream {stream_id!r}: {exc}") from exc


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


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
    if "" in domain:  # as a CSV header's empty name is
        column = [str(c) for c in frame.columns].index("") + 1
        raise InputError(f"{source}: column {column} has no name")
    codes, uniques = factorized(frame["stream_id"])
    missing = (codes < 0) | np.isin(codes, [k for k, u in enumerate(uniques) if u == ""])
    if missing.any():  # an empty id too, as in a CSV file, which cannot tell them apart
        row = int(np.flatnonzero(missing)[0])
        raise InputError(f"{source}: {record_place(source, row)}: stream_id is missing")
    names, codes = ranked(uniques, codes)
    t = pd.to_numeric(no_bools(frame["t"]), errors="coerce")
    bad = t.isna() | (t != np.floor(t))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raw = _plain(frame["t"].iloc[i])
        raise InputError(f"{source}: stream {names[codes[i]]!r}: " + (
            "t is missing" if pd.isna(raw) else f"t={raw if isinstance(raw, str) else repr(raw)}"
            " is not an integer"))
    huge = outside_int64(t)  # would wrap around in int64
    if huge.any():
        i = int(np.flatnonzero(huge.to_numpy())[0])
        raise InputError(f"{source}: stream {names[codes[i]]!r}: "
                         f"t={_plain(frame['t'].iloc[i])} is outside the 64-bit integer "
                         f"range")
    inexact = inexact_integers(t)
    if inexact.any():
        i = int(np.flatnonzero(inexact.to_numpy())[0])
        raise InputError(f"{source}: stream {names[codes[i]]!r}: t={_plain(frame['t'].iloc[i])} "
                         f"{INEXACT}")
    columns = frame[list(domain)].apply(no_bools)
    if all(pd.api.types.is_float_dtype(d) or pd.api.types.is_integer_dtype(d)
           for d in columns.dtypes):
        values = columns.to_numpy(np.float64)
    else:
        values = columns.apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    return domain, _blocks(domain, names, codes, t.to_numpy(np.int64), values, source,
                           lambda r, c: _plain(frame[domain[c]].iloc[r]))


def factorized(ids: pd.Series) -> tuple[np.ndarray, list]:
    """pandas' factorize (missing ids coded -1), unless an id holds a NUL character:
    pandas' hashing stops at it, taking "a" and "a\\x00b" for one stream."""
    if not any(isinstance(s, str) and "\x00" in s for s in ids):
        return pd.factorize(ids, sort=False)
    index: dict = {}
    codes = np.fromiter((-1 if pd.isna(s) else index.setdefault(s, len(index))
                         for s in ids), np.int64, len(ids))
    return codes, list(index)


def ranked(uniques, codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Stream ids as text in the order of their text, and each row's rank among them."""
    names = sorted({str(u) for u in uniques})
    rank = {name: i for i, name in enumerate(names)}
    return names, np.array([rank[str(u)] for u in uniques], np.int64)[codes]


def _blocks(domain, names, codes, times, values, source, raw) -> list[StreamBlock]:
    """Check the rows (in file order; `raw(row, column)` is a cell as read) and cut
    them into one block per stream, streams in the order of `names`."""
    step_code, later = np.diff(codes), times[1:] >= times[:-1]  # no difference: it wraps
    order = None
    if not ((step_code > 0) | ((step_code == 0) & later)).all():
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
        same = ts[1:] == ts[:-1]
        if same.any():
            k = int(np.flatnonzero(same)[0])
            raise InputError(f"{source}: stream {sid!r}: t={ts[k]} appears more than once")
        # sorted, so each step is up; 2^63 - 1 and then -2^63 would differ by 1 in int64
        gap = (np.diff(ts) != 1) | (ts[1:] < ts[:-1])
        if gap.any():
            k = int(np.flatnonzero(gap)[0])
            raise InputError(f"{source}: stream {sid!r}: gap in t after t={ts[k]} "
                             f"(next is t={ts[k + 1]})")
        blocks.append(StreamBlock(sid, int(ts[0]), values[lo:hi]))
    return blocks


def _check_probabilities(values, domain, source, names, codes, times, raw) -> None:
    flaw = first_flaw(values)
    if flaw is not None:
        r = flaw.row
        shown = None if flaw.column is None else raw(r, flaw.column)
        raise InputError(f"{source}: stream {names[codes[r]]!r}, t={times[r]}: "
                         f"{flaw.says(domain, shown)}")


#: Why a time read as a double is refused beyond 2^53 (where not every integer is one).
INEXACT = ("cannot be read exactly: some value of its column is written with a decimal "
           "point or exponent (or is a JSON float), so the column is read as doubles, "
           "which hold integers exactly only up to 2^53; write every one as an integer")


def inexact_integers(t: pd.Series) -> pd.Series:
    """Which times of a column read as doubles lie beyond 2^53, where a double may be
    a neighbouring integer of the one written (an integer column holds them exactly)."""
    if not pd.api.types.is_float_dtype(t):
        return pd.Series(False, index=t.index)
    return t.abs() >= 2.0 ** 53


def no_bools(column: pd.Series) -> pd.Series:
    """A column with its booleans and timestamps as text, which `pd.to_numeric(...,
    errors="coerce")` then finds is no number: `true` is not a time nor a probability,
    though pandas would read it as 1 (and a timestamp as its nanoseconds)."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_datetime64_any_dtype(column) \
            or isinstance(column.dtype, pd.DatetimeTZDtype):
        return pd.Series(np.nan, index=column.index, dtype=object).where(
            column.isna(), column.astype(str))
    if column.dtype == object and column.map(lambda v: isinstance(v, bool)).any():
        return column.map(lambda v: str(v) if isinstance(v, bool) else v)
    return column


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
    regular_file(path)
    if path.suffix.lower() == ".parquet":
        found = _parquet_blocks(path)
        if found is not None:
            return found
    return blocks_from_frame(read_table(path), source=str(path))


def plain_parquet_domain(path: Path) -> tuple[str, ...] | None:
    """The domain of a Parquet file of the plain kind (string ids that its statistics show
    are never empty, integer times, numeric symbols, no repeated name, no stored pandas
    index), read from its footer; None for any other file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return None  # read_table says what is wrong
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except (ValueError, OSError):
        return None  # read_table says what is wrong
    index = (schema.pandas_metadata or {}).get("index_columns", [])
    if any(isinstance(i, str) for i in index) or len(set(schema.names)) < len(
            schema.names) or not all(name in schema.names for name in KEY_COLUMNS) or (
            "" in schema.names):
        return None  # a stored pandas index, a repeated name, no keys or an empty name
    string = pa.types.is_string(schema.field("stream_id").type)
    domain = tuple(name for name in schema.names if name not in KEY_COLUMNS)
    plain = (string and pa.types.is_signed_integer(schema.field("t").type) and domain
             and all(pa.types.is_floating(schema.field(n).type)
                     or pa.types.is_integer(schema.field(n).type) for n in domain)
             and _no_empty_ids(meta, schema.get_field_index("stream_id")))
    return domain if plain else None


def _no_empty_ids(meta, column: int) -> bool:
    """Whether the row groups' statistics show that no stream id is empty (the least
    text is ""): the readers of plain files take every id as it is. A file without
    statistics goes the pandas way, which refuses an empty id."""
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = group.column(column).statistics
        try:
            if group.num_rows and (stats is None or not stats.has_min_max
                                   or stats.min == ""):
                return False
        except UnicodeDecodeError:  # not UTF-8: the pandas way says where
            return False
    return True


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
    try:
        uniques = chunks[0].dictionary.to_pylist() if chunks else []
    except UnicodeDecodeError:
        return None  # an id that is not UTF-8: the pandas way says where
    names, codes = ranked(uniques, codes)
    times = table["t"].to_numpy().astype(np.int64, copy=False)
    values = np.empty((len(table), len(domain)))
    for c, name in enumerate(domain):
        values[:, c] = table[name].to_numpy()
    return domain, _blocks(domain, names, codes, times, values, str(path),
                           lambda r, c: float(values[r, c]))


def unnamed_symbols(source, domain) -> str | None:
    """A warning for symbol columns that are not symbol names (a stray space in a
    header, say): no pattern can name them, only `.` and `[^...]` match them."""
    from probcep.engine.pattern import SYMBOL_NAME

    odd = [repr(n) for n in domain if not SYMBOL_NAME.fullmatch(n)]
    return (f"{source}: symbol column(s) {', '.join(odd)} are not symbol names (letters, "
            "digits and _, not starting with a digit): no pattern can name them, only `.` "
            "and `[^...]` match them") if odd else None
