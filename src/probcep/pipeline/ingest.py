"""Ingest a day of raw readings from the landing folder into `bronze/readings`.

Raw files are CSV, JSON lines or Parquet (`probcep.pipeline.landing` reads them as
records), in either layout users have:
  long: stream_id, ts, symbol, score [, sensor_id]   (many readings per stream and step)
  wide: stream_id, ts [, sensor_id], one probability column per symbol   (sensors
        emitting distributions)
A good wide row is unpivoted into long readings (score = the symbol's probability), so
everything downstream sees one layout; a bad one is refused whole, never in part.

Every record is checked with Spark expressions. A record that cannot be used for the
batch goes to `bronze/quarantine` as one row, with the first reason it fails, its file,
and its raw text when its columns cannot show it (malformed lines, wide rows, values in
unknown columns); a file that cannot be read at all becomes one quarantine row naming
it. docs/bad-input.md lists every reason.

**Row conservation** is checked on every batch before anything is committed: for each
file, the records its parser read (for Parquet, also the footer's row count) equal the
records whose readings are staged for bronze plus the rows staged for quarantine; an
unreadable file counts as one record and one quarantine row. A batch that breaks it,
fails the bronze suite or quarantines more than `max_quarantine_fraction` of its
records is not committed. Rerunning a day replaces that day.
"""

from __future__ import annotations

import datetime as dt
import os
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from probcep.config.readings import READING_COLUMNS
from probcep.config.settings import Settings
from probcep.errors import ProbcepError, first_few, warn
from probcep.lake.delta import commit_staged, staged_counts, staged_days, staged_frame
from probcep.lake.locks import slice_lock
from probcep.lake.spark import column_sum
from probcep.lake.tables import BRONZE, INGEST_LOG, QUARANTINE
from probcep.pipeline.context import RunContext
from probcep.pipeline.landing import (
    FORMATS,
    KEYS,
    Opened,
    Unreadable,
    cell,
    data_files,
    listing,
    read_files,
    unreadable_from_error,
    valid_utf8,
)

#: How many days before a batch ingest looks back for landing files that arrived after
#: their day was ingested (`arrived_after`).
ARRIVED_LOOKBACK_DAYS = 7
#: A wide row's probabilities sum to 1 within this, or the row is refused (or, with
#: `wide_sum: renormalize`, divided by its sum).
WIDE_SUM_TOLERANCE = 1e-6
#: The largest score taken. Normalize sums a timestep's scores; scores up to this bound
#: keep any such sum finite (1e300 times 1e8 readings is still below 1.8e308).
MAX_SCORE = 1e300
#: A timestamp starts with a full date: Spark would stamp a bare time (`12:00`) with the
#: day the job runs, and read `2026` as 2026-01-01T00:00.
DATE_FIRST = r"^\s*[+-]?\d{4,}-\d{1,2}-\d{1,2}([Tt ]|$)"
#: RFC 3339 (§5.6) allows a lowercase `t` and `z`, which Spark's parser refuses: they are
#: upper-cased first (only those two letters: a zone name such as `Europe/Paris` is kept).
LOWER_T = (r"^(\s*[+-]?\d{4,}-\d{1,2}-\d{1,2})t", "$1T")
LOWER_Z = (r"(\d)z(\s*)$", "$1Z$2")
UNIX_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: ISO 8601 minutes with a zone (`23:30Z`, `23:30-05:00`): Spark reads a zone only after
#: the seconds, so `:00` goes in before it.
NO_SECONDS = r"^(\s*[+-]?\d{4,}-\d{1,2}-\d{1,2}[T ]\d{1,2}:\d{2})(\s*(Z|[+-]\d))"
#: A score's text is a decimal number (or a spelling of infinity or NaN, refused later
#: with their own reasons): Spark's cast also takes Java's `5d`, `0.5f` and `0x1p-1`.
DECIMAL = r"^\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))\s*$"


class IngestError(ProbcepError):
    """A batch that cannot be ingested (no files, too much quarantined, rows not
    conserved)."""


@dataclass(frozen=True)
class FileCount:
    """What became of one landing file's records."""

    file: str
    records: int  # read by its parser; an unreadable file counts as one
    bronze_records: int  # records whose readings went to bronze
    bronze: int  # those readings (a wide row gives one per symbol column)
    quarantined: int  # quarantine rows, one per refused record
    unreadable: str = ""  # why the file was quarantined as a whole

    @property
    def conserved(self) -> bool:
        return self.records == self.bronze_records + self.quarantined


