"""The column writers of `probcep group` and `probcep approx` against the per-line
`json.dumps` they replace (kept here as the reference), byte for byte."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.cli import main
from probcep.cli.output import (
    group_lines,
    sorted_groups,
    write_groups,
    write_text,
)
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.errors import ProbcepError


def reference_lines(parts: dict[str, list[GroupColumns]]) -> str:
    """What `probcep group` wrote before the column writer: one dict and one json.dumps
    per group, sorted by (stream_id, t_start, t_first)."""
    rows = [{"stream_id": sid, **g.as_dict()} for sid, cols in parts.items()
            for part in cols for g in part.groups()]
    rows.sort(key=lambda r: (r["stream_id"], r["t_start"],
                             -1 if r["t_first"] is None else r["t_first"]))
    return "".join(json.dumps(r) + "\n" for r in rows)


stream_ids = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
floats = st.one_of(st.floats(0.0, 1.0), st.floats(1e-320, 1e-3),
                   st.sampled_from([0.0, 1.0, 1e-5, 1e-16, 5e-324, 0.1, 1 / 3]))


@st.composite
def group_columns(draw, single: bool):
    n = draw(st.integers(0, 6))
    starts = sorted(draw(st.lists(st.integers(-2 ** 40, 2 ** 40), min_size=n, max_size=n)))
    firsts = [NONE] * n if single else sorted(
        draw(st.lists(st.integers(-2 ** 40, 2 ** 40), min_size=n, max_size=n, unique=True)))
    ints = lambda: np.array(draw(st.lists(st.integers(0, 2 ** 63 - 1), min_size=n,  # noqa
                                          max_size=n)), np.int64)
    fl = lambda: np.array(draw(st.lists(floats, min_size=n, max_size=n)), np.float64)  # noqa
    return GroupColumns(np.array(starts, np.int64), np.array(firsts, np.int64), ints(),
                        fl(), ints(), fl())


@st.composite
def parts(draw):
    single = draw(st.booleans())
    ids = draw(st.lists(stream_ids, max_size=4, unique=True))
    return {sid: draw(st.lists(group_columns(single), min_size=1, max_size=3)) for sid in ids}


@settings(max_examples=100, deadline=None)
@given(parts())
def test_json_lines_are_those_of_json_dumps(groups):
    text = b"".join(chunk for sid, cols in sorted_groups(groups)
                    for chunk in group_lines(sid, cols)).decode("ascii")
    assert text == reference_lines(groups)


def test_non_finite_probabilities_fall_back_to_json_dumps(tmp_path):
    cols = GroupColumns(np.array([1, 2]), np.array([NONE, NONE]), np.array([3, 4]),
                        np.array([np.nan, np.inf]), np.array([1, 1]), np.array([0.5, 0.5]))
    path = tmp_path / "g.jsonl"
    write_groups(sorted_groups({"s": [cols]}), path)
    assert path.read_text() == reference_lines({"s": [cols]})


def test_parquet_output_holds_the_json_lines(tmp_path, capsys):
    rng = np.random.default_rng(3)
    frames = []
    for k in range(2):
        p = rng.dirichlet(np.full(3, 0.4), size=300)
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(300),
                                    "a": p[:, 0], "b": p[:, 1], "c": 1.0 - p[:, 0] - p[:, 1]}))
    data = tmp_path / "in.parquet"
    pd.concat(frames).to_parquet(data)
    for policy in ("single", "complete"):
        opts = ["--pattern", "a b+ c", "--policy", policy, "--threshold", "0.01",
                "--window", "8"]
        assert main(["group", str(data), *opts]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        out = tmp_path / f"{policy}.parquet"
        assert main(["group", str(data), *opts, "-o", str(out)]) == 0
        table = pd.read_parquet(out)
        table["t_first"] = table["t_first"].astype(object).where(table["t_first"].notna(), None)
        assert lines and table.to_dict("records") == lines


def test_many_floats_are_written_as_repr():
    """Arrow's float formatting with `repr` where it writes differently, on floats of
    every size a probability takes (more than hypothesis draws)."""
    rng = np.random.default_rng(17)
    x = np.concatenate([rng.random(4000), rng.random(4000) ** 12,
                        10.0 ** rng.uniform(-323, 0, 4000), [0.0, 1.0, 1e-4, 5e-324]])
    n = len(x)
    cols = GroupColumns(np.arange(n), np.full(n, NONE), np.arange(n) + 3, x,
                        np.ones(n, np.int64), x[::-1].copy())
    text = b"".join(chunk for sid, c in sorted_groups({"s": [cols]})
                    for chunk in group_lines(sid, c)).decode("ascii")
    assert text == reference_lines({"s": [cols]})


def test_a_file_is_written_whole_or_left_as_it_was(tmp_path):
    out = tmp_path / "groups.jsonl"
    out.write_text("before\n")

    def failing():
        yield "first line\n"
        raise ProbcepError("the engine stopped")

    with pytest.raises(ProbcepError):
        write_text(failing(), out)
    assert out.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    write_text(["after\n"], link)
    assert link.is_symlink() and out.read_text() == "after\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl", "link.jsonl"]


def test_an_earlier_file_is_moved_aside_not_renamed_over(tmp_path, monkeypatch):
    """The finished file never replaces an existing one by one rename (on ext4 that
    starts writing it to disk on the spot); a failed move puts the earlier one back."""
    out = tmp_path / "groups.jsonl"
    out.write_text("before\n")
    renames = []
    real = os.rename

    def rename(src, dst):
        renames.append((Path(src).name, Path(dst).name, Path(dst).exists()))
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "replace", None)  # not used
    write_text(["after\n"], out)
    assert out.read_text() == "after\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]
    assert not any(exists for _, _, exists in renames) and len(renames) == 2

    def failing(src, dst):
        if str(src).endswith(".partial"):
            raise OSError(errno.EXDEV, "cross-device link")
        real(src, dst)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(OSError, match="cross-device"):  # not one `writing` words
        write_text(["later\n"], out)
    assert out.read_text() == "after\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]
    monkeypatch.setattr(os, "rename", real)
    write_text(["new\n"], tmp_path / "new.jsonl")  # nothing to move aside
    assert (tmp_path / "new.jsonl").read_text() == "new\n"


@pytest.mark.parametrize("after", [1, 2])
def test_a_sigterm_right_after_either_rename_leaves_the_earlier_file(tmp_path, monkeypatch,
                                                                     after):
    """A SIGTERM is raised between any two bytecodes: one right after the earlier file
    was renamed aside left no OUTPUT at all, the earlier one hidden as `.NAME.PID.old`
    (QA, 2026-11-27)."""
    out = tmp_path / "groups.jsonl"
    out.write_text("before\n")
    real, calls = os.rename, []

    def rename(src, dst):
        real(src, dst)
        calls.append(src)
        if len(calls) == after:
            raise KeyboardInterrupt  # a BaseException, as `Terminated` is

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        write_text(["after\n"], out)
    assert out.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]
