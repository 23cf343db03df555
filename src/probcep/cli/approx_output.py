"""Output of `probcep approx`, written from columns as `probcep group`'s is.

Each stream's critical subsequences become flat NumPy columns (event positions end to
end, with offsets); tags and symbols are taken from the stream's columns by position.
JSON lines are then formatted by Arrow's string kernels (a list join per field, one
element-wise join per line), with the bytes `json.dumps` gives one dict per line
(tests/cli/test_approx_output.py checks them); a `.parquet` output gets the same
records as a table, list columns for the lists and bundle rows after each stream's
matches, as in the lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.cli.destinations import replacing
from probcep.cli.output import match_head, write_text
from probcep.lake.failures import writing

BUNDLE_FIELDS = ("bundle", "first_match_point", "last_match_point", "n_matches",
                 "min_errors")


@dataclass(frozen=True)
class StreamMatches:
    """One stream's matches (one row per critical subsequence) and bundles."""

    stream_id: str
    offsets: np.ndarray  # int32, rows + 1: row i's events are positions[offsets[i]:...]
    positions: np.ndarray  # int64 event indices in the stream, in tag order
    tags: np.ndarray  # int64, the tag of each of those events
    symbol_codes: np.ndarray  # int64 index into symbol_names, per event
    symbol_names: list[str]
    errors: np.ndarray
    match_point: np.ndarray
    bundles: list[dict]

    def __len__(self) -> int:
        return len(self.errors)


def symbol_codes(symbols: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each event's index into the distinct symbols, in order of first appearance (a
    dict, not pandas' factorize, whose hashing takes "" and "\\x00" for one string)."""
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(s, len(index)) for s in symbols), np.int64,
                        len(symbols))
    return codes, list(index)


def stream_matches(stream_id: str, matches, tags: np.ndarray, symbol_codes: np.ndarray,
                   symbol_names: list[str], bundles) -> StreamMatches:
    """Columns of the critical subsequences of `matches` (engine `MatchClass`es, in
    match-point order), of a stream whose events have `tags` and `symbol_codes`.

    Within a match point the lines are ordered by their own fields alone (the completing
    event, the first event, the errors, then the positions): the engine's order among
    classes of one event follows its error automaton's internals, which no reader of the
    lines could reproduce."""
    rows = sorted((sigma[-1], sigma[0], m.errors, sigma, m.match_point)
                  for m in matches for sigma in m.subsequences())
    flat, lengths, errors, points = [], [], [], []
    for *_, err, sigma, point in rows:
        flat.extend(sigma)
        lengths.append(len(sigma))
        errors.append(err)
        points.append(point)
    positions = np.array(flat, np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return StreamMatches(stream_id, offsets, positions, tags[positions],
                         symbol_codes[positions], symbol_names, np.array(errors, np.int64),
                         np.array(points, np.int64), [b.as_dict() for b in bundles])


def match_lines(s: StreamMatches):
    """The stream's JSON lines, matches then bundles, as chunks of ASCII text."""
    if len(s):
        names = pa.array([json.dumps(n) for n in s.symbol_names], pa.string())
        lines = pc.binary_join_element_wise(
            f'{match_head(s.stream_id)}"positions": [',
            _list_text(s.offsets, _int_text(s.positions)), '], "tags": [',
            _list_text(s.offsets, _int_text(s.tags)), '], "symbols": [',
            _list_text(s.offsets, names.take(pa.array(s.symbol_codes))), '], "errors": ',
            _int_text(s.errors), ', "match_point": ', _int_text(s.match_point), "}\n", "")
        yield _joined(lines)
    if s.bundles:
        yield "".join(json.dumps({"type": "bundle", "stream_id": s.stream_id, **b}) + "\n"
                      for b in s.bundles)


def write_matches(streams: list[StreamMatches], output: Path | None) -> None:
    """JSON lines to `output` (stdout if None), or Parquet if it ends in `.parquet`."""
    if output is not None and output.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        table = pa.concat_tables([_table(s) for s in streams]) if streams else _table(None)
        with writing(output), replacing(output) as target:
            pq.write_table(table, target)
        return
    write_text((chunk for s in streams for chunk in match_lines(s)), output)


def _int_text(x: np.ndarray):
    return pa.array(x, pa.int64()).cast(pa.string())


def _list_text(offsets: np.ndarray, values):
    """Each row's values joined by ", " (the inside of a JSON list)."""
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values),
                          ", ")


def _joined(lines) -> memoryview:
    """The values of a string array, end to end, as a view of its data buffer."""
    offsets = np.frombuffer(lines.buffers()[1], np.int32)[lines.offset:]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[len(lines)]]


SCHEMA = pa.schema([
    ("type", pa.string()), ("stream_id", pa.string()),
    ("positions", pa.list_(pa.int64())), ("tags", pa.list_(pa.int64())),
    ("symbols", pa.list_(pa.string())), ("errors", pa.int64()), ("match_point", pa.int64()),
    *((name, pa.int64()) for name in BUNDLE_FIELDS)])


def _table(s: StreamMatches | None) -> pa.Table:
    """A stream's records as in its lines: one row per match, then one per bundle
    (each kind's own fields null in the other's rows)."""
    if s is None:
        return SCHEMA.empty_table()
    n, k = len(s), len(s.bundles)
    offsets = pa.array(s.offsets, pa.int32())

    def lists(values):
        return pa.concat_arrays([pa.ListArray.from_arrays(offsets, values),
                                 pa.nulls(k, pa.list_(values.type))])

    def ints(values: np.ndarray | None, key: str | None):
        ours = np.zeros(n, np.int64) if values is None else values
        theirs = np.array([b[key] for b in s.bundles] if key else np.zeros(k), np.int64)
        mask = np.r_[np.full(n, values is None), np.full(k, key is None)]
        return pa.array(np.concatenate([ours, theirs]), pa.int64(), mask=mask)

    def text(values: list[str], index: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()),
                                              pa.array(values, pa.string())).cast(pa.string())

    kind = np.r_[np.zeros(n, np.int32), np.ones(k, np.int32)]
    columns = {
        "type": text(["match", "bundle"], kind),
        "stream_id": text([s.stream_id], np.zeros(n + k, np.int32)),
        "positions": lists(pa.array(s.positions, pa.int64())),
        "tags": lists(pa.array(s.tags, pa.int64())),
        "symbols": lists(text(s.symbol_names, s.symbol_codes)),
        "errors": ints(s.errors, None),
        "match_point": ints(s.match_point, None),
        **{name: ints(None, name) for name in BUNDLE_FIELDS},
    }
    return pa.table(columns, schema=SCHEMA)
