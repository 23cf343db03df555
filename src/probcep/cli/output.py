"""Output of `probcep group` and `probcep approx`, written from columns.

JSON lines are formatted from the columns, no Python object per group: by one compiled
pass (`lines.py`, floats by `floats.py`) when every float is one `repr` writes
positionally, else column by column with Arrow's string kernels. The bytes are those one
dict and one `json.dumps` per line gives (keys in the same order, `", "` and `": "`
separators, ASCII escapes, floats as `repr`), which tests/cli/test_output.py and
test_lines.py check against `json.dumps` on random groups. A `.parquet` output gets the
same columns as an Arrow table. `probcep approx`'s column writer is `approx_output.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.cli.destinations import drop_stdout, replacing
from probcep.cli.floats import WIDTH, repr_texts
from probcep.cli.lines import SLACK, VALUE_WIDTH, Arena, assemble, constant_words
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.lake.failures import writing

GROUP_FIELDS = ("t_start", "t_first", "t_end", "probability", "n_matches",
                "max_match_probability")
#: Lines formatted per `join`: bounds the text held at once, not the result.
LINES_PER_WRITE = 1 << 16


def sorted_groups(parts: dict[str, list[GroupColumns]]) -> list[tuple[str, GroupColumns]]:
    """Each stream's groups in one block, streams by id, groups by (t_start, t_first)."""
    out = []
    for sid in sorted(parts):
        cols = GroupColumns.concat(parts[sid])
        order = np.lexsort((cols.t_first, cols.t_start))  # NONE sorts before every time
        out.append((sid, GroupColumns(*(getattr(cols, name)[order] for name in GROUP_FIELDS))))
    return out


def write_groups(streams: list[tuple[str, GroupColumns]], output: Path | None) -> None:
    """JSON lines to `output` (stdout if None), or Parquet if it ends in `.parquet`."""
    if output is not None and output.suffix.lower() == ".parquet":
        _write_parquet(streams, output)
        return
    arena = Arena()
    chunks = (text for sid, cols in streams for text in group_lines(sid, cols, arena))
    write_text(chunks, output)


def group_lines(stream_id: str, cols: GroupColumns, arena: Arena | None = None):
    """The JSON lines of one stream's groups, in chunks of ASCII bytes (views of NumPy's
    or Arrow's buffers: a file takes them as they are, with no str made and encoded
    again); the compiled pass writes into buffers from `arena`, if given."""
    head = f'{{"stream_id": {json.dumps(stream_id)}, "t_start": '
    first = cols.t_first
    single = bool((first == NONE).all())
    exact = single or bool((first != NONE).all())
    floats_ok = bool(np.isfinite(cols.probability).all()
                     and np.isfinite(cols.max_match_probability).all())
    if not (exact and floats_ok):  # NaN, infinity or mixed t_first: json.dumps decides
        yield "".join(_slow_line(stream_id, row) for row in _rows(cols)).encode("ascii")
        return
    if not (_odd(cols.probability).any() or _odd(cols.max_match_probability).any()):
        yield from _compiled_lines(head, cols, single, arena)
        return
    for lo in range(0, len(cols), LINES_PER_WRITE):
        part = slice(lo, lo + LINES_PER_WRITE)
        pieces = [head, _int_text(cols.t_start[part]), ', "t_first": ',
                  "null" if single else _int_text(first[part]), ', "t_end": ',
                  _int_text(cols.t_end[part]), ', "probability": ',
                  _float_text(cols.probability[part]), ', "n_matches": ',
                  _int_text(cols.n_matches[part]), ', "max_match_probability": ',
                  _float_text(cols.max_match_probability[part]), "}\n"]
        yield _joined(pc.binary_join_element_wise(*pieces, ""))


def _compiled_lines(head: str, cols: GroupColumns, single: bool,
                    arena: Arena | None = None):
    """The lines by one compiled pass (`lines.py`), when every float is one `repr`
    writes positionally."""
    parts = [head, ', "t_first": ' + ("null, " if single else ""),
             (", " if not single else "") + '"t_end": ', ', "probability": ',
             ', "n_matches": ', ', "max_match_probability": ', "}\n"]
    words, lengths = constant_words(parts)
    arena = arena or Arena()
    for lo in range(0, len(cols), LINES_PER_WRITE):
        part = slice(lo, lo + LINES_PER_WRITE)
        starts = cols.t_start[part]
        out = arena.take(len(starts) * (int(lengths.sum()) + VALUE_WIDTH) + SLACK)
        size = assemble(out, words, lengths, starts, cols.t_first[:0] if single
                        else cols.t_first[part], cols.t_end[part],
                        np.ascontiguousarray(cols.probability[part], np.float64),
                        cols.n_matches[part],
                        np.ascontiguousarray(cols.max_match_probability[part], np.float64))
        arena.keep(size + SLACK)  # the bytes stored past the end are its own
        yield memoryview(out[:size])


