"""`probcep approx` end to end: formats, Example 2, budgets, bundles and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from probcep.cli import main

EXAMPLE_2 = "a1 e2 e3 b4 c5 e6 a7 e8 e9 c10 d11 a12 e13 b14 d15".split()


def _frame(stream_id="s", events=EXAMPLE_2):
    return pd.DataFrame({"stream_id": stream_id, "tag": [int(e[1:]) for e in events],
                         "symbol": [e[0] for e in events]})


def _run(capsys, *argv):
    assert main(["approx", *map(str, argv)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
def test_example_2_in_every_format(tmp_path, capsys, suffix):
    path = tmp_path / f"events.{suffix}"
    frame = _frame()
    if suffix == "csv":
        frame.to_csv(path, index=False)
    elif suffix == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    rows = _run(capsys, "--pattern", "a ( b | c ) d b", "--max-errors", 2, "--window", 5,
                "--bundles", path)
    matches = {tuple(r["tags"]): r for r in rows if r["type"] == "match"}
    assert matches[(1, 4)]["errors"] == 2 and matches[(1, 4)]["symbols"] == ["a", "b"]
    assert matches[(10, 11, 14)]["errors"] == 1
    assert matches[(10, 11, 14)]["match_point"] == 14
    assert matches[(10, 11, 14)]["positions"] == [9, 10, 13]
    bundles = [r for r in rows if r["type"] == "bundle"]
    assert [(b["first_match_point"], b["last_match_point"]) for b in bundles] == [(4, 15)]
    assert bundles[0]["n_matches"] == len(matches)


def test_streams_never_mix_and_rows_may_come_unsorted(tmp_path, capsys):
    # "a" of stream x and "b" of stream y would match "a b" if streams were mixed.
    frame = pd.DataFrame({"stream_id": ["y", "x", "x"], "tag": [2, 3, 1],
                          "symbol": ["b", "b", "a"]})
    path = tmp_path / "e.csv"
    frame.to_csv(path, index=False)
    rows = _run(capsys, "--pattern", "a b", "--max-errors", 0, "--window", 10, path)
    assert [(r["stream_id"], r["tags"]) for r in rows] == [("x", [1, 3])]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet", "dictionary.parquet"])
def test_ids_pandas_would_hash_alike_stay_apart(tmp_path, capsys, suffix):
    """pandas' hashing (its sort, groupby and a categorical's astype) stops at a NUL:
    "s" and "s\\x00" would be one stream, and "a" of one and "b" of the other match."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = ["s", "s\x00", "s\x00", "s"]
    path = tmp_path / f"e.{suffix}"
    if suffix == "jsonl":
        path.write_text("".join(json.dumps({"stream_id": i, "tag": t, "symbol": x}) + "\n"
                                for i, t, x in zip(ids, [1, 2, 4, 3], "abab")))
    else:
        column = pa.array(ids)
        pq.write_table(pa.table({"stream_id": column.dictionary_encode()
                                 if suffix.startswith("dictionary") else column,
                                 "tag": [1, 2, 4, 3], "symbol": list("abab")}), path)
    rows = _run(capsys, "--pattern", "a b", "--max-errors", 0, "--window", 10, path)
    assert [(r["stream_id"], r["tags"]) for r in rows] == [("s", [1, 3])]


def test_budget_finds_a_subset_and_reports_stats(tmp_path, capsys):
    events = [f"{'abcd'[i % 4]}{i + 1}" for i in range(40)]
    path = tmp_path / "e.csv"
    _frame(events=events).to_csv(path, index=False)
    args = ["--pattern", "a b+ c d", "--max-errors", 1, "--window", 8]
    full = {tuple(r["positions"]) for r in _run(capsys, *args, path)}
    for policy in ("history", "random", "oldest"):
        assert main(["approx", *map(str, args), "--budget", "1", "--policy", policy,
                     "--train", str(path), "--stats", str(path)]) == 0
        out = capsys.readouterr()
        some = {tuple(json.loads(line)["positions"]) for line in out.out.splitlines()}
        assert some < full
        stats = json.loads(out.err.splitlines()[0])
        assert stats["work"] <= 40 and stats["work"] + stats["shed"] == stats["candidates"]


