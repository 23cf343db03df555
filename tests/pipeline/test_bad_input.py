"""Bad input, one landing file per kind: what ingest does with each, the reason it gives,
and row conservation for every file (records in = bronze records + quarantine rows).

All the kinds share one day folder and one ingest run (docs/bad-input.md is the table of
them); `wide_sum: renormalize` and a batch that breaks conservation run on their own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import io
import json
import math
import os
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from probcep.config.settings import load_settings
from probcep.lake.tables import BRONZE, QUARANTINE
from probcep.pipeline.context import LakeSilver, RunContext
from probcep.pipeline.ingest import IngestError, ingest_day

pytestmark = pytest.mark.slow
DAY = dt.date(2026, 1, 1)
LONG = "stream_id,sensor_id,ts,symbol,score\n"


def good(stream: str) -> str:
    """A good long row (each file's on its own stream: no duplicates across files)."""
    return f"{stream},r1,2026-01-01T00:00:10,Door,0.5\n"

WIDE = "stream_id,ts,Hallway,Door,Room\n"
#: A long header whose last column is the symbol, which a kept CR would make unknown.
LAST_SYMBOL = "stream_id,sensor_id,ts,score,symbol\n"


def parquet_bytes(table: pa.Table, **options) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, **options)
    return out.getvalue()


PARQUET = parquet_bytes(pa.table({  # NaN stays NaN (pandas would write a null)
    "stream_id": ["p"] * 4, "ts": pd.to_datetime(["2026-01-01T01:00:00"] * 4),  # in ns
    "symbol": ["Door", "Room", "Door", "Hallway"],
    "score": [0.5, float("nan"), float("inf"), None]}))
#: Another long Parquet file of the same schema.
PARQUET_Q = parquet_bytes(pa.table({
    "stream_id": ["q"] * 2, "ts": pd.to_datetime(["2026-01-01T01:00:00"] * 2),
    "symbol": ["Door", "Moon"], "score": [0.25, 0.5]}))
#: Its footer intact, its first page header overwritten: found when Spark reads it.
BROKEN_PAGES = PARQUET_Q[:4] + b"\xff" * 24 + PARQUET_Q[28:]
BIG_CSV = LONG + "".join(f"g,r1,2026-01-01T02:{m:02d}:00,Room,1\n" for m in range(60))
#: Long enough that its header decompresses from the first half of its gzip stream:
#: the truncation is found by Spark, reading on.
LONGER_CSV = LONG + "".join(f"h,r1,2026-01-01T{s // 3600:02d}:{s // 60 % 60:02d}:"
                            f"{s % 60:02d},Room,{s}\n" for s in range(3000))

