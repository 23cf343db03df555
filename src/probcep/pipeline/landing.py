"""A day's landing files read as records: one row per input record, whatever its file
format and layout, ready for ingest's checks.

Formats, by file name: `.csv`, `.jsonl` / `.ndjson` / `.json` (JSON lines) and
`.parquet`; the text formats may be compressed (`.gz`, `.bz2`). Names starting with `_`
or `.` are markers (`_COMPLETE`), not data. Each format is read by the one parser that
also counts its records:

- CSV per RFC 4180: a header line, then records; a quoted field may hold commas, line
  breaks and doubled quotes (`""` for one quote). A record with more or fewer fields than the
  header is malformed; Spark's PERMISSIVE mode keeps its raw text.
- JSON lines: every non-blank line is one record, parsed on its own; a line that is not
  one JSON object, or names a key twice, is malformed and keeps its raw text.
- Parquet: one record per row (the footer's row count is checked against the rows read);
  nanosecond timestamps (pandas' default) are read too.

A record carries the long layout's text columns (`stream_id`, `sensor_id`, `ts`,
`symbol`, `score`), one cell per domain symbol for the wide layout (null where the file
has no such column, `""` where it has one without a value), `extra`: the columns outside
its layout that hold a value, `malformed` and `raw` for records no parser could split.
A Parquet column that already has its type (a timestamp `ts`, a double `score` of a
long file) comes as `_ts` / `_score` instead, its text column null: turning millions of
values into text only to parse them back is most of what checking them would cost.
A file that cannot be read at all (an unknown format, a truncated Parquet file, a broken
compressed stream, text that is not UTF-8) is `Unreadable`: ingest quarantines it as a
whole, with the reason, and the day's other files still land.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import re
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from probcep.config.readings import READING_COLUMNS
from probcep.errors import first_line
from probcep.lake.spark import literal

FORMATS = {".csv": "csv", ".jsonl": "json", ".json": "json", ".ndjson": "json",
           ".parquet": "parquet"}
COMPRESSIONS = {".gz": gzip.open, ".bz2": bz2.open}
#: Columns every layout may have (the long layout's are READING_COLUMNS).
KEYS = ("stream_id", "sensor_id", "ts")
CORRUPT = "_corrupt_record"
#: What Java's UTF-8 decoder (the CSV reader) puts where bytes are not UTF-8; Spark's
#: text reader keeps the bytes instead (`is_valid_utf8` finds them).
REPLACEMENT = "\ufffd"
#: Characters after a CSV header read to see what its records' lines end in.
MIXED_PEEK = 1 << 16
#: The most columns a landing file may have (the layout's, the domain's and extra
#: ones): Spark's planning grows with them, and 25,000 ran a 1 GiB driver out of memory.
MAX_COLUMNS = 4096
#: The longest CSV field (characters): one of 50 million (a record never closed by its
#: quote, a runaway writer) ran Spark's executor out of heap, in the night and in live
#: mode; past this the file is set aside as unreadable, naming the limit.
MAX_FIELD_CHARS = 1 << 20
#: Columns a Parquet file may give typed, with their Spark type (see the docstring).
TYPED = {"ts": "timestamp", "score": "double"}
#: The Parquet types taken as typed: a timestamp without a time zone (pyarrow's
#: default) is taken in the session's zone, as its text would be.
TYPED_FROM = {"ts": {"timestamp", "timestamp_ntz"}, "score": {"double"}}


@dataclass(frozen=True)
class Opened:
    """A readable file: its records (None for an empty file), for Parquet the row count
    its footer states, and whether its records are `typed` (no value needs parsing from
    text: reading them again costs about what reading a cache of them would)."""

    path: Path
    records: object  # a Spark DataFrame, or None
    footer_rows: int | None = None
    typed: bool = False
    wide: bool = False  # for Parquet: the file's layout is wide (one per file)


@dataclass(frozen=True)
class Unreadable:
    """A file quarantined as a whole: `why` is the reason's short form, `detail` the
    first line of what failed."""

    path: Path
    why: str
    detail: str = ""


def data_files(folder: Path) -> list[Path]:
    """The folder's entries that may hold readings: every entry but markers. One that is
    not a regular file (a folder, a FIFO, a link to nothing) is read as unreadable, so
    it is quarantined and counted rather than passed over unseen."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith(("_", ".")))


