"""A rerun names the entries whose rows it leaves: patterns and correlations with rows in
the walked days that the registry no longer holds (QA, 2026-11-27: after a rename the old
name's 976 groups and 88 alerts stayed beside the new name's, unmentioned)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from probcep.lake.tables import APPROX_HISTORY, CORRELATIONS, STATES
from probcep.pipeline.context import RunContext
from probcep.pipeline.group_day import PROCESSED
from probcep.pipeline.rerun import unregistered

DAY = dt.date(2026, 1, 2)
REGISTRY = """patterns:
  room_visit: {pattern: "Door Room+ Door", policy: single}
correlations:
  revisit: {live: room_visit, archive_pattern: "Door Room Door", lookback: 2h}
"""


def processed(lake, day, names):
    rows = [{"pattern": n, "pattern_version": "v", "stream_id": PROCESSED,
             "batch_date": day, "run_id": "r"} for n in names]
    STATES.replace_day(lake, day, pa.Table.from_pylist(rows, STATES.schema), {"run_id": "r"},
                       pattern=names)


def test_a_rerun_names_the_entries_the_registry_dropped(tmp_path):
    registry = tmp_path / "patterns.yaml"
    registry.write_text(REGISTRY)
    ctx = RunContext.open("rerun", lake=tmp_path / "lake", registry=registry)
    lake = ctx.lake
    assert unregistered(ctx, DAY) == []  # an empty lake
    processed(lake, DAY - dt.timedelta(days=1), ["removed_before"])
    processed(lake, DAY, ["room_visit", "hallway_pass"])
    processed(lake, DAY + dt.timedelta(days=1), ["door_twice"])
    row = {"correlation": "old_revisit", "correlation_version": "v", "batch_date": DAY}
    CORRELATIONS.replace_day(lake, DAY, pa.Table.from_pylist([row], CORRELATIONS.schema),
                             {"run_id": "r"}, correlation=["old_revisit"])
    history = {"pattern": "old_approx", "pattern_version": "v", "batch_date": DAY}
    APPROX_HISTORY.replace_day(lake, DAY, pa.Table.from_pylist([history],
                                                              APPROX_HISTORY.schema),
                               {"run_id": "r"}, pattern=["old_approx"])
    assert unregistered(ctx, DAY) == ["door_twice", "hallway_pass", "old_approx",
                                      "correlation old_revisit"]
    assert unregistered(ctx, DAY + dt.timedelta(days=1)) == ["door_twice"]
