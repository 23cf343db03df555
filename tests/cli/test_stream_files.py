"""The Parquet reader that skips pandas gives the blocks and the errors of the pandas one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probcep.cli.stream_files import blocks_from_frame, read_blocks
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


@pytest.mark.parametrize("ids", [("a", "a\x00b"), ("", "\x00"), ("x\x00", "x")])
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