def listing(files: list[Path]) -> str:
    """A digest of the files' names, sizes and modification times: what ingest read, told
    from what the folder holds later (a file added, removed or rewritten) without reading
    it again. A link is taken as itself, so a broken one is listed too; a file gone
    since it was listed is listed as gone."""
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            st = path.lstat()
            size, mtime = st.st_size, st.st_mtime_ns
        except FileNotFoundError:
            size = mtime = -1
        digest.update(f"{path.name}\0{size}\0{mtime}\n".encode())
    return digest.hexdigest()[:16]


def _not_regular(path: Path) -> Unreadable:
    if not path.exists() and not path.is_symlink():
        return _gone(path)
    kind = ("a folder" if path.is_dir() else "a link to nothing" if not path.exists()
            else "a FIFO, socket or device")
    return Unreadable(path, "not a regular file", f"{kind}: only files are read")


def _gone(path: Path) -> Unreadable:
    """A file listed that was no longer there when read (removed or renamed meanwhile)."""
    return Unreadable(path, "gone when read", "removed or renamed while ingest read the "
                      "day's files: its records are not in bronze (land it again and "
                      "ingest the day again)")


def file_format(path: Path) -> tuple[str | None, str | None]:
    """(format, compression suffix) from the file name; format None when unknown."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = suffixes[-1] if suffixes and suffixes[-1] in COMPRESSIONS else None
    if compression:
        suffixes = suffixes[:-1]
    fmt = FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt == "parquet" and compression:
        fmt = None  # Parquet compresses inside the file
    return fmt, compression


def valid_utf8(path: Path) -> bool:
    """Whether a text file (decompressed) is UTF-8 through and through. Spark's readers
    show bytes that are not as U+FFFD, which a file may also hold as a character: this
    tells the two apart, for the files where Spark found the character."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with COMPRESSIONS.get(file_format(path)[1], open)(path, "rb") as raw:
            while chunk := raw.read(1 << 20):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
    except (UnicodeDecodeError, OSError, EOFError):
        return False
    return True


def cell(symbol: str) -> str:
    """The record column holding a wide row's value for `symbol`."""
    return f"_cell_{symbol}"


def read_files(spark, files: dict[Path, Hashable], domain) -> list[Opened | Unreadable]:
    """Each file's records (see the module docstring), or why it is unreadable. CSV
    files with the same label (`files`: a batch day, say) and the same header are read
    by one Spark scan: planning a scan per file costs more than reading a small file.
    Only headers and footers are read here; the rest is read by Spark when the records
    are first used, where a broken file shows up as a Spark error naming it
    (`unreadable_from_error`)."""
    out, scans = [], {}
    for path, label in files.items():
        if not path.is_file():  # before any open: a FIFO's would wait for a writer
            out.append(_not_regular(path))
            continue
        if path.stat().st_size == 0:  # empty whatever its name: no records (a Parquet
            out.append(Opened(path, None, footer_rows=0))  # or bzip2 file of none has
            continue  # bytes)
        fmt, compression = file_format(path)
        held = _holds_other_format(path) if fmt in ("csv", "json") and not compression \
            else None
        if held:
            out.append(Unreadable(path, f"cannot be read as {fmt}", held))
            continue
        if fmt != "csv":
            out.append(_read_file(spark, path, fmt, compression, domain))
            continue
        try:
            with COMPRESSIONS.get(compression, open)(
                    path, "rt", encoding="utf-8-sig", newline="") as text:
                first = text.readline()  # checks the compression too
                after = text.read(MIXED_PEEK)  # what the records' lines end in
                header = next(csv.reader([first]), None)
        except (UnicodeDecodeError, OSError, EOFError, ValueError, csv.Error) as e:
            out.append(_unreadable(path, fmt, compression, e))
            continue
        problem = _header_problem([h.strip() for h in header or []])
        mixed = _mixed_endings(first, after)
        if problem:
            out.append(Unreadable(path, *problem))
        elif mixed:
            out.append(Unreadable(path, "mixed line endings", mixed))
        elif any("\n" in h or "\r" in h for h in header or []):
            # a quote never closed: the rest of the file would be the header, its
            # records none (and counted as none)
            out.append(Unreadable(path, "header is not one line",
                                  "a quote in the header is never closed"))
        elif not header and _holds_more(path, compression):
            out.append(Unreadable(path, "header is not on the first line",
                                  "the first line is blank: a CSV file's header is its "
                                  "first line"))
        elif not header:  # an empty file: no records
            out.append(Opened(path, None))
        else:
            # Spark's CSV reader takes the first line's ending for every line, keeping a
            # CR in the last field of CRLF records after an LF header and running LF
            # records together after a CRLF header; so lines end at LF, and a CR before
            # one is taken off the last field. A file of CR endings keeps them.
            ending = "\r" if first.endswith("\r") else "\n"
            scans.setdefault((label, tuple(header), ending), []).append(path)
    for (_, header, ending), paths in scans.items():
        out += _csv(spark, paths, domain, list(header), ending)
    return out


