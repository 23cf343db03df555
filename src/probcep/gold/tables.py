"""Gold and state tables: schemas, and replacing one batch's rows in one Delta commit.

Every table is a Delta table under the lake root, written with delta-rs from Arrow (the
rows are groups and engine states: small next to silver, so the driver holds them).
`replace_rows` swaps the rows a predicate selects for new ones in a single commit that
names the run, and skips the commit when nothing would change, so a rerun of unchanged
data leaves the tables (and their versions) as they were.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

GROUPS = "gold/groups"
ALERTS = "gold/alerts"
ALERT_CHANGES = "gold/alert_changes"
STATES = "state/engine"

#: A group's identity: what it is, independent of which run produced it.
GROUP_KEY = ["pattern", "pattern_version", "stream_id", "t_start", "t_first", "t_end"]

GROUP_SCHEMA = pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("t_start", pa.int64()), ("t_first", pa.int64()), ("t_end", pa.int64()),
    ("ts_start", pa.timestamp("us", tz="UTC")), ("ts_first", pa.timestamp("us", tz="UTC")),
    ("ts_end", pa.timestamp("us", tz="UTC")),
    ("probability", pa.float64()), ("n_matches", pa.int64()),
    ("max_match_probability", pa.float64()),
    ("batch_date", pa.date32()), ("run_id", pa.string()),
])
STATE_SCHEMA = pa.schema([
    ("pattern", pa.string()), ("pattern_version", pa.string()), ("stream_id", pa.string()),
    ("batch_date", pa.date32()), ("next_t", pa.int64()), ("state", pa.binary()),
    ("run_id", pa.string()),
])
ALERT_SCHEMA = pa.schema([*[GROUP_SCHEMA.field(n) for n in GROUP_SCHEMA.names],
                          ("alert_threshold", pa.float64())])
ALERT_CHANGE_SCHEMA = pa.schema([("change", pa.string()), ("changed_by_run", pa.string()),
                                 *[ALERT_SCHEMA.field(n) for n in ALERT_SCHEMA.names]])

#: Columns that describe a run, not a result: ignored when deciding whether rows changed.
RUN_COLUMNS = ("run_id",)


def table_path(lake_root: str | Path, name: str) -> Path:
    return Path(lake_root) / name


def read_rows(path: Path, schema: pa.Schema, filters=None, version: int | None = None):
    """Rows of a Delta table (empty with `schema` when the table does not exist yet)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        if schema is None:
            raise FileNotFoundError(f"{path}: no Delta table here")
        return schema.empty_table()
    table = DeltaTable(str(path), version=version).to_pyarrow_table(filters=filters or None)
    return table if schema is None else table.select(schema.names)


def replace_rows(path: Path, rows: pa.Table, predicate: str, selected: pa.Table,
                 metadata: dict) -> bool:
    """Replace the rows `predicate` selects (`selected`, as read) by `rows`, in one commit.

    Returns False, writing nothing, when the new rows equal the selected ones apart
    from run columns.
    """
    from deltalake import CommitProperties, DeltaTable, write_deltalake

    if same_rows(rows, selected):
        return False
    props = CommitProperties(custom_metadata={k: str(v) for k, v in metadata.items()})
    if not DeltaTable.is_deltatable(str(path)):
        path.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(path), rows, mode="append", commit_properties=props)
    else:
        write_deltalake(str(path), rows, mode="overwrite", predicate=predicate,
                        commit_properties=props)
    return True


def append_rows(path: Path, rows: pa.Table, metadata: dict) -> None:
    """Append rows in one commit that names the run."""
    from deltalake import CommitProperties, write_deltalake

    path.mkdir(parents=True, exist_ok=True)
    props = CommitProperties(custom_metadata={k: str(v) for k, v in metadata.items()})
    write_deltalake(str(path), rows, mode="append", commit_properties=props)


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows:
        return False
    names = [n for n in a.schema.names if n not in RUN_COLUMNS]
    return _sorted(a.select(names)).equals(_sorted(b.select(names)))


def _sorted(table: pa.Table) -> pa.Table:
    keys = [(n, "ascending") for n in table.schema.names
            if not pa.types.is_binary(table.schema.field(n).type)]
    return table.take(pc.sort_indices(table, sort_keys=keys))


def sql_in(column: str, values) -> str:
    """`column IN ('a', 'b')` for a Delta predicate; values are quoted, quotes doubled."""
    quoted = ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)
    return f"{column} IN ({quoted})"
