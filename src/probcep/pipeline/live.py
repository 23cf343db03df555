"""`live`: readings matched minutes after they land, on Spark Structured Streaming.

A streaming query over the landing folder (Spark's file source, `binaryFile` format,
which lists new files without reading them; `maxFilesPerTrigger`; checkpoint and trigger
from settings) hands each micro-batch's new files, with its batch id, to `LiveQuery.batch`
(`foreachBatch`). A micro-batch:

1. reads its files with ingest's reader and row checks (`checked_batch`): good rows
   are appended to `bronze/readings`, bad ones to `bronze/quarantine`;
2. moves the *complete* mark: a timestep is complete once a reading at least
   `allowed_lateness_seconds` after its end has arrived (Spark's file source lists no
   `_COMPLETE` markers, whose names start with `_`, so a day closes by later readings,
   not by its marker). Readings of timesteps already complete stay in bronze and are
   counted as late: the nightly run of their day reconciles them (its alerts are compared
   with the live ones in `gold/alert_changes`);
3. normalizes the newly complete timesteps into silver (normalize's `distributions`), day
   by day, and advances every exact pattern's engine per stream from the saved states
   (`group_streams`), writing the groups that became final, with the day they became
   final in, and their alerts. The engine states live in a bounded cache
   (`live_cache_streams`, `live_cache_policy`), the rest in `state/live`
   (`probcep.pipeline.live_states`). When a day is complete its engine states are
   written to `state/engine` as the night would write them, so the night and live mode
   agree;
4. evaluates every registered correlation (docs/semantics.md §8) for the groups that
   became final, with `correlate-day`'s code (`correlate_groups`), the archive being
   silver at its version after this micro-batch's commit, and writes the correlation
   rows and correlation alerts;
5. records the micro-batch in `state/live_status` (with its cache misses) and, last,
   commits `state/live` (the buckets of saved states it rewrote, and the complete mark).

Exactly once: every write carries the Delta application transaction (`probcep-live`
plus the query's id, version = batch id) and is skipped when the table already holds
it. A micro-batch retried after a crash starts from the same `state/live` (written
last) and the same files (Spark's offset log), so it recomputes the same rows and
writes only what its first attempt did not.

On data with no late readings, the groups, alerts, states, correlation rows and
correlation alerts written for a day equal what `probcep run` writes for it
(tests/pipeline/test_live.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from probcep.config.clock import iso_day
from probcep.errors import ProbcepError, first_few
from probcep.lake.archive import StreamStarts
from probcep.lake.delta import spark_read
from probcep.lake.failures import damaged
from probcep.lake.locks import LOCKS_FOLDER, exclusive
from probcep.lake.spark import literal
from probcep.lake.stream_ranges import Streams
from probcep.lake.tables import (
    ALERTS,
    BRONZE,
    CORRELATION_ALERTS,
    CORRELATIONS,
    GROUPS,
    INGEST_LOG,
    LIVE_STATE,
    LIVE_STATUS,
    NORMALIZE_LOG,
    QUARANTINE,
    SILVER,
    UTC_MICROS,
    commit_once,
    committed,
    silver_schema,
)
from probcep.pipeline.context import RunContext
from probcep.pipeline.correlate_day import alert_rows, correlate_groups, groups_by_stream
from probcep.pipeline.group_day import processed_days, saved_states, split_output
from probcep.pipeline.group_tasks import advance_matcher, group_output, state_output
from probcep.pipeline.ingest import (
    bronze_locks,
    checked_batch,
    ingested_files,
    refuse_misplaced,
)
from probcep.pipeline.landing import data_files
from probcep.pipeline.live_day_end import DayEndStates
from probcep.pipeline.live_states import LiveStates
from probcep.pipeline.normalize import distributions
from probcep.pipeline.publish_alerts import alerts_of

log = logging.getLogger("probcep.live")

#: The binaryFile source's schema (given: a streaming source infers none); only `path`
#: and `modificationTime` are selected, so no file's content is read by the listing.
LISTING = ("path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY")


#: The logger of Spark's micro-batch loop (Spark 4; `...streaming.MicroBatchExecution`
#: before).
QUERY_LOGGER = "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution"
#: How often the waiting main thread looks for a stop signal.
STOP_POLL_SECONDS = 1
#: A micro-batch's phases, as its line prints their seconds: reading and checking the
#: files (ingest's checks), bronze's commit, silver, the engine, gold's rows and
#: commits, correlations, the states (seeding the cache, writing `state/live`).
PHASES = ("read", "bronze", "silver", "engine", "gold", "correlate", "state")


class PhaseTimer:
    """Seconds per phase of a micro-batch: each lap adds the time since the last one to
    its phase, which may come back (the engine's, once per day piece)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now


@dataclass(frozen=True)
class BatchReport:
    """What one micro-batch read and wrote."""

    batch_id: int
    files: int
    rows: int
    late_rows: int
    quarantined: int
    silver_rows: int
    groups: int
    alerts: int
    complete_until: dt.datetime | None
    latency_seconds: float | None
    cache_misses: int = 0
    cached: int = 0
    #: correlation rows and correlation alerts written (None: no correlation registered)
    correlations: int | None = None
    correlation_alerts: int | None = None
    #: seconds per phase (`PHASES`)
    phases: dict = field(default_factory=dict)
    #: the driver process's peak resident memory so far (MiB; it only grows: the batch
    #: that raised it is the one whose line shows the new figure)
    peak_mib: float | None = None

    def line(self) -> str:
        upto = "nothing complete yet" if self.complete_until is None else \
            f"complete until {self.complete_until:%Y-%m-%d %H:%M:%S}"
        lag = "" if self.latency_seconds is None else f", latency {self.latency_seconds:.1f} s"
        if self.phases:
            lag += " (" + ", ".join(f"{k} {self.phases[k]:.1f}" for k in PHASES
                                    if k in self.phases) + " s)"
        correlated = "" if self.correlations is None else \
            f", {self.correlations} correlation rows, {self.correlation_alerts} correlation alerts"
        return (f"batch {self.batch_id}: {self.files} files, {self.rows} readings "
                f"({self.late_rows} late, {self.quarantined} quarantined), silver "
                f"{self.silver_rows} rows, {self.groups} groups final, {self.alerts} alerts"
                f"{correlated}; {upto}; {self.cache_misses} cache misses, "
                f"{self.cached} states cached{lag}"
                + ("" if self.peak_mib is None else f"; driver peak {self.peak_mib:.0f} MiB"))


class LiveQuery:
    """Live mode over one lake and landing folder: the streaming query and what each of
    its micro-batches does."""

    def __init__(self, ctx: RunContext, echo: Callable[[str], None] = print):
        self.ctx, self.echo = ctx, echo
        self.settings = ctx.settings
        self.checkpoint = Path(self.settings.checkpoint)
        self.states = LiveStates(ctx.lake, ctx.exact, self.settings.live_cache_streams,
                                 self.settings.live_cache_policy)
        self.day_end: DayEndStates | None = None  # the batch's, until it ends
        self.first_ts = StreamStarts()  # silver's files are scanned for them once
        self.in_batch = False  # a micro-batch is running (in Py4J's callback thread)

    def start(self, once: bool = False):
        """Start the streaming query; `once`: process what the landing folder holds, in
        micro-batches of at most `live_max_files_per_trigger` files, then stop."""
        s = self.settings
        # Spark's listing leaves out a file whose name is not UTF-8: refused here, as the
        # night refuses its day (each micro-batch checks its own days again)
        refuse_misplaced(s, [] if not s.landing_dir.is_dir() else sorted(
            d for d in map(_day, (p.name for p in s.landing_dir.iterdir() if p.is_dir()))
            if d is not None))
        # a micro-batch's error reaches awaitTermination, whose caller says it (one line
        # for a ProbcepError, the traceback for a bug): Spark's own ERROR log of the
        # query's end repeated it, both tracebacks, in some 80 lines
        jvm = self.ctx.spark.sparkContext._jvm
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            QUERY_LOGGER, jvm.org.apache.logging.log4j.Level.OFF)
        files = (self.ctx.spark.readStream.format("binaryFile").schema(LISTING)
                 .option("recursiveFileLookup", "true")
                 .option("maxFilesPerTrigger", s.live_max_files_per_trigger)
                 .load(literal(s.landing_dir)).select("path", "modificationTime"))
        writer = (files.writeStream.queryName("probcep_live")
                  .option("checkpointLocation", str(self.checkpoint))
                  .foreachBatch(self.batch))
        writer = writer.trigger(availableNow=True) if once else \
            writer.trigger(processingTime=f"{s.live_trigger_seconds} seconds")
        return writer.start()

    def run(self, once: bool = False) -> None:
        """Run until stopped (Ctrl-C, SIGTERM) or, with `once`, until the landing folder
        is processed. A stop signal lets the micro-batch in progress end, then stops the
        query (a second one stops at once): interrupted inside Py4J calls, the process
        died with pages of Java and Python traces (its tables were right: each batch
        commits exactly once). One live mode runs on a lake at a time."""
        lake = Path(self.ctx.lake)
        with exclusive(lake / LOCKS_FOLDER / "live.lock", f"{lake} in live mode"):
            self._run(self.start(once))

    def _run(self, query) -> None:
        from pyspark import SparkContext

        asked = threading.Event()

        def stop_soon(signum, frame):
            if asked.is_set():
                raise KeyboardInterrupt
            asked.set()
            # sent to the process group, the signal ends the JVM too, and PySpark's
            # accumulator server prints its lost connection as a traceback: no error now
            server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
            if server is not None:
                server.handle_error = lambda request, address: None
            # nor py4j's lost calls (`logging.exception` on the root logger, and the
            # callback server's), some 60 lines before the one that says what happened
            logging.disable(logging.ERROR)
            self.echo(f"live: {signal.Signals(signum).name}: stopping after the micro-batch "
                      "in progress (again to stop at once)")

        main = threading.current_thread() is threading.main_thread()
        before = {sig: signal.signal(sig, stop_soon)
                  for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
        jvm_gone = False  # the signal reached Spark's JVM too, which stopped on it
        try:
            while not query.awaitTermination(STOP_POLL_SECONDS):
                if asked.is_set():
                    while query.isActive and query.status["isTriggerActive"]:
                        time.sleep(0.2)
                    break
        except Exception:
            if not asked.is_set():
                raise
            jvm_gone = True
        finally:
            try:
                query.stop()
            except Exception:
                if not asked.is_set():
                    raise
                jvm_gone = True
            for sig, handler in before.items():
                signal.signal(sig, handler)
        if not jvm_gone:  # gone, the process ends now, and py4j's threads may still print
            logging.disable(logging.NOTSET)
        if jvm_gone:
            # SIGTERM to the process group (`timeout`, systemd's default KillMode): the
            # JVM's shutdown hook stopped Spark under the query (QA: a traceback, exit 1)
            if self.in_batch:
                raise ProbcepError(
                    "Spark's JVM stopped on the same signal (sent to the whole process "
                    "group) before the micro-batch in progress ended: the next start redoes "
                    "it from the checkpoint; signal the probcep process alone (systemd: "
                    "KillMode=mixed)")
            self.echo("live: Spark's JVM stopped on the same signal; no micro-batch was in "
                      "progress")

    @property
    def app_id(self) -> str:
        """The Delta application id of this query: the id Spark keeps in its checkpoint,
        so a fresh checkpoint is a fresh transaction sequence."""
        meta = json.loads((self.checkpoint / "metadata").read_text())
        return f"probcep-live-{meta['id']}"

    # --- one micro-batch ------------------------------------------------------------

    def batch(self, frame, batch_id: int) -> None:
        self.in_batch = True
        started = dt.datetime.now(dt.UTC)
        try:
            with damaged():  # Arrow's words for a damaged table: its line, and the clause
                listed = frame.collect()
                report = self.process([(_local(r["path"]), r["modificationTime"])
                                       for r in listed], batch_id, started)
        except BaseException as exc:
            self.states.abandon()
            if self.day_end is not None:
                self.day_end.abandon()
            if isinstance(exc, ProbcepError):  # bronze may be committed already: say so
                raise ProbcepError(f"{exc}; micro-batch {batch_id} stopped there: what it "
                                   f"committed stays, once, and the next start redoes the "
                                   f"batch") from exc
            raise
        finally:
            self.day_end = None
            self.in_batch = False
        if report is None:
            return
        log.info(report.line())
        self.echo(report.line())

    def process(self, listed: list[tuple[Path, dt.datetime]], batch_id: int,
                started: dt.datetime) -> BatchReport | None:
        """One micro-batch; None when a crash came after its last write (`state/live`)
        and before Spark recorded it done: everything is written already."""
        ctx, s, lake = self.ctx, self.settings, self.ctx.lake
        app, run_id = self.app_id, f"live-{batch_id}"
        if committed(LIVE_STATE, lake, app, batch_id):
            log.info("batch %d: written before a restart, nothing to do", batch_id)
            return None
        # what every commit carries: commit_once's metadata, app_id and version
        tx = ({"run_id": run_id, "batch_id": batch_id, "clock": ctx.clock.label,
               "gaps": s.gap_label}, app, batch_id)
        data = self._day_entries(listed, batch_id)
        states = self.states
        states.begin(batch_id)
        misses = states.cache.misses
        complete = states.complete
        timer = PhaseTimer()
        data, good, bad = self._land(listed, data, tx, timer)
        complete, late, new = self._watermark(good, complete)
        day_end = self.day_end = DayEndStates(lake, ctx.exact, run_id, batch_id)
        timer.lap("state")  # the first batch seeds the cache from the night's states
        silver, groups, spans = self._advance_days(complete, new, day_end, run_id, tx, timer)
        final, alerts = self._commit_gold(groups, day_end, tx)
        timer.lap("gold")
        counts = {}
        if ctx.correlations:
            counts = self._commit_correlations(final, spans, run_id, tx)
            timer.lap("correlate")
        oldest = _oldest_read(listed, data)
        finished = dt.datetime.now(dt.UTC)
        report = BatchReport(
            batch_id, len(data), good.num_rows + bad.num_rows, late, bad.num_rows,
            silver.num_rows, final.num_rows, alerts.num_rows,
            None if new is None else s.clock.time(new),
            None if oldest is None else (finished - _utc(oldest)).total_seconds(),
            states.cache.misses - misses, len(states.cache), **counts)
        self._commit_status(report, started, finished, new, run_id, tx)
        timer.lap("state")
        report.phases.update(timer.seconds)
        report = dataclasses.replace(report, peak_mib=_peak_mib())
        return report

    def _day_entries(self, listed: list[tuple[Path, dt.datetime]],
                     batch_id: int) -> list[Path]:
        """The listed files' entries in days' landing folders (refused as the night
        refuses a misplaced day); files outside them are said, as no night reads them."""
        s = self.settings
        data, outside = landing_entries(s.landing_dir, [p for p, _ in listed])
        refuse_misplaced(s, sorted({_folder_day(p) for p in data}))
        if outside:  # no night reads them either: said, not passed over unseen
            line = (f"batch {batch_id}: {len(outside)} file(s) not in a day's landing folder "
                    f"(LANDING/YYYY-MM-DD/), not read: {first_few(outside)}")
            log.info(line)  # as the batch line: a warning was printed twice on a terminal
            self.echo(line)
        return data

    def _land(self, listed: list[tuple[Path, dt.datetime]], data: list[Path], tx: tuple,
              timer: PhaseTimer) -> tuple[list[Path], pa.Table, pa.Table]:
        """Read the entries no night or earlier micro-batch took and commit their rows to
        bronze and quarantine; returns (entries read, bronze rows, quarantine rows)."""
        lake, batch_id = self.ctx.lake, tx[2]  # tx: (metadata, app id, batch id)
        # the days' bronze locks, which ingest holds until its log is written: a file a
        # night (a rerun) ingests meanwhile is seen ingested, not appended again
        with bronze_locks(lake, {_folder_day(p) for p in data}):
            data = self.unseen_odd(odd_entries(data))
            data, ingested = self.not_ingested(data, listed)
            if ingested:  # a fresh checkpoint after the nights ran (catching up, `--once`)
                line = (f"batch {batch_id}: {len(ingested)} file(s) ingested by the night of "
                        f"their day already, not read again: {first_few(ingested)}")
                log.info(line)
                self.echo(line)
            good, bad = self.read(data)
            timer.lap("read")
            commit_once(BRONZE, lake, good, *tx, partition_by=["batch_date"])
            commit_once(QUARANTINE, lake, bad, *tx, partition_by=["batch_date"])
            self._warn_quarantined(batch_id, bad)  # under the locks: the day's rows so far
        timer.lap("bronze")
        return data, good, bad

    def _warn_quarantined(self, batch_id: int, bad: pa.Table) -> None:
        """Say at once when a day's landing files, as far as bronze and quarantine hold
        them, quarantine more than `max_quarantine_fraction` of their rows: live mode
        commits such rows and goes on (one bad file should not stop the service), where
        the night refuses a day over that share (QA, 2026-11-28: the batch line alone said
        it, and the night then refused the day live had grouped)."""
        if not bad.num_rows:
            return
        limit, lake = self.settings.max_quarantine_fraction, self.ctx.lake
        held, kept = QUARANTINE.rows_per_day(lake), BRONZE.rows_per_day(lake)
        for day in sorted(set(bad["batch_date"].to_pylist())):
            quarantined = held.get(day, 0)
            total = quarantined + kept.get(day, 0)
            if not total or quarantined / total <= limit:
                continue
            mine = bad.filter(pc.equal(bad["batch_date"], pa.scalar(day, pa.date32())))
            counts = pc.value_counts(mine["source_file"]).to_pylist()
            worst = max(counts, key=lambda c: (c["counts"], str(c["values"])))
            line = (f"batch {batch_id}: warning: {day}: {quarantined} of its {total} rows "
                    f"so far quarantined ({quarantined / total:.3f}, over "
                    f"max_quarantine_fraction {limit}; this batch's most from "
                    f"{worst['values']}: {worst['counts']}): the night of {day} refuses "
                    "the day while its files quarantine over that share")
            log.info(line)  # as the batch line: a warning was printed twice on a terminal
            self.echo(line)

    def _watermark(self, good: pa.Table, complete: int | None
                   ) -> tuple[int | None, int, int | None]:
        """The complete mark moved on by the batch's readings: (the mark the batch starts
        from, its late readings, the new mark). The first batch with readings places the
        mark where live starts and seeds the cache from the night's states."""
        ctx, s, lake = self.ctx, self.settings, self.ctx.lake
        clock = s.clock
        t = self.timesteps(good["ts"])
        if complete is None and len(t):  # the first batch: where live starts
            # at the earliest landing folder's day, as a night would (a reading stamped
            # before its folder's day is late: a reset clock's 1970 made live walk every
            # day since), and after the last day a night or live mode processed
            start_day = pc.min(good["batch_date"]).as_py()
            done = last_processed(lake, ctx.exact)
            if done is not None and start_day <= done:
                start_day = done + dt.timedelta(days=1)
            complete = clock.day_range(start_day)[0]
            self.states.seed(saved_states(lake, ctx.exact, start_day, ctx.source))
        late = 0 if complete is None or not len(t) else int(np.sum(t < complete))
        new = complete
        if len(t):
            k = int(np.floor((pc.max(good["ts"]).value / 1e6 - s.allowed_lateness_seconds
                              - clock.epoch_micros / 1e6) / s.timestep_seconds))
            new = max(new, k)
        return complete, late, new

    def _advance_days(self, complete: int | None, new: int | None, day_end: DayEndStates,
                      run_id: str, tx: tuple, timer: PhaseTimer
                      ) -> tuple[pa.Table, list[pa.Table], dict[dt.date, tuple[int, int]]]:
        """Normalize the newly complete timesteps day piece by day piece and run the
        engine over them; silver is committed under the days' locks. Returns (silver
        rows, each piece's final groups, each day's timesteps completed); a day a night or
        rerun took is advanced through but not written."""
        ctx, s, lake = self.ctx, self.settings, self.ctx.lake
        clock, batch_id = s.clock, tx[2]  # tx: (metadata, app id, batch id)
        silver, groups, spans = [], [], {}
        pieces = list(_day_pieces(clock, complete, new)) \
            if complete is not None and new > complete else []
        # the pieces' silver locks, which normalize holds until its log is written:
        # a day a night (a rerun) normalized meanwhile is seen taken, never appended to
        with ExitStack() as held:
            for day in sorted({day for day, _, _ in pieces}):
                held.enter_context(SILVER.lock(lake, day))
            taken = taken_days(lake, ctx.exact, pieces[0][0], pieces[-1][0]) \
                if pieces else {}
            if taken:  # a night or rerun wrote the day live mode is in: the day is its
                line = f"batch {batch_id}: " + "; ".join(
                    f"{day} {how}" for day, how in sorted(taken.items()))
                line += (": live mode writes no more of it (its readings are in bronze, for "
                         "the day's next night or rerun)")
                if NOT_GROUPED in taken.values():
                    line += "; a day not grouped yet is grouped by its night's group-day, or "\
                            "`probcep run --date DAY`"
                log.info(line)
                self.echo(line)
            for day, lo, hi in pieces:
                rows = self.silver(day, lo, hi)
                timer.lap("silver")
                ends = hi == clock.day_range(day)[1]
                # a taken day's end: the night saves its states; live drops the quiet
                # ones all the same, as the night does (the next day starts the same)
                save = None if not ends else _discard if day in taken else \
                    partial(day_end.add, day)
                out = self.advance(rows, hi, save)
                if ends and day not in taken:
                    day_end.end(day)
                timer.lap("engine")
                if day in taken:  # the engine went on through it, for the days after
                    continue
                silver.append(rows)
                groups.append(split_output(out, day, run_id, clock, ctx.exact)[0])
                spans[day] = (lo, hi - 1)
                timer.lap("gold")
            silver_rows = pa.concat_tables(silver) if silver else \
                silver_schema(s.silver_domain).empty_table()
            commit_once(SILVER, lake, silver_rows, *tx, partition_by=["date"])
        return silver_rows, groups, spans

    def _commit_gold(self, groups: list[pa.Table], day_end: DayEndStates,
                     tx: tuple) -> tuple[pa.Table, pa.Table]:
        """Commit the groups that became final, their alerts and the ended days' engine
        states; returns (groups, alerts)."""
        ctx = self.ctx
        final = pa.concat_tables(groups) if groups else GROUPS.schema.empty_table()
        alerts = alerts_of(final, ctx.exact)
        commit_once(GROUPS, ctx.lake, final, *tx)
        commit_once(ALERTS, ctx.lake, alerts, *tx)
        day_end.commit(*tx)
        return final, alerts

    def _commit_correlations(self, final: pa.Table, spans: dict[dt.date, tuple[int, int]],
                             run_id: str, tx: tuple) -> dict[str, int]:
        """Commit the registered correlations over the final groups and their alerts;
        returns their counts, as `BatchReport` takes them."""
        lake = self.ctx.lake
        correlated, correlation_alerts = self.correlate(final, spans, run_id)
        commit_once(CORRELATIONS, lake, correlated, *tx)
        commit_once(CORRELATION_ALERTS, lake, correlation_alerts, *tx)
        return {"correlations": correlated.num_rows,
                "correlation_alerts": correlation_alerts.num_rows}

    def _commit_status(self, report: BatchReport, started: dt.datetime,
                       finished: dt.datetime, new: int | None, run_id: str,
                       tx: tuple) -> None:
        """Record the batch in `state/live_status`, then commit `state/live`: last, as a
        retried batch starts from it."""
        lake, states = self.ctx.lake, self.states
        commit_once(LIVE_STATUS, lake, _status_row(report, started, finished, run_id), *tx)
        files, replaced = states.written(new)
        commit_once(LIVE_STATE, lake, files, *tx, mode="overwrite",
                    partition_by=["bucket"], partition_filters=replaced)
        states.committed(new)

    def advance(self, rows: pa.Table, until: int,
                save: Callable[[pa.Table], None] | None = None) -> pa.Table:
        """Every exact pattern over the streams a piece of silver (timesteps before
        `until`) needs, from their states in the cache or the state table; returns the
        groups that became final (output rows of `group_streams`). A piece that ends a day
        hands `save` the states the night would save, a chunk of streams at a time (the
        night runs `group_streams` over the whole day)."""
        ends_day = save is not None
        patterns, states = self.ctx.exact, self.states
        streams = Streams.of(rows, self.settings.silver_domain)
        where = {sid: i for i, sid in enumerate(streams.ids)}
        ids = states.needed(streams.ids, ends_day)
        silence = np.array(self.settings.silence)
        found, owner, kept = [], [], []
        for c, chunk in states.chunks(ids):
            for i, sid in enumerate(chunk, start=c):
                runs = streams.runs(where[sid]) if sid in where else []
                for j, p in enumerate(patterns):
                    key = (p.name, p.version, sid)
                    matcher = states.matcher(key)
                    # only parts with groups: an empty one per stream would hold ~1 KiB
                    parts = [g for g in advance_matcher(matcher, runs, silence, until, sid,
                                                        p.name) if len(g)]
                    found += parts
                    owner += [(i, j, len(part)) for part in parts]
                    if matcher.next_t is None:
                        continue
                    quiet = matcher.quiet(silence)
                    if ends_day and quiet:  # the night keeps no quiet state at a day's end
                        states.drop(key)
                        continue
                    if ends_day:
                        kept.append((i, j, matcher.next_t, matcher.to_bytes()))
                    states.keep(key, matcher, quiet)
            if kept:
                save(state_output(kept, ids, patterns))
                kept = []
        return group_output(found, owner, ids, patterns)

    def correlate(self, final: pa.Table, spans: dict[dt.date, tuple[int, int]],
                  run_id: str) -> tuple[pa.Table, pa.Table]:
        """Every registered correlation over the groups that became final (GROUPS rows),
        day by day as `correlate-day` joins a day's groups; `spans`: each day's timesteps
        this micro-batch completed. The archive is silver at its current version (this
        micro-batch's silver committed). Returns (correlation rows, correlation alerts);
        unlike the night, they are not validated here (the night validates the day's)."""
        ctx = dataclasses.replace(self.ctx, run_id=run_id)  # the rows name the micro-batch
        version = SILVER.data_version(ctx.lake)  # a vacuum is not new silver
        rows = [CORRELATIONS.schema.empty_table()]
        alerts = [CORRELATION_ALERTS.schema.empty_table()]
        for c in self.ctx.correlations:
            for day, span in spans.items():
                groups = groups_by_stream(final.filter(pc.equal(final["batch_date"], day)), c)
                if groups:
                    table, _ = correlate_groups(ctx, day, c, groups, version, span,
                                                stats=False, first_ts=self.first_ts)
                    rows.append(table)
                    alerts.append(alert_rows(table, c))
        return pa.concat_tables(rows), pa.concat_tables(alerts)

    def unseen_odd(self, entries: list[Path]) -> list[Path]:
        """The entries but those not regular files (sub-folders, FIFOs, links to nothing)
        that an earlier micro-batch or the night quarantined already: a file added inside
        a sub-folder lists it again, and the night counts each once."""
        folders = {str(p): _folder_day(p) for p in entries if not p.is_file()}
        if not folders:
            return entries
        seen = QUARANTINE.read(self.ctx.lake, [
            ("batch_date", "in", sorted(set(folders.values()))),
            ("source_file", "in", list(folders))], columns=["source_file"])
        done = set(seen["source_file"].to_pylist())
        return [p for p in entries if str(p) not in done]

    def not_ingested(self, entries: list[Path], listed: list[tuple[Path, dt.datetime]]
                     ) -> tuple[list[Path], list[Path]]:
        """(entries to read, files the night's ingest of their day read already): a file
        last changed before that ingest is in bronze; a later one (a late file, a fix)
        is new."""
        changed = {os.path.abspath(p): _utc(m) for p, m in listed}
        days = sorted({_folder_day(p) for p in entries if os.path.abspath(p) in changed})
        if not days:
            return entries, []
        log_rows = INGEST_LOG.read(self.ctx.lake, [("batch_date", "in", days)],
                                   columns=["batch_date", "ingest_time"])
        ingested = dict(zip(log_rows["batch_date"].to_pylist(),
                            log_rows["ingest_time"].to_pylist()))
        old = [p for p in entries if os.path.abspath(p) in changed
               and _folder_day(p) in ingested
               and changed[os.path.abspath(p)] <= ingested[_folder_day(p)]]
        if old:  # and the night read them: a file renamed into place while it ran keeps
            # an older time, yet no night read it (QA, 2026-11-27: skipped until the next)
            read = ingested_files(self.ctx.lake, sorted({_folder_day(p) for p in old}))
            old = [p for p in old if os.path.abspath(p) in read]
        return [p for p in entries if p not in old], old

    def read(self, files: list[Path]) -> tuple[pa.Table, pa.Table]:
        """The files' readings checked as ingest checks them: (bronze rows, quarantine
        rows), each with its landing folder's day as `batch_date`."""
        if not files:
            return BRONZE.schema.empty_table(), QUARANTINE.schema.empty_table()
        by_day: dict[dt.date, list[Path]] = {}
        for p in files:
            by_day.setdefault(_folder_day(p), []).append(p)
        good, bad = [], []
        for day, paths in sorted(by_day.items()):
            batch = checked_batch(self.ctx.spark, self.settings, paths, day)
            try:
                good.append(batch.good.toArrow().select(BRONZE.schema.names)
                            .cast(BRONZE.schema))
                bad.append(batch.bad(batch.per_file)[0].toArrow()
                           .select(QUARANTINE.schema.names)
                           .cast(QUARANTINE.schema))
            finally:
                batch.release()
        return pa.concat_tables(good), pa.concat_tables(bad)

    def timesteps(self, ts: pa.ChunkedArray) -> np.ndarray:
        clock = self.settings.clock
        micros = ts.cast(pa.int64()).to_numpy()
        return (micros - clock.epoch_micros) // clock.step_micros

    def silver(self, day: dt.date, lo: int, hi: int) -> pa.Table:
        """Silver rows of the day's timesteps [lo, hi), from bronze as the night reads it
        (batches ingested on or after the day)."""
        s = self.settings
        held = s.held_steps
        start, stop = s.clock.time(max(s.clock.day_range(day)[0], lo - held)), s.clock.time(hi)
        # only the files whose statistics may hold these readings: bronze grows by a
        # file a micro-batch, and Spark would open each one's footer to skip it
        bronze = spark_read(self.ctx.spark, BRONZE, self.ctx.lake,
                            [("batch_date", ">=", day.isoformat()), ("ts", ">=", start),
                             ("ts", "<", stop)])
        schema = silver_schema(self.settings.silver_domain)
        if bronze is None:
            return schema.empty_table()
        from pyspark.sql import functions as F

        bronze = bronze.where((F.col("ts") >= F.lit(start)) & (F.col("ts") < F.lit(stop)))
        rows = distributions(bronze, self.settings, day, lo, hi).toArrow()
        rows = rows.select(schema.names).cast(schema)
        return rows.take(pc.sort_indices(rows, [("stream_id", "ascending"),
                                                ("t", "ascending")]))


def _day_pieces(clock, lo: int, hi: int):
    """[lo, hi) cut at midnights: (day, piece's lo, piece's hi) in order."""
    while lo < hi:
        day = clock.day_of(lo)
        stop = min(hi, clock.day_range(day)[1])
        yield day, lo, stop
        lo = stop


def _oldest_read(listed: list[tuple[Path, dt.datetime]],
                 data: list[Path]) -> dt.datetime | None:
    """The earliest change time of the listed files read: the latency is of what was read,
    not of files passed over (outside a day's folder, ingested by their night)."""
    read = {os.path.abspath(p) for p in data}
    return min((m for p, m in listed if os.path.abspath(p) in read
                or os.path.abspath(p.parent) in read), default=None)


def _peak_mib() -> float:
    """This process's peak resident memory, MiB: VmHWM (`ru_maxrss` keeps across exec the
    peak of the process that started this one)."""
    try:
        return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_row(r: BatchReport, started, finished, run_id: str) -> pa.Table:
    return pa.table({
        "batch_id": [r.batch_id], "batch_date": [finished.date()], "started": [started],
        "finished": [finished], "files": [r.files], "rows": [r.rows],
        "late_rows": [r.late_rows], "quarantined": [r.quarantined],
        "silver_rows": [r.silver_rows], "groups": [r.groups], "alerts": [r.alerts],
        "complete_until": pa.array([r.complete_until], UTC_MICROS),
        "latency_seconds": pa.array([r.latency_seconds], pa.float64()),
        "cache_misses": pa.array([r.cache_misses], pa.int64()), "run_id": [run_id],
    }).cast(LIVE_STATUS.schema)


def _local(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else Path(uri)


def landing_entries(root: Path, files: list[Path]) -> tuple[list[Path], list[Path]]:
    """The listed files as ingest sees a day's folder: (entries to read, files outside
    any day's folder). An entry is a file directly in a day's folder (any name but a
    marker's: an unknown format, a compressed file, a broken one are for ingest's reader
    to read or quarantine), or the sub-folder a listed file lies in, which ingest
    quarantines as not a regular file. Files in the landing root or in a folder not
    named by a day are no day's, and a night never reads them."""
    base = Path(os.path.abspath(root))
    entries, outside = set(), []
    for path in files:
        try:
            parts = Path(os.path.abspath(path)).relative_to(base).parts
        except ValueError:
            parts = ()
        if len(parts) < 2 or _day(parts[0]) is None:
            outside.append(path)
        elif not parts[1].startswith(("_", ".")):  # markers, as `data_files` skips them
            entries.add(base / parts[0] / parts[1])
    return sorted(entries), outside


def odd_entries(entries: list[Path]) -> list[Path]:
    """The entries, with the day folders' entries that are not regular files: Spark's
    listing leaves out FIFOs, links to nothing and empty sub-folders, which ingest
    quarantines as not regular files (so each micro-batch looks at its days' folders)."""
    found = set(entries)
    for folder in sorted({p.parent for p in entries}):
        found.update(p for p in data_files(folder) if not p.is_file())
    return sorted(found)


def _day(name: str) -> dt.date | None:
    try:
        return iso_day(name)
    except ValueError:
        return None


def _folder_day(path: Path) -> dt.date | None:
    return _day(path.parent.name)


def last_processed(lake, patterns) -> dt.date | None:
    """The latest day whose "day processed" rows `state/engine` holds for one of these
    pattern versions (a night's, or a day live mode ended)."""
    return max(set().union(*processed_days(lake, patterns).values()), default=None)


def _discard(rows: pa.Table) -> None:
    """A `save` that keeps nothing: the states of a day a night or rerun took."""


#: How live mode names a day a night normalized and has not grouped (yet).
NOT_GROUPED = "normalized by a night or rerun meanwhile, not grouped yet"


def taken_days(lake, patterns, first: dt.date, last: dt.date) -> dict[dt.date, str]:
    """The days from `first` to `last` a night or rerun has taken from live mode, each
    with how far it went: it normalized them (`silver/normalize_log`, which live mode
    never writes), or grouped them too (`processed_days`)."""
    logged = NORMALIZE_LOG.read(lake, [("date", ">=", first), ("date", "<=", last)],
                                columns=["date"])
    taken = dict.fromkeys(logged["date"].to_pylist(), NOT_GROUPED)
    processed = processed_days(lake, patterns, [("batch_date", ">=", first),
                                                ("batch_date", "<=", last)])
    return taken | dict.fromkeys(set().union(*processed.values()),
                                 "processed by a night or rerun meanwhile")


def _utc(when: dt.datetime) -> dt.datetime:
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when


def status(lake, last: int = 20) -> pa.Table:
    """The latest micro-batches of `state/live_status`, newest last."""
    rows = LIVE_STATUS.read(lake)
    rows = rows.take(pc.sort_indices(rows, [("batch_id", "ascending")]))
    return rows.slice(max(0, rows.num_rows - last))
