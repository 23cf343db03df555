"""`probcep group`: the docs/semantics.md §6 table, file formats, batches with state, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from probcep.cli import main

FIG1 = pd.DataFrame({
    "stream_id": ["s1"] * 6,
    "t": [1, 2, 3, 4, 5, 6],
    "a": [1.0, 0.3, 0.1, 0.1, 0.0, 0.0],
    "b": [0.0, 0.7, 0.8, 0.7, 0.9, 0.0],
    "c": [0.0, 0.0, 0.1, 0.2, 0.1, 1.0],
})

# docs/semantics.md §6: (policy, θ, window) -> [(t_start, t_first, t_end, P, n_matches, max P(m))]
TABLE = [
    ("single", 0, None, [(1, None, 6, 0.9437, 10, 0.3528)]),
    ("single", 0.1, None, [(1, None, 6, 0.9437, 3, 0.3528)]),
    ("complete", 0.05, None, [(1, 3, 6, 0.86, 5, 0.3528), (1, 4, 6, 0.88, 5, 0.3528)]),
    ("complete", 0, None, [(1, 3, 6, 0.86, 9, 0.3528), (1, 4, 6, 0.88, 9, 0.3528)]),
    ("single", 0.05, 3, [(1, None, 3, 0.07, 1, 0.07), (4, None, 6, 0.09, 1, 0.09)]),
    ("single", 0.05, 4, [(1, None, 6, 0.4005, 4, 0.112)]),
    ("complete", 0.05, 4, [(1, 3, 6, 0.3168, 3, 0.112), (1, 4, 6, 0.3368, 3, 0.112)]),
]


def group(capsys, path, *options):
    code = main(["group", str(path), *options])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def options(policy, theta, window, pattern="a b+ c"):
    opts = ["--pattern", pattern, "--policy", policy, "--threshold", str(theta)]
    return opts + (["--window", str(window)] if window else [])


@pytest.mark.parametrize("method", ["transducer", "naive"])
@pytest.mark.parametrize("policy,theta,window,expected", TABLE)
def test_semantics_table(tmp_path, capsys, policy, theta, window, expected, method):
    path = tmp_path / "fig1.csv"
    FIG1.sample(frac=1.0, random_state=3).to_csv(path, index=False)  # rows in any order
    code, rows, _ = group(capsys, path, *options(policy, theta, window), "--method", method)
    assert code == 0
    got = [(r["t_start"], r["t_first"], r["t_end"], r["probability"], r["n_matches"],
            r["max_match_probability"]) for r in rows]
    assert [g[:3] + g[4:5] for g in got] == [e[:3] + e[4:5] for e in expected]
    for g, e in zip(got, expected):
        assert g[3] == pytest.approx(e[3], abs=1e-9)
        assert g[5] == pytest.approx(e[5], abs=1e-9)
    assert all(r["stream_id"] == "s1" for r in rows)


def test_formats_agree_and_streams_are_sorted(tmp_path, capsys):
    two = pd.concat([FIG1.assign(stream_id="z"), FIG1.assign(stream_id="b", t=FIG1.t + 100)])
    paths = [tmp_path / "in.csv", tmp_path / "in.parquet", tmp_path / "in.jsonl"]
    two.to_csv(paths[0], index=False)
    two.to_parquet(paths[1], index=False)
    two.to_json(paths[2], orient="records", lines=True)
    outputs = [group(capsys, p, *options("complete", 0.05, None))[1] for p in paths]
    assert outputs[0] == outputs[1] == outputs[2]
    assert [(r["stream_id"], r["t_first"]) for r in outputs[0]] == [
        ("b", 103), ("b", 104), ("z", 3), ("z", 4)]


def _random_streams(rng, n_streams=3, length=400):
    frames = []
    for k in range(n_streams):
        p = rng.dirichlet(np.full(3, 0.4), size=length)
        p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(length) + 5 * k,
                                    "a": p[:, 0], "b": p[:, 1], "c": p[:, 2]}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("policy,theta,window", [("single", 0.0, 5), ("complete", 0.01, None),
                                                 ("complete", 0.0, 4), ("single", 0.05, None)])
def test_batches_with_state_file_equal_one_pass(tmp_path, capsys, policy, theta, window):
    data = _random_streams(np.random.default_rng(11))
    whole = tmp_path / "all.parquet"
    data.to_parquet(whole)
    opts = options(policy, theta, window, pattern="a (b | c)+ a")
    _, expected, _ = group(capsys, whole, *opts)
    assert expected
    cuts = [0, 37, 38, 200, 10_000]
    lines = []
    state = tmp_path / "s.state"
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        part = tmp_path / f"part{i}.csv"
        data[(data.t >= lo) & (data.t < hi)].to_csv(part, index=False)
        extra = ["--resume-from", str(state)] if i else []
        extra += ["--save-state", str(state)] if hi != cuts[-1] else []
        code, rows, _ = group(capsys, part, *opts, *extra)
        assert code == 0
        lines += rows
    key = lambda r: (r["stream_id"], r["t_start"], r["t_first"] or 0)  # noqa: E731
    assert sorted(lines, key=key) == expected  # same groups, same bytes per group


def test_single_stream_batches_are_byte_identical(tmp_path):
    data = _random_streams(np.random.default_rng(5), n_streams=1, length=300)
    whole = tmp_path / "all.csv"
    data.to_csv(whole, index=False)
    opts = options("complete", 0.02, 6, pattern="a b* c")
    main(["group", str(whole), *opts, "-o", str(tmp_path / "one.jsonl")])
    state = tmp_path / "st"
    chunks = []
    for i, (lo, hi) in enumerate([(0, 120), (120, 121), (121, 300)]):
        part = tmp_path / f"p{i}.parquet"  # exact floats, like the CSV of the whole
        data[(data.t >= lo) & (data.t < hi)].to_parquet(part)
        extra = (["--resume-from", str(state)] if i else []) + (
            ["--save-state", str(state)] if hi < 300 else [])
        out = tmp_path / f"o{i}.jsonl"
        assert main(["group", str(part), *opts, *extra, "-o", str(out)]) == 0
        chunks.append(out.read_bytes())
    assert b"".join(chunks) == (tmp_path / "one.jsonl").read_bytes()


def test_resuming_with_another_query_is_refused(tmp_path, capsys):
    path = tmp_path / "fig1.csv"
    FIG1.to_csv(path, index=False)
    state = tmp_path / "st"
    assert group(capsys, path, *options("single", 0, 3), "--save-state", str(state))[0] == 0
    code, _, err = group(capsys, path, *options("single", 0, 4), "--resume-from", str(state))
    assert code == 2 and "state was saved for another query: window 3 then, 4 now" in err


def test_resuming_must_continue_where_the_state_stopped(tmp_path, capsys):
    path = tmp_path / "fig1.csv"
    FIG1.to_csv(path, index=False)
    state = tmp_path / "st"
    group(capsys, path, *options("single", 0, 3), "--save-state", str(state))
    code, _, err = group(capsys, path, *options("single", 0, 3), "--resume-from", str(state))
    assert code == 2 and "'s1'" in err and "t=7" in err and "t=1" in err


def _broken(frame_edit):
    frame = FIG1.copy()
    frame_edit(frame)
    return frame


@pytest.mark.parametrize("edit,message", [
    (lambda f: f.drop(index=3, inplace=True), "stream 's1': gap in t after t=3 (next is t=5)"),
    (lambda f: f.loc.__setitem__((2, "b"), 1.3), "stream 's1', t=3: probability of 'b' is 1.3"),
    (lambda f: f.loc.__setitem__((1, "a"), 0.2), "stream 's1', t=2: probabilities sum to 0.89999"),
    (lambda f: f.loc.__setitem__((4, "t"), 4), "stream 's1': t=4 appears more than once"),
    (lambda f: f.loc.__setitem__((0, "c"), -0.1), "t=1: probability of 'c' is -0.1"),
    (lambda f: f.drop(columns="t", inplace=True), "missing column(s) t"),
])
def test_bad_input_names_stream_and_t(tmp_path, capsys, edit, message):
    path = tmp_path / "bad.csv"
    _broken(edit).to_csv(path, index=False)
    code, rows, err = group(capsys, path, *options("single", 0, None))
    assert code == 2 and rows == []
    assert message in err and str(path) in err


def test_non_integer_t(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    FIG1.assign(t=FIG1.t.astype(float) + 0.5).to_csv(path, index=False)
    code, _, err = group(capsys, path, *options("single", 0, None))
    assert code == 2 and "t=1.5 is not an integer" in err


def test_t_beyond_int64_is_refused_not_wrapped(tmp_path, capsys):
    path = tmp_path / "huge.csv"
    text = FIG1.to_csv(index=False).replace("\ns1,6,", "\ns1,99999999999999999999,", 1)
    path.write_text(text)
    code, rows, err = group(capsys, path, *options("single", 0, None))
    assert code == 2 and rows == []
    assert "t=" in err and "outside the 64-bit integer range" in err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("first", [-(2 ** 62) - 5, -(2 ** 62) - 3, -(2 ** 62)])
def test_a_stream_holding_the_engines_none_is_refused(tmp_path, capsys, first, suffix):
    """-2^62 is the engine's "none" (no t_first, no earlier end): a stream holding it
    would be grouped wrongly (t_first printed null, a single-overlap P(g)), so it is
    refused, naming the file and the stream; next to it, and at either end of int64,
    a stream is grouped as anywhere."""
    path = tmp_path / f"low{suffix}"
    write = (lambda f: f.to_csv(path, index=False)) if suffix == ".csv" else (
        lambda f: f.to_parquet(path, index=False))
    write(FIG1.assign(t=FIG1.t.astype(np.int64) - 1 + first))
    code, rows, err = group(capsys, path, *options("complete", 0, None))
    assert code == 2 and rows == []
    assert f"{path}: stream 's1': t=-4611686018427387904 (-2^62) is the one timestep" in err
    for first in (-(2 ** 62) + 1, -(2 ** 62) - 6, -(2 ** 63), 2 ** 63 - 6):
        write(FIG1.assign(t=FIG1.t.astype(np.int64) - 1 + first))
        code, rows, err = group(capsys, path, *options("complete", 0, None))
        assert code == 0
        assert [(r["t_start"] - first + 1, r["t_first"] - first + 1, r["t_end"] - first + 1)
                for r in rows] == [(1, 3, 6), (1, 4, 6)]


@pytest.mark.parametrize("pattern,message,position", [
    ("a b+ x", "unknown symbol 'x' (domain: a, b, c)", 5),
    ("a (b | c", "missing ')'", 2),
    ("a b*", None, None),
    ("a* b?", "matches the empty sequence", 0),
    ("a | ", "expected a symbol", 4),
    ("a b{3,1}", "upper bound below its lower bound", 3),
    ("a [b", "missing ']'", 2),
    ("a & b", "unexpected character '&'", 2),
])
def test_pattern_errors_point_at_the_position(tmp_path, capsys, pattern, message, position):
    path = tmp_path / "fig1.csv"
    FIG1.to_csv(path, index=False)
    code, _, err = group(capsys, path, "--pattern", pattern, "--policy", "single")
    if message is None:
        assert code == 0
        return
    assert code == 2
    assert message in err and f"at position {position}" in err
    assert " " * position + "^" in err.splitlines()[-1]


def test_empty_batch_continues_and_ends_the_streams(tmp_path, capsys):
    path, empty, state = tmp_path / "fig1.csv", tmp_path / "empty.csv", tmp_path / "st"
    FIG1.iloc[:5].to_csv(path, index=False)
    FIG1.iloc[:0].to_csv(empty, index=False)
    assert group(capsys, empty, *options("single", 0, None))[:2] == (0, [])
    code, rows, _ = group(capsys, path, *options("single", 0, None), "--save-state", str(state))
    assert (code, rows) == (0, [])  # a live run may still extend the group
    code, rows, _ = group(capsys, empty, *options("single", 0, None), "--resume-from", str(state))
    assert code == 0 and [(r["t_start"], r["t_end"], r["n_matches"]) for r in rows] == [(1, 5, 6)]


@pytest.mark.parametrize("suffix, frame", [
    ("csv", FIG1), ("parquet", FIG1.assign(t=[1, 2, 3, 5, 6, 7])),  # a gap, and rows out
    ("parquet", FIG1.iloc[::-1])])  # of order: the fast path gives up on both
def test_a_window_no_match_fits_in_is_warned_of_once(tmp_path, capsys, suffix, frame):
    """`a b+ c` needs 3 timesteps: with `--window 2` the query is valid and finds
    nothing, which the warning explains (once, also when the fast Parquet path falls
    back to the plain one)."""
    path = tmp_path / f"s.{suffix}"
    getattr(frame, f"to_{suffix}")(path, index=False)
    code, rows, err = group(capsys, path, *options("single", 0, 2))
    expected = ("probcep group: warning: --window: the window of 2 is shorter than the "
                "shortest match of 'a b+ c' (3 timesteps): it can never match")
    assert err.splitlines()[0] == expected and err.count("warning") == 1
    if frame is not FIG1 and frame.t.is_monotonic_increasing:  # the gap is refused
        assert code == 2 and "gap in t after t=3 (next is t=5)" in err.splitlines()[1]
        return
    assert code == 0 and rows == []


def test_an_output_of_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "fig1.csv"
    FIG1.to_csv(path, index=False)
    code, rows, _ = group(capsys, path, *options("single", 0, None), "-o", "-")
    assert code == 0 and len(rows) == 1 and not (tmp_path / "-").exists()


def test_a_symbol_column_no_pattern_can_name_is_shown_quoted_and_warned(tmp_path, capsys):
    """A stray space in a header (` a`): the unknown-symbol error shows the column quoted,
    and a pattern that runs (`.`) warns that no pattern can name it (QA, 2026-11-26)."""
    path = tmp_path / "s.csv"
    path.write_text("stream_id,t, a,b\ns,1,0.5,0.5\n")
    code, _, err = group(capsys, path, "--pattern", "a", "--policy", "single")
    assert code == 2 and "unknown symbol 'a' (domain: ' a', b)" in err
    code, rows, err = group(capsys, path, "--pattern", ".", "--policy", "single")
    assert code == 0 and len(rows) == 1
    assert "symbol column(s) ' a' are not symbol names" in err
