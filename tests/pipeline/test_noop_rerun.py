"""A night run again on unchanged data commits nothing in any table; a changed reading
commits the tables it changes and only those."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pandas as pd
import pytest

from probcep.config.registry import RegisteredPattern, load_registry
from probcep.config.settings import load_settings
from probcep.demo.sample import generate_landing
from probcep.lake.tables import BRONZE, CATALOG, QUARANTINE, SILVER
from probcep.pipeline.context import LakeSilver, RunContext
from probcep.pipeline.run import run_day

pytestmark = pytest.mark.slow
DAY = dt.date(2026, 1, 1)


def versions(lake) -> dict[str, int | None]:
    return {t.name: t.version(lake) for t in CATALOG}


def test_a_rerun_of_unchanged_data_commits_nothing_a_changed_reading_commits(spark, tmp_path):
    landing = generate_landing(tmp_path / "landing", days=1, streams=2, sensors=2)
    settings = dataclasses.replace(load_settings(), landing_dir=landing,
                                   lake_root=tmp_path / "lake")
    patterns = tuple(load_registry(settings.registry, settings.silver_domain).values())

    def night(run_id):
        # GX persists every DataFrame it validates (its Spark source's `persist=True`), so
        # in one session a re-read of a changed landing file would hit the cached rows
        spark.catalog.clearCache()
        ctx = RunContext(settings, patterns, LakeSilver(settings), run_id, echo=lambda _: None)
        ctx.__dict__["spark"] = spark  # the suite's session
        run_day(ctx, DAY)
        return versions(settings.lake_root)

    first = night("first")
    assert first[QUARANTINE.name] is not None and QUARANTINE.read(settings.lake_root).num_rows
    # every table a night writes exists (alert changes only when alerts changed; the
    # packaged registry has no correlations, so their tables stay unwritten)
    unwritten = ("gold/alert_changes", "gold/correlation", "state/archive_stats")
    assert all(v is not None for n, v in first.items() if not n.startswith(unwritten)), first
    assert night("again") == first

    raw = next((landing / DAY.isoformat()).glob("*.csv"))
    frame = pd.read_csv(raw, dtype=str, keep_default_na=False)
    hallway = frame.index[frame["symbol"] == "Hallway"][len(frame) // 4]
    frame.loc[hallway, "symbol"] = "Room"  # one reading, misread
    frame.to_csv(raw, index=False)
    changed = night("changed")
    moved = {n for n in changed if changed[n] != first[n]}
    assert {BRONZE.name, SILVER.name} <= moved, moved
    assert QUARANTINE.name not in moved

    # a rerun after another fix: every commit it makes says why, and the alerts' commits
    # name the pattern versions, as the groups' do (QA, 2026-11-27: only the gold
    # tables carried the reason, and the alerts no versions)
    from deltalake import DeltaTable

    from probcep.lake.tables import ALERTS
    from probcep.pipeline.rerun import rerun_days

    frame.loc[frame.index[frame["symbol"] == "Hallway"][len(frame) // 3], "symbol"] = "Room"
    frame.to_csv(raw, index=False)
    spark.catalog.clearCache()
    ctx = RunContext(settings, patterns, LakeSilver(settings), "fix", echo=lambda _: None)
    ctx.__dict__["spark"] = spark
    rerun_days(ctx, DAY, DAY, reason="reader 3 relabelled")
    fixed = versions(settings.lake_root)
    rewritten = [t for t in CATALOG if fixed[t.name] != changed[t.name]]
    assert {BRONZE, SILVER} <= set(rewritten), rewritten
    for table in rewritten:
        commits = [c for c in DeltaTable(str(table.path(settings.lake_root))).history()
                   if c.get("run_id") == "fix"]
        assert commits and all(c.get("rerun_reason") == "reader 3 relabelled"
                               for c in commits), (table.name, commits)
    last = DeltaTable(str(ALERTS.path(settings.lake_root))).history(1)[0]
    assert last["pattern_versions"] == ",".join(
        f"{p.name}={p.version}" for p in patterns if isinstance(p, RegisteredPattern))
