"""Approximate matching in the pipeline: registry entry → Spark job → gold tables + history."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.config.registry import RegisteredApprox, RegistryError, parse_entry
from probcep.engine import PatternError
from probcep.engine.approx import ErrorAutomaton, History, run_stream
from probcep.lake.tables import APPROX_BUNDLES, APPROX_HISTORY, APPROX_MATCHES
from probcep.pipeline import approx_day as approx
from tests.engine.approx.reference import all_matches
from tests.engine.strategies import LETTERS, patterns
from tests.pipeline.nights import FrameSilver, context

pytestmark = pytest.mark.slow
DOMAIN = ("Hallway", "Door", "Room")


def silver_day(seed, streams=3, n=200):
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(streams):
        p = rng.dirichlet(np.full(3, 0.3), size=n)
        p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(n) + seed * n,
                                    **{d: p[:, i] for i, d in enumerate(DOMAIN)}}))
    return pd.concat(frames, ignore_index=True)


def test_registry_approx_entries():
    entry = parse_entry("visit_k1", {"pattern": "Door Room+ Door", "max_errors": 1,
                                     "window": 8, "budget": 2}, DOMAIN)
    assert isinstance(entry, RegisteredApprox) and entry.budget == 2.0
    with pytest.raises(RegistryError, match="max_errors must be an integer"):
        parse_entry("x", {"pattern": "Door", "max_errors": -1, "window": 3}, DOMAIN)
    with pytest.raises(RegistryError, match=r"window must be at most 9223372036854775807 "
                                            r"\(2\^63 - 1\), got 10{30}"):
        parse_entry("x", {"pattern": "Door", "max_errors": 1, "window": 10 ** 30}, DOMAIN)
    with pytest.raises(RegistryError, match="unknown field"):
        parse_entry("x", {"pattern": "Door", "max_errors": 1, "window": 3,
                          "policy": "single"}, DOMAIN)


@pytest.mark.parametrize("budget", [None, 1.0])
def test_approx_day_writes_matches_bundles_and_history(spark, tmp_path, budget):
    entry = parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                     "window": 6, "budget": budget}, DOMAIN)
    day0, day1 = dt.date(2026, 3, 1), dt.date(2026, 3, 2)
    frames = [silver_day(0), silver_day(1)]
    source = FrameSilver(dict(zip((day0, day1), frames)).__getitem__, tmp_path / "silver")
    for day in (day0, day1):
        summary = approx.approx_day(context(tmp_path, source, f"run-{day}", [entry]), day)
        assert summary["matches"] > 0
    matches = APPROX_MATCHES.read(tmp_path, [("batch_date", "=", day1)]).to_pandas()
    if budget is None:  # unbudgeted: exactly the engine's matches on the argmax stream
        frame = frames[1]
        for sid, g in frame.groupby("stream_id"):
            g = g.sort_values("t")
            symbols = [DOMAIN[i] for i in g[list(DOMAIN)].to_numpy().argmax(axis=1)]
            want = run_stream(ErrorAutomaton.build("Door Room Door", 1, DOMAIN), 6, symbols,
                              list(g.t))
            got = matches[matches.stream_id == sid]
            classes = {(m.start_tag, m.match_point, m.errors) for m in want.matches}
            assert sorted(zip(got.first_tag, got.match_point, got.errors)) == sorted(classes)
            assert got.n_subsequences.sum() == want.n_matches
    histories = APPROX_HISTORY.read(tmp_path)
    assert sorted(histories["batch_date"].to_pylist()) == [day0, day1]
    after_one = approx.load_history(tmp_path, entry, day1)  # saved after day 0
    after_two = approx.load_history(tmp_path, entry, day1 + dt.timedelta(1))
    assert 0 < sum(after_one.visits.values()) < sum(after_two.visits.values())  # it learns
    assert after_one.n_bundles < after_two.n_bundles
    bundles = APPROX_BUNDLES.read(tmp_path)
    assert bundles.num_rows > 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=6),
       st.lists(st.integers(1, 400), max_size=8), st.sampled_from([None, 1.0]))
def test_a_partition_cut_into_any_batches_gives_each_streams_rows(lengths, cuts, budget):
    """`_match_partition` gets a partition's rows sorted by stream and t in Arrow batches
    that may cut a stream anywhere: its rows are those of each stream matched whole."""
    entry = parse_entry("k1", {"pattern": "Door Room Door", "max_errors": 1, "window": 6,
                               "budget": budget}, DOMAIN)
    rng = np.random.default_rng(len(lengths) * 1000 + sum(cuts))
    frame = pd.DataFrame({
        "stream_id": np.repeat([f"s{k}" for k in range(len(lengths))], lengths),
        "t": np.concatenate([np.arange(n) for n in lengths]),
        "symbol": rng.choice(DOMAIN, sum(lengths))})
    histories = {"k1": pickle.dumps(History(6))}
    each = [approx._match_stream(g, [entry], DOMAIN, histories)
            for _, g in frame.groupby("stream_id")]
    whole = pd.concat([f for f in each if len(f)] or each[:1], ignore_index=True)
    bounds = sorted({c for c in cuts if c < len(frame)} | {0, len(frame)})
    batches = [frame.iloc[lo:hi] for lo, hi in zip(bounds, bounds[1:])] + [frame.iloc[:0]]
    parts = list(approx._match_partition(iter(batches), [entry], DOMAIN, histories))
    got = pd.concat(parts[:1] + [p for p in parts[1:] if len(p)], ignore_index=True) \
        if parts else whole.iloc[:0]
    pd.testing.assert_frame_equal(got.reset_index(drop=True), whole.reset_index(drop=True),
                                  check_dtype=False)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_streams_rows_are_its_match_classes_against_the_reference(data):
    """One row per (first event, match point, errors), counting the subsequences of the
    brute-force reference: the engine keeps a class per automaton state too, and
    `Room{2,3}` over three `Room` ends `R0 R2` and `R0 R1 R2` in two states at once."""
    letters = LETTERS[:data.draw(st.integers(2, 3))]
    text, regex = data.draw(patterns(letters))
    k, window = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 5))
    symbols = data.draw(st.lists(st.sampled_from(letters), min_size=1, max_size=8))
    gaps = data.draw(st.lists(st.integers(1, 2), min_size=len(symbols),
                              max_size=len(symbols)))
    tags = list(np.cumsum(gaps))  # silver's t: one row per timestep
    try:
        ErrorAutomaton.build(text, k, letters)
    except PatternError:
        return  # refused as the registry refuses it
    entry = RegisteredApprox(name="p", pattern=text, max_errors=k, window=window,
                             budget=None, description="", version="v")
    events = pd.DataFrame({"stream_id": "s", "t": tags, "symbol": symbols})
    rows = approx._match_stream(events, [entry], tuple(letters), {})
    rows = rows[rows["kind"] == "match"]
    got = {(a, b, c): d for a, b, c, d in zip(rows.a, rows.b, rows.c, rows.d)}
    assert len(got) == len(rows)  # no two rows of one class
    want: dict = {}
    for sigma, errors in all_matches("".join(symbols), tags, regex, letters, k,
                                     window).items():
        key = (tags[sigma[0]], tags[sigma[-1]], errors)
        want[key] = want.get(key, 0) + 1
    assert got == want


def test_room_2_3_over_three_rooms_is_one_row_per_class():
    entry = RegisteredApprox(name="p", pattern="Room{2,3}", max_errors=0, window=12,
                             budget=None, description="", version="v")
    events = pd.DataFrame({"stream_id": "p1", "t": [0, 1, 2], "symbol": ["Room"] * 3})
    rows = approx._match_stream(events, [entry], DOMAIN, {})
    rows = rows[rows["kind"] == "match"]
    assert sorted(zip(rows.a, rows.b, rows.c, rows.d)) == [(0, 1, 0, 1), (0, 2, 0, 2),
                                                           (1, 2, 0, 1)]


def approx_rows(lake):
    """Every approximate table's rows, run ids left out, in a comparable order."""
    out = {}
    for table in (APPROX_MATCHES, APPROX_BUNDLES, APPROX_HISTORY):
        frame = table.read(lake).to_pandas().drop(columns=["run_id"])
        out[table.name] = sorted(map(repr, frame.itertuples(index=False)))
    return out


