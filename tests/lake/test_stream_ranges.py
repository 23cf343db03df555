"""Cutting a batch's rows into streams: whatever order the rows come in (sorted, sorted
runs interleaved as delta-rs writes them, shuffled), from a table or from Parquet files
of any row groups read for a range of stream ids, each stream of the range comes out
whole and in time order as its runs of consecutive timesteps (silver skips timesteps
with no reading), and a repeated timestep names its stream."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.lake import stream_ranges as module
from probcep.lake.stream_ranges import StreamRange, Streams

DOMAIN = ("a", "b")


@st.composite
def batches(draw):
    """Streams of random lengths and start times, their rows cut into random runs that
    are then put in random order; maybe one row dropped (a gap) or repeated (an error).
    Returns the streams as (times, values) after the fault, the rows, and the stream
    with a repeated row."""
    streams = {}
    for k in range(draw(st.integers(1, 4))):
        t0, n = draw(st.integers(-3, 5)), draw(st.integers(1, 25))
        streams[f"s{k}"] = (t0, (np.arange(n, dtype=float) + 100 * k) / 1024)  # tags; b = 1 - a
    rows = [(sid, t0 + i, v) for sid, (t0, vals) in streams.items() for i, v in enumerate(vals)]
    cuts = sorted(draw(st.sets(st.integers(1, len(rows) - 1), max_size=len(rows) - 1))
                  if len(rows) > 1 else set())
    runs = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    runs = draw(st.permutations(runs))
    rows = [r for run in runs for r in run]
    fault = draw(st.sampled_from([None, "drop", "repeat"]))
    broken = None
    if fault:
        k = draw(st.integers(0, len(rows) - 1))
        if fault == "repeat":
            rows, broken = rows[:k + 1] + rows[k:], rows[k][0]
        elif sum(r[0] == rows[k][0] for r in rows) > 1:  # a stream keeps one row at least
            rows = rows[:k] + rows[k + 1:]
    kept = {sid: (np.array([r[1] for r in rows if r[0] == sid]),
                  np.array([r[2] for r in rows if r[0] == sid])) for sid in streams}
    kept = {sid: (t[np.argsort(t, kind="stable")], v[np.argsort(t, kind="stable")])
            for sid, (t, v) in kept.items()}
    return kept, rows, broken


def _assert_runs(cut: Streams, i: int, want) -> None:
    """Stream i's runs: consecutive inside, a gap between, and together the rows."""
    times, vals = want
    runs = cut.runs(i)
    assert cut.t0[i] == times[0]
    for (t, probs), (u, _) in zip(runs, runs[1:]):
        assert u > t + len(probs)  # runs are separated by a gap
    got_t = np.concatenate([t + np.arange(len(p)) for t, p in runs])
    np.testing.assert_array_equal(got_t, times)
    np.testing.assert_array_equal(np.concatenate([p for _, p in runs]),
                                  np.column_stack([vals, 1 - vals]))


def _table(rows, dictionary: bool) -> pa.Table:
    ids = pa.array([r[0] for r in rows], pa.string())
    return pa.table({"stream_id": ids.dictionary_encode() if dictionary else ids,
                     "t": pa.array([r[1] for r in rows], pa.int64()),
                     "a": [r[2] for r in rows], "b": [1 - r[2] for r in rows]})


@settings(max_examples=300, deadline=None)
@given(batch=batches(), dictionary=st.booleans(), sort_outright=st.booleans())
def test_streams_come_out_whole_in_time_order(batch, dictionary, sort_outright):
    streams, rows, broken = batch
    table = _table(rows, dictionary)
    with pytest.MonkeyPatch.context() as patch:
        if sort_outright:  # the path taken when rows come in no useful order
            patch.setattr(module, "SORT_ABOVE_PIECES", 0)
        if broken is not None:
            with pytest.raises(ValueError, match=f"stream '{broken}': t=.* appears more than "
                                                 "once"):
                Streams.of(table, DOMAIN)
            return
        cut = Streams.of(table, DOMAIN)
    assert sorted(cut.ids) == sorted(streams)
    for i, sid in enumerate(cut.ids):
        _assert_runs(cut, i, streams[sid])


def test_no_rows_no_streams():
    cut = Streams.of(_table([], dictionary=True), DOMAIN)
    assert cut.ids == [] and len(cut.t0) == 0


