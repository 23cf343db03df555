"""Approximate patterns of a day (docs/semantics.md §7), run by `group-day`.

For a registry entry with `max_errors`, a day of silver becomes a deterministic event
stream per stream id (the most likely symbol at each stored timestep, tag = t); the executors
run ACEP (or RC-ACEP under the entry's budget, with the history policy) per stream, and
the matches and bundles land in gold tables. The learned history lives in the lake, one
row per pattern version and day: each night starts from the previous night's history,
and afterwards the driver refreshes it with an unbudgeted run over a bounded sample of
the night's streams (the seed learns from history; a sample keeps the driver small).

Each day is matched on its own: a match whose events straddle midnight is not found.
"""

from __future__ import annotations

import datetime as dt
import functools
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.config.registry import RegisteredApprox
from probcep.errors import ProbcepError, warn
from probcep.lake.locks import slice_lock
from probcep.lake.spark import literal
from probcep.lake.tables import APPROX_BUNDLES, APPROX_HISTORY, APPROX_MATCHES
from probcep.pipeline.context import RunContext, pattern_versions
from probcep.pipeline.group_day import RESUME_ATTEMPTS, RUN_KEYS, latest_runs

APPROX_TABLES = (APPROX_MATCHES, APPROX_BUNDLES, APPROX_HISTORY)

#: Counts of subsequences grow as 2^window; stored ones stop here, as `n_matches` does.
INT64_MAX = 2 ** 63 - 1
_OUT = ("kind string, pattern string, pattern_version string, stream_id string, "
        "a long, b long, c long, d long, e long")


def most_likely_symbols(silver, domain):
    """Spark: (stream_id, t, symbol) with the most probable symbol (first on ties)."""
    from pyspark.sql import functions as F

    best = F.greatest(*[F.col(f"`{d}`") for d in domain])
    symbol = F.coalesce(*[F.when(F.col(f"`{d}`") == best, F.lit(d)) for d in domain])
    return silver.select("stream_id", "t", symbol.alias("symbol"))


def load_history(lake_root, entry: RegisteredApprox, day: dt.date):
    """The history saved after the latest day before `day`, or a fresh one. The days
    are found from the `batch_date` column alone, and only the latest day's history is
    read: a history grows with what it learned, and every night reading every earlier
    night's history read the table's whole size (QA, 2026-11-28: 1.6 MB a night after
    50 nights of six streams, growing with the square of the nights)."""
    from probcep.engine.approx import History

    keys = [("pattern", "=", entry.name), ("pattern_version", "=", entry.version)]
    days = APPROX_HISTORY.read(lake_root, [*keys, ("batch_date", "<", day)],
                               columns=["batch_date"])["batch_date"]
    if not len(days):
        return History(entry.window)
    saved = pc.max(days).as_py()
    latest = APPROX_HISTORY.read(lake_root, [*keys, ("batch_date", "=", saved)],
                                 columns=["history"])
    history = pickle.loads(latest["history"][0].as_py())  # our own lake's bytes
    if history.ids_lost:  # resumed, it would steer the budget by other vectors' values
        warn(f"{entry.name} (version {entry.version}): the approximate history saved on "
             f"{saved} was written by probcep before 2026-11-26 and is keyed by numbers "
             f"no automaton can map, so {day} starts from an empty history, as a new "
             f"version does (`probcep rerun --from {pc.min(days).as_py()} --to {day}` "
             "learns the entry's histories again)")
        return History(entry.window)
    return history


@functools.lru_cache(maxsize=64)
def _automaton(pattern: str, max_errors: int, domain: tuple):
    """One error automaton per pattern in a process, shared by the streams it matches
    (as `probcep approx` shares it: its output does not depend on what else it met).
    Built per stream, it was most of a stream's cost: a night of 20,000 small streams
    took 6:36 with one approximate pattern, 2:46 without (QA, 2026-11-27)."""
    from probcep.engine.approx import ErrorAutomaton

    return ErrorAutomaton.build(pattern, max_errors, domain)