def test_a_rerun_of_the_first_day_carries_a_changed_entry_through_later_days(spark, tmp_path):
    """QA: `rerun --from D --to D` after an entry's budget changed recomputed D alone; the
    later days kept the old version's rows, and their histories, though each day starts
    from the history of the day before. A rerun walks them, as for exact patterns, and
    gives the lake a fresh run of the final registry makes; run again, it commits nothing."""
    from probcep.pipeline.rerun import rerun_days

    old, new = (parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                         "window": 6, "budget": b}, DOMAIN) for b in (1.0, 2.0))
    days = [dt.date(2026, 3, 1) + dt.timedelta(k) for k in range(2)]
    frames = dict(zip(days, (silver_day(k) for k in range(2))))
    source = FrameSilver(frames.__getitem__, tmp_path / "silver")
    for day in days:
        approx.approx_day(context(tmp_path / "lake", source, f"night-{day}", [old]), day)
        approx.approx_day(context(tmp_path / "fresh", source, f"night-{day}", [new]), day)
    assert approx_rows(tmp_path / "lake") != approx_rows(tmp_path / "fresh")
    rerun_days(context(tmp_path / "lake", source, "rerun-1", [new]), days[0], days[0])
    assert approx_rows(tmp_path / "lake") == approx_rows(tmp_path / "fresh")
    versions = {t.name: t.version(tmp_path / "lake") for t in (APPROX_MATCHES, APPROX_BUNDLES,
                                                               APPROX_HISTORY)}
    rerun_days(context(tmp_path / "lake", source, "rerun-2", [new]), days[0], days[0])
    assert versions == {t.name: t.version(tmp_path / "lake") for t in (
        APPROX_MATCHES, APPROX_BUNDLES, APPROX_HISTORY)}


