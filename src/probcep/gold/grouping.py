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
import pandas as pd

from probcep.engine import StreamMatcher
from probcep.registry import RegisteredPattern

#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT_SCHEMA = (
    "kind string, pattern string, pattern_version string, stream_id string, "
    "t_start long, t_first long, t_end long, probability double, n_matches long, "
    "max_match_probability double, next_t long, state binary"
)
STATE_SCHEMA = "pattern string, pattern_version string, stream_id string, next_t long, " \
               "state binary"
_COLUMNS = [c.split()[0] for c in OUTPUT_SCHEMA.split(", ")]


def group_stream(rows: pd.DataFrame, states: pd.DataFrame, patterns: list[RegisteredPattern],
                 domain: tuple[str, ...], final: bool) -> pd.DataFrame:
    """All patterns over one stream's batch, resumed from its saved states.

    rows: `stream_id`, `t` and one probability column per domain symbol (any order).
    states: rows of STATE_SCHEMA for this stream (at most one per pattern version).
    final: the batch ends the stream, so every open group is emitted and no state kept.
    """
    if len(rows):
        stream_id = str(rows["stream_id"].iloc[0])
    elif len(states):
        stream_id = str(states["stream_id"].iloc[0])
    else:
        return pd.DataFrame(columns=_COLUMNS)
    rows = rows.sort_values("t")
    t = rows["t"].to_numpy(np.int64)
    if len(t) and (np.diff(t) != 1).any():
        k = int(np.flatnonzero(np.diff(t) != 1)[0])
        raise ValueError(f"stream {stream_id!r}: gap in t after t={t[k]} (next t={t[k + 1]})")
    probs = rows[list(domain)].to_numpy(np.float64)
    saved = {(s.pattern, s.pattern_version): bytes(s.state) for s in states.itertuples()}
    out = []
    for entry in patterns:
        blob = saved.get((entry.name, entry.version))
        matcher = (StreamMatcher(entry.query) if blob is None
                   else StreamMatcher.from_bytes(entry.query, blob))
        groups = matcher.feed(int(t[0]), probs) if len(t) else []
        if final:
            groups += matcher.finish()
        for g in groups:
            out.append(("group", entry.name, entry.version, stream_id, g.t_start, g.t_first,
                        g.t_end, g.probability, g.n_matches, g.max_match_probability,
                        None, None))
        if not final and matcher.next_t is not None:
            out.append(("state", entry.name, entry.version, stream_id, None, None, None, None,
                        None, None, matcher.next_t, matcher.to_bytes()))
    frame = pd.DataFrame(out, columns=_COLUMNS)
    for col in ("t_start", "t_first", "t_end", "n_matches", "next_t"):
        frame[col] = frame[col].astype("Int64")
    return frame


def run_grouping(silver, states, patterns: list[RegisteredPattern], domain, final=False):
    """Spark: co-group silver and states by stream and run `group_stream` on executors.

    silver: DataFrame with `stream_id`, `t` and the domain's probability columns.
    states: DataFrame of STATE_SCHEMA (may be empty). Returns a DataFrame of OUTPUT_SCHEMA.
    """
    domain = tuple(domain)
    versions = {(p.name, p.version) for p in patterns}
    columns = ["stream_id", "t", *domain]

    def per_stream(rows: pd.DataFrame, saved: pd.DataFrame) -> pd.DataFrame:
        saved = saved[[(p, v) in versions for p, v in zip(saved["pattern"],
                                                          saved["pattern_version"])]]
        return group_stream(rows, saved, patterns, domain, final)

    return (silver.select(*columns).groupBy("stream_id")
            .cogroup(states.groupBy("stream_id"))
            .applyInPandas(per_stream, schema=OUTPUT_SCHEMA))
