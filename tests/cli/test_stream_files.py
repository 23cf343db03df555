"""The Parquet reader that skips pandas gives the blocks and the errors of the pandas one,
and CSV, JSON lines and Parquet holding the same data read the same."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from probcep.cli import main
from probcep.cli.stream_files import (
    blocks_from_frame,
    plain_parquet_domain,
    read_blocks,
    read_table,
)
from probcep.errors import InputError


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    a = rng.random(12)
    return pd.DataFrame({"stream_id": ["b"] * 6 + ["a"] * 6, "t": [*range(6), *range(6)],
                         "x": a, "y": 1 - a})


def spoilt(name: str) -> pd.DataFrame:
    f = frame()
    if name == "nan":
        f.loc[7, "x"] = np.nan
    elif name == "outside":
        f.loc[3, "y"] = 1.5
    elif name == "sum":
        f.loc[9, "x"] = 0.0
    elif name == "twice":
        f.loc[4, "t"] = 3
    elif name == "gap":
        f.loc[10, "t"] = 17
    elif name == "shuffled":
        f = f.sample(frac=1.0, random_state=1)
    return f


@pytest.mark.parametrize("name", ["plain", "nan", "outside", "sum", "twice", "gap",
                                  "shuffled"])
def test_parquet_reads_as_the_frame_does(tmp_path, name):
    f = spoilt(name)
    path = tmp_path / "in.parquet"
    f.to_parquet(path, index=False)
    try:
        want = blocks_from_frame(f, source=str(path))
    except InputError as exc:
        with pytest.raises(InputError) as got:
            read_blocks(path)
        assert str(got.value) == str(exc)
        return
    domain, blocks = read_blocks(path)
    assert domain == want[0]
    assert [(b.stream_id, b.t0) for b in blocks] == [(b.stream_id, b.t0) for b in want[1]]
    for got_block, want_block in zip(blocks, want[1]):
        np.testing.assert_array_equal(got_block.probs, want_block.probs)


@pytest.mark.parametrize("ids", [("a", "a\x00b"), ("\x00", "\x00\x00"), ("x\x00", "x")])
def test_stream_ids_that_differ_after_a_nul_stay_apart(tmp_path, ids):
    """pandas' factorize hashes a string up to its first NUL: "a" and "a\\x00b" would
    become one stream (its t repeated)."""
    f = frame()
    f["stream_id"] = [ids[1]] * 6 + [ids[0]] * 6
    domain, blocks = blocks_from_frame(f)
    assert sorted(b.stream_id for b in blocks) == sorted(ids)
    assert all(len(b.probs) == 6 for b in blocks)
    path = tmp_path / "in.parquet"
    f.to_parquet(path, index=False)
    _, read = read_blocks(path)
    assert [(b.stream_id, b.t0) for b in read] == [(b.stream_id, b.t0) for b in blocks]


@pytest.mark.parametrize("escaped", [r"\ud800", r"x\udfff", r"\ude00\ud83d"])
def test_a_lone_surrogate_in_json_lines_is_refused(tmp_path, escaped):
    """Python's json decodes an unpaired `\\uD800` into a string no UTF-8 file can hold,
    and pandas' hashing took `\\ud800` and `\\ud801` for one stream id."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"stream_id": "a", "t": 1, "x": 1.0}\n'
                    f'{{"stream_id": "{escaped}", "t": 1, "x": 1.0}}\n')
    assert refusal(path) == ("line 2: 'stream_id' holds an escaped UTF-16 surrogate "
                             "without its pair")
    path.write_text('{"stream_id": "\\ud83d\\ude00", "t": 1, "x": 1.0}\n'  # a pair: 😀
                    '{"stream_id": "\\\\ud800", "t": 1, "x": 1.0}\n')  # a backslash, u...
    assert sorted(read_table(path)["stream_id"]) == ["\\ud800", "\U0001f600"]


# --- the same data in every format ------------------------------------------------------

