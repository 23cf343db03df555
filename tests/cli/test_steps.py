"""The pipeline's verbs through the command line: `run` (day, backfill), the night's
steps one by one, and `rerun`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from probcep.cli import main
from probcep.config import settings
from probcep.demo.sample import DOMAIN, generate_sample
from probcep.demo.walkthrough import REVISIT
from probcep.lake.tables import ALERT_CHANGES, CORRELATIONS, GROUPS

pytestmark = pytest.mark.slow
REGISTRY = Path(settings.__file__).with_name("patterns.yaml")


def gold(lake):
    rows = GROUPS.read(lake).to_pandas()
    return rows.drop(columns=["run_id", "batch_date"]).sort_values(
        ["pattern", "stream_id", "t_start", "t_first"]).reset_index(drop=True)


def test_nights_backfill_and_rerun(spark, tmp_path, capsys):
    sample = generate_sample(tmp_path / "src", days=3, streams=2, seed=4)
    opts = ["--source", str(sample.folder), "--registry", str(REGISTRY),
            "--master", "local[2]", "--pattern", "room_visit", "--pattern", "hallway_pass"]
    for day in sample.days:  # three nights
        assert main(["run", "--date", day.isoformat(), "--lake", str(tmp_path / "n"),
                     *opts]) == 0
    assert main(["run", "--from", sample.days[0].isoformat(), "--to",
                 sample.days[-1].isoformat(), "--lake", str(tmp_path / "b"), *opts]) == 0
    pd.testing.assert_frame_equal(gold(tmp_path / "n"), gold(tmp_path / "b"))
    out = capsys.readouterr().out
    assert "(validated)" in out
    # the same night as separate steps (as the Airflow DAG runs it) changes nothing
    day = ["--date", sample.days[2].isoformat(), "--lake", str(tmp_path / "n"), *opts]
    assert main(["group-day", *day]) == 0 and main(["validate-gold", *day]) == 0
    assert main(["publish-alerts", *day]) == 0
    assert "alerts added 0, retracted 0" in capsys.readouterr().out
    later = ["--date", "2025-01-01", *day[2:]]  # never grouped: no green step
    assert main(["validate-gold", *later]) == 2 and main(["publish-alerts", *later]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("2025-01-01: not grouped for room_visit" in e for e in err)
    pd.testing.assert_frame_equal(gold(tmp_path / "n"), gold(tmp_path / "b"))

    # a registered correlation over the night's groups, by name; an unknown name refused
    registry = tmp_path / "with_correlation.yaml"
    registry.write_text(REGISTRY.read_text() + yaml.safe_dump({"correlations": dict([REVISIT])}))
    mine = [a if a != str(REGISTRY) else str(registry) for a in day]
    assert main(["correlate-day", *mine, "--correlation", "revisit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{sample.days[2]}: correlation revisit: ")
    assert set(CORRELATIONS.read(tmp_path / "n").to_pandas().correlation) == {"revisit"}
    assert main(["correlate-day", *mine, "--correlation", "nosuch"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "no correlation(s) ['nosuch']" in err[0], err

    # a data fix on day 2: person-0 was in the hallway all day, not visiting
    path = sample.folder / f"distributions-{sample.days[1].isoformat()}.parquet"
    day2 = pd.read_parquet(path)
    fixed = day2.stream_id == "person-0"
    day2.loc[fixed, list(DOMAIN)] = [1.0, 0.0, 0.0]
    day2.to_parquet(path, index=False, coerce_timestamps="us")
    assert main(["rerun", "--from", sample.days[1].isoformat(), "--to",
                 sample.days[1].isoformat(), "--lake", str(tmp_path / "n"),
                 "--reason", "reader 3 mislabelled", *opts]) == 0
    out = capsys.readouterr().out
    assert "retracted" in out
    changes = ALERT_CHANGES.read(tmp_path / "n").to_pandas()
    run_id = next(line for line in out.splitlines() if line.startswith("rerun-")).split(":")[0]
    mine = changes[changes.changed_by_run == run_id]
    assert (mine.change == "retracted").sum() > 0
    assert set(mine.stream_id) == {"person-0"}
    assert main(["run", "--date", sample.days[0].isoformat(), "--lake", str(tmp_path / "x"),
                 "--source", str(sample.folder), "--pattern", "nope"]) == 2
    assert "no pattern(s) ['nope']" in capsys.readouterr().err

    # gap-free files have no silence: a day skipped is refused with the times, not grouped
    skip = ["--lake", str(tmp_path / "skip"), *opts]
    assert main(["group-day", "--date", sample.days[0].isoformat(), *skip]) == 0
    capsys.readouterr()
    assert main(["group-day", "--date", sample.days[2].isoformat(), *skip]) == 2
    err = capsys.readouterr().err
    assert (f"grouping stopped at {sample.days[1]} 00:00:00 UTC (t=" in err
            and f"so their days are grouped in order from {sample.days[1]}, each" in err), err

    # a source row that is not a distribution (no silver suite checks it) is refused
    day2.loc[day2.index[7], DOMAIN[0]] = float("nan")
    day2.to_parquet(path, index=False, coerce_timestamps="us")
    assert main(["group-day", "--date", sample.days[1].isoformat(), "--lake",
                 str(tmp_path / "x"), *opts]) == 2
    err = capsys.readouterr().err
    assert f"{path.name}, row group 0: stream " in err, err
    assert f"probability of '{DOMAIN[0]}' is missing or not a number (nan)" in err, err