def _match_stream(events, entries, domain, histories):
    """Executor side: every approx entry over one stream's events."""
    import pandas as pd

    from probcep.engine.approx import Budget, make_policy, run_stream

    order = events["t"].to_numpy().argsort(kind="stable")
    sid = str(events["stream_id"].iloc[0])
    symbols = events["symbol"].to_numpy()[order].tolist()
    tags = events["t"].to_numpy()[order].tolist()
    rows = []
    for entry in entries:
        ea = _automaton(entry.pattern, entry.max_errors, tuple(domain))
        budget = policy = None
        if entry.budget is not None:
            budget = Budget(entry.budget)
            policy = make_policy("history", history=pickle.loads(histories[entry.name]))
        result = run_stream(ea, entry.window, symbols, tags, budget=budget, policy=policy,
                            stream_id=sid)
        # one row per (first event, last event, errors): the engine keeps a class per
        # automaton state too, and two states can end one match at the same errors
        classes: dict = {}
        for m in result.matches:
            key = (m.start, m.position, m.errors)
            tally = classes.setdefault(key, [m, 0])  # the first class met, and the sum
            tally[1] += m.count
        for m, count in classes.values():
            rows.append(("match", entry.name, entry.version, sid, m.start_tag, m.match_point,
                         m.errors, min(count, INT64_MAX), None))
        for b in result.bundles:
            rows.append(("bundle", entry.name, entry.version, sid, b.bundle_id, b.first_point,
                         b.last_point, min(b.n_matches, INT64_MAX), b.min_errors))
    return pd.DataFrame(rows, columns=[c.split()[0] for c in _OUT.split(", ")])


def _match_partition(batches, entries, domain, histories):
    """Executor side: the streams of a partition whose rows come sorted by stream and t,
    in Arrow batches that may cut a stream (its pieces wait for its end). One call per
    partition, not per stream as `applyInPandas` makes: for small streams its per-group
    cost was most of the step's."""
    import pandas as pd

    pending: list = []  # the pieces of the stream not known to have ended

    def flush():
        rows = _match_stream(pd.concat(pending) if len(pending) > 1 else pending[0],
                             entries, domain, histories)
        pending.clear()
        return rows

    for batch in batches:
        ids = batch["stream_id"].to_numpy()
        cuts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(ids)]
        out = []
        for lo, hi in zip(cuts, cuts[1:]):
            if lo == hi:  # an empty batch
                continue
            if pending and pending[0]["stream_id"].iat[0] != ids[lo]:
                out.append(flush())
            pending.append(batch.iloc[lo:hi])
        out = [rows for rows in out if len(rows)]
        if out:
            yield pd.concat(out, ignore_index=True)
    if pending:
        yield flush()


def approx_day(ctx: RunContext, day: dt.date, train_streams: int = 20) -> dict:
    """Match a day of silver for the run's approximate patterns; write matches, bundles
    and histories. The events are silver's rows: a timestep with no reading is no event
    (skip-till-any-match would skip it anyway), a held one (`hold_last`) is. A day of
    silence has no matches and learns nothing: it saves no history, so the next day
    starts from the one before.

    The day starts from the history an earlier day learned, which a rerun of that day
    may replace meanwhile (docs/pipeline.md §11); as `group_exact` does for states, the
    day looks again once its commits are in and matches again from the new history if
    it changed. Runs of the same day and entries take turns (one lock over the three
    tables' slices, from the history read to the last commit).
    Returns the counts, whether any row changed, and whether the day was silent."""
    names = [e.name for e in ctx.approximate]
    changed = False
    with slice_lock(ctx.lake, APPROX_TABLES, day, {"pattern": names}):
        for _ in range(RESUME_ATTEMPTS):
            resumed = resumed_history(ctx.lake, ctx.approximate, day)
            found = _match_day(ctx, day, train_streams)
            changed |= found["changed"]
            if found["silent"] or resumed_history(ctx.lake, ctx.approximate, day) == resumed:
                return {**found, "changed": changed}
            ctx.echo(f"{day}: the approximate histories it resumed from were replaced while "
                     "it ran (a rerun of an earlier day): matching it again from the new ones")
    raise ProbcepError(f"{day}: the approximate histories it resumes from were replaced "
                       f"{RESUME_ATTEMPTS} times while it ran (by a rerun of an earlier "
                       "day): run it again once the rerun is done")


def resumed_history(lake_root, entries: list[RegisteredApprox], day: dt.date) -> frozenset:
    """Per entry version, the day before `day` whose history it starts from (the
    latest saved) and the run that saved it: what a rerun of that day changes."""
    rows = APPROX_HISTORY.read(lake_root, [("pattern", "in", [e.name for e in entries]),
                                           ("batch_date", "<", day)], columns=list(RUN_KEYS))
    return latest_runs([rows], entries)