def _check(cut: Streams, streams: dict, wanted) -> None:
    """Each wanted stream, and only those, whole and in time order; every block is
    loaded once (held until its last stream is served, not longer)."""
    assert cut.ids == sorted(sid for sid in streams if wanted(sid))
    loads, load = [], cut._load
    cut._load = lambda b: loads.append(b) or load(b)
    for i, sid in enumerate(cut.ids):
        _assert_runs(cut, i, streams[sid])
    assert sorted(loads) == sorted(set(cut.block))
    assert not cut._loaded


@settings(max_examples=150, deadline=None)
@given(batch=batches(), files=st.integers(1, 3), row_group=st.integers(1, 40),
       bounds=st.tuples(st.sampled_from([None, "s0", "s1", "s10", "s2", "s3", "s4"]),
                        st.sampled_from([None, "s0", "s1", "s2", "s25", "s3", "s4"])),
       sort_outright=st.booleans())
def test_a_range_read_from_parquet_comes_out_whole(tmp_path_factory, batch, files, row_group,
                                                   bounds, sort_outright):
    """Row groups wholly inside, straddling and outside the range, in several files."""
    streams, rows, broken = batch
    folder = tmp_path_factory.mktemp("parquet")
    table = _table(rows, dictionary=False)
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(rows)), files)):
        paths.append(str(folder / f"part-{k}.parquet"))
        pq.write_table(table.take(part), paths[-1], row_group_size=row_group)
    where = StreamRange(*bounds)
    broken_inside = broken is not None and where.holds(broken)
    with pytest.MonkeyPatch.context() as patch:
        if sort_outright:
            patch.setattr(module, "SORT_ABOVE_PIECES", 0)
        if broken_inside:
            with pytest.raises(ValueError, match=f"stream '{broken}': t=.* appears more "
                                                 "than once"):
                Streams.read(paths, DOMAIN, where)
            return
        cut = Streams.read(paths, DOMAIN, where)
    _check(cut, streams, where.holds)  # a broken stream, if any, is outside the range


def test_a_null_stream_id_names_the_file_and_row_group(tmp_path):
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"stream_id": ["s0", None, "s0"], "t": [0, 1, 1],
                             "a": [0.5] * 3, "b": [0.5] * 3}), path)
    with pytest.raises(ValueError, match=r"nulls.parquet, row group 0: 1 rows have no "
                                         r"stream_id"):
        Streams.read([str(path)], DOMAIN, StreamRange(None, None))


def test_a_file_without_a_symbol_of_the_domain_names_it_and_the_way_out(tmp_path):
    """Silver of a day normalized before a symbol was added to the domain."""
    path = tmp_path / "old.parquet"
    pq.write_table(pa.table({"stream_id": ["s0"], "t": [0], "a": [1.0]}), path)
    with pytest.raises(ValueError, match=r"old.parquet: no column 'b' of the domain: its day "
                                         r"was normalized under another domain"):
        Streams.read([str(path)], DOMAIN, StreamRange(None, None))


@pytest.mark.parametrize("a, b, said", [
    (float("nan"), 0.0, r"probability of 'a' is missing or not a number \(nan\)"),
    (None, 0.0, r"probability of 'a' is missing or not a number \(nan\)"),
    (1.7, -0.7, r"probability of 'a' is 1.7, outside \[0, 1\]"),
    (0.5, -0.3, r"probability of 'b' is -0.3, outside \[0, 1\]"),
    (0.5, 0.4, r"probabilities sum to 0.9, not 1"),
])
def test_a_row_that_is_not_a_distribution_names_its_file_stream_and_t(tmp_path, a, b, said):
    """`run --source` files reach the engine without silver's suite: a row that is not a
    distribution is refused where it is, not matched."""
    path = tmp_path / "distributions-2026-01-01.parquet"
    pq.write_table(pa.table({"stream_id": ["s0", "s1", "s1"], "t": [0, 0, 1],
                             "a": [1.0, 0.25, a], "b": [0.0, 0.75, b]}), path)
    streams = Streams.read([str(path)], DOMAIN, StreamRange(None, None))
    with pytest.raises(ValueError, match=rf"row group 0: stream 's1', t=1: {said}"):
        [streams.runs(i) for i in range(len(streams.ids))]
