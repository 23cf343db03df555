"""`probcep evaluate`: found, missed and false alarms per pattern against a true-episodes
file, at the alerts, at a threshold and over a sweep; plain numbers in every output."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from probcep.cli import main
from probcep.lake.tables import ALERTS, GROUPS

DAY = dt.date(2026, 1, 1)
#: (pattern, stream, t_start, t_end, probability); the packaged clock: minutes from
#: 2026-01-01T00:00.
GROUP_ROWS = [("room_visit", "a", 10, 20, 0.9), ("room_visit", "a", 50, 60, 0.4),
              ("room_visit", "b", 5, 9, 0.7), ("room_visit", "c", 100, 110, 0.95),
              ("hallway_pass", "a", 30, 32, 0.99)]
EPISODES = """stream_id,start,end,pattern
a,2026-01-01T00:12:00,2026-01-01T00:18:00,room_visit
a,2026-01-01T00:52:30,2026-01-01T00:58:00,room_visit
b,2026-01-01T02:00:00,2026-01-01T02:10:00,room_visit
a,2026-01-01T00:31:00,2026-01-01T00:31:00,hallway_pass
"""


@pytest.fixture
def lake(tmp_path):
    n = len(GROUP_ROWS)
    ts = pa.array([None] * n, pa.timestamp("us", tz="UTC"))
    rows = pa.table({
        "pattern": [r[0] for r in GROUP_ROWS], "pattern_version": ["v"] * n,
        "stream_id": [r[1] for r in GROUP_ROWS], "t_start": [r[2] for r in GROUP_ROWS],
        "t_first": pa.nulls(n, pa.int64()), "t_end": [r[3] for r in GROUP_ROWS],
        "ts_start": ts, "ts_first": ts, "ts_end": ts,
        "probability": [r[4] for r in GROUP_ROWS], "n_matches": [1] * n,
        "max_match_probability": [0.1] * n, "batch_date": pa.array([DAY] * n, pa.date32()),
        "run_id": ["r"] * n}).cast(GROUPS.schema)
    GROUPS.replace_day(tmp_path / "lake", DAY, rows, {"run_id": "r"}, pattern=["room_visit",
                                                                                "hallway_pass"])
    alerts = rows.filter(pa.compute.greater_equal(rows["probability"], 0.5))
    alerts = alerts.append_column("alert_threshold", pa.array([0.5] * alerts.num_rows))
    ALERTS.replace_day(tmp_path / "lake", DAY, alerts.cast(ALERTS.schema), {"run_id": "r"},
                       pattern=["room_visit", "hallway_pass"])
    (tmp_path / "episodes.csv").write_text(EPISODES)
    return tmp_path


def run(lake, capsys, *extra):
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
                 str(lake / "lake"), *extra]) == 0
    return capsys.readouterr().out


def test_alerts_against_the_episodes(lake, capsys):
    out = [json.loads(line) for line in run(lake, capsys, "--json").splitlines()]
    assert out == [
        {"pattern": "room_visit", "threshold": None, "true": 3, "found": 1, "missed": 2,
         "false_alarms": 2},  # b's alert misses b's later episode; c has none
        {"pattern": "hallway_pass", "threshold": None, "true": 1, "found": 1, "missed": 0,
         "false_alarms": 0}]
    text = run(lake, capsys)
    assert "np." not in text and "room_visit: 3 true episodes: 1 alerted, 2 missed" in text
    # the best group of the second episode, below the threshold, in UTC times (minutes)
    assert "2026-01-01 00:52:00 to 00:58:00 2026-01-01 00:50:00 to 01:00:00" in text


def test_a_threshold_and_a_sweep(lake, capsys, tmp_path):
    low = json.loads(run(lake, capsys, "--json", "--threshold", "0.3",
                         "--pattern", "room_visit"))
    assert (low["found"], low["missed"], low["false_alarms"]) == (2, 1, 2)
    png = tmp_path / "sweep.png"
    rows = [json.loads(x) for x in run(lake, capsys, "--json", "--sweep").splitlines()]
    assert len(rows) == 2 * 19 and {r["threshold"] for r in rows} >= {0.05, 0.5, 0.95}
    top = next(r for r in rows if r["pattern"] == "room_visit" and r["threshold"] == 0.95)
    assert (top["found"], top["false_alarms"]) == (0, 1)
    run(lake, capsys, "--sweep", "--plot", str(png))
    assert png.read_bytes()[:4] == b"\x89PNG"
    png.unlink()  # without --sweep: the threshold's table, the sweep drawn
    one = json.loads(run(lake, capsys, "--json", "--threshold", "0.3", "--pattern",
                         "room_visit", "--plot", str(png)))
    assert one == low and png.read_bytes()[:4] == b"\x89PNG"
    png.unlink()
    assert "room_visit: 3 true episodes" in run(lake, capsys, "--plot", str(png))
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bad_episodes_name_the_row(lake, capsys):
    (lake / "episodes.csv").write_text("stream_id,start,end,pattern\na,yesterday,x,room_visit\n")
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
                 str(lake / "lake")]) == 2
    assert "row 2: start 'yesterday' is not a timestamp" in capsys.readouterr().err


@pytest.mark.parametrize("text, said", [
    # blank lines are no records, and a quoted field may span lines: the line is named
    ("a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n\n\n"
     "a,bad,2026-01-01T00:01:00,room_visit\n", "row 5: start 'bad' is not a timestamp"),
    ('"a\nb",2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n'
     "a,bad,2026-01-01T00:01:00,room_visit\n", "row 4: start 'bad' is not a timestamp"),
    # one field too many would shift every column (pandas: "end 'room_visit'")
    ("a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit,zz\n",
     "row 2: 5 field(s), the header has 4"),
    ("a,2026-01-01T00:00:00\n", "row 2: 2 field(s), the header has 4"),
    ("", None),
])
def test_episode_rows_are_named_by_the_line_they_start_on(lake, capsys, text, said):
    (lake / "bad.csv").write_text("stream_id,start,end,pattern\n" + text)
    code = main(["evaluate", "--episodes", str(lake / "bad.csv"), "--lake",
                 str(lake / "lake"), "--pattern", "room_visit"])
    err = capsys.readouterr().err
    assert (code, said in err if said else err) == (2, True) if said else (code, err) == (0, "")


def test_a_header_naming_a_column_twice_is_refused(lake, capsys):
    (lake / "twice.csv").write_text("stream_id,start,end,pattern,start\n"
                                    "a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit,x\n")
    assert main(["evaluate", "--episodes", str(lake / "twice.csv"), "--lake",
                 str(lake / "lake")]) == 2
    assert "twice.csv: the header names start more than once" in capsys.readouterr().err


def test_an_empty_or_unreadable_episodes_file_is_refused(lake, capsys):
    for content, said in ((b"", "empty: expected a header stream_id,start,end,pattern"),
                          (b"stream_id,start,end,pattern\n\xe9,x,y,z\n",
                           "cannot read the episodes file: line 2: bytes that are not "
                           "UTF-8 text")):
        (lake / "bad.csv").write_bytes(content)
        assert main(["evaluate", "--episodes", str(lake / "bad.csv"), "--lake",
                     str(lake / "lake")]) == 2
        assert said in capsys.readouterr().err


def test_nanoseconds_are_dropped_without_a_python_warning(lake, capsys):
    import warnings

    from probcep.errors import ProbcepWarning

    (lake / "episodes.csv").write_text(EPISODES.replace("00:12:00,", "00:12:00.123456789,"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert json.loads(run(lake, capsys, "--json").splitlines()[0])["found"] == 1
    assert [str(w.message) for w in caught if w.category is not ProbcepWarning] == []


def test_alerts_that_were_never_published_are_refused_or_warned_of(lake, capsys, tmp_path):
    """Scored against alerts publish-alerts never wrote, every episode would count as
    missed without a word."""
    import shutil

    # a day grouped after the alerts were published: its groups are not alerts yet
    day2 = DAY + dt.timedelta(days=1)
    rows = GROUPS.read(lake / "lake", GROUPS.day_filter(DAY, {})).set_column(
        GROUPS.schema.get_field_index("batch_date"), "batch_date",
        pa.array([day2] * len(GROUP_ROWS), pa.date32()))
    GROUPS.replace_day(lake / "lake", day2, rows, {"run_id": "r"})
    argv = ["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake", str(lake / "lake"),
            "--json"]
    assert main(argv) == 0  # (this lake has no state/engine: "never grouped" lines too)
    assert [x for x in capsys.readouterr().err.splitlines() if "publish" in x] == [
        f"probcep evaluate: warning: {name}: 1 day(s) hold groups at or above its alert "
        f"threshold {threshold} but no published alert (2026-01-02): run publish-alerts "
        f"for them, or give --threshold" for name, threshold in (("room_visit", 0.5),
                                                                 ("hallway_pass", 0.9))]
    assert main([*argv, "--threshold", "0.5"]) == 0  # groups are scored: no alert read
    assert "publish" not in capsys.readouterr().err

    shutil.rmtree(ALERTS.path(lake / "lake"))
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
                 str(lake / "lake")]) == 2
    assert capsys.readouterr().err == (
        f"probcep evaluate: error: {lake}/lake/gold/alerts: no gold alerts table here (run "
        f"publish-alerts, or give --threshold P to score the groups)\n")
    assert json.loads(run(lake, capsys, "--json", "--threshold", "0.5").splitlines()[0])[
        "found"] == 1  # the groups are scored without alerts


def test_a_mistyped_year_reads_silver_only_on_grouped_days(lake, capsys, monkeypatch):
    """An episode ending in 2062 spans 13,000 days: none of them but the grouped ones is
    read (it took a minute, a read per day)."""
    from probcep.lake.tables import SILVER

    test_episodes_that_can_only_be_missed_are_warned_of(lake, capsys)  # state and silver
    reads = []
    real = type(SILVER).read

    def read(table, *args, **kwargs):
        reads.extend([args[1]] if table is SILVER else [])
        return real(table, *args, **kwargs)

    monkeypatch.setattr(type(SILVER), "read", read)
    (lake / "episodes.csv").write_text(EPISODES.replace("2026-01-01T00:18:00",
                                                        "2062-01-01T00:18:00"))
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
                 str(lake / "lake"), "--json"]) == 0
    assert len(reads) == 1 and capsys.readouterr().err.startswith(
        "probcep evaluate: warning: room_visit: 13149 day(s) of its episodes were never "
        "grouped (2026-01-02, 2026-01-03, 2026-01-04, …)")


@pytest.mark.parametrize("rows, said", [
    (",2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit", "row 2: no stream_id"),
    ("a,2026-01-01T00:00:00,2026-01-01T00:01:00, ", "row 2: no pattern"),
    ("a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n"
     "b,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n"
     "a,2026-01-01T00:00:00Z,2026-01-01T00:01:00,room_visit", "rows 2 and 4 are the same"),
    ("a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n"  # two repeats: the first
     "b,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n"  # pair, not rows 2 and 3
     "a,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit\n"
     "b,2026-01-01T00:00:00,2026-01-01T00:01:00,room_visit", "rows 2 and 4 are the same"),
])
def test_episodes_without_a_stream_or_pattern_or_twice_are_refused(lake, capsys, rows, said):
    (lake / "bad.csv").write_text("stream_id,start,end,pattern\n" + rows + "\n")
    assert main(["evaluate", "--episodes", str(lake / "bad.csv"), "--lake",
                 str(lake / "lake")]) == 2
    assert said in capsys.readouterr().err


def test_a_lake_without_groups_is_refused(lake, capsys):
    # a mistyped --lake must not score every episode as missed
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
                 str(lake / "typo")]) == 2
    assert capsys.readouterr().err == (f"probcep evaluate: error: {lake}/typo/gold/groups: no "
                                       "gold groups table here (run the pipeline first, or "
                                       "give --lake)\n")


@pytest.mark.parametrize("threshold", ["nan", "2", "-1"])
def test_a_threshold_outside_0_1_is_refused(lake, capsys, threshold):
    with pytest.raises(SystemExit) as refused:  # argparse's usage and line
        main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake",
              str(lake / "lake"), "--threshold", threshold, "--json"])
    out, err = capsys.readouterr()
    assert refused.value.code == 2 and out == "" and err.startswith("usage: ")
    assert err.splitlines()[-1] == (f"probcep evaluate: error: argument --threshold: "
                                    f"'{threshold}' is not a probability in [0, 1]")


def test_a_pattern_the_registry_does_not_know_is_refused(lake, capsys):
    """A misspelt pattern name must not drop its episodes from the count unseen."""
    episodes = lake / "episodes.csv"
    episodes.write_text(EPISODES + "a,2026-01-01T00:40:00,2026-01-01T00:41:00,room_vist\n")
    assert main(["evaluate", "--episodes", str(episodes), "--lake", str(lake / "lake")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"probcep evaluate: error: {episodes}: names pattern(s) "
                          "['room_vist'] that ") and "--pattern NAME" in err
    assert main(["evaluate", "--episodes", str(episodes), "--lake", str(lake / "lake"),
                 "--pattern", "room_visit", "--json"]) == 0  # chosen: the others are left


def test_times_with_and_without_an_offset_in_one_column_each_mean_their_own(lake, capsys):
    """pandas reads a column mixing the two by giving a time without an offset an
    earlier row's offset; a time without one is UTC."""
    plain = [json.loads(x) for x in run(lake, capsys, "--json").splitlines()]
    (lake / "episodes.csv").write_text(EPISODES.replace(  # the same instant, said in +01:00
        "a,2026-01-01T00:12:00,", "a,2026-01-01T01:12:00+01:00,"))
    assert [json.loads(x) for x in run(lake, capsys, "--json").splitlines()] == plain