def test_the_most_likely_symbol_of_a_tie_is_the_first_in_the_domain(spark):
    """docs/pipeline.md §8: ties are common in real rows (0.5 / 0.5), and decide matches."""
    rows = pd.DataFrame({"stream_id": "s", "t": [0, 1, 2, 3],
                         "Hallway": [0.5, 0.2, 1 / 3, 0.0], "Door": [0.5, 0.4, 1 / 3, 0.5],
                         "Room": [0.0, 0.4, 1 / 3, 0.5]})
    got = approx.most_likely_symbols(spark.createDataFrame(rows), DOMAIN).toPandas()
    assert got.sort_values("t")["symbol"].tolist() == ["Hallway", "Door", "Hallway", "Door"]
    flipped = approx.most_likely_symbols(spark.createDataFrame(rows), DOMAIN[::-1]).toPandas()
    assert flipped.sort_values("t")["symbol"].tolist() == ["Door", "Room", "Room", "Room"]


def test_a_day_made_silent_by_a_fix_keeps_no_history(spark, tmp_path):
    """QA: a rerun that emptied a day kept the history that day had learned, and the
    later days started from it; a fresh lake has none for a silent day."""
    entry = parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                     "window": 6}, DOMAIN)
    day = dt.date(2026, 3, 1)
    before = FrameSilver({day: silver_day(0)}.__getitem__, tmp_path / "silver")
    approx.approx_day(context(tmp_path, before, "night", [entry]), day)
    assert APPROX_HISTORY.read(tmp_path)["batch_date"].to_pylist() == [day]
    after = FrameSilver({day: silver_day(0).iloc[:0]}.__getitem__, tmp_path / "fixed")
    found = approx.approx_day(context(tmp_path, after, "rerun", [entry]), day)
    assert found == {"matches": 0, "bundles": 0, "changed": True, "silent": True}
    assert APPROX_HISTORY.read(tmp_path).num_rows == 0
    assert APPROX_MATCHES.read(tmp_path).num_rows == 0


def first_history_read_meanwhile(monkeypatch, action) -> list:
    """`approx_day.load_history` with `action` run right after its first read (another
    process's step landing once this one has read the history it starts from); the
    calls, counted."""
    real, calls = approx.load_history, []

    def patched(*args, **kwargs):
        calls.append(1)
        history = real(*args, **kwargs)
        if len(calls) == 1:
            action()
        return history

    monkeypatch.setattr(approx, "load_history", patched)
    return calls


@pytest.fixture(scope="module")
def fixed_days(spark, tmp_path_factory):
    """A budgeted entry (its matches follow the history), two days of silver before and
    after a fix of day 0, and a lake made by nights after the fix: what a race must end
    as (built once for the module's race tests)."""
    tmp = tmp_path_factory.mktemp("approx-race")
    entry = parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                     "window": 6, "budget": 1.0}, DOMAIN)
    days = [dt.date(2026, 3, 1) + dt.timedelta(k) for k in range(2)]
    before = dict(zip(days, (silver_day(k) for k in range(2))))
    after = {**before, days[0]: silver_day(7).assign(t=lambda f: f.t - 7 * 200)}
    sources = [FrameSilver(frames.__getitem__, tmp / name)
               for frames, name in ((before, "before"), (after, "after"))]
    for day in days:
        approx.approx_day(context(tmp / "fresh", sources[1], f"night-{day}", [entry]), day)
        approx.approx_day(context(tmp / "stale", sources[0], f"night-{day}", [entry]), day)
    assert approx_rows(tmp / "fresh") != approx_rows(tmp / "stale")
    return entry, days, sources, approx_rows(tmp / "fresh")