def _odd(x: np.ndarray) -> np.ndarray:
    """Floats `repr` writes with an exponent or as integers (and negative ones)."""
    return ~((x >= 1e-4) & (x < 1e16)) | (x == np.floor(x))


def _int_text(x: np.ndarray):
    return pa.array(x, pa.int64()).cast(pa.string())


def _float_text(x: np.ndarray):
    """`repr` of each finite float: compiled (`floats.py`) in [1e-4, 1e16) but for
    integral values, `repr` itself for those (rare for probabilities), where it writes
    an exponent or a trailing ".0"."""
    x = np.ascontiguousarray(x, np.float64)
    odd = _odd(x)
    out = np.empty(len(x) * WIDTH, np.uint8)
    offsets = np.empty(len(x) + 1, np.int32)
    size = repr_texts(x, odd, out, offsets)
    text = pa.StringArray.from_buffers(len(x), pa.py_buffer(offsets),
                                       pa.py_buffer(out[:size]))
    if odd.any():
        text = pc.replace_with_mask(text, pa.array(odd),
                                    pa.array([repr(v) for v in x[odd].tolist()], pa.string()))
    return text


def _joined(lines) -> memoryview:
    """The values of a string array, end to end, as a view of its data buffer."""
    if not len(lines):
        return memoryview(b"")
    offsets = np.frombuffer(lines.buffers()[1], np.int32)[lines.offset:]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[len(lines)]]


def _rows(cols: GroupColumns):
    return zip(*(getattr(cols, name).tolist() for name in GROUP_FIELDS))


def _slow_line(stream_id: str, row) -> str:
    values = dict(zip(GROUP_FIELDS, row))
    if values["t_first"] == NONE:
        values["t_first"] = None
    return json.dumps({"stream_id": stream_id, **values}) + "\n"


def _write_parquet(streams: list[tuple[str, GroupColumns]], output: Path) -> None:
    import pyarrow.parquet as pq

    def column(name, dtype):
        parts = [getattr(cols, name) for _, cols in streams]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    first = column("t_first", np.int64)
    table = pa.table({
        "stream_id": pa.array(np.repeat(np.array([sid for sid, _ in streams], object),
                                        [len(cols) for _, cols in streams]), pa.string()),
        "t_start": column("t_start", np.int64),
        "t_first": pa.array(first, pa.int64(), mask=first == NONE),
        "t_end": column("t_end", np.int64),
        "probability": column("probability", np.float64),
        "n_matches": column("n_matches", np.int64),
        "max_match_probability": column("max_match_probability", np.float64),
    })
    with writing(output), replacing(output) as target:
        pq.write_table(table, target)


def write_lines(rows: list[dict], output: Path | None, schema: pa.Schema) -> None:
    """One JSON line per row (`json.dumps`), for outputs too small to need column
    formatting; or Parquet (in `schema`) if `output` ends in `.parquet`, as elsewhere."""
    if output is not None and output.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        with writing(output), replacing(output) as target:
            pq.write_table(pa.Table.from_pylist(rows, schema), target)
        return
    write_text([json.dumps(r) + "\n" for r in rows], output)


def write_text(chunks, output: Path | None) -> None:
    """Chunks of ASCII text (str, or bytes-like) into `output` or onto stdout. A full
    disk (or a full pipe target, such as `> /dev/full`) is one error line naming the
    file, never a traceback, and never a second error when Python flushes stdout at
    exit. A regular file is written whole or not at all (`destinations.replacing`), so
    an error halfway (a full disk, an engine error while lines are streamed) leaves the
    file as it was."""
    if output is not None:
        with writing(output), replacing(output) as target, open(target, "wb") as f:
            for text in chunks:
                f.write(text.encode("ascii") if isinstance(text, str) else text)
        return
    with writing("<stdout>"):
        try:
            for text in chunks:
                sys.stdout.write(text if isinstance(text, str) else str(text, "ascii"))
            sys.stdout.flush()
        except BrokenPipeError:
            drop_stdout()  # the reader went away (`| head`): stop writing, quietly
        except OSError:
            drop_stdout()
            raise


# --- probcep approx --------------------------------------------------------------------

def match_head(stream_id: str) -> str:
    return f'{{"type": "match", "stream_id": {json.dumps(stream_id)}, '