def test_a_sweep_shows_each_episodes_best_group_and_draws_with_json_too(lake, capsys,
                                                                         tmp_path):
    text = run(lake, capsys, "--sweep")
    assert "room_visit: 3 true episodes; best group per episode:" in text
    assert "2026-01-01 00:52:00 to 00:58:00 2026-01-01 00:50:00 to 01:00:00" in text
    assert "alerted" not in text  # it depends on the threshold
    png = tmp_path / "sweep.png"
    rows = run(lake, capsys, "--sweep", "--json", "--plot", str(png)).splitlines()
    assert len(rows) == 2 * 19 and png.read_bytes()[:4] == b"\x89PNG"


def test_no_episode_and_an_approximate_pattern_are_told_plainly(lake, capsys):
    empty = lake / "none.csv"
    empty.write_text("stream_id,start,end,pattern\n")
    argv = ["evaluate", "--episodes", str(empty), "--lake", str(lake / "lake")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"probcep evaluate: error: {empty}: holds no episode "
                                       f"(give --pattern NAME to count a pattern's alarms "
                                       f"against no true case)\n")
    assert main([*argv, "--pattern", "room_visit"]) == 0
    out = capsys.readouterr().out
    assert "Empty DataFrame" not in out and "(no episode)" in out
    assert main([*argv, "--pattern", "visit_one_missing"]) == 2
    assert capsys.readouterr().err == ("probcep evaluate: error: --pattern visit_one_missing "
                                       "is an approximate pattern: evaluate scores the "
                                       "groups and alerts of exact patterns\n")


