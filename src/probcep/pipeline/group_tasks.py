"""Run the engine per stream on Spark executors: one batch of silver plus saved states in,
final groups and new states out.

Streams are independent, so they are the unit of parallelism. Silver stays where it is:
the driver cuts the stream ids into contiguous ranges of about equal rows from the
Parquet footers, and each Spark task reads its range straight from the batch's files
with pyarrow (`probcep.lake.stream_ranges`) and runs every pattern over every stream of it,
resuming from the saved states the driver sends along. Each task writes its output as
one Arrow IPC file into a staging folder that the driver then reads back (memory-mapped
where local), so Spark only schedules and retries the tasks: it never converts a silver
row or a group, which would cost more than the engine's work (see
`benchmarks/grouping_job.py`).

One output table carries both kinds of rows (`kind` = "group" or "state") so the batch
is read once; the caller splits it and writes each to its Delta table."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from probcep.config.registry import RegisteredPattern
from probcep.engine import StreamMatcher
from probcep.engine.grouping import GroupColumns
from probcep.engine.overlap import NONE
from probcep.engine.runs import RunLimitError
from probcep.errors import InputError
from probcep.lake.stream_ranges import StreamRange, Streams, located, plan_ranges

#: Labels repeat over many rows, so they travel dictionary-encoded.
LABEL = pa.dictionary(pa.int32(), pa.string())
#: What a grouping pass returns, per row; `state` is null on group rows and vice versa.
OUTPUT = pa.schema([
    ("kind", LABEL), ("pattern", LABEL), ("pattern_version", LABEL),
    ("stream_id", LABEL), ("t_start", pa.int64()), ("t_first", pa.int64()),
    ("t_end", pa.int64()), ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()), ("next_t", pa.int64()), ("state", pa.binary()),
])
KINDS = pa.array(["group", "state"])
#: Saved engine states as the grouping reads them (one row per pattern version and stream).
SAVED_STATES = pa.schema([("pattern", pa.string()), ("pattern_version", pa.string()),
                    ("stream_id", pa.string()), ("next_t", pa.int64()),
                    ("state", pa.binary())])
#: Output rows per record batch of a task's staged output.
BLOCK_ROWS = 1 << 16


def group_streams(streams: Streams, states: pa.Table, patterns: list[RegisteredPattern],
                  final: bool, silence: np.ndarray | None = None,
                  until: int | None = None, keep_quiet: bool = False) -> pa.Table:
    """All patterns over every stream of `streams` and of `states`. One transducer per
    pattern serves all the streams, so composite states are built once per task, not
    once per stream; each stream's rows are assembled once for all patterns.

    silence: the distribution of a timestep with no reading (silver keeps only
        timesteps with readings; the gap policy says what the others hold). Between a
        stream's runs, and from its last run to `until`, the engine steps over the
        silence (in O(1) once nothing is open). None: every stream must be gap-free.
    until: the batch covers timesteps before it: streams with saved state and no rows
        are advanced through silence to it too.
    final: the batch ends the streams, so every open group is emitted and no state kept.
        Otherwise a stream's state is kept unless it is the state of a fresh matcher
        (nothing open, and the silence to come changes nothing).
    keep_quiet: keep those states too (live mode, in the middle of a day: the night keeps
        a stream's matcher through the whole day, so its saved state is the same).
    Returns rows of the output schema, built column-wise (no Python object per group).
    """
    where = {sid: i for i, sid in enumerate(streams.ids)}
    saved = {(sid, p, v): b for sid, p, v, b in zip(
        states["stream_id"].to_pylist(), states["pattern"].to_pylist(),
        states["pattern_version"].to_pylist(), states["state"].to_pylist())}
    ids = sorted(set(where) | {k[0] for k in saved})
    shared = [StreamMatcher(entry.query).transducer for entry in patterns]
    found: list[GroupColumns] = []
    owner: list[tuple[int, int, int]] = []  # (stream, pattern, groups) per part of `found`
    kept: list[tuple[int, int, int, bytes]] = []  # (stream, pattern, next_t, state)
    for i, sid in enumerate(ids):
        runs = streams.runs(where[sid]) if sid in where else []
        for j, entry in enumerate(patterns):
            blob = saved.get((sid, entry.name, entry.version))
            matcher = (StreamMatcher(entry.query, shared[j]) if blob is None
                       else StreamMatcher.from_bytes(entry.query, blob, shared[j]))
            parts = advance_matcher(matcher, runs, silence, until, sid, entry.name)
            if final:
                parts.append(matcher.finish_columns())
            elif matcher.next_t is not None and (keep_quiet or not (
                    silence is not None and matcher.quiet(silence))):
                kept.append((i, j, matcher.next_t, matcher.to_bytes()))
            found += parts
            owner += [(i, j, len(p)) for p in parts]
    return pa.concat_tables([group_output(found, owner, ids, patterns),
                             state_output(kept, ids, patterns)])


def advance_matcher(matcher: StreamMatcher, runs, silence, until, sid: str,
                    pattern: str) -> list[GroupColumns]:
    """One stream's runs through one matcher, with the silences between them and after
    the last up to `until`; the groups that became final. An error names the stream (and
    a query outgrowing its runs the pattern: the registry entry to change)."""
    parts = []
    try:
        for t, probs in runs:
            if silence is not None and matcher.next_t is not None and t > matcher.next_t:
                parts.append(matcher.feed_silence(matcher.next_t, t - matcher.next_t,
                                                  silence))
            parts.append(matcher.feed_columns(t, probs))
        if (silence is not None and until is not None and matcher.next_t is not None
                and until > matcher.next_t):
            parts.append(matcher.feed_silence(matcher.next_t, until - matcher.next_t,
                                              silence))
    except InputError as exc:
        raise InputError(f"stream {sid!r}: {exc}") from exc
    except RunLimitError as exc:
        raise RunLimitError(f"pattern {pattern!r}, stream {sid!r}: {exc}") from exc
    return parts


def _labels(kind: int, ids: list[str], patterns, stream: np.ndarray,
            pattern: np.ndarray) -> dict:
    """The label columns of output rows, from stream and pattern indexes."""
    def label(idx, values):
        return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()),
                                              pa.array(values, pa.string()))
    return {"kind": label(np.full(len(stream), kind, np.int32), KINDS),
            "pattern": label(pattern, [p.name for p in patterns]),
            "pattern_version": label(pattern, [p.version for p in patterns]),
            "stream_id": label(stream, ids)}


def group_output(found: list[GroupColumns], owner, ids, patterns) -> pa.Table:
    """Output rows of the groups in `found`; `owner`: (stream index into `ids`, pattern
    index, groups) per part of `found`."""
    if not found:
        return OUTPUT.empty_table()
    g = GroupColumns.concat(found)
    n = len(g)
    counts = np.array([c for _, _, c in owner], np.int64)
    stream = np.repeat(np.array([i for i, _, _ in owner], np.int32), counts)
    pattern = np.repeat(np.array([j for _, j, _ in owner], np.int32), counts)
    return pa.table({
        **_labels(0, ids, patterns, stream, pattern),
        "t_start": g.t_start, "t_first": pa.array(g.t_first, mask=g.t_first == NONE),
        "t_end": g.t_end, "probability": g.probability, "n_matches": g.n_matches,
        "max_match_probability": g.max_match_probability,
        "next_t": pa.nulls(n, pa.int64()), "state": pa.nulls(n, pa.binary()),
    }, schema=OUTPUT)


def state_output(kept, ids, patterns) -> pa.Table:
    """Output rows of saved states; `kept`: (stream index into `ids`, pattern index,
    next_t, state) per state."""
    n = len(kept)
    if not n:
        return OUTPUT.empty_table()
    stream, pattern, next_t, blobs = (list(c) for c in zip(*kept))
    nulls = {name: pa.nulls(n, OUTPUT.field(name).type) for name in OUTPUT.names}
    return pa.table({**nulls, **_labels(1, ids, patterns, np.array(stream, np.int32),
                                        np.array(pattern, np.int32)),
                     "next_t": pa.array(next_t, pa.int64()),
                     "state": pa.array(blobs, pa.binary())}, schema=OUTPUT)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def _unipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


def _stage(table: pa.Table, staging: str) -> str:
    """Writes a task's output as an Arrow IPC file in the staging folder; returns its
    path. A unique name per attempt: a retried task never meets its failed attempt."""
    fs, (folder,) = located([staging])
    path = f"{folder}/part-{uuid.uuid4().hex}.arrow"
    with fs.open_output_stream(path) as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table, max_chunksize=BLOCK_ROWS)
    return path


def _unstage(path: str, staging: str) -> pa.Table:
    """A staged output file, memory-mapped where the folder is local (no copy)."""
    fs, _ = located([staging])
    return pa.ipc.open_file(fs.open_input_file(path)).read_all()


def run_grouping(spark, files: list[str], states: pa.Table,
                 patterns: list[RegisteredPattern], domain, staging: str,
                 final: bool = False, tasks: int | None = None,
                 silence: np.ndarray | None = None, until: int | None = None) -> pa.Table:
    """Spark: every pattern over every stream of a batch, one task per stream range.

    files: the batch's silver as Parquet files (`stream_id`, `t`, the domain's columns);
        none (a day of silence): the saved states are advanced on the driver, no Spark.
    states: saved states (SAVED_STATES columns; other pattern versions are ignored).
    staging: an empty folder (path or URI) that the executors and the driver reach; each
        task writes its output there as one Arrow IPC file, which the driver reads back,
        so no result travels through Spark. The caller removes the folder.
    tasks: how many stream ranges (default: Spark's default parallelism).
    silence, until: timesteps with no reading and how far the batch reaches (see
        `group_streams`).
    Returns the groups and new states as one table of the output schema.
    """
    domain = tuple(domain)
    versions = {(p.name, p.version) for p in patterns}
    states = states.select(SAVED_STATES.names).cast(SAVED_STATES)
    mine = [(p, v) in versions for p, v in zip(states["pattern"].to_pylist(),
                                               states["pattern_version"].to_pylist())]
    states = states.filter(pa.array(mine, pa.bool_()))
    if not files:
        return group_streams(Streams.of(pa.table({"stream_id": pa.array([], pa.string()),
                                                  "t": pa.array([], pa.int64())}), domain),
                             states, patterns, final, silence, until)
    ranges = plan_ranges(files, tasks or spark.sparkContext.defaultParallelism)
    plan = [(r.lo, r.hi, paths, _ipc(states.filter(r.expression()))) for r, paths in ranges]
    staging = str(staging) if "://" in str(staging) else str(Path(staging).resolve())
    fs, (folder,) = located([staging])
    fs.create_dir(folder, recursive=True)

    def run(part):
        for lo, hi, paths, blob in part:
            out = group_streams(Streams.read(paths, domain, StreamRange(lo, hi)),
                                _unipc(blob), patterns, final, silence, until)
            yield _stage(out, staging)

    written = spark.sparkContext.parallelize(plan, len(plan)).mapPartitions(run).collect()
    return pa.concat_tables([OUTPUT.empty_table(),
                             *(_unstage(path, staging) for path in written)])
