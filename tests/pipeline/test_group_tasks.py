"""Grouping by stream ranges equals the engine run directly, batch after batch, whatever
the files' order and row groups; on Spark executors and without them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from probcep.config.registry import parse_entry
from probcep.engine import StreamMatcher
from probcep.lake.stream_ranges import Streams, plan_ranges
from probcep.pipeline.group_tasks import SAVED_STATES, group_streams, run_grouping

DOMAIN = ("Hallway", "Door", "Room")
PATTERNS = [
    parse_entry("visit", {"pattern": "Door Room+ Door", "policy": "complete",
                          "threshold": 0.01, "window": 12}, DOMAIN),
    parse_entry("pass", {"pattern": "Hallway Door Hallway", "policy": "single",
                         "threshold": 0.0, "window": 5}, DOMAIN),
]


def _silver(n_streams=6, length=600, seed=4):
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_streams):
        p = rng.dirichlet(np.full(3, 0.5), size=length)
        p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(length) + 7 * k,
                                    **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pd.concat(frames, ignore_index=True)


def _files(frame, folder, name, n_files=3, row_group=97, seed=0):
    """The rows shuffled into several Parquet files of small row groups."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = frame.sample(frac=1.0, random_state=seed)
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(rows)), n_files)):
        path = folder / f"{name}-{k}.parquet"
        pq.write_table(pa.Table.from_pandas(rows.iloc[part], preserve_index=False), path,
                       row_group_size=row_group)
        paths.append(str(path))
    return paths


def _direct(silver):
    rows = []
    for sid, part in silver.groupby("stream_id"):
        part = part.sort_values("t")
        for p in PATTERNS:
            m = StreamMatcher(p.query)
            for g in m.feed(int(part.t.iloc[0]), part[list(DOMAIN)].to_numpy()) + m.finish():
                rows.append((p.name, sid, g.t_start, g.t_first, g.t_end, g.probability,
                             g.n_matches, g.max_match_probability))
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or 0))


def _groups(table: pa.Table):
    frame = table.to_pandas()
    rows = [(r.pattern, r.stream_id, r.t_start, r.t_first, r.t_end, r.probability,
             r.n_matches, r.max_match_probability)
            for r in frame.itertuples() if r.kind == "group"]
    rows = [tuple(None if pd.isna(x) else x for x in r) for r in rows]
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or 0))


def _rows(files, where) -> pd.DataFrame:
    """The rows a task reads for a stream range, as Streams.read gives them."""
    streams = Streams.read(files, DOMAIN, where)
    frames = [pd.DataFrame({"stream_id": sid, "t": t + np.arange(len(p)),
                            **{d: p[:, k] for k, d in enumerate(DOMAIN)}})
              for i, sid in enumerate(streams.ids) for t, p in streams.runs(i)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _states(table: pa.Table) -> pa.Table:
    return table.filter(pa.compute.equal(table["kind"], "state")).select(SAVED_STATES.names)


CUTS = [0, 150, 151, 420, 10_000]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 40])
@pytest.mark.parametrize("shuffled", [False, True])
def test_stream_ranges_cover_every_stream_once(tmp_path, n, shuffled):
    silver = _silver(n_streams=9, length=50)
    if shuffled:
        files = _files(silver, tmp_path, "day", row_group=31)
    else:  # sorted by stream, as normalize writes silver
        path = tmp_path / "sorted.parquet"
        pq.write_table(pa.Table.from_pandas(silver, preserve_index=False), path,
                       row_group_size=31)
        files = [str(path)]
    plan = plan_ranges(files, n)
    assert 1 <= len(plan) <= n
    seen = pd.concat([_rows(paths, r) for r, paths in plan])
    assert len(seen) == len(silver)
    key = ["stream_id", "t"]
    pd.testing.assert_frame_equal(seen.sort_values(key).reset_index(drop=True),
                                  silver.sort_values(key).reset_index(drop=True))
    if n > 1 and not shuffled:  # narrow row groups: even ranges
        sizes = [len(_rows(paths, r)) for r, paths in plan]
        assert len(plan) == min(n, 9) and max(sizes) <= 2 * len(silver) / len(plan), sizes


