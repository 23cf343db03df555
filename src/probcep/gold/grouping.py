"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism: silver rows and saved
engine states are co-grouped by `stream_id`, and each executor task runs every
registered pattern over its stream with `StreamMatcher`, resuming from the saved state.
One output DataFrame carries both kinds of rows (`kind` = "group" or "state") so the
batch is read once; the caller splits it and writes each to its Delta table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from probcep.engine import StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.registry import RegisteredPattern

#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT_SCHEMA = (
    "kind string, pattern string, pattern_version string, stream_id string, "
    "t_start long, t_first long, t_end long, probability double, n_matches long, "
    "max_match_probability double, next_t long, state binary"
)
STATE_SCHEMA = "pattern string, pattern_version string, stream_id string, next_t long, " \
               "state binary"
_OUTPUT = pa.schema([
    ("kind", pa.string()), ("pattern", pa.string()), ("pattern_version", pa.string()),
    ("stream_id", pa.string()), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()), ("next_t", pa.int64()), ("state", pa.binary()),
])


def group_stream(rows: pa.Table, states: pa.Table, patterns: list[RegisteredPattern],
                 domain: tuple[str, ...], final: bool) -> pa.Table:
    """All patterns over one stream's batch, resumed from its saved states.

    rows: `stream_id`, `t` and one probability column per domain symbol (any order).
    states: rows of STATE_SCHEMA for this stream (at most one per pattern version).
    final: the batch ends the stream, so every open group is emitted and no state kept.
    Returns rows of OUTPUT_SCHEMA, built column-wise (no Python object per group).
    """
    if rows.num_rows:
        stream_id = rows["stream_id"][0].as_py()
    elif states.num_rows:
        stream_id = states["stream_id"][0].as_py()
    else:
        return _OUTPUT.empty_table()
    rows = rows.sort_by("t")
    t = rows["t"].to_numpy()
    if len(t) and (np.diff(t) != 1).any():
        k = int(np.flatnonzero(np.diff(t) != 1)[0])
        raise ValueError(f"stream {stream_id!r}: gap in t after t={t[k]} (next t={t[k + 1]})")
    probs = np.column_stack([rows[d].to_numpy() for d in domain]) if len(t) else None
    saved = {(p, v): b for p, v, b in zip(states["pattern"].to_pylist(),
                                           states["pattern_version"].to_pylist(),
                                           states["state"].to_pylist())}
    parts = []
    for entry in patterns:
        blob = saved.get((entry.name, entry.version))
        matcher = (StreamMatcher(entry.query) if blob is None
                   else StreamMatcher.from_bytes(entry.query, blob))
        found = [matcher.feed_columns(int(t[0]), probs)] if len(t) else []
        if final:
            found.append(matcher.finish_columns())
        if found:
            parts.append(_group_rows(GroupColumns.concat(found), entry, stream_id))
        if not final and matcher.next_t is not None:
            parts.append(_state_row(entry, stream_id, matcher))
    return pa.concat_tables(parts) if parts else _OUTPUT.empty_table()


def _group_rows(g: GroupColumns, entry: RegisteredPattern, stream_id: str) -> pa.Table:
    n = len(g)
    return pa.table({
        "kind": pa.array(["group"] * n, pa.string()),
        "pattern": pa.array([entry.name] * n, pa.string()),
        "pattern_version": pa.array([entry.version] * n, pa.string()),
        "stream_id": pa.array([stream_id] * n, pa.string()),
        "t_start": g.t_start, "t_first": pa.array(g.t_first, mask=g.t_first == NONE),
        "t_end": g.t_end, "probability": g.probability, "n_matches": g.n_matches,
        "max_match_probability": g.max_match_probability,
        "next_t": pa.nulls(n, pa.int64()), "state": pa.nulls(n, pa.binary()),
    }, schema=_OUTPUT)


def _state_row(entry: RegisteredPattern, stream_id: str, matcher: StreamMatcher) -> pa.Table:
    row = {name: [None] for name in _OUTPUT.names}
    row.update(kind=["state"], pattern=[entry.name], pattern_version=[entry.version],
               stream_id=[stream_id], next_t=[matcher.next_t], state=[matcher.to_bytes()])
    return pa.table(row, schema=_OUTPUT)


def run_grouping(silver, states, patterns: list[RegisteredPattern], domain, final=False):
    """Spark: co-group silver and states by stream and run `group_stream` on executors.

    silver: DataFrame with `stream_id`, `t` and the domain's probability columns.
    states: DataFrame of STATE_SCHEMA (may be empty). Returns a DataFrame of OUTPUT_SCHEMA.
    """
    domain = tuple(domain)
    versions = {(p.name, p.version) for p in patterns}
    columns = ["stream_id", "t", *[f"`{d}`" for d in domain]]

    def per_stream(rows: pa.Table, saved: pa.Table) -> pa.Table:
        mine = [(p, v) in versions for p, v in zip(saved["pattern"].to_pylist(),
                                                   saved["pattern_version"].to_pylist())]
        return group_stream(rows, saved.filter(pa.array(mine, pa.bool_())), patterns,
                            domain, final)

    return (silver.select(*columns).groupBy("stream_id")
            .cogroup(states.groupBy("stream_id"))
            .applyInArrow(per_stream, schema=OUTPUT_SCHEMA))