#: The first bytes of what a file named as text may hold instead.
MAGIC = {b"\x1f\x8b": ("gzip data", ".gz"), b"BZh": ("bzip2 data", ".bz2"),
         b"PAR1": ("a Parquet file", None), b"PK\x03\x04": ("a zip archive", None)}


def _holds_other_format(path: Path) -> str | None:
    """What an uncompressed text file holds instead of text, by its first bytes."""
    try:
        with open(path, "rb") as raw:
            start = raw.read(4)
    except OSError:
        return None  # read_files reports it when it opens the file
    for magic, (what, suffix) in MAGIC.items():
        if start.startswith(magic) and (magic != b"BZh" or start[3:4].isdigit()):
            return f"it holds {what}" + (f": name it {path.name}{suffix}" if suffix else "")
    return None


def _mixed_endings(first: str, after: str) -> str | None:
    """Why lines cannot be told apart, from the header line and what follows it: Spark
    ends every line as the header's ends, so records ending otherwise would be read as
    one record (an LF header, CR records) or keep an LF in their first field (a CR
    header, LF or CRLF records). LF and CRLF mix (the CR is taken off), as a CR inside a
    quoted field may."""
    body = after[:-1] if after.endswith("\r") else after  # its LF may be past the peek
    if first.endswith("\r") and "\n" in body:
        return "the header ends in CR, records in LF or CRLF"
    if first.endswith("\n") and "\r" in body.replace("\r\n", "") and "\n" not in body:
        return "the header ends in LF, records in CR"
    return None


def _holds_more(path: Path, compression) -> bool:
    """Whether a CSV file whose first line is blank has anything but blank lines."""
    with COMPRESSIONS.get(compression, open)(path, "rt", encoding="utf-8-sig",
                                             errors="replace", newline="") as text:
        return any(line.strip() for line in text)


def _header_problem(names: list[str]) -> tuple[str, str] | None:
    """(reason, detail) when a file's column names show it cannot be read as records of
    either layout: every record would otherwise be quarantined for a column that only
    seems outside the domain."""
    if any("\x00" in n for n in names):
        return ("not UTF-8 text",
                "NUL characters in the header: UTF-16 text without a byte order mark?")
    if len(names) == 1 and names[0] not in READING_COLUMNS:
        sep = next((s for s in ";\t|" if s in names[0]), None)
        if sep:
            return ("header is not comma-separated",
                    f"one column {names[0]!r}: fields are separated by commas, not {sep!r}")
    if len(names) > MAX_COLUMNS:
        return ("header has too many columns", f"{len(names):,} columns, more than "
                f"{MAX_COLUMNS:,} (MAX_COLUMNS): a header this wide is not readings")
    first: dict[str, int] = {}
    for i, name in enumerate(names):  # Spark takes column names in any case for one
        j = first.setdefault(name.lower(), i) if name else i
        if j != i:
            other = names[j]
            return ("header names a column twice", f"{other!r} and {name!r}" + (
                ": Spark's column names are not case-sensitive" if other != name else ""))
    cased = [n for n in names if n not in READING_COLUMNS and n.lower() in READING_COLUMNS
             and n.lower() not in names]
    if cased:
        return ("header names a column in another case",
                ", ".join(f"{n!r} for {n.lower()!r}" for n in cased) +
                ": column names are case-sensitive")
    return None


