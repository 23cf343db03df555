"""Reading a table reads its files with Arrow's own file system."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from deltalake import write_deltalake

from probcep.lake.tables import Table

LOG = Table("odd place/log", "batch_date", pa.schema([("batch_date", pa.date32()),
                                                     ("stream_id", pa.string())]))


def test_a_read_takes_no_python_file_system(tmp_path, monkeypatch):
    """deltalake's default reads through a Python file system; Arrow's threads free those
    bytes after the read returns and take the GIL to do so: a command exiting right after
    its last read (an expected error) aborted, `terminate called without an active
    exception`, exit 134 (QA, 2026-11-27: 5 in 85 runs; a core showed an Arrow worker in
    PyBuffer's destructor during Py_FinalizeEx)."""
    import pyarrow.fs

    days = [dt.date(2026, 1, 1), dt.date(2026, 1, 2)]
    rows = pa.table({"batch_date": days, "stream_id": ["a b#1", "c%d"]}, LOG.schema)
    write_deltalake(str(LOG.path(tmp_path)), rows, partition_by=["batch_date"])

    def refused(*args, **kwargs):
        raise AssertionError("read through a Python file system")

    monkeypatch.setattr(pyarrow.fs, "PyFileSystem", refused)
    assert LOG.read(tmp_path).sort_by("batch_date").equals(rows)
    assert LOG.read(tmp_path, [("batch_date", "=", days[1])]).equals(rows.slice(1))
    assert LOG.read(tmp_path, version=0, columns=["stream_id"]).num_rows == 2
