"""probcep_nightly's day: the run of day D covers [D 00:00, D+1 00:00) UTC, starts once D
has ended and gives every step `--date D`; its sensor waits for D's landing folder to be
complete.

The runs come from the session's DAG dump (`dagbag_dump.py`: the timetable as the
scheduler uses it, through the serialized DAG); the day and landing rules are plain
functions of the DAG file, loaded here on a temporary AIRFLOW_HOME.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.dags.conftest import dag_module

ROOT = Path(__file__).resolve().parents[2]
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")


def midnight(day: str, plus: int = 0) -> str:
    return (dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
            + dt.timedelta(days=plus)).isoformat()


@pytest.fixture(scope="module")
def timetable(dagbag) -> dict:
    return dagbag["dags"]["probcep_nightly"]["timetable"]


@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    """dags/probcep_nightly.py as a module (Airflow configured under a temporary home)."""
    return dag_module(tmp_path_factory, "probcep_nightly")


def test_the_nightly_dag_has_a_daily_utc_data_interval_timetable(timetable):
    assert timetable["type"] == "CronDataIntervalTimetable"
    assert timetable["summary"] == "0 0 * * *"
    assert timetable["periodic"] and timetable["catchup"] is False


def test_the_run_of_day_d_covers_d_and_starts_after_d_has_ended(timetable):
    runs = timetable["backfill"]  # what `airflow backfill create` makes for the sample
    assert [r["logical_date"] for r in runs] == [midnight(d) for d in DAYS]
    for day, run in zip(DAYS, runs, strict=True):
        assert run["start"] == midnight(day)
        assert run["end"] == midnight(day, 1)
        assert run["run_after"] == midnight(day, 1)  # D has ended


def test_the_scheduler_follows_the_first_night_with_the_next_day(timetable):
    after = timetable["after_first"]
    assert after["run"] == {"logical_date": midnight(DAYS[1]), "start": midnight(DAYS[1]),
                            "end": midnight(DAYS[2]), "run_after": midnight(DAYS[2])}


def test_unpausing_runs_the_last_day_that_has_ended_at_once(timetable):
    unpaused = timetable["unpaused"]  # at 2026-01-04 09:30, catchup=False
    assert unpaused["at"] == "2026-01-04T09:30:00+00:00"
    assert unpaused["run"]["start"] == midnight(DAYS[2])
    assert unpaused["run"]["end"] == midnight(DAYS[2], 1)
    assert unpaused["run"]["run_after"] <= unpaused["at"]  # due already: it runs now


def test_every_step_gets_the_day_of_the_run(timetable):
    rendered = timetable["rendered"]
    for day in DAYS:
        assert set(rendered["scheduled"][midnight(day)].values()) == {day}
    # `airflow dags test probcep_nightly 2026-01-01`: Airflow infers the interval that
    # ended at the logical date, but the run processes the logical date's day
    assert timetable["manual"]["dags_test_2026-01-01"]["start"] == midnight("2025-12-31")
    assert set(rendered["dags_test_2026-01-01"].values()) == {DAYS[0]}
    # triggered without a logical date (2026-01-04 09:30): the last day that had ended
    assert set(rendered["no_logical_date"].values()) == {DAYS[2]}
    steps = {"ingest", "normalize", "validate_gold", "publish_alerts"}
    assert set(rendered["dags_test_2026-01-01"]) == steps


def test_run_day_is_the_logical_dates_utc_day(nightly):
    at = dt.datetime(2026, 1, 2, 0, 0, tzinfo=dt.UTC)
    assert nightly.run_day(SimpleNamespace(logical_date=at, run_after=at)) == "2026-01-02"
    late = dt.datetime(2026, 1, 2, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert nightly.run_day(SimpleNamespace(logical_date=late, run_after=at)) == "2026-01-03"
    none = SimpleNamespace(logical_date=None, run_after=dt.datetime(2026, 1, 4, 9, 30,
                                                                    tzinfo=dt.UTC))
    assert nightly.run_day(none) == "2026-01-03"


def write_day(landing: Path, day: str, *names: str) -> Path:
    folder = landing / day
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("x\n")
    return folder


def test_a_landing_folder_is_complete_with_its_marker_or_the_next_days_folder(
        nightly, tmp_path):
    day = DAYS[0]
    assert not nightly.landing_complete(tmp_path, day)
    write_day(tmp_path, day, "readings.csv")
    assert not nightly.landing_complete(tmp_path, day)  # files, but more may come
    write_day(tmp_path, day, nightly.COMPLETE_MARKER)
    assert nightly.landing_complete(tmp_path, day)
    assert not nightly.landing_complete(tmp_path, DAYS[1])
    write_day(tmp_path, DAYS[2])  # deliveries went on to the next day
    assert nightly.landing_complete(tmp_path, DAYS[1])
    assert not nightly.landing_complete(tmp_path, DAYS[2])


def test_the_sensor_waits_for_a_complete_folder_until_the_morning_after(nightly, tmp_path):
    day = DAYS[0]
    night = dt.datetime(2026, 1, 2, 0, 5, tzinfo=dt.UTC)
    write_day(tmp_path, day, "readings.csv", "more.jsonl", "notes.txt")
    assert nightly.check_landing(tmp_path, day, night) is None  # the day still lands
    assert nightly.landing_deadline(day) == dt.datetime(2026, 1, 2, 6, tzinfo=dt.UTC)
    with pytest.raises(nightly.LandingError, match=r"not complete .*past its deadline"):
        nightly.check_landing(tmp_path, day, dt.datetime(2026, 1, 2, 6, tzinfo=dt.UTC))
    write_day(tmp_path, day, nightly.COMPLETE_MARKER)
    assert nightly.check_landing(tmp_path, day, night) == ["more.jsonl", "readings.csv"]
    later = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)  # a late run of a complete day
    assert nightly.check_landing(tmp_path, day, later) == ["more.jsonl", "readings.csv"]


def test_a_complete_day_without_data_files_is_left_to_ingest(nightly, tmp_path):
    """A day of silence, or a refused one: the `missing_day` setting, read by ingest."""
    write_day(tmp_path, DAYS[0], nightly.COMPLETE_MARKER, "notes.txt")
    assert nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 2, tzinfo=dt.UTC)) == []
    write_day(tmp_path, DAYS[2])  # no folder for DAYS[1], but deliveries went on
    assert nightly.check_landing(tmp_path, DAYS[1], dt.datetime(2026, 1, 3, tzinfo=dt.UTC)) == []


def test_past_its_deadline_a_day_without_a_folder_is_left_to_ingest(nightly, tmp_path):
    """A backfill over quiet days: no folder for DAYS[0] nor DAYS[1] (QA, 2026-11-26: the
    first failed the night, which `probcep run` takes as silence)."""
    write_day(tmp_path, DAYS[2], "readings.csv")
    assert nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 2, tzinfo=dt.UTC)) \
        is None  # before its deadline it may still come
    assert nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 3, tzinfo=dt.UTC)) == []
    write_day(tmp_path, DAYS[0], "readings.csv")  # a folder, never completed: refused
    with pytest.raises(nightly.LandingError, match="past its deadline"):
        nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 3, tzinfo=dt.UTC))


def test_a_day_that_has_not_begun_fails_the_sensor_at_once(nightly, tmp_path):
    """A year's typo in a triggered run's logical date (2062) held the DAG's only run slot
    for the sensor's 6 hours, waiting for a deadline in 2062 (QA, 2026-11-27)."""
    now = dt.datetime(2026, 1, 2, 0, 5, tzinfo=dt.UTC)
    with pytest.raises(nightly.LandingError, match="2062-01-02 has not begun \\(today is "
                                                   "2026-01-02, UTC\\)"):
        nightly.check_landing(tmp_path, "2062-01-02", now)
    with pytest.raises(nightly.LandingError, match="2026-01-03 has not begun"):
        nightly.check_landing(tmp_path, "2026-01-03", now)
    assert nightly.check_landing(tmp_path, "2026-01-02", now) is None  # today still lands