def _match_day(ctx: RunContext, day: dt.date, train_streams: int) -> dict:
    """One pass of `approx_day`: match, learn and commit."""
    lake_root, entries, run_id = ctx.lake, ctx.approximate, ctx.run_id
    domain = tuple(ctx.domain)
    files = ctx.source.files(day)
    meta = ctx.commit_meta(batch_date=day.isoformat(),
                           pattern_versions=pattern_versions(entries))
    names = [e.name for e in entries]
    if not files:  # a history saved for the day before a fix made it silent goes too
        changed = _write(ctx, day, APPROX_MATCHES.schema.empty_table(),
                         APPROX_BUNDLES.schema.empty_table(), meta)
        changed |= APPROX_HISTORY.replace_day(lake_root, day, APPROX_HISTORY.schema
                                              .empty_table(), meta, pattern=names)
        return {"matches": 0, "bundles": 0, "changed": changed, "silent": True}
    spark = ctx.spark
    silver = spark.read.parquet(*map(literal, files)).select(
        "stream_id", "t", *[f"`{d}`" for d in domain])
    histories = {e.name: pickle.dumps(load_history(lake_root, e, day)) for e in entries}
    events = most_likely_symbols(silver, domain)
    out = (events.repartition("stream_id").sortWithinPartitions("stream_id", "t")
           .mapInPandas(functools.partial(_match_partition, entries=entries,
                                          domain=domain, histories=histories), _OUT)
           .toArrow())
    matches, bundles = _split(out, day, run_id)
    changed = _write(ctx, day, matches, bundles, meta)
    learned = _learn(events, entries, domain, histories, train_streams)
    h_rows = pa.table({
        "pattern": names, "pattern_version": [e.version for e in entries],
        "batch_date": pa.array([day] * len(entries), pa.date32()),
        "history": [learned[n] for n in names], "run_id": [run_id] * len(entries),
    }).cast(APPROX_HISTORY.schema)
    changed |= APPROX_HISTORY.replace_day(lake_root, day, h_rows, meta, pattern=names)
    return {"matches": matches.num_rows, "bundles": bundles.num_rows, "changed": changed,
            "silent": False}


def _write(ctx: RunContext, day: dt.date, matches: pa.Table, bundles: pa.Table,
           meta: dict) -> bool:
    """Replace the day's matches and bundles of the run's approximate patterns; whether
    either changed."""
    names = [e.name for e in ctx.approximate]
    changed = APPROX_MATCHES.replace_day(ctx.lake, day, matches, meta, pattern=names)
    return APPROX_BUNDLES.replace_day(ctx.lake, day, bundles, meta, pattern=names) or changed


def _learn(events, entries, domain, histories, train_streams: int) -> dict[str, bytes]:
    """Driver: refresh each history with an unbudgeted run over a sample of streams."""
    from probcep.engine.approx import HistoryPolicy, run_stream

    ids = [r.stream_id for r in events.select("stream_id").distinct()
           .orderBy("stream_id").limit(train_streams).collect()]
    sample = events.where(events.stream_id.isin(ids)).toPandas()
    # by Python's equality, not pandas' hashing, which takes "s" and "s\x00" for one id
    streams = [sample[sample["stream_id"] == sid].sort_values("t", kind="stable")
               for sid in ids]
    learned = {}
    for entry in entries:
        history = pickle.loads(histories[entry.name])
        ea = _automaton(entry.pattern, entry.max_errors, tuple(domain))
        learner = HistoryPolicy(history)
        for sid, g in zip(ids, streams):
            run_stream(ea, entry.window, list(g["symbol"]), list(g["t"]), policy=learner,
                       stream_id=str(sid))
        history.refresh_maps()
        learned[entry.name] = pickle.dumps(history)
    return learned


def _split(out: pa.Table, day: dt.date, run_id: str):
    def rows(kind, columns, schema):
        part = out.filter(pc.equal(out["kind"], kind))
        n = part.num_rows
        data = {"pattern": part["pattern"], "pattern_version": part["pattern_version"],
                "stream_id": part["stream_id"]}
        data.update({name: part[src] for name, src in columns})
        data["batch_date"] = pa.array([day] * n, pa.date32())
        data["run_id"] = pa.array([run_id] * n, pa.string())
        table = pa.table(data).cast(schema)
        return table.take(pc.sort_indices(table, [("pattern", "ascending"),
                                                  ("stream_id", "ascending"),
                                                  (columns[1][0], "ascending")]))

    matches = rows("match", [("first_tag", "a"), ("match_point", "b"), ("errors", "c"),
                             ("n_subsequences", "d")], APPROX_MATCHES.schema)
    bundles = rows("bundle", [("bundle", "a"), ("first_match_point", "b"),
                              ("last_match_point", "c"), ("n_matches", "d"),
                              ("min_errors", "e")], APPROX_BUNDLES.schema)
    return matches, bundles