def test_ranges_batch_after_batch_equal_one_pass_without_spark(tmp_path):
    silver = _silver()
    expected = _direct(silver)
    assert expected
    states, got = SAVED_STATES.empty_table(), []
    for lo, hi in zip(CUTS[:-1], CUTS[1:]):
        files = _files(silver[(silver.t >= lo) & (silver.t < hi)], tmp_path, f"b{lo}")
        final = hi == CUTS[-1]
        outs = [group_streams(Streams.read(paths, DOMAIN, r),
                              states.filter(r.expression()), PATTERNS, final)
                for r, paths in plan_ranges(files, 3)]
        out = pa.concat_tables(outs)
        got += _groups(out)
        states = _states(out)
        if not final:
            assert states.num_rows == len(PATTERNS) * silver.stream_id.nunique()
    assert sorted(got, key=lambda r: (r[0], r[1], r[2], r[3] or 0)) == expected


def test_more_ranges_when_a_range_would_be_too_large(tmp_path):
    silver = _silver(n_streams=8, length=50)
    path = tmp_path / "sorted.parquet"
    pq.write_table(pa.Table.from_pandas(silver, preserve_index=False), path,
                   row_group_size=25)
    plan = plan_ranges([str(path)], 3, max_rows=100)  # 400 rows: two waves of three
    sizes = [len(_rows(p, r)) for r, p in plan]
    assert len(plan) == 6 and sum(sizes) == len(silver) and max(sizes) <= 100, sizes


def test_file_uris_read_like_paths(tmp_path):
    silver = _silver(n_streams=3, length=30)
    files = _files(silver, tmp_path, "uri")
    uris = [f"file://{f}" for f in files]
    by_path = [len(_rows(p, r)) for r, p in plan_ranges(files, 2)]
    by_uri = [len(_rows(p, r)) for r, p in plan_ranges(uris, 2)]
    assert by_path == by_uri and sum(by_uri) == len(silver)


def test_a_gap_in_dense_input_names_the_stream(tmp_path):
    silver = _silver(n_streams=2, length=20)
    silver = silver[~((silver.stream_id == "s1") & (silver.t == 15))]
    files = _files(silver, tmp_path, "gap", n_files=1)
    with pytest.raises(ValueError, match=r"stream 's1': stream continues at t=15, block "
                                         r"starts at t=16"):  # dense input: no silence
        group_streams(Streams.read(files, DOMAIN, plan_ranges(files, 1)[0][0]),
                      SAVED_STATES.empty_table(), PATTERNS, final=False)


@pytest.mark.slow
def test_days_one_at_a_time_equal_one_pass_on_spark(spark, tmp_path):
    silver = _silver()
    expected = _direct(silver)
    states, got = SAVED_STATES.empty_table(), []
    for lo, hi in zip(CUTS[:-1], CUTS[1:]):
        files = _files(silver[(silver.t >= lo) & (silver.t < hi)], tmp_path, f"d{lo}")
        final = hi == CUTS[-1]
        out = run_grouping(spark, files, states, PATTERNS, DOMAIN, tmp_path / f"out{lo}",
                           final=final, tasks=3)
        got += _groups(out)
        states = _states(out)
        if not final:
            assert states.num_rows == len(PATTERNS) * silver.stream_id.nunique()
    assert sorted(got, key=lambda r: (r[0], r[1], r[2], r[3] or 0)) == expected


def test_a_query_that_outgrows_its_runs_names_the_pattern_and_the_stream(monkeypatch):
    """A night's line named neither: `2,391,484 partial matches alive at t=-4908 ...`
    (QA, 2026-11-28); and with a window set it asks for a shorter one."""
    from probcep.engine import runs
    from probcep.engine.runs import RunLimitError

    monkeypatch.setattr(runs, "MAX_RUNS", 1 << 6)
    many = [parse_entry("many", {"pattern": "Door .* Door", "policy": "single",
                                 "threshold": 1e-300, "window": 400}, DOMAIN)]
    silver = _silver(n_streams=1, length=300)
    states = SAVED_STATES.empty_table()
    with pytest.raises(RunLimitError, match=r"^pattern 'many', stream 's0': [\d,]+ partial "
                       r"matches alive at t=\d+.*use a shorter window or a larger θ$"):
        group_streams(Streams.of(pa.Table.from_pandas(silver, preserve_index=False), DOMAIN),
                      states, many, final=True)