def test_compressed_files_are_data_and_a_missing_root_is_refused_at_once(nightly, tmp_path):
    write_day(tmp_path, DAYS[0], "a.csv.gz", "b.jsonl.bz2", "c.txt.gz", "_COMPLETE", ".x.csv",
              "d.parquet.gz")  # ingest reads no compressed Parquet file
    assert nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 2, tzinfo=dt.UTC)) \
        == ["a.csv.gz", "b.jsonl.bz2"]
    with pytest.raises(nightly.LandingError, match="no such landing folder"):
        nightly.check_landing(tmp_path / "mistyped", DAYS[0], dt.datetime(2026, 1, 2,
                                                                          tzinfo=dt.UTC))


def test_the_tasks_read_the_registry_as_the_jobs_do(nightly, tmp_path_factory, tmp_path,
                                                     monkeypatch):
    """A registry the steps would refuse fails `list_patterns` and `check_params` with the
    steps' message (file and line), and a date_to that has not begun is refused before a
    spark-submit (QA, 2026-11-26: a YAML traceback naming `<unicode string>`, a list of
    names taken, a future day refused by the job after its retry)."""
    rerun = dag_module(tmp_path_factory, "probcep_rerun").probcep_rerun()
    dag = nightly.probcep_nightly()
    settings = tmp_path / "probcep.yaml"
    registry = tmp_path / "patterns.yaml"
    settings.write_text(f"lake_root: {tmp_path / 'lake'}\nlanding_dir: {tmp_path / 'in'}\n"
                        f"registry: {registry}\ndomain: [a, b]\ntimestep_seconds: 60\n"
                        "epoch: '2026-01-01T00:00:00'\n")
    monkeypatch.setenv("PROBCEP_SETTINGS", str(settings))
    good = {"date_from": "2026-01-01", "date_to": "2026-01-02", "reason": "fix"}
    registry.write_text("patterns:\n  p: {pattern: 'a b', policy: single}\n")
    assert dag.get_task("list_patterns").python_callable() == ["p"]
    assert rerun.get_task("check_params").python_callable(
        params={**good, "patterns": ["p"]})[-2:] == ["--pattern", "p"]
    future = (dt.datetime.now(dt.UTC).date() + dt.timedelta(days=2)).isoformat()
    with pytest.raises(ValueError, match="has not begun"):
        rerun.get_task("check_params").python_callable(params={**good, "date_to": future})
    # QA, 2026-11-27: a conf key the form does not declare was passed over (a mistyped
    # `pattern` reran every pattern), 10,000 days ran for hours, and today without its
    # folder was refused by the job after a spark-submit and a retry
    check = rerun.get_task("check_params").python_callable
    conf = {**good, "pattern": ["nope"], "dry_run": True}
    with pytest.raises(ValueError, match=r"unknown param\(s\) \['dry_run', 'pattern'\]; "
                                         r"known: date_from, date_to, patterns, reason"):
        check(params=conf, dag_run=SimpleNamespace(conf=conf))
    assert check(params=good, dag_run=SimpleNamespace(conf=good))[:2] == ["--from",
                                                                           "2026-01-01"]
    with pytest.raises(ValueError, match="9999 days from 1999-07-13 to 2026-11-26: a rerun "
                                         "after a data fix takes at most 92"):
        check(params={**good, "date_from": "1999-07-13", "date_to": "2026-11-26"})
    today = dt.datetime.now(dt.UTC).date().isoformat()
    for made in ((), ("_COMPLETE",)):  # none yet, or a folder made at midnight
        for name in made:
            (tmp_path / "in" / today).mkdir(parents=True, exist_ok=True)
            (tmp_path / "in" / today / name).touch()
        with pytest.raises(ValueError, match=f"date_to {today} is today, and its landing "
                                             f"folder .*/in/{today} holds no data file"):
            check(params={**good, "date_from": today, "date_to": today})
    (tmp_path / "in" / today / "r.csv").touch()
    assert check(params={**good, "date_from": today, "date_to": today})[3] == today
    for text, said in (("patterns:\n  p: {pattern: 'a b', window: [40\n", "line"),
                       ("patterns:\n  - p\n", "expected a mapping 'patterns:'")):
        registry.write_text(text)
        for call in (lambda: dag.get_task("list_patterns").python_callable(),
                     lambda: rerun.get_task("check_params").python_callable(
                         params={**good, "patterns": ["p"]}),
                     # all patterns, as the docs advise after a data fix (QA, 2026-11-27:
                     # the registry was read only for named patterns)
                     lambda: rerun.get_task("check_params").python_callable(
                         params={**good, "patterns": []})):
            with pytest.raises(Exception, match=said) as refused:
                call()
            assert str(registry) in str(refused.value)


def test_the_sensor_lists_the_files_ingest_reads_by_ingest_s_own_rule(nightly, tmp_path):
    """The DAG had its own copy of the formats (review, 2026-11-28): a format added to
    ingest would have been a day "with no file of a format ingest reads"."""
    from probcep.pipeline.landing import FORMATS

    names = [f"r{suffix.upper()}" for suffix in FORMATS] + [
        "a.csv.gz", "b.JSONL.bz2", "c.parquet.gz", "notes.txt", ".hidden.csv", "_SUCCESS"]
    write_day(tmp_path, DAYS[0], nightly.COMPLETE_MARKER, *names)
    listed = nightly.check_landing(tmp_path, DAYS[0], dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    assert listed == sorted([f"r{suffix.upper()}" for suffix in FORMATS]
                            + ["a.csv.gz", "b.JSONL.bz2"])