@dataclass(frozen=True)
class IngestReport:
    day: dt.date
    files: int
    rows: int  # input records
    bronze: int  # bronze readings
    quarantined: int  # quarantine rows
    reasons: dict
    silent: str = ""  # why the day has no readings, when it has none
    per_file: tuple[FileCount, ...] = field(default=(), repr=False)
    late: int = 0  # readings dated before the day (see `line`)
    earliest_late: dt.datetime | None = None  # the earliest of them
    duplicates: int = 0  # readings identical to another of the batch
    renormalized: int = 0  # wide rows divided by their sum (`wide_sum: renormalize`)
    aggregation: str = "sum"

    def line(self) -> str:
        if self.silent:
            return f"{self.silent}: a day of silence"
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.reasons.items()))
        taken = sum(f.bronze_records for f in self.per_file)
        text = (f"{self.day}: {self.rows} records from {self.files} files -> bronze "
                f"{self.bronze}" + (f" readings of {taken} records" if taken != self.bronze
                                    else "")
                + f", quarantine {self.quarantined}" + (f" ({why})" if why else ""))
        notes = []
        if self.renormalized:
            notes.append(f"{self.renormalized} wide rows renormalized")
        if self.late:  # how they are taken: a night said neither (QA, 2026-11-27)
            since = "" if self.earliest_late is None else \
                f", the earliest at {self.earliest_late.isoformat().replace('+00:00', 'Z')}"
            notes.append(f"{self.late} late readings for earlier days{since} (in their days' "
                         f"silver once those are normalized again: by a backfill that "
                         f"covers them, or `probcep rerun --from DAY --to DAY`)")
        if self.duplicates:
            notes.append(f"warning: {self.duplicates} readings repeat another exactly"
                         + (" and count again under aggregation: sum"
                            if self.aggregation == "sum" else ""))
        return "; ".join([text, *notes])


def landing_files(settings: Settings, day: dt.date) -> list[Path]:
    """The day's landing files: every file of its folder but markers (`_COMPLETE`)."""
    folder = settings.landing_dir / day.isoformat()
    if not folder.is_dir():
        raise IngestError(f"no landing folder for {day}: {folder} does not exist")
    files = data_files(folder)
    if not files:
        raise IngestError(f"no landing files for {day} in {folder} "
                          f"(expected {', '.join(sorted(FORMATS))})")
    return files


def read_records(spark, day_of: dict[Path, dt.date], settings: Settings,
                 unreadable: dict[Path, Unreadable]):
    """The records of the files (each of its batch day: `day_of`), not cached, with the
    number each file holds, whether any record is wide and whether all are typed
    (`Opened.typed`); files that cannot be read are added to `unreadable` (each an
    `Unreadable`). Every
    record carries its batch day (`batch_date`) and that day's timesteps [`_first`,
    `_stop`), so the days of a backfill are checked in one pass.

    Reading a file's header or footer finds most broken files; a file that breaks
    only when Spark reads it further is set aside by the Spark error naming it, and the
    rest are read again (here, or when the checked rows are first read:
    `checked_files`). A file whose text is not UTF-8 (Spark reads such bytes as U+FFFD)
    is set aside whole as well."""
    from pyspark.sql import functions as F

    while True:
        opened = []
        for got in read_files(spark, {p: d for p, d in day_of.items()
                                      if p not in unreadable}, settings.domain):
            if isinstance(got, Unreadable):
                unreadable[got.path] = got
            else:
                opened.append(got)
        # files read by one scan share its frame, and a scan holds files of one day
        scans = {id(o.records): (o.records, day_of[o.path]) for o in opened
                 if o.records is not None}
        frames = [_of_day(records, day, settings) for records, day in scans.values()]
        if not frames:
            return None, {str(o.path): 0 for o in opened}, False, True
        records = frames[0]
        for frame in frames[1:]:
            records = records.unionByName(frame)
        typed = all(o.typed for o in opened if o.records is not None)
        if all(o.footer_rows is not None for o in opened):
            # Parquet only: the footers give the records, each file's layout is known and
            # its text was decoded by Parquet, so no Spark job counts them (a file that
            # yields fewer rows than its footer breaks conservation before any commit)
            return (records, {str(o.path): o.footer_rows for o in opened},
                    any(o.wide for o in opened), typed)
        try:
            counts = {r["source_file"]: (r["n"], r["bad_text"], r["wide"]) for r in
                      records.groupBy("source_file").agg(
                          F.count(F.lit(1)).alias("n"),
                          F.sum(F.col("bad_text").cast("long")).alias("bad_text"),
                          F.max(F.col("layout") == "wide").alias("wide")).collect()}
        except Exception as error:  # a file Spark could not read: set it aside, read again
            _set_aside(error, [o.path for o in opened], unreadable)
            continue
        strange = sorted(set(counts) - {str(o.path) for o in opened})
        if strange:  # the path decoded from Spark's URI is not the one asked for
            raise IngestError(f"records read from {strange}, not a file of the batch by "
                              f"that name; nothing committed")
        wide = any(w for _, _, w in counts.values())
        return records, _counted(opened, counts, unreadable), wide, typed


def _set_aside(error: Exception, files: list[Path], unreadable: dict) -> None:
    """Adds the file a Spark read error names to `unreadable`; raises `error` when it
    names none of `files`."""
    found = unreadable_from_error(error, files)
    if found is None:
        raise error
    unreadable[found.path] = found


def _of_day(records, day: dt.date, settings: Settings):
    """A file's records stamped with its batch day and that day's timestep range."""
    from pyspark.sql import functions as F

    first, stop = settings.clock.day_range(day)
    return records.select("*", F.lit(day).cast("date").alias("batch_date"),
                          F.lit(first).cast("long").alias("_first"),
                          F.lit(stop).cast("long").alias("_stop"))


