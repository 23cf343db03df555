"""A night killed with SIGKILL in the middle of a Delta write, then run again, leaves the
tables as if it ran once: the killed writer's data files are on disk but in no commit,
and no row is duplicated or lost."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable

from probcep.lake.tables import ALERTS, GROUP_KEY, GROUPS, STATES, same_rows
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


@pytest.mark.parametrize("table", [GROUPS.name, STATES.name, ALERTS.name])
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