def test_episodes_that_can_only_be_missed_are_warned_of(lake, capsys):
    """An episode on a day its pattern was never grouped, or of a stream silver holds
    nothing of on its days (a typo), counts as missed: the command says why, on stderr."""
    from deltalake import write_deltalake

    from probcep.lake.tables import SILVER, STATES, silver_schema

    root = lake / "lake"
    n = 2
    STATES.replace_day(root, DAY, pa.table({
        "pattern": ["room_visit", "hallway_pass"], "pattern_version": ["v"] * n,
        "stream_id": [""] * n, "batch_date": [DAY] * n, "next_t": [0] * n,
        "state": [b""] * n, "run_id": ["r"] * n}).cast(STATES.schema), {"run_id": "r"})
    write_deltalake(str(SILVER.path(root)), pa.table({
        "stream_id": ["a", "b"], "t": [1, 2],
        "ts": pa.array([None] * n, pa.timestamp("us", tz="UTC")), "date": [DAY] * n,
        "x": [1.0] * n}).cast(silver_schema(["x"])), partition_by=["date"])
    assert run(lake, capsys, "--json")
    assert capsys.readouterr().err == ""  # every episode's day grouped, its stream heard

    (lake / "episodes.csv").write_text(EPISODES + "a,2026-01-02T00:10:00,2026-01-02T00:20:00,"
                                       "room_visit\nzz,2026-01-01T00:10:00,"
                                       "2026-01-01T00:20:00,room_visit\n")
    assert main(["evaluate", "--episodes", str(lake / "episodes.csv"), "--lake", str(root),
                 "--json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out.splitlines()[0])["missed"] == 4
    assert said.err.splitlines() == [
        "probcep evaluate: warning: room_visit: 1 day(s) of its episodes were never grouped "
        "(2026-01-02): nothing on them is found (an episode wholly on them counts as "
        "missed)",
        "probcep evaluate: warning: room_visit: silver holds no reading of stream(s) zz on "
        "the days of their episodes: a mistyped stream_id? they count as missed"]