def _counted(opened: list[Opened], counts: dict, unreadable: dict) -> dict[str, int]:
    """Records per readable file; files of text that is not UTF-8 move to `unreadable`.
    A Parquet file must yield the rows its footer states."""
    out = {}
    for o in opened:
        n, bad_text, _ = counts.get(str(o.path), (0, 0, False))
        # text that holds bytes that are not UTF-8, not only the character U+FFFD (UTF-8
        # too); a Parquet file's are refused record by record (`landing._parquet`)
        if bad_text and not valid_utf8(o.path):
            unreadable[o.path] = Unreadable(o.path, "not UTF-8 text",
                                            f"{bad_text} of its {n} records hold bytes "
                                            f"that are not UTF-8")
            continue
        if o.footer_rows is not None and o.footer_rows != n:
            raise IngestError(f"{o.path}: rows are not conserved: its Parquet footer "
                              f"states {o.footer_rows} rows, the reader read {n}")
        out[str(o.path)] = n
    return out


def _first(cases, otherwise=None):
    """`F.when` over (condition, value) pairs, first match wins."""
    from pyspark.sql import functions as F

    out = None
    for condition, value in cases:
        value = F.lit(value) if isinstance(value, str) else value
        out = F.when(condition, value) if out is None else out.when(condition, value)
    return out if otherwise is None else out.otherwise(otherwise)


def _score_checks(text, where: str = "", typed=None):
    """(condition, reason) pairs for one score given as text (or `typed`, a double, when
    its text is null), in the order they are checked."""
    from pyspark.sql import functions as F

    value = F.when(text.rlike(DECIMAL), text.try_cast("double"))
    missing = text.isNull()
    if typed is not None:
        value, missing = F.coalesce(typed, value), missing & typed.isNull()
    inf = F.lit(float("inf"))
    return [(missing, f"missing score{where}"),
            (value.isNull(), f"score is not a number{where}"),
            (F.isnan(value), f"score is NaN{where}"),
            ((value == inf) | (value == -inf), f"score is not finite{where}"),
            (value < 0, f"negative score{where}"),
            (value > MAX_SCORE, f"score above {MAX_SCORE:g}{where}")]


def checked(records, settings: Settings, wide_rows: bool = True):
    """Records with `reason` (null when the record is good), typed `ts_typed` and
    `score_typed` (long rows), `_value_<symbol>` (wide rows), `_total`, `renormalized`
    and `late` (for good rows), each against its own batch day (`_first`, `_stop`:
    `read_records`). Without `wide_rows` (no record of the batch is wide)
    the checks of wide cells are left out: they are a case per check and symbol, which
    Spark's optimizer takes seconds to plan for nothing."""
    from pyspark.sql import functions as F

    domain = settings.domain
    first, stop = F.col("_first"), F.col("_stop")
    clock = settings.clock
    text = F.regexp_replace(F.regexp_replace("ts", *LOWER_T), *LOWER_Z)
    ts = F.coalesce(F.col("_ts"), F.try_to_timestamp(  # typed or text
        F.regexp_replace(text, NO_SECONDS, "$1:00$2")))
    t = F.floor((F.unix_micros(ts) - F.lit(clock.epoch_micros)) / F.lit(clock.step_micros))
    score = F.coalesce(F.col("_score"), F.col("score").try_cast("double"))
    long, wide = F.col("layout") == "long", F.col("layout") == "wide"
    cells = {s: F.col(cell(s)) for s in domain}
    values = {s: c.try_cast("double") for s, c in cells.items()}
    total = column_sum([F.coalesce(v, F.lit(0.0)) for v in values.values()])
    off_sum = F.abs(total - 1) > WIDE_SUM_TOLERANCE
    unknown = F.array_min(F.map_keys("extra"))

    cases = [
        (F.col("malformed").isNotNull(), F.col("malformed")),
        (F.col("extra").isNotNull() & long, F.concat(F.lit("unknown column '"), unknown,
                                                      F.lit("'"))),
        (F.col("extra").isNotNull(), F.concat(F.lit("column '"), unknown,
                                              F.lit("' is not in the domain"))),
        (F.col("stream_id").isNull() | F.col("stream_id").rlike(r"^\s*$"),  # tabs too
         "missing stream_id"),
        (ts.isNull(), "unparseable timestamp"),
        (~F.col("ts").rlike(DATE_FIRST), "timestamp has no date"),  # null when typed
        # a zeroed clock (0000-01-01): Spark reads the year, Python and Arrow hold none
        (F.year(ts) < 1, "timestamp before year 1"),
        (t >= stop, "outside batch day"),
        (long & (F.col("symbol").isNull() | ~F.col("symbol").isin(*domain)),
         "unknown symbol"),
        *[(long & c, r) for c, r in _score_checks(F.col("score"), typed=F.col("_score"))],
    ]
    for k in range(6 if wide_rows else 0):  # each kind of bad score, then the next, over
        for s in domain:  # every column (an empty cell is "" and a column the row lacks
            # is null)
            c, r = _score_checks(F.when(cells[s] != "", cells[s]), f" in column '{s}'")[k]
            cases.append((wide & cells[s].isNotNull() & c, r))
    if wide_rows:
        cases += [
            (wide & F.least(F.lit(True), *[c.isNull() for c in cells.values()]),
             "wide row has no symbol column"),
            (wide & (total == 0), "wide row sums to 0"),
        ]
        if settings.wide_sum == "refuse":
            cases.append((wide & off_sum, "wide row does not sum to 1"))
    good = F.col("reason").isNull()  # the column: the expression is large (a case per
    # check and symbol), and embedding it again would make Spark's optimizer plan it thrice
    return (records.withColumn("reason", _first(cases))
            .withColumn("ts_typed", ts).withColumn("score_typed", score)
            .withColumn("_total", total)
            .withColumn("renormalized", wide & off_sum & good)
            .withColumn("late", (t < first) & good)
            .select("*", *[v.alias(f"_value_{s}") for s, v in values.items()])
            .drop("_ts", "_score", "malformed", "bad_text", "_first", "_stop"))


