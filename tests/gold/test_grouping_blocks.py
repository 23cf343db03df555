"""The executor side of the Spark grouping, without Spark: silver packed into blocks in
any row order, blocks arriving in any order, give the engine's groups and states."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from probcep.engine import StreamMatcher
from probcep.gold.grouping import group_partition, pack_blocks
from probcep.registry import parse_entry

DOMAIN = ("a", "b", "c")
PATTERNS = [parse_entry("abc", {"pattern": "a b+ c", "policy": "complete",
                                "threshold": 0.01, "window": 10}, DOMAIN)]
_NO_STATE = {"pattern": pa.nulls(0, pa.string()), "pattern_version": pa.nulls(0, pa.string()),
             "next_t": pa.nulls(0, pa.int64()), "state": pa.nulls(0, pa.binary())}


def _silver(n_streams=3, length=400, seed=1) -> pa.Table:
    rng = np.random.default_rng(seed)
    parts = []
    for k in range(n_streams):
        p = rng.dirichlet(np.full(3, 0.5), size=length)
        parts.append(pa.table({"stream_id": [f"s{k}"] * length,
                               "t": np.arange(length, dtype=np.int64) + 5 * k,
                               **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pa.concat_tables(parts)


def _direct(silver: pa.Table) -> list[tuple]:
    rows = []
    for sid in sorted(set(silver["stream_id"].to_pylist())):
        part = silver.filter(pc.equal(silver["stream_id"], sid)).sort_by("t")
        m = StreamMatcher(PATTERNS[0].query)
        probs = np.column_stack([part[d].to_numpy() for d in DOMAIN])
        rows += [(sid, g.t_start, g.t_end, g.probability)
                 for g in m.feed(part["t"][0].as_py(), probs)]
    return sorted(rows)


def _partition(silver: pa.Table, batch_rows: int, rng) -> pa.Table:
    batches = silver.to_batches(max_chunksize=batch_rows)
    blocks = pa.Table.from_batches([pack_blocks(b, DOMAIN) for b in batches])
    blocks = blocks.take(rng.permutation(blocks.num_rows))
    return pa.concat_tables([blocks, pa.table({"stream_id": pa.nulls(0, pa.string()),
                                               **_NO_STATE})],
                            promote_options="default")


@pytest.mark.parametrize("shuffle_rows", [False, True])
def test_blocks_in_any_order_give_the_engines_groups(shuffle_rows):
    rng = np.random.default_rng(3)
    silver = _silver()
    expected = _direct(silver)
    assert expected
    if shuffle_rows:
        silver = silver.take(rng.permutation(silver.num_rows))
    out = group_partition(_partition(silver, 97, rng), PATTERNS, DOMAIN, final=False)
    groups = out.filter(pc.equal(out["kind"], "group"))
    got = sorted(zip(groups["stream_id"].to_pylist(), groups["t_start"].to_pylist(),
                     groups["t_end"].to_pylist(), groups["probability"].to_pylist()))
    assert got == expected
    states = out.filter(pc.equal(out["kind"], "state"))
    assert sorted(states["stream_id"].to_pylist()) == ["s0", "s1", "s2"]


def test_a_gap_in_a_stream_is_refused():
    silver = _silver(n_streams=1)
    holed = silver.filter(pc.not_equal(silver["t"], 100))
    with pytest.raises(ValueError, match="gap in t after t=99"):
        group_partition(_partition(holed, 50, np.random.default_rng(0)), PATTERNS, DOMAIN,
                        final=False)