def test_domain_option_and_its_errors(tmp_path, capsys):
    path = tmp_path / "e.csv"
    _frame().to_csv(path, index=False)
    base = ["approx", "--pattern", "a . b", "--max-errors", "0", "--window", "20"]
    assert main([*base, "--domain", "a,b", str(path)]) == 2
    assert "symbol 'e' is not in the domain" in capsys.readouterr().err
    rows = _run(capsys, *base[1:], "--domain", "a,b,c,d,e", path)
    assert {tuple(r["symbols"]) for r in rows} >= {("a", "e", "b"), ("a", "d", "b")}


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"stream_id": ["s"], "symbol": ["a"]}), "missing column(s) tag"),
    (pd.DataFrame({"stream_id": ["s"], "tag": [1.5], "symbol": ["a"]}), "not an integer"),
    (pd.DataFrame({"stream_id": ["s"], "tag": [1], "symbol": [None]}), "symbol is missing"),
])
def test_bad_input_is_reported(tmp_path, capsys, frame, message):
    path = tmp_path / "e.csv"
    frame.to_csv(path, index=False)
    assert main(["approx", "--pattern", "a", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert message in capsys.readouterr().err


def test_bad_pattern_and_too_many_matches(tmp_path, capsys):
    path = tmp_path / "e.csv"
    _frame().to_csv(path, index=False)
    assert main(["approx", "--pattern", "a (", "--max-errors", "0", "--window", "3",
                 str(path)]) == 2
    assert "probcep approx: error: --pattern: expected a symbol" in \
        capsys.readouterr().err  # the option named, as correlate names its two
    assert main(["approx", "--pattern", "a ( b | c ) d b", "--max-errors", "2",
                 "--window", "5", "--max-matches", "5", str(path)]) == 2
    assert "more than 5 matches" in capsys.readouterr().err


def test_an_automaton_too_large_to_match_approximately_is_refused(tmp_path, capsys):
    """8,192 states pass the exact limit but not the approximate one: refused at once,
    not a distance table of 512 MiB built for minutes."""
    path = tmp_path / "one.csv"
    path.write_text("stream_id,tag,symbol\ns,1,a\n")
    assert main(["approx", "--pattern", "(a|b)* a (a|b){12}", "--max-errors", "1",
                 "--window", "5", str(path)]) == 2
    assert "8,192 states, more than the limit of 2,048 (MAX_APPROX_STATES" in \
        capsys.readouterr().err


@pytest.mark.parametrize("policy", ["history", "random"])
def test_under_a_budget_a_stream_is_matched_as_if_alone(tmp_path, capsys, policy):
    """Streams never mix: each starts from the trained history and the seed (what a stream
    before it learned or drew would otherwise change its matches)."""
    rng = np.random.default_rng(3)
    events = [(sid, t, rng.choice(list("abc"))) for sid in ("A", "B") for t in range(300)]
    both, alone = tmp_path / "ab.csv", tmp_path / "b.csv"
    pd.DataFrame(events, columns=["stream_id", "tag", "symbol"]).to_csv(both, index=False)
    pd.DataFrame([e for e in events if e[0] == "B"],
                 columns=["stream_id", "tag", "symbol"]).to_csv(alone, index=False)
    lines = {}
    for path in (both, alone):
        assert main(["approx", "--pattern", "a b+ c", "--max-errors", "1", "--window", "6",
                     "--budget", "1", "--policy", policy, str(path)]) == 0
        lines[path] = [x for x in capsys.readouterr().out.splitlines() if '"B"' in x]
    assert lines[both] == lines[alone] and lines[alone]


@pytest.mark.parametrize("name, text, extra, message", [
    ("list.jsonl", '{"stream_id": "s", "tag": 1, "symbol": ["a"]}\n', [],
     'line 1: symbol ["a"] is not text'),
    ("int.jsonl", '{"stream_id": "s", "tag": 1, "symbol": 5}\n', [],
     "line 1: symbol 5 is not text"),
    ("booltag.jsonl", '{"stream_id": "s", "tag": true, "symbol": "a"}\n', [],
     "line 1: tag true is not an integer"),
    ("bool.jsonl", '{"stream_id": true, "tag": 1, "symbol": "a"}\n', [],
     "line 1: stream_id true is not text or a number"),
    ("space.csv", "stream_id,tag,symbol\ns,1, a\ns,2,b\n", [],
     "line 2: symbol ' a' is not a symbol name"),
    ("big.jsonl", '{"stream_id": "s", "tag": 1, "symbol": "a"}\n\n'
                  '{"stream_id": "s", "tag": 99999999999999999999, "symbol": "a"}\n', [],
     "line 3: tag 99999999999999999999 is outside the 64-bit integer range"),
    ("empty.csv", "", [], "the file is empty (not even a header): no events"),
    ("header.csv", "stream_id,tag,symbol\n", [],
     "holds no events, and the pattern names no symbol: give --domain"),
    ("ok.csv", "stream_id,tag,symbol\ns,1,a\n", ["--domain", ""],
     "--domain: name 1 '' is not a symbol name"),
    ("ok.csv", "stream_id,tag,symbol\ns,1,a\n", ["--domain", "a,,b"],
     "--domain: name 2 '' is not a symbol name"),
    ("ok.csv", "stream_id,tag,symbol\ns,1,a\n", ["--domain", "a,1x"],
     "--domain: name 2 '1x' is not a symbol name"),
    ("ok.csv", "stream_id,tag,symbol\ns,1,a\n", ["--domain", "a,b,a"],
     "--domain: a named more than once"),
])
def test_what_no_symbol_or_stream_can_be_is_refused(tmp_path, capsys, name, text, extra,
                                                    message):
    """Values that would become their Python text, names no pattern can write, an empty
    file and a bad --domain: one line naming the file, line or option."""
    path = tmp_path / name
    path.write_text(text)
    assert main(["approx", "--pattern", ".", "--max-errors", "0", "--window", "3", *extra,
                 str(path)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "\n", " \t\n\n"])
@pytest.mark.parametrize("name", ["none.jsonl", "none.ndjson"])
def test_json_lines_without_records_hold_no_events(tmp_path, capsys, name, text):
    """A JSON lines file has no header: one without records is as a header-only CSV file,
    no events, not "empty (not even a header)" (QA, 2026-11-27)."""
    path = tmp_path / name
    path.write_text(text)
    assert main(["approx", "--pattern", "a b", "--max-errors", "0", "--window", "3",
                 str(path)]) == 0
    assert capsys.readouterr().out == ""


events = st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abcd")), min_size=1,
                  max_size=12).map(lambda steps: [  # tags that rise by 0 to 2
                      (sum(d for d, _ in steps[:i + 1]), s) for i, (_, s) in enumerate(steps)])
QA_Z = [(0, "c"), (0, "d"), (1, "b"), (1, "a"), (1, "d"), (3, "c"), (3, "b"), (5, "c")]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events, events, st.sampled_from(["a b+ c", "a ( b | c ) d b", "(a | b) c* d"]),
       st.sampled_from([[], ["--budget", "1", "--policy", "oldest"],
                        ["--budget", "1", "--policy", "history"],
                        ["--budget", "1", "--policy", "random"]]))
@example([(0, "a"), (1, "b")], QA_Z, "a ( b | c ) d b", [])
def test_a_streams_lines_are_the_same_bytes_beside_another(tmp_path, capsys, other, mine,
                                                            pattern, budget):
    """The automaton that streams share numbers cost vectors as it meets them, so the
    order of a match point's lines (and budget ties) followed the streams before it
    (QA, 2026-11-27): they follow the vectors now."""
    both, alone = tmp_path / "both.csv", tmp_path / "alone.csv"
    rows = [("y", t, s) for t, s in other] + [("z", t, s) for t, s in mine]
    for path, kept in ((both, rows), (alone, [r for r in rows if r[0] == "z"])):
        pd.DataFrame(kept, columns=["stream_id", "tag", "symbol"]).to_csv(path, index=False)
    lines = {}
    for path in (both, alone):
        assert main(["approx", "--pattern", pattern, "--max-errors", "2", "--window", "6",
                     "--domain", "a,b,c,d", "--bundles", *budget, str(path)]) == 0
        lines[path] = [x for x in capsys.readouterr().out.splitlines() if '"z"' in x]
    assert lines[both] == lines[alone]
