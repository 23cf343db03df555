"""`probcep demo` on a small generated sample: groups, alerts, and a scored run."""

from __future__ import annotations

from pathlib import Path

import pytest

from probcep.demo import generate_sample, load_sample, run_demo

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_demo_finds_the_true_visits(spark, tmp_path):
    generate_sample(tmp_path / "sample", days=2, streams=2, seed=9)
    lines = []
    card = run_demo(load_sample(tmp_path / "sample"), tmp_path / "lake",
                    ROOT / "patterns.yaml", master="local[2]", echo=lines.append)
    assert card is not None and len(card.episodes) > 10
    assert card.found >= 0.8 * len(card.episodes)
    assert len(card.false_alarms) <= 2
    assert any("against the true visits" in line for line in lines)
    assert (tmp_path / "lake" / "gold" / "groups" / "_delta_log").is_dir()


def test_bundled_sample_is_there():
    sample = load_sample(ROOT / "data" / "demo")
    assert len(sample.days) == 3 and sample.episodes.exists()