def _read_file(spark, path: Path, fmt, compression, domain) -> Opened | Unreadable:
    if fmt is None:
        return Unreadable(path, "unknown format", f"expected a name ending in "
                          f"{', '.join(sorted(FORMATS))} (text formats also .gz, .bz2)")
    try:
        if fmt == "parquet":
            return _parquet(spark, path, domain)
        with COMPRESSIONS.get(compression, open)(path, "rb") as raw:
            raw.read(1)  # checks the compression
        return Opened(path, _json(spark, path, domain))
    except (UnicodeDecodeError, OSError, EOFError, ValueError) as e:
        return _unreadable(path, fmt, compression, e)


def _unreadable(path: Path, fmt, compression, e: Exception) -> Unreadable:
    if isinstance(e, UnicodeDecodeError):
        return Unreadable(path, "not UTF-8 text", str(e))
    if isinstance(e, EOFError):  # a compressed stream cut short before the header's end
        return Unreadable(path, "broken or truncated file", first_line(e)[:500])
    return Unreadable(path, f"cannot be read as {fmt}" +
                      (f" ({compression[1:]})" if compression else ""), first_line(e)[:500])


def unreadable_from_error(error: Exception, files: list[Path]) -> Unreadable | None:
    """The file a Spark read error names (Spark's FAILED_READ_FILE), if one of `files`."""
    text = unquote(str(error))  # Spark names a file by URI
    if "FAILED_READ_FILE" not in text:
        return None
    # the longest path named: `x.csv` is in an error naming `x.csv.gz` too
    for path in sorted(files, key=lambda p: len(str(p)), reverse=True):
        if str(path) in text or path.as_uri() in text:
            if "FAILED_READ_FILE.FILE_NOT_EXIST" in text:  # not broken: gone since listed
                return _gone(path)
            cause = [line for line in text.splitlines() if line.startswith("Caused by:")]
            detail = cause[-1].removeprefix("Caused by: ") if cause else first_line(error)[:500]
            # without a Java object's identity hash (`Scheme@21bc8b3d`), which differs
            # from run to run: a rerun of the same file then quarantines the same row
            detail = re.sub(r"(?<=[\w$])@[0-9a-f]{1,8}\b", "", detail)
            if "exceeds the maximum number of characters" in text:  # univocity's
                return Unreadable(path, f"a field longer than {MAX_FIELD_CHARS:,} "
                                        "characters", detail[:500])
            return Unreadable(path, "broken or truncated file", detail[:500])
    return None


def _layout(columns) -> str:
    return "long" if {"symbol", "score"} & set(columns) else "wide"


def _known(layout: str, domain) -> set[str]:
    return set(READING_COLUMNS) if layout == "long" else {*KEYS, *domain}


def _records(frame, source, layout, domain, value, present, extra, malformed, raw,
             bad_text, typed: dict | None = None):
    """The common record columns from per-format expressions: `source` the file's path,
    `value(name)` the text of a column, `present(name)` whether the record has it at
    all, `typed` the typed `ts` and `score` (`TYPED`) of a file whose columns have them
    (their text columns are then null)."""
    from pyspark.sql import functions as F

    typed = typed or {}

    def wide_cell(s):
        return F.when(present(s), F.coalesce(value(s), F.lit("")))

    return frame.select(
        source.alias("source_file"), layout.alias("layout"),
        *[(F.lit(None).cast("string") if c in typed else value(c)).alias(c)
          for c in READING_COLUMNS],
        *[F.when(layout == "wide", wide_cell(s)).alias(cell(s)) for s in domain],
        extra.alias("extra"), malformed.alias("malformed"), raw.alias("raw"),
        bad_text.alias("bad_text"),
        *[typed.get(c, F.lit(None)).cast(t).alias(f"_{c}") for c, t in TYPED.items()])


def _extra_map(names, value):
    """A map of the named columns holding a value (null when none does)."""
    from pyspark.sql import functions as F

    if not names:
        return F.lit(None).cast("map<string,string>")
    found = F.map_filter(F.create_map(*[x for n in names for x in (F.lit(n), value(n))]),
                         lambda k, v: v.isNotNull())
    return F.when(F.size(found) > 0, found)


