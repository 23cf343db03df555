"""What a run checks when it opens, before any table is touched."""

from __future__ import annotations

import datetime as dt

import pytest

from probcep.config.registry import RegistryError
from probcep.errors import ProbcepError
from probcep.pipeline.context import DistributionFiles, RunContext

REGISTRY = """patterns:
  p1: {pattern: "Door Room+ Door", policy: single}
correlations:
  c1: {live: p1, archive_pattern: "Door Hallway Door", lookback: LOOKBACK}
"""


def test_a_bad_correlation_stops_every_step_at_once(tmp_path):
    """It used to surface only at correlate-day, after the night had written bronze,
    silver, groups and alerts."""
    registry = tmp_path / "patterns.yaml"
    registry.write_text(REGISTRY.replace("LOOKBACK", "90s"))  # steps are 60 s
    with pytest.raises(RegistryError, match="'90s' is not a whole number of timesteps"):
        RunContext.open("ingest", lake=tmp_path / "lake", registry=registry)
    registry.write_text(REGISTRY.replace("LOOKBACK", "2h"))
    ctx = RunContext.open("ingest", lake=tmp_path / "lake", registry=registry)
    assert [c.correlation.lookback for c in ctx.correlations] == [120]
    assert not (tmp_path / "lake").exists()


def test_a_pattern_named_twice_is_grouped_once(tmp_path):
    ctx = RunContext.open("group-day", lake=tmp_path / "lake",
                          patterns=["room_visit", "hallway_pass", "room_visit"])
    assert [p.name for p in ctx.patterns] == ["room_visit", "hallway_pass"]


@pytest.mark.parametrize("name", ["20251231", "junk", "2026-W01-4"])
def test_source_files_must_be_named_by_a_yyyy_mm_dd_day(tmp_path, name):
    """`distributions-20251231.parquet` counted as 2025-12-31, whose file was then never
    found; `distributions-junk.parquet` raised a bare ValueError (QA, 2026-11-27)."""
    (tmp_path / "distributions-2026-01-02.parquet").touch()
    source = DistributionFiles(tmp_path)
    assert source.first_day(None) == dt.date(2026, 1, 2)
    (tmp_path / f"distributions-{name}.parquet").touch()
    with pytest.raises(ProbcepError, match=f"distributions-{name}.parquet: not named "
                                           "distributions-YYYY-MM-DD.parquet"):
        source.first_day(None)