def readings(good, domain, wide_rows: bool = True):
    """Good records as long readings: a wide row gives one per symbol column it has (a
    renormalized row's values divided by its sum). `_lead` marks each record's first
    reading, so records are counted without a distinct count."""
    from pyspark.sql import functions as F

    if not wide_rows:
        return good.select("stream_id", "sensor_id", F.col("ts_typed").alias("ts"),
                           "symbol", F.col("score_typed").alias("score"), "batch_date",
                           "source_file", F.lit(True).alias("_lead"), "late",
                           "renormalized")

    scale = F.when(F.col("renormalized"), F.col("_total")).otherwise(F.lit(1.0))
    wide_pairs = F.filter(F.array(*[
        F.struct(F.lit(s).alias("symbol"), (F.col(f"_value_{s}") / scale).alias("score"))
        for s in domain]), lambda p: p["score"].isNotNull())
    long_pair = F.array(F.struct(F.col("symbol").alias("symbol"),
                                 F.col("score_typed").alias("score")))
    pairs = F.when(F.col("layout") == "long", long_pair).otherwise(wide_pairs)
    return (good.select("*", F.posexplode(pairs).alias("_k", "_p"))
            .select("stream_id", "sensor_id", F.col("ts_typed").alias("ts"),
                    F.col("_p.symbol").alias("symbol"), F.col("_p.score").alias("score"),
                    "batch_date", "source_file", (F.col("_k") == 0).alias("_lead"), "late",
                    "renormalized"))


def quarantine_rows(bad, domain):
    """Refused records as quarantine rows: the text columns as read, the reason, and
    `raw`: the malformed text, or the record's fields as JSON when the columns cannot
    show them (a wide row, values in unknown columns)."""
    from pyspark.sql import functions as F

    def fields(names, col=F.col):
        return F.create_map(*[x for n in names for x in (F.lit(n), col(n))])

    wide_cells = F.create_map(*[x for s in domain for x in (F.lit(s), F.col(cell(s)))])
    shown = F.when(F.col("layout") == "wide",
                   F.map_concat(fields(KEYS), wide_cells)).otherwise(fields(READING_COLUMNS))
    every = F.map_filter(F.map_concat(shown, F.coalesce(
        "extra", F.create_map().cast("map<string,string>"))), lambda k, v: v.isNotNull())
    raw = F.coalesce("raw", F.when((F.col("layout") == "wide") | F.col("extra").isNotNull(),
                                   F.to_json(every)))
    # a typed value's text is null (`landing`): it is shown as its text would have been
    bad = bad.withColumns({c: F.coalesce(c, F.col(f"{c}_typed").cast("string"))
                           for c in ("ts", "score")})
    # bytes that are not UTF-8 (a Parquet file's) as U+FFFD: a table holds text
    return bad.select(*[F.make_valid_utf8(c).alias(c) for c in READING_COLUMNS], "reason",
                      "source_file", "batch_date", F.make_valid_utf8(raw).alias("raw"))


def _unreadable_rows(spark, unreadable: dict, day_of: dict):
    """One quarantine row per file that could not be read."""
    from pyspark.sql import functions as F

    rows = [(f"unreadable file: {u.why}", str(u.path), day_of[p], u.detail or None)
            for p, u in unreadable.items()]
    frame = spark.createDataFrame(
        rows, "reason string, source_file string, batch_date date, raw string")
    return frame.select(*[F.lit(None).cast("string").alias(c) for c in READING_COLUMNS],
                        "reason", "source_file", "batch_date", "raw")


@dataclass(frozen=True)
class Taken:
    """What the good records of a batch gave, as checked: per file (readings, distinct
    records, late readings, renormalized records), and per batch day the readings that
    repeat another exactly."""

    per_file: dict[str, tuple[int, int, int, int, dt.datetime | None]]
    duplicates: dict[dt.date, int]

    def of(self, files) -> tuple[int, int, dt.datetime | None]:
        """(late readings, renormalized records, the earliest late reading's time) of
        these files."""
        got = [self.per_file.get(str(f), (0, 0, 0, 0, None)) for f in files]
        earliest = min((g[4] for g in got if g[4] is not None), default=None)
        return sum(g[2] for g in got), sum(g[3] for g in got), earliest


def _per_file(good) -> dict[str, tuple[int, int, int, int]]:
    """`Taken.per_file`, in one Spark job."""
    from pyspark.sql import functions as F

    return {r["source_file"]: (r["n"], r["records"], r["late"], r["renorm"],
                               None if r["since"] is None else
                               UNIX_EPOCH + dt.timedelta(microseconds=r["since"]))
            for r in good.groupBy("source_file").agg(
                F.count(F.lit(1)).alias("n"),
                F.sum(F.col("_lead").cast("long")).alias("records"),
                F.sum(F.col("late").cast("long")).alias("late"),
                F.min(F.when(F.col("late"), F.unix_micros("ts"))).alias("since"),
                F.sum((F.col("_lead") & F.col("renormalized")).cast("long"))
                .alias("renorm")).collect()}


