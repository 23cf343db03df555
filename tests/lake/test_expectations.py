"""The gold suite passes engine output and fails, readably, on broken rows; silver's row
sum on pandas; a backfill's Data Docs built once."""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd
import pytest

from probcep.lake.expectations import (
    GOLD_SUITE,
    SILVER_SUITE,
    ExpectationError,
    data_docs_once,
    validate,
)


def rows():
    ts = pd.Timestamp("2026-01-01", tz="UTC")
    return pd.DataFrame({
        "pattern": ["p", "p", "q"], "pattern_version": ["v1", "v1", "v2"],
        "stream_id": ["s", "s", "s"], "t_start": [1, 1, 3], "t_first": [3, 4, None],
        "t_end": [6, 6, 9], "ts_start": [ts] * 3, "ts_first": [ts, ts, None],
        "ts_end": [ts] * 3, "probability": [0.86, 0.88, 0.5], "n_matches": [5, 5, 2],
        "max_match_probability": [0.35, 0.35, 0.2],
        "batch_date": [dt.date(2026, 1, 1)] * 3, "run_id": ["r"] * 3})


def test_valid_rows_pass():
    assert validate(rows(), GOLD_SUITE).success


@pytest.mark.parametrize("column,index,value,message", [
    ("t_first", 0, 7, "expect_column_pair_values_a_to_be_greater_than_b"),
    ("probability", 1, 0.2, "'column_A': 'probability'"),
    ("probability", 2, 1.5, "expect_column_values_to_be_between"),
    ("n_matches", 0, 0, "'column': 'n_matches'"),
    ("t_first", 1, 3, "expect_compound_columns_to_be_unique"),
])
def test_broken_rows_fail_with_a_readable_report(column, index, value, message):
    frame = rows()
    frame.loc[index, column] = value
    with pytest.raises(ExpectationError) as err:
        validate(frame, GOLD_SUITE)
    text = str(err.value)
    assert text.startswith("gold.groups failed its expectations:") and message in text


def test_data_docs_are_built(tmp_path):
    validate(rows(), GOLD_SUITE, docs_dir=tmp_path / "gx")
    assert list((tmp_path / "gx").rglob("index.html"))
    assert not list((tmp_path / "gx").rglob("__none__"))  # the run is named by its suite


def text(page) -> str:
    """A Data Docs page's visible text."""
    html = re.sub(r"<(script|style).*?</\1>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_data_docs_name_the_table_the_day_and_the_run(tmp_path):
    docs = tmp_path / "gx"
    result = validate(rows(), GOLD_SUITE, docs_dir=docs, day="2026-01-02",
                      run_id="validate_gold-0a1b2c3d")
    assert result.meta["run_id"].run_name == "gold_groups 2026-01-02 validate_gold-0a1b2c3d"
    pages = [p for p in docs.rglob("*.html") if "validations" in p.parts]
    assert len(pages) == 1
    page = text(pages[0])
    assert "Data asset: gold/groups" in page
    assert "Run Name gold_groups 2026-01-02 validate_gold-0a1b2c3d" in page
    assert "__none__" not in page and "Data asset: None" not in page
    index = next(docs.rglob("index.html")).read_text()  # the list of validations
    assert "gold_groups 2026-01-02 validate_gold-0a1b2c3d" in index


def test_a_backfill_builds_its_data_docs_once_at_its_end(tmp_path):
    """Inside `data_docs_once` results are stored at once and every page is built on the
    way out, the failing validation's too."""
    docs = tmp_path / "gx"
    broken = rows()
    broken.loc[2, "probability"] = 1.5
    with pytest.raises(ExpectationError), data_docs_once():
        for k in (1, 2):
            validate(rows(), GOLD_SUITE, docs_dir=docs, day=f"2026-01-0{k}", run_id="b")
        assert not list(docs.rglob("*.html"))  # nothing rendered yet
        validate(broken, GOLD_SUITE, docs_dir=docs, day="2026-01-03", run_id="b")
    pages = [p for p in docs.rglob("*.html") if "validations" in p.parts]
    assert len(pages) == 3
    index = next(docs.rglob("index.html")).read_text()
    assert all(f"gold_groups 2026-01-0{k} b" in index for k in (1, 2, 3))


def test_the_silver_row_sum_is_checked_by_pandas_as_by_spark_sql():
    """The suite's derived row sum: one row off by more than 1e-9 is named, as on Spark."""
    frame = pd.DataFrame({"stream_id": ["s", "s"], "t": [0, 1], "ts": [pd.Timestamp(0)] * 2,
                          "a": [0.5, 0.5], "b": [0.5, 0.5 + 2e-9]})
    with pytest.raises(ExpectationError, match="each row sums to 1 within 1e-9: 1 rows"):
        validate(frame, SILVER_SUITE, ("a", "b"))
    frame.loc[1, "b"] = 0.5 + 1e-10
    assert validate(frame, SILVER_SUITE, ("a", "b")).success


def test_a_row_sum_over_600_symbols_is_one_flat_sum_in_order(spark):
    """Written `a + b + …`, one level per symbol, the row sum overflowed pandas' recursion
    and Spark's stack past a few hundred symbols (QA, 2026-11-27: a domain of 300 stopped
    ingest, of 600 the silver check). Both engines add in the domain's order."""
    from pyspark.sql.functions import col

    from probcep.lake.expectations import suite_spec, with_derived
    from probcep.lake.spark import column_sum

    symbols = tuple(f"S{i}" for i in range(600))
    frame = pd.DataFrame({s: [1 / 600, 1 / 600 + 1e-9 * (s == "S7")] for s in symbols})
    in_order = [0.0, 0.0]
    for s in symbols:
        in_order = [in_order[k] + frame[s][k] for k in range(2)]
    spec, rows = suite_spec(SILVER_SUITE), spark.createDataFrame(frame)
    assert with_derived(frame, spec, symbols)["row_sum"].tolist() == in_order
    assert with_derived(rows, spec, symbols).toPandas()["row_sum"].tolist() == in_order
    assert rows.select(column_sum([col(s) for s in symbols]).alias("sum")).toPandas()[
        "sum"].tolist() == in_order


class _FullDisk:
    """A GX context whose Data Docs build meets a full disk (GX's OSError names no file)."""

    def build_data_docs(self, resource_identifiers):
        import errno
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_building_the_data_docs_names_their_folder(tmp_path, monkeypatch):
    """A night whose tables were all committed ended `no space left on device writing
    <lake>`, naming no more than the lake (QA, 2026-11-28, a tmpfs lake)."""
    from probcep.errors import DiskFullError
    from probcep.lake import expectations

    monkeypatch.setattr(expectations, "gx_context", lambda docs_dir: _FullDisk())
    with pytest.raises(DiskFullError, match=f"^no space left on device writing "
                                            f"{re.escape(str(tmp_path / 'gx'))}$"):
        with data_docs_once():
            expectations._PENDING_DOCS.get()[str(tmp_path / "gx")] = ["key"]


def test_a_failing_build_of_the_data_docs_leaves_the_runs_own_error(tmp_path, monkeypatch):
    """The build on the way out of a failed run (a failed suite, a full disk in a commit)
    put its own error in place of the run's."""
    from probcep.lake import expectations

    monkeypatch.setattr(expectations, "gx_context", lambda docs_dir: _FullDisk())
    with pytest.raises(ExpectationError, match="the run's own"):
        with data_docs_once():
            expectations._PENDING_DOCS.get()[str(tmp_path / "gx")] = ["key"]
            raise ExpectationError("the run's own")