def test_a_night_whose_earlier_history_a_rerun_replaces_meanwhile_matches_again(
        fixed_days, tmp_path, monkeypatch):
    """The night of day 1 read day 0's history, then a rerun of day 0 replaced it before
    the night committed: its matches and history followed from a history no longer in
    the lake (review, 2026-11-28). It now looks again and matches again."""
    entry, days, (before, after), fresh = fixed_days
    lake = tmp_path / "raced"
    approx.approx_day(context(lake, before, "night-0", [entry]), days[0])
    calls = first_history_read_meanwhile(monkeypatch, lambda: approx.approx_day(
        context(lake, after, "rerun", [entry]), days[0]))
    said = []
    night = dataclasses.replace(context(lake, before, "night-1", [entry]), echo=said.append)
    approx.approx_day(night, days[1])
    assert len(calls) == 3  # the night's first pass, the rerun's day 0, the night again
    assert said == [f"{days[1]}: the approximate histories it resumed from were replaced "
                    "while it ran (a rerun of an earlier day): matching it again from the "
                    "new ones"]
    assert approx_rows(lake) == fresh


def test_a_rerun_walks_a_day_a_night_matched_from_the_history_it_replaced(
        fixed_days, tmp_path, monkeypatch):
    """The other order: the night of day 1 commits from day 0's old history while the
    rerun of day 0 runs, after the rerun listed its days; the rerun then finds day 1
    matched and walks it (it listed its days once: review, 2026-11-28)."""
    from probcep.pipeline.rerun import rerun_days

    entry, days, (before, after), fresh = fixed_days
    lake = tmp_path / "raced"
    approx.approx_day(context(lake, before, "night-0", [entry]), days[0])
    first_history_read_meanwhile(monkeypatch, lambda: approx.approx_day(
        context(lake, before, "night-1", [entry]), days[1]))
    said = []
    rerun = dataclasses.replace(context(lake, after, "rerun", [entry]), echo=said.append)
    rerun_days(rerun, days[0], days[0])
    assert [line.split(":")[0] for line in said if "approximate" in line] == [
        str(days[0]), str(days[1])]
    assert approx_rows(lake) == fresh


def test_a_history_saved_before_2026_11_26_is_not_resumed(tmp_path):
    """A lake's history pickled before ids carried their cost vectors cannot be mapped
    to any automaton: the day starts from an empty one and says so, naming the rerun
    (an upgraded lake's budgeted matches differed from a fresh lake's silently)."""
    from probcep.errors import ProbcepWarning
    from tests.engine.approx.test_history_keys import legacy_history_bytes

    entry = parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                     "window": 12, "budget": 1.0}, DOMAIN)
    days = [dt.date(2026, 3, 1), dt.date(2026, 3, 2)]
    for day in days:
        APPROX_HISTORY.replace_day(tmp_path, day, pa.table({
            "pattern": [entry.name], "pattern_version": [entry.version],
            "batch_date": pa.array([day], pa.date32()),
            "history": [legacy_history_bytes(learned=True)], "run_id": ["old"],
        }).cast(APPROX_HISTORY.schema), {}, pattern=[entry.name])
    with pytest.warns(ProbcepWarning, match=r"visit_k1 \(version \w+\): the approximate "
                      r"history saved on 2026-03-02 was written by probcep before "
                      r"2026-11-26 .* so 2026-03-03 starts from an empty history.*"
                      r"\(`probcep rerun --from 2026-03-01 --to 2026-03-03`"):
        history = approx.load_history(tmp_path, entry, dt.date(2026, 3, 3))
    assert not history.visits and not history.ids_lost


def test_a_night_reads_only_the_latest_history_before_it(tmp_path, monkeypatch):
    """A history grows with what it learned: each night read every earlier night's, the
    whole table (QA, 2026-11-28). Only the latest one's bytes are read now."""
    from probcep.lake.tables import Table

    entry = parse_entry("visit_k1", {"pattern": "Door Room Door", "max_errors": 1,
                                     "window": 6, "budget": 1}, DOMAIN)
    days = [dt.date(2026, 3, 1) + dt.timedelta(k) for k in range(3)]
    for k, day in enumerate(days):
        history = History(entry.window)
        history.events = k + 1
        APPROX_HISTORY.replace_day(tmp_path, day, pa.table({
            "pattern": [entry.name], "pattern_version": [entry.version],
            "batch_date": pa.array([day], pa.date32()), "history": [pickle.dumps(history)],
            "run_id": [f"run-{day}"]}).cast(APPROX_HISTORY.schema), {"run_id": f"run-{day}"},
            pattern=[entry.name])
    read, histories = Table.read, []

    def counted(self, *args, **kwargs):
        rows = read(self, *args, **kwargs)
        if self is APPROX_HISTORY and "history" in rows.schema.names:
            histories.append(rows.num_rows)
        return rows

    monkeypatch.setattr(Table, "read", counted)
    assert approx.load_history(tmp_path, entry, days[2] + dt.timedelta(1)).events == 3
    assert approx.load_history(tmp_path, entry, days[2]).events == 2
    assert approx.load_history(tmp_path, entry, days[0]).events == 0  # none before: fresh
    assert histories == [1, 1]