def _any_replacement(cols):
    from pyspark.sql import functions as F

    checks = [F.coalesce(F.instr(c, REPLACEMENT) > 0, F.lit(False)) for c in cols]
    return F.greatest(*checks) if len(checks) > 1 else checks[0]


def _csv(spark, paths: list[Path], domain, header: list[str],
         ending: str) -> list[Opened | Unreadable]:
    """Files with this header and line ending (`read_files`), in one scan; `source_file`
    is the file's path as given (Spark names it by URI: `file:` and the path with `%`,
    space and `#` escaped)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    # Spark reads the fields by position into columns of its own names: a header naming
    # `_metadata` or `_corrupt_record` would otherwise hide the file path or collide
    # with the corrupt-record column; an unnamed column is named by its place
    names = [h.strip() or f"column {i + 1} (no name)" for i, h in enumerate(header)]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return [Unreadable(p, "header names a column twice", ", ".join(twice))
                for p in paths]
    field = {n: f"_field{i}" for i, n in enumerate(names)}
    schema = StructType([StructField(field[n], StringType()) for n in names] +
                        [StructField(CORRUPT, StringType())])
    frame = (spark.read.schema(schema).option("header", True).option("multiLine", True)
             .option("escape", '"').option("lineSep", ending).option("mode", "PERMISSIVE")
             .option("columnNameOfCorruptRecord", CORRUPT)
             .option("maxCharsPerColumn", MAX_FIELD_CHARS).csv([literal(p) for p in paths]))
    # '+' is itself in a URI but url_decode reads it as a space
    uri = F.regexp_replace(F.col("_metadata.file_path"), r"\+", "%2B")
    source = F.regexp_replace(F.url_decode(uri), "^file:(//)?", "")
    layout = _layout(names)
    known = _known(layout, domain)

    def value(name):
        if name not in names:
            return F.lit(None).cast("string")
        if name == names[-1] and ending == "\n":  # a CRLF ending's CR
            return F.regexp_replace(F.col(field[name]), r"\r\z", "")
        return F.col(field[name])

    records = _records(
        frame, source, F.lit(layout), domain, value, lambda name: F.lit(name in names),
        _extra_map([n for n in names if n not in known], value),
        F.when(F.col(CORRUPT).isNotNull(),
               F.lit(f"wrong number of fields (the header has {len(names)})")),
        F.col(CORRUPT),
        _any_replacement([F.col(field[n]) for n in names] + [F.col(CORRUPT)]))
    return [Opened(p, records) for p in paths]


#: `\uD800`..`\uDBFF` not followed by `\uDC00`..`\uDFFF`, or the second without the first.
LONE_SURROGATE = (r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                  r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _json(spark, path: Path, domain):
    from pyspark.sql import functions as F

    # a line of whitespace alone (spaces, tabs, form feeds) is blank, not a record
    lines = spark.read.text(literal(path)).where(~F.col("value").rlike(r"^\s*$"))
    parsed = F.from_json("value", "map<string,string>",  # JSON, not JavaScript's quotes
                         {"allowSingleQuotes": "false"})
    # a number too large for a double comes out of from_json as the text "Infinity"
    parsed = F.transform_values(parsed, lambda k, v: F.regexp_replace(
        v, r'^"(-?Infinity)"$', "$1"))
    frame = lines.withColumn("m", parsed)
    m = F.col("m")
    layout = F.when(F.map_contains_key(m, "symbol") | F.map_contains_key(m, "score"),
                    "long").otherwise("wide")
    known_long = F.array(*map(F.lit, READING_COLUMNS))
    known_wide = F.array(*map(F.lit, [*KEYS, *domain]))
    extra = F.map_filter(m, lambda k, v: v.isNotNull() & ~F.array_contains(
        F.when(layout == "long", known_long).otherwise(known_wide), k))
    twice = F.size(F.map_keys(m)) != F.size(F.array_distinct(F.map_keys(m)))
    # Spark's parser stops at the end of the first object, so `{..}{..}` or `{..} ]`
    # gave one record and lost the rest: with its strings emptied, a line must be one
    # object of plain values
    emptied = F.regexp_replace("value", r'"(?:[^"\\]++|\\.)*+"', '""')
    plain = emptied.rlike(r"^\s*\{[^{}\[\]]*\}\s*$")
    # a value that is no string comes as Spark's text of it (1767225600.5 as
    # 1.7672256005E9): a quarantined record keeps its line too, as it was read
    bare = emptied.rlike(r':\s*[^"\s]')
    # an escaped UTF-16 surrogate without its other half is no character: Spark's parser
    # made it `?`, so two such stream ids became one (escaped backslashes go first)
    lone = F.regexp_replace("value", r"\\\\", "").rlike(LONE_SURROGATE)
    malformed = (F.when(m.isNull(), "malformed JSON line (not one JSON object)")
                 .when(~plain, "malformed JSON line (not one object of plain values: "
                               "text after it, or an object or array inside)")
                 .when(twice, "malformed JSON line (a key given twice)")
                 .when(lone, "malformed JSON line (an escaped UTF-16 surrogate without its "
                             "pair)"))
    return _records(
        frame, F.lit(str(path)), layout, domain, lambda name: m[name],
        lambda name: F.map_contains_key(m, name),
        F.when(F.size(extra) > 0, extra), malformed,
        F.when(malformed.isNotNull() | bare, F.col("value")),
        ~F.is_valid_utf8("value") | _any_replacement([F.col("value")]))


def _parquet(spark, path: Path, domain):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    try:
        meta = pq.read_metadata(path)
    except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ... on a bad footer
        return Unreadable(path, "not a Parquet file, or truncated", first_line(e)[:500])
    schema = meta.schema.to_arrow_schema()
    # INT96 (Hive, Impala, older Spark) is a timestamp to Spark, nanoseconds to Arrow
    int96 = {meta.schema.column(i).path for i in range(meta.num_columns)
             if meta.schema.column(i).physical_type == "INT96"}
    nanos = {f.name for f in schema if f.name not in int96
             and pa.types.is_timestamp(f.type) and f.type.unit == "ns"}
    if nanos:  # pandas' default; Spark refuses them unless it reads them as numbers
        spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
    problem = _header_problem(schema.names)
    if problem:
        return Unreadable(path, *problem)
    frame = spark.read.parquet(literal(path))
    names = frame.columns
    layout = _layout(names)
    known = _known(layout, domain)

    def column(name):
        if name in nanos:  # nanoseconds since 1970 (UTC) to microseconds
            # floored in integers: a double holds 2026's nanoseconds to about 256 ns, and
            # 23:59:59.9999999 came out as the next day's midnight (QA, 2026-11-27)
            quoted = "`" + name.replace("`", "``") + "`"
            return F.timestamp_micros(F.expr(  # (no overflow near int64's minimum)
                f"{quoted} div 1000 - if({quoted} % 1000 < 0, 1, 0)"))
        return F.col(f"`{name}`")

    def value(name):
        return column(name).cast("string") if name in names else F.lit(None).cast("string")

    types = {f.name: "timestamp" if f.name in nanos else f.dataType.simpleString()
             for f in frame.schema}
    typed = {c: column(c) for c in TYPED
             if types.get(c) in TYPED_FROM[c] and (layout == "long" or c in KEYS)}
    # Parquet writers need not check that text is UTF-8: such a record is quarantined,
    # not committed for the table's statistics to choke on
    text = [n for n in names if types[n] in ("string", "binary")]
    not_utf8 = [F.coalesce(~F.is_valid_utf8(value(n)), F.lit(False)) for n in text]
    malformed = F.lit(None).cast("string") if not text else F.when(  # greatest needs two
        F.greatest(*not_utf8) if len(not_utf8) > 1 else not_utf8[0],
        F.lit("text is not UTF-8"))
    records = _records(frame, F.lit(str(path)), F.lit(layout), domain, value,
                       lambda name: F.lit(name in names),
                       _extra_map([n for n in names if n not in known], value),
                       malformed, F.lit(None).cast("string"), F.lit(False), typed)
    return Opened(path, records, meta.num_rows,
                  set(typed) == ({"ts", "score"} if layout == "long" else {"ts"}),
                  layout == "wide")
