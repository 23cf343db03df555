"""`probcep demo` on a small generated landing sample: the whole pipeline, scored."""

from __future__ import annotations

import dataclasses
from importlib.resources import files

import pytest

from probcep.demo.sample import generate_landing
from probcep.demo.walkthrough import run_demo
from probcep.pipeline.context import LakeSilver, RunContext

pytestmark = pytest.mark.slow


def test_demo_finds_the_true_visits(spark, tmp_path, capsys):
    generate_landing(tmp_path / "landing", days=2, streams=2, seed=9)
    lines = []
    ctx = RunContext.open("demo", lake=tmp_path / "lake", master="local[2]", echo=lines.append)
    settings = dataclasses.replace(ctx.settings, landing_dir=tmp_path / "landing")
    ctx = dataclasses.replace(ctx, settings=settings, source=LakeSilver(settings))
    card = run_demo(ctx)
    assert card is not None and len(card.episodes) > 10
    assert card.found >= 0.6 * len(card.episodes)
    assert len(card.false_alarms) <= 2
    text = "\n".join(lines)
    assert "against the true visits" in text and "quarantine" in text
    assert "revisit: A room visit with another visit" in text  # the demo's correlation
    assert "inside the range: P" in text
    assert (tmp_path / "lake" / "silver" / "distributions" / "_delta_log").is_dir()
    from deltalake import DeltaTable

    commit = DeltaTable(str(tmp_path / "lake" / "gold" / "groups")).history()[0]
    assert commit["silver_version"].isdigit() and commit["run_id"].startswith("demo-")
    from probcep.cli import main

    png = tmp_path / "visit.png"
    assert main(["plot", "--lake", str(tmp_path / "lake"), "--stream", "person-0",
                 "--pattern", "room_visit", "--from", "0", "--to", "600", "-o", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "warning" not in capsys.readouterr().err
    # a day the lake never normalized (its 2 days are 01-01, 01-02) would be drawn as a
    # quiet one, unsaid (QA, 2026-11-27)
    assert main(["plot", "--lake", str(tmp_path / "lake"), "--stream", "person-0",
                 "--pattern", "room_visit", "--from", "2026-01-02T23:00",
                 "--to", "2026-01-04T01:00", "-o", str(png)]) == 0
    assert ("probcep plot: warning: 2026-01-03, 2026-01-04: 2 day(s) of the range with no "
            "silver in this lake (never normalized here): drawn as silence") in \
        capsys.readouterr().err
    for wrong, says in ((["--pattern", "room_vist"], "no registered pattern 'room_vist'"),
                        (["--pattern", "room_visit", "--to", "100000000"],
                         "timesteps, more than a plot draws (1,000,000)")):
        capsys.readouterr()
        assert main(["plot", "--lake", str(tmp_path / "lake"), "--stream", "person-0",
                     *wrong, "-o", str(png)]) == 2
        assert says in capsys.readouterr().err


def test_bundled_sample_is_there():
    landing = files("probcep.demo") / "landing"
    assert len([p for p in landing.iterdir() if p.is_dir()]) == 3
    assert (landing / "episodes.csv").exists()
