"""`probcep correlate`: the docs/semantics.md §8 example against the possible-worlds
reference, the same bytes from every strategy, no row lost to pruning, the fields and
order of `probcep group`, empty ranges, refused options."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from probcep.cli import main
from tests.engine.reference import correlation_probability

# docs/semantics.md §8
EXAMPLE = pd.DataFrame({
    "stream_id": ["s1"] * 6,
    "t": [1, 2, 3, 4, 5, 6],
    "a": [0.5, 0.0, 0.5, 0.0, 1.0, 0.0],
    "b": [0.5, 1.0, 0.5, 0.5, 0.0, 0.0],
    "c": [0.0, 0.0, 0.0, 0.5, 0.0, 1.0],
})


def run(capsys, path, *options):
    code = main(["correlate", *options, str(path)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def _random_streams(seed, n_streams=4, length=120):
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n_streams):
        probs = rng.dirichlet([0.3, 0.3, 0.3], size=length)
        frames.append(pd.DataFrame({"stream_id": f"s{i}", "t": np.arange(length) + 10 * i,
                                    "a": probs[:, 0], "b": probs[:, 1], "c": probs[:, 2]}))
    return pd.concat(frames).sample(frac=1.0, random_state=seed)  # rows in any order


@pytest.mark.parametrize("mode", ["exists", "absent"])
def test_semantics_example_matches_reference(tmp_path, capsys, mode):
    path = tmp_path / "example.csv"
    EXAMPLE.to_csv(path, index=False)
    code, rows, _ = run(capsys, path, "--live-pattern", "c", "--policy", "single",
                        "--archive-pattern", "a b", "--lookback", "4", "--mode", mode)
    assert code == 0
    assert [(r["t_start"], r["r_lo"], r["r_hi"]) for r in rows] == [(4, 1, 3), (6, 2, 5)]
    probs = EXAMPLE[["a", "b", "c"]].to_numpy().tolist()
    for r in rows:
        g = (r["t_start"] - 1, None, r["t_end"] - 1)
        want = correlation_probability(probs, "abc", ("c", None), ("ab", None), g,
                                       (r["r_lo"] - 1, r["r_hi"] - 1), mode)
        assert r["probability"] == pytest.approx(want, abs=1e-12)
        other = r["live_probability"] * (
            r["archive_probability"] if mode == "exists" else 1 - r["archive_probability"])
        assert r["probability"] == other


@pytest.mark.parametrize("policy", ["single", "complete"])
def test_strategies_write_the_same_bytes_and_pruning_loses_nothing(tmp_path, capsys, policy):
    path = tmp_path / "streams.parquet"
    _random_streams(7).to_parquet(path)
    common = ["--live-pattern", "a b+ c", "--policy", policy, "--threshold", "0.01",
              "--window", "6", "--archive-pattern", "c c", "--archive-window", "3",
              "--lookback", "30", "--gap", "2"]
    texts = {}
    for strategy in ("active", "lazy", "sublazy", "auto"):
        out = tmp_path / f"{strategy}.jsonl"
        assert main(["correlate", *common, "--min-probability", "0.05", "--strategy",
                     strategy, str(path), "-o", str(out)]) == 0
        texts[strategy] = out.read_text()
    assert len(set(texts.values())) == 1
    code, everything, _ = run(capsys, path, *common, "--strategy", "active")
    kept = [json.dumps(r) + "\n" for r in everything if r["probability"] >= 0.05]
    assert 0 < len(kept) < len(everything)  # τ made a difference
    assert "".join(kept) == texts["auto"]


def test_rows_are_the_groups_of_probcep_group_in_its_order(tmp_path, capsys):
    path = tmp_path / "streams.csv"
    _random_streams(3).to_csv(path, index=False)
    assert main(["group", str(path), "--pattern", "a b+ c", "--policy", "complete",
                 "--threshold", "0.02"]) == 0
    groups = [json.loads(line) for line in capsys.readouterr()[0].splitlines()]
    code, rows, _ = run(capsys, path, "--live-pattern", "a b+ c", "--policy", "complete",
                        "--threshold", "0.02", "--archive-pattern", "a", "--lookback", "5")
    assert code == 0 and len(rows) == len(groups) > 0
    for g, r in zip(groups, rows):
        assert {k: r[k] for k in g if k != "probability"} == {
            k: v for k, v in g.items() if k != "probability"}
        assert r["live_probability"] == g["probability"]
        assert list(r)[-5:] == ["live_probability", "archive_probability", "r_lo", "r_hi",
                                "probability"]


def test_a_range_before_the_stream_is_empty(tmp_path, capsys):
    path = tmp_path / "example.csv"
    EXAMPLE.to_csv(path, index=False)  # `a` at t=1: R = [1 - 3, 0] lies before t0 = 1
    for mode, times_live in (("exists", 0.0), ("absent", 1.0)):
        code, rows, _ = run(capsys, path, "--live-pattern", "a", "--policy", "single",
                            "--archive-pattern", "b", "--lookback", "3", "--mode", mode)
        first = rows[0]
        assert (first["t_start"], first["r_lo"], first["r_hi"]) == (1, None, None)
        assert first["archive_probability"] == 0.0
        assert first["probability"] == first["live_probability"] * times_live


@pytest.mark.parametrize("last_t", [2**63 - 1, -(2**63) + 5])
def test_rows_move_with_the_stream_to_either_end_of_int64(tmp_path, capsys, last_t):
    """Times are labels: shifted to the ends of the 64-bit range, a stream gives the
    same rows with the same shift (the top once made the archive's times floats)."""
    near, far = tmp_path / "near.csv", tmp_path / "far.csv"
    EXAMPLE.to_csv(near, index=False)
    shift = last_t - int(EXAMPLE.t.max())
    EXAMPLE.assign(t=EXAMPLE.t.astype(object) + shift).to_csv(far, index=False)
    options = ("--live-pattern", "a b* c", "--policy", "complete", "--window", "4",
               "--archive-pattern", "b", "--lookback", "3", "--min-probability", "0")
    _, want, _ = run(capsys, near, *options)
    code, got, err = run(capsys, far, *options)
    assert code == 0 and err == "" and want
    for row in want:
        for key in ("t_start", "t_first", "t_end", "r_lo", "r_hi"):
            row[key] = None if row[key] is None else row[key] + shift
    assert got == want


@pytest.mark.parametrize("options, message", [
    (["--lookback", "4", "--gap", "0"], "argument --gap: '0' is not a positive integer"),
    (["--lookback", "0"], "argument --lookback: '0' is not a positive integer"),
    (["--lookback", "4", "--window", "2.5"], "argument --window: '2.5' is not a whole number"),
    (["--lookback", "2", "--gap", "3"], "lookback must be an integer >= gap (3), got 2"),
    (["--lookback", "4", "--min-probability", "2"],
     "argument --min-probability: '2' is not a probability in [0, 1]"),
    (["--lookback", "4", "--threshold", "nan"],
     "argument --threshold: 'nan' is not a probability in [0, 1]"),
])
def test_bad_options_exit_2_with_a_message(tmp_path, capsys, options, message):
    """An option's value argparse can check is refused by argparse, with the usage and
    the option's name (docs/bad-input.md); the others in one line."""
    path = tmp_path / "example.csv"
    EXAMPLE.to_csv(path, index=False)
    try:
        code, rows, err = run(capsys, path, "--live-pattern", "c", "--policy", "single",
                              "--archive-pattern", "a b", *options)
    except SystemExit as refused:  # argparse's usage and line
        (code, rows), err = (refused.code, []), capsys.readouterr().err
    assert code == 2 and rows == []
    assert err.splitlines()[-1] == f"probcep correlate: error: {message}"
    assert err.startswith("usage: ") == message.startswith("argument")


def test_a_parquet_output_holds_the_lines_fields(tmp_path, capsys):
    path = tmp_path / "streams.csv"
    _random_streams(3).to_csv(path, index=False)
    options = ["--live-pattern", "a b+ c", "--policy", "single", "--threshold", "0.01",
               "--window", "6", "--archive-pattern", "b b", "--lookback", "30"]
    code, lines, _ = run(capsys, path, *options)
    assert code == 0 and lines
    code, _, _ = run(capsys, path, *options, "-o", str(tmp_path / "rows.parquet"))
    assert code == 0
    table = pd.read_parquet(tmp_path / "rows.parquet")
    assert list(table.columns) == list(lines[0])
    got = [{k: (None if pd.isna(v) else v) for k, v in row.items()}
           for row in table.to_dict("records")]
    assert got == lines


@pytest.mark.parametrize(("option", "live", "archive"), [
    ("--live-pattern", "a d", "c"), ("--archive-pattern", "c", "a d"),
    ("--archive-pattern", "c", "a (")])
def test_a_bad_pattern_is_named_by_its_option(tmp_path, capsys, option, live, archive):
    path = tmp_path / "s.csv"
    EXAMPLE.to_csv(path, index=False)
    code, rows, err = run(capsys, path, "--live-pattern", live, "--policy", "single",
                          "--archive-pattern", archive, "--lookback", "4")
    assert code == 2 and rows == []
    assert err.startswith(f"probcep correlate: error: {option}: ")


def test_windows_no_match_fits_in_are_warned_of(tmp_path, capsys):
    """A valid query that can never match prints nothing: the warning says why."""
    path = tmp_path / "s.csv"
    EXAMPLE.to_csv(path, index=False)
    code, rows, err = run(capsys, path, "--live-pattern", "a b", "--policy", "single",
                          "--window", "1", "--archive-pattern", "b c", "--archive-window",
                          "1", "--lookback", "4")
    assert code == 0 and rows == []
    assert err.splitlines() == [
        f"probcep correlate: warning: {option}: the window of 1 is shorter than the shortest "
        f"match of {pattern!r} (2 timesteps): it can never match"
        for option, pattern in (("--window", "a b"), ("--archive-window", "b c"))]


def test_auto_builds_no_archive_bounds_when_nothing_could_be_pruned(tmp_path, capsys,
                                                                    monkeypatch):
    """At τ_C = 0 the bounds prune nothing: building them cost 17-31 s against 2 s on
    40,000 rows with a long archive window, for the same bytes."""
    from probcep.cli import correlate as command

    path = tmp_path / "example.csv"
    EXAMPLE.to_csv(path, index=False)
    options = ("--live-pattern", "a b* c", "--policy", "complete", "--window", "4",
               "--archive-pattern", "b", "--lookback", "3")
    _, want, _ = run(capsys, path, *options, "--min-probability", "0")

    def refuse(*args, **kwargs):
        raise AssertionError("archive bounds built at min probability 0")

    monkeypatch.setattr(command.ArchiveStats, "from_timeline", refuse)
    code, got, _ = run(capsys, path, *options, "--min-probability", "0")
    assert code == 0 and got == want and want


def test_an_archive_range_no_match_fits_in_is_warned_of(tmp_path, capsys):
    path = tmp_path / "s.csv"
    EXAMPLE.to_csv(path, index=False)
    options = ("--live-pattern", "a b* c", "--policy", "complete", "--window", "4",
               "--archive-pattern", "b b b")
    code, rows, err = run(capsys, path, *options, "--lookback", "3", "--gap", "2")
    assert code == 0 and rows and all(r["archive_probability"] == 0.0 for r in rows)
    assert err == ("probcep correlate: warning: --lookback 3 --gap 2: an archive range of 2 "
                   "timestep(s) is shorter than the shortest match of 'b b b' (3 timesteps): "
                   "the archive side is always 0\n")
    assert run(capsys, path, *options, "--lookback", "3", "--gap", "1")[2] == ""


def test_a_symbol_column_no_pattern_can_name_is_warned_of(tmp_path, capsys):
    """As `probcep group` warns (QA, 2026-11-27: `1x` was taken without a word)."""
    from probcep.cli import main

    path = tmp_path / "c.csv"
    path.write_text("stream_id,t,a,1x\ns,1,0.5,0.5\ns,2,0.5,0.5\n")
    assert main(["correlate", str(path), "--live-pattern", "a", "--archive-pattern", "a",
                 "--policy", "single", "--lookback", "2"]) == 0
    assert "symbol column(s) '1x' are not symbol names" in capsys.readouterr().err