#: file name -> (bytes, records in it, records to bronze, readings to bronze,
#: {quarantine reason: rows}). An unreadable file counts as one record.
KINDS = {
    "good.csv": (LONG + good("a") + good("a").replace(":10", ":20"), 2, 2, 2, {}),
    "unknown_symbol.csv": (LONG + good("b") + "s,r1,2026-01-01T00:00:11,Kitchen,0.5\n",
                           2, 1, 1, {"unknown symbol": 1}),
    "nan_score.csv": (LONG + "s,r1,2026-01-01T00:00:12,Door,NaN\n", 1, 0, 0,
                      {"score is NaN": 1}),
    "negative_score.csv": (LONG + "s,r1,2026-01-01T00:00:13,Door,-0.5\n", 1, 0, 0,
                           {"negative score": 1}),
    "not_a_number.csv": (LONG + "s,r1,2026-01-01T00:00:13,Door,lots\n"  # and Java's
                         "s,r1,2026-01-01T00:00:13,Door,5d\n"  # literals, which Spark's
                         "s,r1,2026-01-01T00:00:13,Door,0.5f\n"  # cast takes
                         "s,r1,2026-01-01T00:00:13,Door,0x1p-1\n"
                         "s,r1,2026-01-01T00:00:13,Door, +.5e0 \n", 5, 1, 1,
                         {"score is not a number": 4}),
    "unparseable_ts.csv": (LONG + "s,r1,not a time,Door,0.5\n", 1, 0, 0,
                           {"unparseable timestamp": 1}),
    "missing_stream.csv": (LONG + ",r1,2026-01-01T00:00:14,Door,0.5\n"
                           '"\t",r1,2026-01-01T00:00:14,Door,0.5\n'  # blank: tab, newline
                           '" \n ",r1,2026-01-01T00:00:14,Door,0.5\n', 3, 0, 0,
                           {"missing stream_id": 3}),
    # Spark ends every line as the header's ends: other endings would run records together
    # or put a line feed in front of their stream ids
    "cr_header_crlf.csv": (LONG.replace("\n", "\r") + good("cc").replace("\n", "\r\n") * 2,
                           1, 0, 0, {"unreadable file: mixed line endings": 1}),
    "lf_header_cr.csv": (LONG + good("lc").replace("\n", "\r") * 3, 1, 0, 0,
                         {"unreadable file: mixed line endings": 1}),
    "single_quotes.jsonl": ("{'stream_id': 'sq', 'ts': '2026-01-01T00:00:30', "
                            "'symbol': 'Door', 'score': 0.5}\n", 1, 0, 0,
                            {"malformed JSON line (not one JSON object)": 1}),
    "outside_day.csv": (LONG + good("c") + "s,r1,2026-01-02T00:00:00,Door,0.5\n"
                        "s,r1,2026-01-01T23:30:00-05:00,Door,0.5\n", 3, 1, 1,
                        {"outside batch day": 2}),
    "late.csv": (LONG + "s,r1,2025-12-31T23:59:59,Door,0.5\n", 1, 1, 1, {}),
    "minutes_and_zone.csv": (LONG + "s,r1,2026-01-01T22:30Z,Door,0.5\n"  # ISO 8601,
                             "s,r1,2026-01-01 21:30+01:00,Door,0.5\n"  # no seconds
                             "s,r1,2026-01-01T18:30-0500,Door,0.5\n"
                             "s,r1,2026-01-01T23:30-05:00,Door,0.5\n", 4, 3, 3,
                             {"outside batch day": 1}),
    "huge_field.csv": (LONG + good("hf") + "x" * ((1 << 20) + 1)  # a runaway field
                       + ",r1,2026-01-01T00:00:42,Door,0.5\n", 1, 0, 0,
                       {"unreadable file: a field longer than 1,048,576 characters": 1}),
    "lowercase.csv": (LONG + "s,r1,2026-01-01t00:00:40z,Door,0.5\n"  # RFC 3339 §5.6
                      "s,r1,2026-01-01t00:00:41,Door,0.5\n"
                      "s,r1,2026-01-01t01:00+01:00,Door,0.5\n", 3, 3, 3, {}),
    "no_date.csv": (LONG + "s,r1,12:00,Door,0.5\ns,r1,2026,Door,0.5\n", 2, 0, 0,
                    {"timestamp has no date": 2}),
    "zeroed_clock.csv": (LONG + good("z") + "s,r1,0000-01-01T00:00:00,Door,0.5\n"
                         "s,r1,-2026-01-01T00:00:00,Door,0.5\n", 3, 1, 1,
                         {"timestamp before year 1": 2}),
    "not_finite.csv": (LONG + "s,r1,2026-01-01T00:00:15,Door,inf\n"
                       "s,r1,2026-01-01T00:00:15,Door,-Infinity\n"
                       "s,r1,2026-01-01T00:00:15,Door,1e309\n"
                       "s,r1,2026-01-01T00:00:15,Door,1e308\n", 4, 0, 0,
                       {"score is not finite": 3, "score above 1e+300": 1}),
    "wrong_fields.csv": (LONG + good("e") + "s,r1,2026-01-01T00:00:16,Door,0.5,extra\n"
                         "s,r1,2026-01-01T00:00:17,Door\n", 3, 1, 1,
                         {"wrong number of fields (the header has 5)": 2}),
    "rfc4180.csv": (LONG + '"s\nt",r1,2026-01-01T00:00:18,Door,0.5\n'
                    '"s ""q""",r1,"2026-01-01T00:00:19",Door,"0.5"\n', 2, 2, 2, {}),
    "stray_quote.csv": (LONG + good("f") + '"f,r1,2026-01-01T00:00:18,Door,0.5\n'
                        'f,r1,2026-01-01T00:00:19,Door,0.5\n', 2, 1, 1,  # one record, per
                        {"wrong number of fields (the header has 5)": 1}),  # RFC 4180
    "malformed.jsonl": ('{"stream_id": "j", "ts": "2026-01-01T00:00:20", "symbol": "Door", '
                        '"score": 0.5}\n\n{"stream_id": "j", "ts": "2026-01-01T00:00:21"\n'
                        '[{"stream_id": "j"}, {"stream_id": "k"}]\n'
                        '{"stream_id": "j", "stream_id": "k", "ts": "2026-01-01T00:00:22", '
                        '"symbol": "Door", "score": 1}\n', 4, 1, 1,
                        {"malformed JSON line (not one JSON object)": 2,
                         "malformed JSON line (a key given twice)": 1}),
    # a number is no ISO time, and Spark's text of it is not what was read (QA, 2026-11-27)
    "number_ts.jsonl": ('{"stream_id": "jn", "ts": 1767225600.5, "symbol": "Door", '
                        '"score": 0.5}\n', 1, 0, 0, {"unparseable timestamp": 1}),
    "lone_surrogate.jsonl": ('{"stream_id": "u\\ud800", "ts": "2026-01-01T00:00:31", '
                             '"symbol": "Door", "score": 0.5}\n'
                             '{"stream_id": "u\\udc00x", "ts": "2026-01-01T00:00:31", '
                             '"symbol": "Door", "score": 0.5}\n'
                             '{"stream_id": "u\\ud83d\\ude00", "ts": "2026-01-01T00:00:31", '
                             '"symbol": "Door", "score": 0.5}\n'  # a pair: one character
                             '{"stream_id": "u\\\\ud800", "ts": "2026-01-01T00:00:31", '
                             '"symbol": "Door", "score": 0.5}\n', 4, 2, 2,  # a backslash
                             {"malformed JSON line (an escaped UTF-16 surrogate without its "
                              "pair)": 2}),
    "not_plain.jsonl": ('{"stream_id": "n1", "ts": "2026-01-01T00:00:28", "symbol": "Door", '
                        '"score": 0.5}{"stream_id": "lost", "ts": "2026-01-01T00:00:28", '
                        '"symbol": "Room", "score": 0.5}\n'
                        '{"stream_id": "n2", "ts": "2026-01-01T00:00:29", "symbol": "Door", '
                        '"score": 0.5} ]\n'
                        '{"stream_id": {"a": 1}, "ts": "2026-01-01T00:00:29", "symbol": "Door", '
                        '"score": 0.5}\n'
                        '{"stream_id": "n \\"{[\\" ]}", "ts": "2026-01-01T00:00:29", '
                        '"symbol": "Door", "score": 0.5}\n', 4, 1, 1,
                        {"malformed JSON line (not one object of plain values: text after it, "
                         "or an object or array inside)": 3}),
    "unknown_column.csv": ("stream_id,ts,symbol,score,note\n"
                           "s,2026-01-01T00:00:23,Door,0.5,hello\n"
                           "s,2026-01-01T00:00:24,Door,0.5,\n", 2, 1, 1,
                           {"unknown column 'note'": 1}),
    "wide_outside_domain.csv": ("stream_id,ts,Kitchen,Room\n"
                                "w,2026-01-01T00:00:00,0.9,0.1\n", 1, 0, 0,
                                {"column 'Kitchen' is not in the domain": 1}),
    "wide_nan.csv": (WIDE + "w,2026-01-01T00:01:00,0.2,NaN,0.8\n"
                     "w,2026-01-01T00:02:00,0.2,0.3,0.5\n", 2, 1, 3,
                     {"score is NaN in column 'Door'": 1}),
    "wide_empty_cell.csv": (WIDE + "w,2026-01-01T00:03:00,0.5,,0.5\n", 1, 0, 0,
                            {"missing score in column 'Door'": 1}),
    "wide_negative.csv": (WIDE + "w,2026-01-01T00:03:00,1.5,-0.5,0\n", 1, 0, 0,
                          {"negative score in column 'Door'": 1}),
    "wide_sum.csv": (WIDE + "w,2026-01-01T00:04:00,0.2,0.3,0.4\n"
                     "w,2026-01-01T00:05:00,0,0,0\n"
                     "w,2026-01-01T00:06:00,0.2,0.3,0.5000001\n", 3, 1, 3,
                     {"wide row does not sum to 1": 1, "wide row sums to 0": 1}),
    "duplicates.csv": (LONG + good("d") * 2, 2, 2, 2, {}),
    # read in one scan with the other long CSVs, which Spark names by URI
    "odd name #1 + é 100%.csv": (LONG + good("o"), 1, 1, 1, {}),
    "good.parquet": (PARQUET, 4, 1, 1, {"score is NaN": 1, "score is not finite": 1,
                                         "missing score": 1}),
    # a name a URI escapes, and a file Spark fails to read past its footer
    "odd name #2 + é 100%.parquet": (PARQUET_Q, 2, 1, 1, {"unknown symbol": 1}),
    # nanoseconds 100 ns before a midnight: still the day before it, floored (a double
    # rounded them up to the midnight: one was late and was not, one was in the batch
    # day and was refused as outside it; QA, 2026-11-27)
    "ns_edge.parquet": (parquet_bytes(pa.table({
        "stream_id": ["n1", "n2"], "symbol": ["Door", "Room"], "score": [0.5, 0.5],
        "ts": pd.to_datetime(["2025-12-31T23:59:59.9999999", "2026-01-01T23:59:59.9999999"])})),
        2, 2, 2, {}),
    "broken_pages.parquet": (BROKEN_PAGES, 1, 0, 0,
                             {"unreadable file: broken or truncated file": 1}),
    "truncated.parquet": (PARQUET[: len(PARQUET) // 2], 1, 0, 0,
                          {"unreadable file: not a Parquet file, or truncated": 1}),
    "not_gzip.csv.gz": (b"this is not gzip\n", 1, 0, 0,
                        {"unreadable file: cannot be read as csv (gz)": 1}),
    "truncated.csv.gz": (gzip.compress(LONGER_CSV.encode())[:-4000], 1, 0, 0,
                         {"unreadable file: broken or truncated file": 1}),
    "latin1.csv": ((LONG + "caf\xe9,r1,2026-01-01T00:00:25,Door,0.5\n").encode("latin-1"),
                   1, 0, 0, {"unreadable file: not UTF-8 text": 1}),
    # U+FFFD is a character like another: what Spark reads bytes that are not UTF-8 as
    "replacement.csv": (LONG + "rep\ufffd,r1,2026-01-01T00:00:27,Door,0.5\n" + good("rp"),
                        2, 2, 2, {}),
    "replacement.jsonl": ('{"stream_id": "rep\ufffdj", "ts": "2026-01-01T00:00:28", '
                          '"symbol": "Door", "score": 0.5}\n', 1, 1, 1, {}),
    "latin1.jsonl": (b'{"stream_id": "caf\xe9", "ts": "2026-01-01T00:00:26", "symbol": '
                     b'"Door", "score": 0.5}\n', 1, 0, 0,
                     {"unreadable file: not UTF-8 text": 1}),
    # names Spark would expand as globs: each file is read once, as named
    "glob1.csv": (LONG + good("g1"), 1, 1, 1, {}),
    "glob[1].csv": (LONG + good("g2"), 1, 1, 1, {}),
    "glob*.csv": (LONG + good("g3"), 1, 1, 1, {}),
    "glob{1,2}?.jsonl": ('{"stream_id": "g4", "ts": "2026-01-01T00:00:27", "symbol": "Door", '
                         '"score": 0.5}\n', 1, 1, 1, {}),
    "glob[a-z].parquet": (parquet_bytes(pa.table({
        "stream_id": ["g5"], "ts": pd.to_datetime(["2026-01-01T01:00:00"]),
        "symbol": ["Door"], "score": [0.5]})), 1, 1, 1, {}),
    # line endings: Spark's reader takes the first line's for every line
    "lf_header_crlf_rows.csv": (LAST_SYMBOL + "m1,r1,2026-01-01T00:00:30,0.5,Door\r\n"
                                "m1,r1,2026-01-01T00:00:31,0.5,Room\r\n", 2, 2, 2, {}),
    "crlf_header_lf_rows.csv": (LAST_SYMBOL.replace("\n", "\r\n") +
                                "m2,r1,2026-01-01T00:00:30,0.5,Door\n"
                                '"m2",r1,2026-01-01T00:00:31,0.5,"Room"\n', 2, 2, 2, {}),
    "cr_endings.csv": ((LAST_SYMBOL + "m3,r1,2026-01-01T00:00:30,0.5,Door\n"
                        '"m\n3",r1,2026-01-01T00:00:31,0.5,Room\n').replace("\n", "\r"),
                       2, 2, 2, {}),
    # what a file named as text may hold instead, and headers read as no layout
    "gzip_named.csv": (gzip.compress((LONG + good("gz")).encode()), 1, 0, 0,
                       {"unreadable file: cannot be read as csv": 1}),
    "utf16_no_bom.csv": ((LONG + good("u16")).encode("utf-16-le"), 1, 0, 0,
                         {"unreadable file: not UTF-8 text": 1}),
    "semicolons.csv": ((LONG + good("sc")).replace(",", ";"), 1, 0, 0,
                       {"unreadable file: header is not comma-separated": 1}),
    "capitals.csv": ("Stream_ID,Sensor_ID,TS,Symbol,Score\n" + good("cap"), 1, 0, 0,
                     {"unreadable file: header names a column in another case": 1}),
    "capitals.parquet": (parquet_bytes(pa.table({
        "stream_id": ["cp"], "TS": ["2026-01-01T01:00:00"], "symbol": ["Door"],
        "score": [0.5]})), 1, 0, 0,
        {"unreadable file: header names a column in another case": 1}),
    "case_twice.csv": ("stream_id,sensor_id,ts,symbol,score,Score\n"  # one for Spark
                       "ct,r1,2026-01-01T01:00:00,Door,0.5,0.7\n", 1, 0, 0,
                       {"unreadable file: header names a column twice": 1}),
    "case_twice.parquet": (parquet_bytes(pa.table({
        "stream_id": ["cq"], "sensor_id": ["r1"], "ts": ["2026-01-01T01:00:00"],
        "symbol": ["Door"], "score": [0.5], "SCORE": [0.7]})), 1, 0, 0,
        {"unreadable file: header names a column twice": 1}),
    # a blank first line, or a quote the header never closes, left the file's records
    # uncounted (read as an empty file, or as one long header)
    "blank_first_line.csv": ("\n" + LONG + good("bl"), 1, 0, 0,
                             {"unreadable file: header is not on the first line": 1}),
    "only_blank_lines.csv": ("\n\r\n\n", 0, 0, 0, {}),
    "header_quote.csv": ('stream_id,sensor_id,"ts,symbol,score\n' + good("hq") + good("hq"),
                         1, 0, 0, {"unreadable file: header is not one line": 1}),
    "too_wide.csv": (LONG.rstrip("\n") + "".join(f",x{i}" for i in range(5000)) + "\n"
                     + good("tw").rstrip("\n") + "," * 5000 + "\n", 1, 0, 0,
                     {"unreadable file: header has too many columns": 1}),
    "twice.parquet": (parquet_bytes(pa.Table.from_arrays(
        [pa.array(["tp"]), pa.array(["r1"]), pa.array(["2026-01-01T01:00:00"]),
         pa.array(["Door"]), pa.array([0.5]), pa.array([0.7])],
        names=["stream_id", "sensor_id", "ts", "symbol", "score", "score"])), 1, 0, 0,
        {"unreadable file: header names a column twice": 1}),
    # INT96 timestamps (Hive, Impala, older Spark): a timestamp to Spark, not nanoseconds
    "int96.parquet": (parquet_bytes(pa.table({
        "stream_id": ["i96"], "sensor_id": ["r1"],
        "ts": pd.to_datetime(["2026-01-01T02:00:00"]), "symbol": ["Door"],
        "score": [0.5]}), use_deprecated_int96_timestamps=True), 1, 1, 1, {}),
    # text a Parquet writer did not check: each such record quarantined, the rest taken
    "bad_text.parquet": (parquet_bytes(pa.table({
        "stream_id": pa.array([b"bt\xff", b"bt", b"bt"], pa.binary()),
        "sensor_id": ["r1", "r1", "r\u00e9"],
        "ts": ["2026-01-01T03:00:00", "2026-01-01T03:00:01", "2026-01-01T03:00:02"],
        "symbol": pa.array([b"Door", b"Do\xffr", b"Room"], pa.binary()).view(pa.string()),
        "score": [0.5, 0.5, 0.5]})), 3, 1, 1, {"text is not UTF-8": 2}),
    "notes.txt": ("remember the milk\n", 1, 0, 0, {"unreadable file: unknown format": 1}),
    "empty.csv": ("", 0, 0, 0, {}),
    # empty whatever the format (QA, 2026-11-27: these three were quarantined)
    "empty.parquet": (b"", 0, 0, 0, {}),
    "empty.csv.bz2": (b"", 0, 0, 0, {}),
    "empty.jsonl.bz2": (b"", 0, 0, 0, {}),
    # (QA, 2026-11-27) a good file whose path begins a broken file's path was
    # quarantined for the other's error, which names both
    "prefix.csv": (LONG + good("px") + good("px").replace(":10", ":21"), 2, 2, 2, {}),
    "prefix.csv.gz": (gzip.compress(LONGER_CSV.encode())[:-4000], 1, 0, 0,
                      {"unreadable file: broken or truncated file": 1}),
    # cut within its header: the same reason as cut further in
    "small_truncated.csv.gz": (gzip.compress((LONG + good("st") * 50).encode())[:30], 1, 0, 0,
                               {"unreadable file: broken or truncated file": 1}),
    # a wide Parquet file with a typed `ts` has one text column: Spark's `greatest` over
    # the text checks needs two, and the file was quarantined as unreadable
    "wide_typed_ts.parquet": (parquet_bytes(pa.table({
        "stream_id": ["wt"], "ts": pd.to_datetime(["2026-01-01T04:00:00"]),
        "Hallway": [0.2], "Door": [0.3], "Room": [0.5]})), 1, 1, 3, {}),
    # columns named as Spark's own: the file path's `_metadata`, the corrupt record's
    # column (a traceback for the whole day); an unnamed column named by its place, not
    # Spark's `_c5`
    "metadata_column.csv": ("stream_id,sensor_id,ts,symbol,score,_metadata\n"
                            "mc,r1,2026-01-01T00:00:50,Door,0.5,\n"
                            "mc,r1,2026-01-01T00:00:51,Door,0.5,x\n", 2, 1, 1,
                            {"unknown column '_metadata'": 1}),
    "corrupt_column.csv": ("stream_id,sensor_id,ts,symbol,score,_corrupt_record\n"
                           "cr,r1,2026-01-01T00:00:50,Door,0.5,\n"
                           "cr,r1,2026-01-01T00:00:51,Door,0.5,x\n", 2, 1, 1,
                           {"unknown column '_corrupt_record'": 1}),
    "unnamed_column.csv": ("stream_id,sensor_id,ts,symbol,score,\n"
                           "un,r1,2026-01-01T00:00:50,Door,0.5,\n"
                           "un,r1,2026-01-01T00:00:51,Door,0.5,x\n", 2, 1, 1,
                           {"unknown column 'column 6 (no name)'": 1}),
    # JSON's whitespace: a line of tabs or a form feed is blank, as one of spaces
    "blank_lines.jsonl": ('{"stream_id": "bj", "ts": "2026-01-01T00:00:52", "symbol": "Door", '
                          '"score": 0.5}\n\t\n\f\n   \n \t \n', 1, 1, 1, {}),
    "good.csv.gz": (gzip.compress(BIG_CSV.encode()), 60, 60, 60, {}),
    # entries that are not files (made by `land`): quarantined and counted, not passed
    # over; a FIFO's open would wait forever for a writer
    "folder.csv": (lambda p: (p.mkdir(), (p / "inner.csv").write_text(LONG + good("x"))),
                   1, 0, 0, {"unreadable file: not a regular file": 1}),
    "fifo.csv": (os.mkfifo, 1, 0, 0, {"unreadable file: not a regular file": 1}),
    "gone.jsonl": (lambda p: p.symlink_to(p.with_name("nowhere.jsonl")), 1, 0, 0,
                   {"unreadable file: not a regular file": 1}),
}


def land(folder, kinds):
    folder.mkdir(parents=True, exist_ok=True)
    for name in kinds:
        data = KINDS[name][0]
        if callable(data):
            data(folder / name)
        else:
            (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)
    (folder / "_COMPLETE").touch()  # a marker, not data


def context(tmp, run_id, **changes) -> RunContext:
    settings = dataclasses.replace(load_settings(), landing_dir=tmp / "landing",
                                   lake_root=tmp / "lake", max_quarantine_fraction=1.0,
                                   **changes)
    return RunContext(settings, (), LakeSilver(settings), run_id)


def table(ctx, t) -> pd.DataFrame:
    frame = DeltaTable(str(t.path(ctx.settings.lake_root))).to_pandas()
    return frame.assign(file=frame.source_file.map(lambda p: p.rsplit("/", 1)[-1]))


@pytest.fixture(scope="module")
def night(spark, tmp_path_factory):
    """Every kind in one day folder, ingested once."""
    tmp = tmp_path_factory.mktemp("bad_input")
    ctx = context(tmp, "bad-input")
    land(tmp / "landing" / DAY.isoformat(), KINDS)
    report = ingest_day(ctx, DAY)
    return report, table(ctx, BRONZE), table(ctx, QUARANTINE)


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_has_its_outcome_reason_and_conserved_rows(night, name):
    report, bronze, quarantine = night
    _, records, to_bronze, readings, reasons = KINDS[name]
    count = next(c for c in report.per_file if c.file.endswith("/" + name))
    assert (count.records, count.bronze_records, count.bronze, count.quarantined) == \
        (records, to_bronze, readings, sum(reasons.values()))
    assert count.records == count.bronze_records + count.quarantined  # conservation
    assert (bronze.file == name).sum() == readings
    assert quarantine[quarantine.file == name].reason.value_counts().to_dict() == reasons
    assert count.unreadable == next((r.removeprefix("unreadable file: ") for r in reasons
                                     if r.startswith("unreadable file")), "")


def test_a_broken_file_is_quarantined_with_the_same_text_each_time(night):
    """Without the identity hash of a Java object in its cause (`Scheme@21bc8b3d`): it
    changed from run to run, so a rerun of the unchanged day committed quarantine again
    (QA, 2026-11-27)."""
    _, _, quarantine = night
    raw = quarantine[quarantine.file == "broken_pages.parquet"].raw.tolist()
    assert raw and not any(re.search(r"[\w$]@[0-9a-f]{4,8}\b", r) for r in raw), raw


def test_the_report_adds_up_over_every_file(night):
    report, bronze, quarantine = night
    assert report.files == len(KINDS) and len(report.per_file) == len(KINDS)
    assert report.rows == sum(k[1] for k in KINDS.values())
    assert report.bronze == len(bronze) == sum(k[3] for k in KINDS.values())
    assert report.quarantined == len(quarantine) == sum(sum(k[4].values())
                                                        for k in KINDS.values())
    assert report.rows == sum(c.bronze_records for c in report.per_file) + report.quarantined
    total = {}
    for k in KINDS.values():
        for reason, n in k[4].items():
            total[reason] = total.get(reason, 0) + n
    assert report.reasons == total
    assert report.late == 2 and report.duplicates == 1 and report.renormalized == 0
    line = report.line()
    assert "2 late readings for earlier days, the earliest at 2025-12-31T23:59:59Z" in line
    assert "warning: 1 readings repeat another exactly and count again under " \
           "aggregation: sum" in line


def test_typed_parquet_values_are_quarantined_as_their_text(night):
    """A Parquet file's typed timestamps and scores are checked as they are; a refused
    row still shows them as text, as Spark writes them."""
    _, _, quarantine = night
    rows = quarantine[quarantine.file == "good.parquet"].set_index("reason")
    assert rows.ts.tolist() == ["2026-01-01 01:00:00"] * 3
    assert rows.score.where(rows.score.notna(), None).to_dict() == {
        "score is NaN": "NaN", "score is not finite": "Infinity", "missing score": None}


def test_what_the_columns_cannot_show_is_kept_raw(night):
    _, bronze, quarantine = night
    raw = quarantine.set_index("reason").raw
    assert sorted(raw["wrong number of fields (the header has 5)"]) == [
        '"f,r1,2026-01-01T00:00:18,Door,0.5\nf,r1,2026-01-01T00:00:19,Door,0.5',
        "s,r1,2026-01-01T00:00:16,Door,0.5,extra", "s,r1,2026-01-01T00:00:17,Door"]
    assert set(raw["malformed JSON line (not one JSON object)"]) == {
        '{"stream_id": "j", "ts": "2026-01-01T00:00:21"',
        '[{"stream_id": "j"}, {"stream_id": "k"}]',
        "{'stream_id': 'sq', 'ts': '2026-01-01T00:00:30', 'symbol': 'Door', 'score': 0.5}"}
    assert json.loads(raw["column 'Kitchen' is not in the domain"]) == {
        "stream_id": "w", "ts": "2026-01-01T00:00:00", "Kitchen": "0.9", "Room": "0.1"}
    assert json.loads(raw["unknown column 'note'"])["note"] == "hello"
    assert json.loads(raw["score is NaN in column 'Door'"])["Door"] == "NaN"
    for reason in ("not a Parquet file, or truncated", "not UTF-8 text",
                   "broken or truncated file"):  # and what failed, in a line
        assert quarantine[quarantine.reason == f"unreadable file: {reason}"].raw.notna().all()
    assert quarantine[quarantine.file == "number_ts.jsonl"].raw.tolist() == [
        KINDS["number_ts.jsonl"][0].rstrip("\n")]  # Spark's text of its ts: 1.7672256005E9
    # long rows keep their text columns, so no raw
    assert quarantine[quarantine.reason == "negative score"].raw.isna().all()
    # RFC 4180: a quoted line break stays in its field; doubled quotes are one quote
    assert set(bronze[bronze.file == "rfc4180.csv"].stream_id) == {"s\nt", 's "q"'}
    # a wide row is taken whole or not at all: no reading of the NaN row reached bronze
    wide = bronze[bronze.file == "wide_nan.csv"]
    assert set(wide.ts.dt.minute) == {2} and math.isclose(wide.score.sum(), 1.0)


def test_wide_rows_not_summing_to_one_are_renormalized_when_asked(spark, tmp_path):
    """With `wide_sum: renormalize`; the lake's quarantine was written before it had a
    `raw` column, and gains one (null in its older rows)."""
    ctx = context(tmp_path, "renormalize", wide_sum="renormalize")
    land(tmp_path / "landing" / DAY.isoformat(), ["wide_sum.csv"])
    old_schema = QUARANTINE.schema.remove(QUARANTINE.schema.get_field_index("raw"))
    before = DAY - dt.timedelta(days=1)
    old = pa.table({"stream_id": ["o"], "sensor_id": [None], "ts": ["x"], "symbol": ["Door"],
                    "score": ["1"], "reason": ["unparseable timestamp"],
                    "source_file": ["old.csv"], "batch_date": [before],
                    "ingest_time": [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]}, old_schema)
    QUARANTINE.path(ctx.lake).mkdir(parents=True)
    write_deltalake(str(QUARANTINE.path(ctx.lake)), old, partition_by=["batch_date"])
    report = ingest_day(ctx, DAY)
    stored = QUARANTINE.read(ctx.lake).to_pandas().set_index("batch_date")
    assert stored.loc[before, "raw"] is None and stored.loc[DAY, "raw"].startswith("{")
    (count,) = report.per_file
    assert (count.records, count.bronze_records, count.bronze, count.quarantined) == \
        (3, 2, 6, 1)
    assert report.renormalized == 1 and report.reasons == {"wide row sums to 0": 1}
    assert "1 wide rows renormalized" in report.line()
    bronze = table(ctx, BRONZE).sort_values(["ts", "symbol"])
    first = bronze[bronze.ts.dt.minute == 4].set_index("symbol").score
    assert first.to_dict() == pytest.approx({"Hallway": 0.2 / 0.9, "Door": 0.3 / 0.9,
                                             "Room": 0.4 / 0.9})


def test_a_batch_that_loses_a_row_is_not_committed(spark, tmp_path, monkeypatch):
    """Conservation is checked against the staged rows: a reading lost between the
    checks and staging stops the batch, naming the file and its counts."""
    import probcep.pipeline.ingest as ingest

    ctx = context(tmp_path, "lossy")
    land(tmp_path / "landing" / DAY.isoformat(), ["good.csv"])
    real = ingest.readings
    monkeypatch.setattr(ingest, "readings", lambda good, *args: real(good, *args).where(
        "ts != '2026-01-01 00:00:20'"))
    with pytest.raises(IngestError, match=r"good.csv: rows are not conserved: 2 records "
                                          r"read, 1 to bronze .* \+ 0 to quarantine"):
        ingest_day(ctx, DAY)
    assert not BRONZE.exists(ctx.lake) and not QUARANTINE.exists(ctx.lake)


def test_a_file_name_that_is_not_utf8_stops_the_day_naming_it(tmp_path):
    """No table column can hold such a name, so the file cannot be quarantined: the day
    is refused before anything is read or written, naming the file."""
    ctx = context(tmp_path, "bytes")
    folder = tmp_path / "landing" / DAY.isoformat()
    land(folder, ["good.csv"])
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.csv"), "wb") as out:
        out.write((LONG + good("b")).encode())
    with pytest.raises(IngestError, match=r"file name 'caf\\xe9.csv' is not UTF-8 text"):
        ingest_day(ctx, DAY)
    assert not ctx.settings.lake_root.exists()


def test_a_file_name_holding_a_colon_stops_the_day_naming_it(tmp_path):
    """Hadoop reads `r-00:00.csv` as a URI with the scheme `r-00`: Spark quarantined such
    a file as broken, so the day is refused before anything is read, naming the file."""
    ctx = context(tmp_path, "colon")
    folder = tmp_path / "landing" / DAY.isoformat()
    land(folder, ["good.csv"])
    (folder / "r-00:00.csv").write_text(LONG + good("b"))
    with pytest.raises(IngestError, match=r"file name 'r-00:00.csv' holds ':'.*rename it"):
        ingest_day(ctx, DAY)
    assert not ctx.settings.lake_root.exists()


@pytest.mark.parametrize("where, said", [
    ("missing root", "landing folder {root} does not exist"),
    ("root is a file", "landing folder {root} is not a folder"),
    ("day is a file", "{root}/2026-01-01 is not a folder"),
])
def test_a_misplaced_landing_folder_is_refused_not_taken_as_silence(tmp_path, where, said):
    """Silence empties the day's bronze: a mistyped landing folder must not do that to
    good days (it did under the default `missing_day: silence`)."""
    ctx = context(tmp_path, "misplaced")
    root = ctx.settings.landing_dir
    if where != "missing root":
        root.parent.mkdir(exist_ok=True)
        target = root if where == "root is a file" else root / DAY.isoformat()
        target.parent.mkdir(exist_ok=True)
        target.write_text(LONG + good("a"))
    with pytest.raises(IngestError, match=said.format(root=root).replace("[", r"\[")):
        ingest_day(ctx, DAY)
    assert not ctx.settings.lake_root.exists()  # nothing written, nothing emptied


#: Long records of one day (stream, sensor, ts, symbol, score) in two files: good ones, a
#: duplicate, late readings (the earliest in the second file) and refused ones.
SAME_RECORDS = {
    "a": [("s1", "r1", "2026-01-01T00:00:10", "Door", 0.5),
          ("s2", "r1", "2026-01-01T00:00:11", "Room", 0.4),
          ("s2", "r1", "2026-01-01T00:00:11", "Room", 0.4),
          ("s3", "r1", "2025-12-31T23:59:59", "Door", 0.5),
          ("s4", "r1", "2026-01-01T00:00:12", "Moon", 0.5),
          ("s5", "r1", "2026-01-02T00:00:00", "Door", 0.5)],
    "b": [("s6", "r2", "2026-01-01T23:59:59", "Hallway", 2.0),
          ("s7", "r2", "2025-12-30T06:00:00", "Room", 1.0),
          ("s8", "r2", "2026-01-01T00:00:13", "Door", -1.0),
          ("", "r2", "2026-01-01T00:00:14", "Door", 0.5)],
}


def test_a_parquet_batch_reports_what_the_same_records_in_csv_do(spark, tmp_path,
                                                                 monkeypatch):
    """A batch of typed long Parquet files is counted from its staged rows, not by a
    pass over the landing files (`staged_first`); text is counted as it is checked. The
    same records give the same report, file by file, and the same bronze; a Parquet file
    that breaks in that first read is set aside, and the batch staged again without it."""
    import probcep.pipeline.ingest as ingest

    reports, bronze, staged, set_aside = {}, {}, [], []
    real_taken, real_aside = ingest.staged_taken, ingest._set_aside
    monkeypatch.setattr(ingest, "staged_taken", lambda *a: staged.append(a[0]) or
                        real_taken(*a))
    monkeypatch.setattr(ingest, "_set_aside", lambda e, files, unreadable: set_aside.append(
        len(unreadable)) or real_aside(e, files, unreadable))
    for kind in ("csv", "parquet"):
        ctx = context(tmp_path / kind, kind)
        folder = tmp_path / kind / "landing" / DAY.isoformat()
        folder.mkdir(parents=True)
        for name, rows in SAME_RECORDS.items():
            frame = pd.DataFrame(rows, columns=LONG.strip().split(","))
            if kind == "csv":
                frame.to_csv(folder / f"{name}.csv", index=False)
            else:
                frame.assign(ts=pd.to_datetime(frame.ts)).to_parquet(folder / f"{name}.parquet")
        if kind == "parquet":
            (folder / "broken_pages.parquet").write_bytes(BROKEN_PAGES)
        reports[kind] = ingest_day(ctx, DAY)
        bronze[kind] = table(ctx, BRONZE).drop(columns=["source_file", "ingest_time"]) \
            .assign(file=lambda f: f.file.str.split(".").str[0]) \
            .sort_values(["stream_id", "ts", "file"]).reset_index(drop=True)
    csv, parquet = reports["csv"], reports["parquet"]
    assert len(staged) == 1 and set_aside == [0]  # the Parquet batch, staged twice
    assert (parquet.rows, parquet.bronze, parquet.quarantined) == \
        (csv.rows + 1, csv.bronze, csv.quarantined + 1)
    assert parquet.reasons == {**csv.reasons, "unreadable file: broken or truncated file": 1}
    assert (csv.late, csv.earliest_late, csv.duplicates) == \
        (2, dt.datetime(2025, 12, 30, 6, tzinfo=dt.UTC), 1)
    assert (parquet.late, parquet.earliest_late, parquet.duplicates, parquet.renormalized) \
        == (csv.late, csv.earliest_late, csv.duplicates, csv.renormalized)

    def counts(report):
        return {c.file.rsplit("/", 1)[-1].split(".")[0]: dataclasses.astuple(c)[1:]
                for c in report.per_file}

    assert counts(parquet) == {**counts(csv),
                               "broken_pages": (1, 0, 0, 1, "broken or truncated file")}
    pd.testing.assert_frame_equal(bronze["parquet"], bronze["csv"])


def test_late_readings_of_staged_rows_are_found_in_any_row_group(tmp_path):
    """`staged_taken` reads only the row groups whose `ts` statistics reach before the
    day: against counting every row, over files of several row groups."""
    import random

    from probcep.pipeline.ingest import staged_taken

    settings = load_settings()
    first = settings.clock.time(settings.clock.day_range(DAY)[0])
    rng = random.Random(7)
    expected: dict = {}
    for k in range(3):
        rows = [(f"f{rng.randrange(4)}", first + dt.timedelta(seconds=rng.randrange(-90, 600)))
                for _ in range(200)]
        for f, ts in rows:
            n, late, since = expected.get(f, (0, 0, None))
            is_late = ts < first
            expected[f] = (n + 1, late + is_late,
                           min(filter(None, [since, ts if is_late else None]), default=None))
        rows.sort(key=lambda r: r[1] if k else r[0])  # sorted by time: most groups skipped
        pq.write_table(pa.table({"source_file": [r[0] for r in rows],
                                 "ts": pa.array([r[1] for r in rows],
                                                pa.timestamp("us", tz="UTC"))}),
                       tmp_path / f"part-{k}.parquet", row_group_size=16)
    assert staged_taken(tmp_path, settings, DAY) == {
        f: (n, n, late, 0, since) for f, (n, late, since) in expected.items()}


@pytest.mark.parametrize("n, distinct", [(0, False), (40, False), (200, False), (200, True)])
def test_duplicates_are_counted_per_batch_day_as_grouping_the_readings_does(
        spark, n, distinct):
    """The duplicate gate (distinct hashes) and the count behind it against pandas
    grouping every column: repeats within a day count, the same reading on two batch
    days does not; a null sensor is a value like any other."""
    import random

    import probcep.pipeline.ingest as ingest

    rng = random.Random(n)
    rows = [(dt.date(2026, 1, rng.choice([1, 2])), rng.choice(["s1", "s2"]),
             rng.choice(["r1", None]), dt.datetime(2026, 1, 1, 0, 0, rng.randrange(4)),
             rng.choice(["Door", "Room"]), rng.choice([0.5, 1.0])) for _ in range(n)]
    if distinct:  # the gate alone answers
        rows = list(dict.fromkeys(rows))
    columns = ["batch_date", "stream_id", "sensor_id", "ts", "symbol", "score"]
    frame = pd.DataFrame(rows, columns=columns)
    expected = {d: int(k) for d, k in (
        frame.groupby(columns, dropna=False).size().sub(1).groupby(level=0).sum()
        .items()) if k}
    assert bool(expected) == (n > 0 and not distinct)  # (the rows hold what is meant)
    good = spark.createDataFrame(rows, "batch_date date, stream_id string, sensor_id string, "
                                       "ts timestamp, symbol string, score double")
    assert ingest._duplicates(good) == expected


def test_a_day_whose_only_file_is_wide_and_broken_past_its_footer_quarantines_it(
        spark, tmp_path):
    """Set aside, the file left no readable one: the rows of the pass that found it were
    still staged, and the day ended in a Py4J traceback (QA, 2026-11-27)."""
    wide = parquet_bytes(pa.table({"stream_id": ["w"] * 40,
                                   "ts": pd.date_range("2026-01-01", periods=40, freq="min"),
                                   "Hallway": [0.2] * 40, "Door": [0.3] * 40,
                                   "Room": [0.5] * 40}), compression="none")
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "wide_broken.parquet").write_bytes(wide[:4] + b"\xff" * 24 + wide[28:])
    report = ingest_day(context(tmp_path, "wide-broken"), DAY)
    assert (report.rows, report.bronze, report.quarantined) == (1, 0, 1)
    assert report.reasons == {"unreadable file: broken or truncated file": 1}