def _duplicates(good) -> dict[dt.date, int]:
    """`Taken.duplicates`. Equal readings hash alike, so a day whose readings' 64-bit
    hashes are all distinct has none: that is checked first, shuffling a hash per
    reading rather than the readings; only a batch with a repeated hash (a duplicate, or
    rarely a collision) is grouped by its readings' columns."""
    from pyspark.sql import functions as F

    key = ["batch_date", "stream_id", "sensor_id", "ts", "symbol", "score"]
    parts = int(good.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    hashes = good.select("batch_date", F.xxhash64(*key[1:]).alias("_h")) \
        .repartition(parts, "_h")  # not one partition (adaptive execution's choice): a
    # partition's distinct hashes are held in memory, and spilled when they outgrow it
    if not hashes.groupBy("batch_date", "_h").count().where("count > 1").count():
        return {}
    return {r["batch_date"]: r["extra"] for r in
            good.groupBy(*key).count().where("count > 1").groupBy("batch_date")
            .agg(F.sum(F.col("count") - 1).alias("extra")).collect()}


def conservation(records: dict[str, int], unreadable: dict, taken: dict,
                 staged_bronze: dict, staged_quarantine: dict) -> tuple[FileCount, ...]:
    """Per file, what became of its records; IngestError naming the first file whose
    records are not all accounted for, or whose staged readings differ from those
    checked.

    `records`: read per readable file; `taken`: (readings, distinct records, ...) of
    the good rows per file, as checked (`Taken.per_file`); `staged_*`: rows per file in
    the staged files that would be committed."""
    out = []
    for path in sorted({*records, *(str(p) for p in unreadable)}):
        unread = next((u for p, u in unreadable.items() if str(p) == path), None)
        readings, taken_records = taken.get(path, (0, 0, 0, 0))[:2]
        count = FileCount(path, 1 if unread else records[path], taken_records,
                          staged_bronze.get(path, 0), staged_quarantine.get(path, 0),
                          unread.why if unread else "")
        if not count.conserved or readings != count.bronze:
            raise IngestError(
                f"{path}: rows are not conserved: {count.records} records read, "
                f"{count.bronze_records} to bronze ({count.bronze} readings staged, "
                f"{readings} checked) + {count.quarantined} to quarantine; "
                f"nothing committed")
        out.append(count)
    stray = (set(staged_bronze) | set(staged_quarantine)) - {c.file for c in out}
    if stray:
        raise IngestError(f"rows are not conserved: staged rows name files that were not "
                          f"read: {sorted(stray)}; nothing committed")
    return tuple(out)


@dataclass(frozen=True)
class CheckedBatch:
    """A batch's files read and checked: bronze rows, quarantine rows (both stamped
    with each file's batch day and the ingest time), and what conservation needs."""

    good: object  # Spark DataFrame in bronze's columns
    refused: object  # Spark DataFrame in quarantine's columns: refused records (or None)
    unread: object  # Spark DataFrame in quarantine's columns: unreadable files
    counts: dict  # records per readable file
    unreadable: dict  # Path -> Unreadable
    cached: tuple = ()  # the cached checked rows behind both frames (if cached)
    per_file: dict | None = None  # `Taken.per_file`; None: read from the staged rows

    def bad(self, per_file: dict) -> tuple[object, bool]:
        """The quarantine rows, given the good rows' `Taken.per_file`, and whether there
        may be any: when every record went to bronze, quarantine has only the
        unreadable files, and nothing is read again to find none refused."""
        from pyspark.sql import functions as F

        refused = self.refused is not None and any(
            per_file.get(f, (0, 0))[1] != n for f, n in self.counts.items())
        bad = self.refused.unionByName(self.unread) if refused else self.unread
        return (bad.select(*READING_COLUMNS, "reason", "source_file", "batch_date",
                           F.current_timestamp().alias("ingest_time"), "raw"),
                refused or bool(self.unreadable))

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def checked_batch(spark, settings: Settings, files: list[Path], day: dt.date) -> CheckedBatch:
    """Read and check `files` as the batch of `day` (live mode's micro-batches come
    through here); call `release()` when done with the rows."""
    return checked_files(spark, settings, dict.fromkeys(files, day))


def checked_files(spark, settings: Settings, day_of: dict[Path, dt.date],
                  unreadable: dict | None = None, staged_first: bool = False) -> CheckedBatch:
    """Read and check files, each as part of the batch of its day (`day_of`), in one
    pass whatever the number of days; call `release()` when done with the rows.

    With `staged_first`, a batch of typed long records (Parquet) is not read to count
    its good rows: the caller stages them first, takes `Taken.per_file` from the staged
    files (`staged_taken`) and sets aside a file that breaks that first read, then
    calls again with the same `unreadable`. Such records are read and checked again by
    every Spark job over them, and counting them first cost a whole pass (a third of
    ingest at 10M readings: docs/performance.md §5)."""
    from pyspark.sql import functions as F

    domain = settings.domain
    unreadable = {} if unreadable is None else unreadable
    good, refused, cached, per_file = None, None, (), {}
    while True:
        records, counts, wide, typed = read_records(spark, day_of, settings, unreadable)
        if records is None:  # every file set aside: none of an earlier pass's rows
            good, refused = None, None
            break
        rows = checked(records.where(F.col("source_file").isin(*counts)), settings, wide)
        # The counts, the suite and both writes read the checked rows. Records parsed
        # from text are checked once, into a cache; typed records are read and checked
        # again by each: at 5M readings that costs a few seconds a job, where building
        # the cache costs 12 s and, once it outgrows the driver's memory, spills.
        rows = rows if typed else rows.cache()
        good = readings(rows.where(F.col("reason").isNull()), domain, wide)
        refused = quarantine_rows(rows.where(F.col("reason").isNotNull()), domain)
        if staged_first and typed and not wide:
            per_file = None
            break
        try:  # the first job to read every record whole: a file breaking here is set aside
            per_file = _per_file(good)
        except Exception as error:
            rows.unpersist()
            _set_aside(error, [Path(f) for f in counts], unreadable)
            continue
        cached = () if typed else (rows,)
        break
    good = (good if good is not None else spark.createDataFrame(
        [], "stream_id string, sensor_id string, ts timestamp, symbol string, "
            "score double, batch_date date, source_file string")) \
        .select("stream_id", "sensor_id", "ts", "symbol", "score", "batch_date",
                F.current_timestamp().alias("ingest_time"), "source_file") \
        .select(*BRONZE.schema.names)
    return CheckedBatch(good, refused, _unreadable_rows(spark, unreadable, day_of),
                        counts, unreadable, cached, per_file)


def staged_taken(folder: Path, settings: Settings, day: dt.date) -> dict:
    """`Taken.per_file` of a day's staged bronze rows of long records (a reading each,
    none renormalized), read by the driver from the staged files: their row counts per
    file (`staged_counts`), and their late readings (`checked`: before the day's first
    timestep), looked for only in row groups whose `ts` statistics reach before it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    first = settings.clock.time(settings.clock.day_range(day)[0])
    late: dict[str, list] = {}
    for part in sorted(folder.glob("part-*.parquet")):
        file = pq.ParquetFile(part)
        ts = file.schema_arrow.get_field_index("ts")
        bound = pa.scalar(first, file.schema_arrow.field(ts).type)
        for g in range(file.num_row_groups):
            stats = file.metadata.row_group(g).column(ts).statistics
            if stats is not None and stats.has_min_max and \
                    pa.scalar(stats.min, bound.type).as_py() >= first:
                continue
            rows = file.read_row_group(g, columns=["source_file", "ts"])
            rows = rows.filter(pc.less(rows["ts"], bound))
            for r in rows.group_by("source_file").aggregate(
                    [("ts", "count"), ("ts", "min")]).to_pylist():
                got = late.setdefault(r["source_file"], [0, None])
                got[0] += r["ts_count"]
                got[1] = r["ts_min"] if got[1] is None else min(got[1], r["ts_min"])
    out = {}
    for f, n in staged_counts(folder, "source_file").items():
        count, since = late.get(f, (0, None))
        out[f] = (n, n, count, 0, since)
    return out


def ingest_day(ctx: RunContext, day: dt.date) -> IngestReport:
    """Check the day's landing files and replace the day in bronze and quarantine."""
    return ingest_days(ctx, [day])[0]


def ingest_days(ctx: RunContext, days: list[dt.date]) -> list[IngestReport]:
    """Check the days' landing files in one Spark pass and replace each day in bronze
    and quarantine (a backfill pays Spark's jobs and the bronze suite once, not once a
    day); a report per day.

    The rows flow from Spark's executors through staged Parquet into Delta (see
    `probcep.lake.delta`); the driver only sees counts. Every day is checked before any
    is committed: nothing is committed when some file's rows are not conserved, the
    bronze suite fails or a day quarantines too much. A past day with no landing files
    is a day of silence (unless `missing_day: refuse`).
    """
    settings = ctx.settings
    reports: dict[dt.date, IngestReport] = {}
    files: dict[dt.date, list[Path]] = {}
    refuse_misplaced(settings, days)
    missing = {}
    for day in days:
        try:
            files[day] = landing_files(settings, day)  # before Spark: a missing day is quick
        except IngestError as error:
            missing[day] = error
    if missing and settings.missing_day == "refuse":  # every day of the range at once
        first, *more = missing.values()  # (QA, 2026-11-27: a backfill named one a run)
        if more:
            raise IngestError(f"{first}; and {len(more)} more day(s) of the range: "
                              + "; ".join(map(str, more)))
        raise first
    for day, error in missing.items():
        reports[day] = _silence(ctx, day, error)
    for day, late in arrived_after(settings, ctx.lake, min(days)).items():
        warn(f"{len(late)} file(s) reached {late[0].parent} after {day} was ingested and are "
             f"in no table ({first_few([p.name for p in late])}): "
             f"`probcep rerun --from {day} --to {day}` takes them")
    seen = {day: listing(files.get(day, [])) for day in days}  # before reading them
    # held until the log says the days are ingested: live mode, holding them too, reads a
    # landing file only when the log does not hold it yet, and would else append a file
    # this run ingests as new after its bronze commit
    with bronze_locks(ctx.lake, files):
        if files:
            reports.update(_ingest_files(ctx, files))
        INGEST_LOG.add_missing_columns(ctx.lake, {"run_id": ctx.run_id})  # before them
        for day in days:
            _log(ctx, reports[day], seen[day])
    return [reports[day] for day in days]


def arrived_after(settings: Settings, lake, first: dt.date) -> dict[dt.date, list[Path]]:
    """Per day of the `ARRIVED_LOOKBACK_DAYS` before `first`: the files of its landing
    folder that reached it after it was ingested (its folder no longer what
    `bronze/ingest_log` recorded) and that neither bronze nor quarantine holds (live mode,
    running, takes such a file in). A file dropped into a day's own folder after its night
    was otherwise never said (QA, 2026-11-28); a file rewritten in place is told apart
    only when that day is run again (`normalize.not_ingested`). A file that holds no
    rows (empty, or a header only) is in no table either: it is named only if its inode
    changed after the ingest (`st_ctime`, which a rename into the folder sets too)."""
    logged = INGEST_LOG.read(lake, [
        ("batch_date", "in", [first - dt.timedelta(days=k)
                              for k in range(1, ARRIVED_LOOKBACK_DAYS + 1)])],
        columns=["batch_date", "landing", "ingest_time"])
    changed, when = {}, {}
    for day, landing, at in zip(*(logged[c].to_pylist()
                                  for c in ("batch_date", "landing", "ingest_time"))):
        folder = settings.landing_dir / day.isoformat()
        files = data_files(folder) if folder.is_dir() else []
        if landing is not None and files and listing(files) != landing:
            changed[day], when[day] = files, at.timestamp()
    if not changed:
        return {}
    read = ingested_files(lake, sorted(changed))
    late = {day: [p for p in files if os.path.abspath(p) not in read
                  and _changed_at(p) > when[day]] for day, files in sorted(changed.items())}
    return {day: files for day, files in late.items() if files}


def _changed_at(path: Path) -> float:
    try:
        return path.lstat().st_ctime
    except FileNotFoundError:  # gone since it was listed: nothing to take
        return float("-inf")


def ingested_files(lake, days: list[dt.date]) -> set[str]:
    """The landing files (absolute paths) that bronze or quarantine holds rows of for
    `days`."""
    import pyarrow.compute as pc

    read = set()
    for table in (BRONZE, QUARANTINE):
        rows = table.read(lake, [("batch_date", "in", days)], columns=["source_file"])
        read.update(map(os.path.abspath, pc.unique(rows["source_file"]).to_pylist()))
    return read


def _log(ctx: RunContext, report: IngestReport, landing: str) -> None:
    """Record the ingested day in `bronze/ingest_log` (no commit when a rerun found
    the same counts and landing files)."""
    import pyarrow as pa

    row = {"batch_date": report.day, "files": report.files, "records": report.rows,
           "bronze": report.bronze, "quarantined": report.quarantined,
           "silent": report.silent or None, "run_id": ctx.run_id,
           "ingest_time": dt.datetime.now(dt.UTC), "landing": landing}
    INGEST_LOG.replace_day(ctx.lake, report.day,
                           pa.Table.from_pylist([row], schema=INGEST_LOG.schema),
                           ctx.commit_meta(batch_date=report.day.isoformat()))


def refuse_misplaced(settings: Settings, days) -> None:
    """A landing root that is not there, or a day's name that is not a folder, is a
    mistake in the settings or the landing area, not silence: taken as silence it would
    empty good days (a mistyped `PROBCEP_LANDING_DIR` on a rerun). So is a file name
    that is not UTF-8: no column can name it, so it cannot be quarantined (live mode
    checks its days the same way: Spark's listing leaves such a file out), and one
    holding ':', which Spark cannot open (it quarantined the file as broken)."""
    root = settings.landing_dir
    if not root.is_dir():
        raise IngestError(f"landing folder {root} " + (
            "is not a folder" if root.exists() else "does not exist") +
            " (landing_dir, or PROBCEP_LANDING_DIR): no day is read, none taken as silence")
    for day in days:
        folder = root / day.isoformat()
        if folder.exists() and not folder.is_dir():
            raise IngestError(f"{folder} is not a folder: a day's landing files go in a "
                              f"folder named by the day")
        for path in data_files(folder) if folder.is_dir() else ():
            try:
                path.name.encode("utf-8")
            except UnicodeEncodeError:  # a name Linux allows but no table column holds
                shown = os.fsencode(path.name).decode("utf-8", "backslashreplace")
                raise IngestError(f"{folder}: file name '{shown}' is not UTF-8 text, which "
                                  f"the lake's tables hold names in: rename it; nothing "
                                  f"read") from None
            if ":" in path.name:  # Hadoop takes what comes before it for a URI scheme
                raise IngestError(f"{folder}: file name {path.name!r} holds ':', which "
                                  f"Spark's (Hadoop's) file paths cannot: rename it; "
                                  f"nothing read")


def _silence(ctx: RunContext, day: dt.date, missing: IngestError) -> IngestReport:
    """A past day without landing files (`missing_day: silence`; `ingest_days` refuses
    them under `refuse`): its bronze and quarantine emptied."""
    folder = ctx.settings.landing_dir / day.isoformat()
    logged = INGEST_LOG.read(ctx.lake, INGEST_LOG.day_filter(day, {}), columns=["files"])
    before = max((n or 0 for n in logged["files"].to_pylist()), default=0)
    if before and not folder.exists():  # a landing root that exists but is the wrong one
        raise IngestError(
            f"no landing folder {folder}, yet {day} was ingested from {before} landing "
            f"file(s) before: is the landing folder right (landing_dir, or "
            f"PROBCEP_LANDING_DIR)? Nothing read, the day's rows kept; to make it a day of "
            f"silence, leave it an empty folder") from None
    if day >= dt.datetime.now(dt.UTC).date():  # not over yet: no silence to speak of
        raise IngestError(f"{missing} (the day has not ended, so it is not taken as a "
                          f"day of silence)") from None
    meta = ctx.commit_meta(batch_date=day.isoformat(), files=0)
    for table in (BRONZE, QUARANTINE):
        table.clear_day(ctx.lake, day, meta)
    return IngestReport(day, 0, 0, 0, 0, {}, silent=str(missing))


@contextmanager
def bronze_locks(lake, days):
    """The days' slice locks of bronze and quarantine, taken in date order."""
    with ExitStack() as held:
        for day in sorted(days):
            held.enter_context(slice_lock(lake, (BRONZE, QUARANTINE), day))
        yield


def _ingest_files(ctx: RunContext, files: dict[dt.date, list[Path]]) -> dict:
    """The days' files into bronze and quarantine (their locks held by the caller)."""
    from probcep.lake.expectations import BRONZE_SUITE, days_name, validate

    settings, lake, days = ctx.settings, ctx.lake, sorted(files)
    day_of, unreadable = {f: d for d in days for f in files[d]}, {}
    with ExitStack() as held:
        while True:
            batch = checked_files(ctx.spark, settings, day_of, unreadable, staged_first=True)
            held.callback(batch.release)
            try:
                good = held.enter_context(staged_days(
                    batch.good, BRONZE, lake, days, settings.target_file_bytes))
                break
            except Exception as error:  # when first read whole (`staged_first`), a file
                # breaking is set aside, and the batch read again
                if batch.per_file is not None:
                    raise
                _set_aside(error, list(day_of), unreadable)
        per_file = batch.per_file if batch.per_file is not None else {
            f: n for day in days for f, n in
            staged_taken(good.folders[day], settings, day).items()}
        # the staged files, before anything is committed: reading their columns
        # costs the suite's jobs and the duplicate count less than checking every
        # record again (docs/performance.md §5); always Spark, where the suite's
        # column types are Spark's
        staged = staged_frame(ctx.spark, good.root, driver_rows=-1,
                              schema=batch.good.schema)
        validate(staged, BRONZE_SUITE, settings.domain, day=days_name(days),
                 run_id=ctx.run_id)
        taken = Taken(per_file, _duplicates(staged))
        rows, quarantines = batch.bad(per_file)
        bad = held.enter_context(staged_days(  # a clean batch: no Spark job
            rows, QUARANTINE, lake, days, settings.target_file_bytes, empty=not quarantines))
        reports = {day: _day_report(day, files[day], batch, taken, good.folders[day],
                                    bad.folders[day], settings) for day in days}
        for day in days:
            meta = ctx.commit_meta(batch_date=day.isoformat(), files=len(files[day]))
            QUARANTINE.add_missing_columns(lake, meta)
            for staged_rows, table in ((good, BRONZE), (bad, QUARANTINE)):
                commit_staged(staged_rows.folders[day], staged_rows.schema, table, lake,
                              day, meta)
    return reports


def _day_report(day: dt.date, files: list[Path], batch: CheckedBatch, taken: Taken,
                good_dir: Path, bad_dir: Path, settings: Settings) -> IngestReport:
    """The day's counts, its files' rows checked for conservation; IngestError when
    the day quarantines more than `max_quarantine_fraction` of its records."""
    mine = {str(f) for f in files}
    counted = conservation({f: n for f, n in batch.counts.items() if f in mine},
                           {p: u for p, u in batch.unreadable.items() if str(p) in mine},
                           taken.per_file, staged_counts(good_dir, "source_file"),
                           staged_counts(bad_dir, "source_file"))
    late, renormalized, since = taken.of(files)
    report = IngestReport(
        day, len(files), sum(c.records for c in counted), sum(c.bronze for c in counted),
        sum(c.quarantined for c in counted), staged_counts(bad_dir, "reason"),
        per_file=counted, late=late, earliest_late=since,
        duplicates=taken.duplicates.get(day, 0),
        renormalized=renormalized, aggregation=settings.aggregation)
    if report.rows and report.quarantined / report.rows > settings.max_quarantine_fraction:
        worst = max(counted, key=lambda c: (c.quarantined, c.file))  # where to look first
        raise IngestError(f"{report.line()}: quarantined fraction "
                          f"{report.quarantined / report.rows:.3f} exceeds "
                          f"max_quarantine_fraction {settings.max_quarantine_fraction} "
                          f"(most from {worst.file}: {worst.quarantined} of its "
                          f"{worst.records} records)")
    return report