SUFFIXES = ("csv", "parquet", "jsonl")
#: How an error names data record 2 (from 0; no blank lines): a CSV's header is line 1.
THIRD = {"csv": "line 4", "parquet": "row 3", "jsonl": "line 3"}
SECOND = {"csv": "line 3", "parquet": "row 2", "jsonl": "line 2"}


def written(frame: pd.DataFrame, path):
    """`frame` as the file `path` (its format from the suffix)."""
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


def refusal(path) -> str:
    """What reading `path` is refused with, without the file's name."""
    with pytest.raises(InputError) as got:
        read_blocks(path)
    message = str(got.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message.removeprefix(f"{path}: ")


def two_steps(stream_id) -> pd.DataFrame:
    return pd.DataFrame({"stream_id": [stream_id] * 2, "t": [1, 2], "a": [0.5, 1.0],
                         "b": [0.5, 0.0]})


@pytest.mark.parametrize("sid", ["NA", "null", "NULL", "nan", "NaN", "N/A", "#N/A", "None",
                                 "<NA>", "n/a", "-nan"])
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_words_pandas_takes_for_missing_are_stream_ids(tmp_path, sid, suffix):
    domain, blocks = read_blocks(written(two_steps(sid), tmp_path / f"in.{suffix}"))
    assert domain == ("a", "b") and [(b.stream_id, b.t0) for b in blocks] == [(sid, 1)]
    np.testing.assert_array_equal(blocks[0].probs, [[0.5, 0.5], [1.0, 0.0]])


def test_csv_columns_stay_numeric_and_a_nan_probability_is_still_refused(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("stream_id,t,a,b\ns,1,0.1,0.9\ns,2,1,0\n")
    assert read_table(path).dtypes.tolist()[1:] == [np.int64, np.float64, np.float64]
    for cell, shown in (("nan", "'nan'"), ("NA", "'NA'"), ("", "nan")):
        path.write_text(f"stream_id,t,a,b\ns,1,0.5,0.5\ns,2,{cell},1\n")
        assert refusal(path) == (f"stream 's', t=2: probability of 'a' is missing or not a "
                                 f"number ({shown})")
    path.write_text("stream_id,t,a,b\ns,NA,0.5,0.5\n")
    assert refusal(path) == "stream 's': t=NA is not an integer"


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_an_empty_stream_id_is_missing_in_every_format(tmp_path, suffix):
    frame = pd.concat([two_steps("s"), two_steps("")], ignore_index=True)
    path = written(frame, tmp_path / f"in.{suffix}")
    if suffix == "parquet":  # its statistics say an id is empty: not for the fast readers
        assert plain_parquet_domain(path) is None
    assert refusal(path) == f"{THIRD[suffix]}: stream_id is missing"
    with pytest.raises(InputError, match="input: row 3: stream_id is missing"):
        blocks_from_frame(frame)


def test_an_empty_stream_id_is_refused_by_groups_fast_path_too(tmp_path, capsys):
    path = written(pd.concat([two_steps(""), two_steps("s")], ignore_index=True),
                   tmp_path / "in.parquet")
    assert main(["group", str(path), "--pattern", "a", "--policy", "single"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"probcep group: error: {path}: row 1: stream_id is missing\n"


def approx(capsys, path) -> list[dict]:
    assert main(["approx", "--pattern", "NA None", "--max-errors", "0", "--window", "3",
                 str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_approx_takes_na_words_as_symbols_and_stream_ids(tmp_path, capsys, suffix):
    events = pd.DataFrame({"stream_id": ["NA"] * 3, "tag": [1, 2, 3],
                           "symbol": ["null", "NA", "None"]})
    rows = approx(capsys, written(events, tmp_path / f"e.{suffix}"))
    assert [(r["stream_id"], r["symbols"], r["tags"]) for r in rows] == [
        ("NA", ["NA", "None"], [2, 3])]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_symbols_that_look_like_numbers_stay_as_written(tmp_path, suffix):
    events = pd.DataFrame({"stream_id": ["s"] * 3, "tag": [1, 2, 3],
                           "symbol": ["01", "1.0", "007"]})
    read = read_table(written(events, tmp_path / f"e.{suffix}"), text=("stream_id", "symbol"))
    assert read["symbol"].tolist() == ["01", "1.0", "007"]


@pytest.mark.parametrize("column", ["stream_id", "symbol"])
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_approx_refuses_an_empty_stream_id_or_symbol_in_every_format(tmp_path, capsys,
                                                                       suffix, column):
    events = pd.DataFrame({"stream_id": ["s"] * 3, "tag": [1, 2, 3], "symbol": ["a"] * 3})
    events.loc[1, column] = ""
    path = written(events, tmp_path / f"e.{suffix}")
    assert main(["approx", "--pattern", "a", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep approx: error: {path}: {SECOND[suffix]}: "
                                       f"{column} is missing\n")


# --- CSV rows and headers that do not fit -----------------------------------------------

@pytest.mark.parametrize("rows,line", [
    ("s,1,0.5,0.5,0.1\n", 2),  # pandas: the first column an index, "t=0.5 is not an integer"
    ("x,s,1,0.5,0.5\ns,2,1,0\n", 2),  # pandas: x dropped, the rest accepted
    ("s,1,0.5,0.5\ns,2,1,0,\n", 3),  # a trailing comma
    ("s,1,0.5,0.5\n\ns,2,0.5,0.5\ns,3,1,0,7,8\n", 5),
])
def test_a_csv_row_with_fields_beyond_the_header_is_refused(tmp_path, rows, line):
    path = tmp_path / "in.csv"
    path.write_text("stream_id,t,a,b\n" + rows)
    fields = rows.splitlines()[line - 2].count(",") + 1
    assert refusal(path) == f"line {line} has {fields} fields, the header 4"


def repeated_parquet(path, names):
    columns = {"stream_id": pa.array(["s", "s"]), "t": pa.array([1, 2])}
    arrays = [columns.get(n, pa.array([0.5, 0.5])) for n in names]
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    return path


@pytest.mark.parametrize("names,repeated", [
    (["stream_id", "t", "a", "a"], "a"),
    (["stream_id", "t", "stream_id", "a"], "stream_id"),
    (["stream_id", "t", "a", "b", "t"], "t"),
])
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_repeated_column_name_is_refused(tmp_path, suffix, names, repeated):
    path = tmp_path / f"in.{suffix}"
    cells = {"stream_id": '"s"', "t": "1"}
    if suffix == "csv":
        path.write_text(",".join(names) + "\n" + ",".join(
            cells.get(n, "0.5") for n in names) + "\n")
    elif suffix == "jsonl":
        path.write_text("{" + ", ".join(f'"{n}": {cells.get(n, "0.5")}' for n in names)
                        + "}\n")
    else:
        repeated_parquet(path, names)
        assert plain_parquet_domain(path) is None
    said = f"column {repeated!r} appears more than once"
    assert refusal(path) == (f"line 1: {said}" if suffix == "jsonl" else said)


def test_a_repeated_column_name_leaves_groups_fast_path(tmp_path, capsys):
    path = repeated_parquet(tmp_path / "in.parquet", ["stream_id", "t", "a", "a"])
    assert main(["group", str(path), "--pattern", "a", "--policy", "single"]) == 2
    assert capsys.readouterr().err == (f"probcep group: error: {path}: column 'a' appears "
                                       f"more than once\n")


# --- JSON lines -------------------------------------------------------------------------

LINE = '{"stream_id": "s", "t": 1, "a": 0.5, "b": 0.5}'


@pytest.mark.parametrize("text,said", [
    (f"{LINE}\n[1, 2]\n", "line 2: not a JSON object"),
    (f"[1, 2]\n{LINE}\n", "line 1: not a JSON object"),
    (f"{LINE}\n\n5\n", "line 3: not a JSON object"),
    (f'{LINE}\n"x"\n', "line 2: not a JSON object"),
    (f"{LINE}\nnull\n", "line 2: not a JSON object"),
    (f'{LINE}\n{{"stream_id": "s",\n', "line 2, column 19: Expecting property name enclosed "
                                        "in double quotes"),
])
def test_a_json_line_that_is_not_an_object_is_named(tmp_path, text, said):
    path = tmp_path / "in.jsonl"
    path.write_text(text)
    assert refusal(path) == said


def test_a_null_stream_id_in_json_lines_is_missing_not_the_text_nan(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"stream_id": null, "t": 1, "a": 0.5, "b": 0.5}\n'
                    '{"stream_id": 7, "t": 1, "a": 1, "b": 0}\n')
    assert refusal(path) == "line 1: stream_id is missing"
    path.write_text('{"stream_id": 7, "t": 1, "a": 1, "b": 0}\n'
                    '{"stream_id": 0.5, "t": 1, "a": 1, "b": 0}\n')
    csv = written(pd.DataFrame({"stream_id": ["7", "0.5"], "t": [1, 1], "a": [1, 1],
                                "b": [0, 0]}), tmp_path / "in.csv")
    assert [b.stream_id for b in read_blocks(path)[1]] == ["0.5", "7"]
    assert [b.stream_id for b in read_blocks(csv)[1]] == ["0.5", "7"]


# --- Parquet ----------------------------------------------------------------------------

def test_binary_stream_ids_read_as_the_text_a_csv_gives(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"stream_id": pa.array([b"s", b"\xc3\xa9"], pa.binary()),
                             "t": [1, 1], "a": [0.5, 1.0], "b": [0.5, 0.0]}), path)
    assert [b.stream_id for b in read_blocks(path)[1]] == ["s", "é"]
    pq.write_table(pa.table({"stream_id": pa.array([b"s", b"\xff"], pa.binary()),
                             "t": [1, 1], "a": [0.5, 1.0], "b": [0.5, 0.0]}), path)
    assert refusal(path) == "row 2: stream_id is not UTF-8 text"


@pytest.mark.parametrize("statistics", [True, False])
@pytest.mark.parametrize("ids", [[b"a", b"b\xff", b"c"], [b"\xff", b"a", b"b"]])
def test_string_columns_that_are_not_utf8_are_refused_not_a_traceback(tmp_path, capsys,
                                                                       ids, statistics):
    """Parquet writers need not check a string column's bytes; `probcep group` (its fast
    path, the Arrow reader and the pandas way) and `probcep approx` name the row."""
    text = pa.array(ids, pa.binary()).view(pa.string())
    row = next(i for i, v in enumerate(ids) if b"\xff" in v) + 1
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"stream_id": text, "t": [1, 1, 1], "a": [1.0] * 3,
                             "b": [0.0] * 3}), path, write_statistics=statistics)
    assert main(["group", "--pattern", "a", "--policy", "single", str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep group: error: {path}: row {row}: stream_id "
                                       f"is not UTF-8 text\n")
    pq.write_table(pa.table({"stream_id": text, "tag": [1, 2, 3], "symbol": ["a"] * 3}), path,
                   write_statistics=statistics)
    assert main(["approx", "--pattern", "a", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep approx: error: {path}: row {row}: stream_id "
                                       f"is not UTF-8 text\n")


def test_binary_symbols_of_approx_read_as_text(tmp_path, capsys):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"stream_id": pa.array([b"NA"] * 3, pa.large_binary()),
                             "tag": [1, 2, 3],
                             "symbol": pa.array([b"null", b"NA", b"None"], pa.binary())}),
                   path)
    assert [(r["stream_id"], r["symbols"]) for r in approx(capsys, path)] == [
        ("NA", ["NA", "None"])]
    pq.write_table(pa.table({"stream_id": ["s"] * 2, "tag": [1, 2],
                             "symbol": pa.array([b"a", b"\xff"], pa.binary())}), path)
    assert main(["approx", "--pattern", "a", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep approx: error: {path}: row 2: symbol is "
                                       f"not UTF-8 text\n")


@pytest.mark.parametrize("index", [["stream_id"], ["stream_id", "t"], ["t"]])
def test_a_stored_pandas_index_is_read_as_the_column_it_is(tmp_path, index):
    want = read_blocks(written(frame(), tmp_path / "in.csv"))
    path = tmp_path / "in.parquet"
    frame().set_index(index).to_parquet(path)
    assert plain_parquet_domain(path) is None
    got = read_blocks(path)
    assert got[0] == want[0]
    assert [(b.stream_id, b.t0) for b in got[1]] == [(b.stream_id, b.t0) for b in want[1]]
    for got_block, want_block in zip(got[1], want[1]):
        np.testing.assert_array_equal(got_block.probs, want_block.probs)


def test_unnamed_row_labels_stored_by_pandas_are_no_symbol(tmp_path):
    path = tmp_path / "in.parquet"
    frame().set_index(pd.Index(np.arange(12) * 7)).to_parquet(path)
    assert read_table(path).columns.tolist() == ["stream_id", "t", "x", "y"]
    assert read_blocks(path)[0] == ("x", "y")


@pytest.mark.parametrize(("text", "place"), [
    ("stream_id,t,a,b\n\ns,1,0.5,0.5\n\n,2,0.5,0.5\n", "line 5"),  # blank lines skipped
    ('stream_id,t,a,b\r\n"s\r\nx",1,0.5,0.5\r\n,1,0.5,0.5\r\n', "line 4"),  # a quoted break
    ('stream_id,t,a,b\n"s\nx\ny",1,0.5,0.5\n,1,0.5,0.5\n', "line 5"),
])
def test_csv_errors_name_the_line_the_record_is_on(tmp_path, text, place):
    path = tmp_path / "in.csv"
    path.write_text(text, newline="")
    assert refusal(path) == f"{place}: stream_id is missing"


def test_json_lines_errors_name_the_line_past_blank_lines(tmp_path, capsys):
    path = tmp_path / "e.jsonl"
    path.write_text('{"stream_id": "s", "tag": 1, "symbol": "a"}\n\n  \n'
                    '{"stream_id": "s", "tag": 1.5, "symbol": "a"}\n')
    assert main(["approx", "--pattern", "a", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep approx: error: {path}: line 4: tag 1.5 is "
                                       f"not an integer\n")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_column_without_a_name_is_refused_in_every_format(tmp_path, capsys, suffix):
    path = tmp_path / f"in{suffix}"
    f = pd.DataFrame({"stream_id": ["s", "s"], "t": [1, 2], "a": [1.0, 0.5], "": [0.0, 0.5]})
    if suffix == ".csv":
        f.to_csv(path, index=False)
    elif suffix == ".jsonl":
        f.to_json(path, orient="records", lines=True)
    else:
        f.to_parquet(path, index=False)
    assert main(["group", "--pattern", "a", "--policy", "single", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "column 4" in err and "has no name" in err


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_text_that_is_not_utf8_is_located_by_line(tmp_path, capsys, suffix):
    """The decoder's error gives a position within its buffer, far from the file's place
    past the first buffer: the message names the line instead."""
    lines = [json.dumps({"stream_id": "s", "t": t, "a": 0.5, "b": 0.5}) for t in range(20000)]
    if suffix == ".csv":
        lines = ["stream_id,t,a,b", *(f"s,{t},0.5,0.5" for t in range(20000))]
    data = ("\n".join(lines) + "\n").encode().splitlines(keepends=True)
    data[12345] = data[12345].replace(b"s", b"s\xe9", 1)  # Latin-1 é
    path = tmp_path / f"in{suffix}"
    path.write_bytes(b"".join(data))
    assert main(["group", "--pattern", "a b", "--policy", "single", str(path)]) == 2
    assert capsys.readouterr().err == (f"probcep group: error: {path}: line 12346: bytes "
                                       f"that are not UTF-8 text\n")