def test_nanoseconds_near_int64s_minimum_are_floored_without_overflow(spark, tmp_path):
    """pandas' earliest timestamp, in nanoseconds: a late reading, not an overflow of
    Spark's ANSI arithmetic (QA, 2026-11-27: a traceback for the whole day)."""
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    pd.DataFrame({"stream_id": ["m", "m"], "symbol": ["Door", "Room"], "score": [0.5, 0.5],
                  "ts": [pd.Timestamp.min, pd.Timestamp("2026-01-01T00:00:01")]}
                 ).to_parquet(folder / "earliest.parquet")
    report = ingest_day(context(tmp_path, "ns-min"), DAY)
    assert (report.rows, report.bronze, report.quarantined, report.late) == (2, 2, 0, 1)
    assert report.earliest_late == dt.datetime(1677, 9, 21, 0, 12, 43, 145224, tzinfo=dt.UTC)


#: Spark's error for a landing file removed after ingest listed and opened it (QA,
#: 2026-11-28: renamed away between the count and the staging write).
GONE = """An error occurred while calling o781.collectToPython.
: org.apache.spark.SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file file://{path}. File does not exist. It is possible the underlying files have been updated.
You can explicitly invalidate the cache in Spark by running 'REFRESH TABLE tableName' command in SQL or by recreating the Dataset/DataFrame involved. SQLSTATE: KD001
"""  # noqa: E501


def test_a_landing_file_gone_while_read_is_not_called_broken(tmp_path):
    """It was quarantined as `broken or truncated file`, sending whoever looked to a
    sound file (or to none)."""
    from probcep.pipeline.landing import read_files, unreadable_from_error

    path = tmp_path / "2026-01-01" / "readings.csv"
    found = unreadable_from_error(RuntimeError(GONE.format(path=path)), [path])
    assert (found.path, found.why) == (path, "gone when read")
    # gone before it was opened: the same reason, not "not a regular file"
    (found,) = read_files(None, {path: dt.date(2026, 1, 1)}, ["Door"])
    assert (found.path, found.why) == (path, "gone when read")
