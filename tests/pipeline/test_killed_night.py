"""A night killed with SIGKILL in the middle of a Delta write, then run again, leaves the
tables as if it ran once: the killed writer's data files are on disk but in no commit,
and no row is duplicated or lost. The same for ingest and normalize killed between
Spark's write and the driver's commit, whose files a later run clears."""

from __future__ import annotations

import dataclasses
import datetime as dt
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable

from probcep.config.settings import load_settings
from probcep.demo.sample import generate_landing
from probcep.lake.delta import STAGING
from probcep.lake.tables import (
    ALERTS,
    BRONZE,
    GROUP_KEY,
    GROUPS,
    QUARANTINE,
    SILVER,
    STATES,
    same_rows,
)
from probcep.pipeline.context import LakeSilver, RunContext
from probcep.pipeline.ingest import ingest_day
from probcep.pipeline.normalize import normalize_day
from tests.pipeline.nights import group_rows, make_silver, night

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ORPHAN = "part-00000-killed-mid-write.parquet"

#: Runs nights 0..k-1, then night k with the write to TABLE killed: the process writes
#: that write's data file into the table folder (what delta-rs does before it commits)
#: and dies by SIGKILL before any log entry, with no cleanup of any kind.
CHILD = """
import os, signal, sys
from pathlib import Path
import deltalake, pyarrow.parquet as pq
from probcep.lake.spark import spark_session
from tests.pipeline.nights import make_silver, night

lake, k, table = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
spark = spark_session("local[2]", "killed-night", shuffle_partitions=2)
silver = make_silver(days=3)
for day in range(k):
    night(lake, silver, day)
real = deltalake.write_deltalake

def killed(path, data, *args, **kwargs):
    if Path(path) == lake / table:
        pq.write_table(data, Path(path) / "{orphan}")
        os.kill(os.getpid(), signal.SIGKILL)
    return real(path, data, *args, **kwargs)

deltalake.write_deltalake = killed
night(lake, silver, k)
""".replace("{orphan}", ORPHAN)


@pytest.fixture(scope="module")
def clean(spark, tmp_path_factory):
    """Three nights that nothing interrupted."""
    lake = tmp_path_factory.mktemp("clean")
    silver = make_silver(days=3)
    for k in range(3):
        night(lake, silver, k)
    return lake


@pytest.mark.parametrize("table", [  # one Spark child each: the other two in `make test-all`
    GROUPS.name, pytest.param(STATES.name, marks=pytest.mark.soak),
    pytest.param(ALERTS.name, marks=pytest.mark.soak)])
def test_night_killed_mid_write_then_run_again_is_as_if_once(spark, tmp_path, clean, table):
    silver = make_silver(days=3)
    lake = tmp_path / "killed"
    done = subprocess.run([sys.executable, "-c", CHILD, str(lake), "1", table], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    orphan = lake / table / ORPHAN
    assert orphan.exists()
    assert ORPHAN not in "".join(DeltaTable(str(lake / table)).file_uris())

    night(lake, silver, 1)  # the same night again, then the next one
    night(lake, silver, 2)
    pd.testing.assert_frame_equal(group_rows(lake), group_rows(clean))
    for t in (ALERTS, STATES):
        assert same_rows(t.read(lake), t.read(clean)), t.name
    assert not group_rows(lake).duplicated(subset=list(GROUP_KEY)).any()


# --- ingest and normalize ---------------------------------------------------------------

#: Ingests (and normalizes) day DAY, killing the process by SIGKILL in the middle of the
#: commit of TABLE: its files written by Spark and moved into the day's partition folder,
#: the Delta transaction not yet made.
LAKE_CHILD = """
import os, signal, sys
from pathlib import Path
from deltalake import DeltaTable
from tests.pipeline.test_killed_night import lake_run

lake, table = Path(sys.argv[1]), sys.argv[2]
real = DeltaTable.create_write_transaction

def killed(self, *args, **kwargs):
    if Path(self.table_uri.removeprefix("file://")).resolve() == (lake / table).resolve():
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, *args, **kwargs)

DeltaTable.create_write_transaction = killed
lake_run(None, lake, "killed")
"""
LANDING_DAY = dt.date(2026, 1, 1)


def lake_run(spark, lake: Path, run_id: str):
    """Ingest and normalize the sample's first day (one stream, one reader) into `lake`."""
    from probcep.lake.spark import spark_session

    landing = lake.parent / "landing"
    if not landing.exists():
        generate_landing(landing, days=1, streams=1, sensors=1)
    settings = dataclasses.replace(load_settings(), landing_dir=landing, lake_root=lake)
    ctx = RunContext(settings, (), LakeSilver(settings), run_id, echo=lambda _: None)
    ctx.__dict__["spark"] = spark or spark_session("local[2]", "killed", shuffle_partitions=2)
    ingest_day(ctx, LANDING_DAY)
    normalize_day(ctx, LANDING_DAY)


@pytest.mark.soak
@pytest.mark.parametrize("table", [BRONZE, SILVER])
def test_ingest_or_normalize_killed_mid_commit_then_run_again_is_as_if_once(spark, tmp_path,
                                                                            table):
    lake = tmp_path / "killed"
    done = subprocess.run([sys.executable, "-c", LAKE_CHILD, str(lake), table.name], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    day = (lake / table.name / f"{table.day_column}={LANDING_DAY}")
    orphans = sorted(day.glob("*.parquet"))
    assert orphans and not table.files(lake)  # moved, never committed: no reader sees them
    assert list((lake / table.name / STAGING).iterdir())  # the dead run's staging folder

    spark.catalog.clearCache()  # GX persists what it validates; same landing files here
    lake_run(spark, lake, "again")
    assert not any(p.exists() for p in orphans)  # its owner is dead: cleared
    assert not list((lake / table.name / STAGING).iterdir())
    lake_run(spark, tmp_path / "clean", "clean")
    for t in (BRONZE, QUARANTINE, SILVER):
        assert same_rows(t.read(lake), t.read(tmp_path / "clean")), t.name
