"""The lake's expectation suites, run with Great Expectations (GX Core 1.x).

Suites are JSON templates shipped with the package (`lake/suites/`, the repository's
`expectations/` folder): `"{domain}"` becomes the list of symbols, `{symbol}` expands to
one expectation per symbol and `{row_sum}` to the SQL sum of their columns. A suite's
`derived_columns` (silver's row sum) are computed from each row before its expectations
run, by Spark SQL or by pandas' eval, so one suite runs on either engine. Bronze's
staged rows are validated as a Spark DataFrame before they are committed (reading the
staged files costs less than checking every record again); silver's as a Spark
DataFrame, or on the driver with pandas when they are few (`lake.delta.staged_frame`:
GX's Spark engine spends seconds of jobs on a suite whatever the rows); a day's gold
rows are few and are validated as a pandas frame. A failure raises `ExpectationError`
with a readable report. With `docs_dir`, Data Docs are built there: at once, or, inside
`data_docs_once` (a backfill), in one build at its end (a build renders the index of
every stored result, so one build per validation costs a backfill time that grows with
the lake). Each validation is named after what it checked: GX's run name is
`<suite> <day> <run id>` and its data asset is the table (`bronze/readings`,
`silver/distributions`, `gold/groups`), so a Data Docs page says which table, day and
run it is about.
"""

from __future__ import annotations

import contextlib
import json
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.resources import files

from probcep.errors import ProbcepError
from probcep.lake.failures import writing

BRONZE_SUITE = "bronze_readings"
SILVER_SUITE = "silver_distributions"
GOLD_SUITE = "gold_groups"
CORRELATIONS_SUITE = "gold_correlations"


#: The Data Docs pages waiting for one build, per docs folder (inside `data_docs_once`).
_PENDING_DOCS: ContextVar[dict | None] = ContextVar("pending_docs", default=None)


class ExpectationError(ProbcepError, ValueError):
    """Rows that break their table's expectations."""


@contextmanager
def data_docs_once():
    """Validations inside store their results at once but leave the Data Docs pages to
    one build on the way out (also when a validation failed)."""
    pending: dict = {}
    token = _PENDING_DOCS.set(pending)
    try:
        yield
    except BaseException:
        _PENDING_DOCS.reset(token)
        # the block's own error is the one to say: a build that fails as well (the disk
        # that stopped the block is full) must not put its line in that one's place
        with contextlib.suppress(Exception):
            _build(pending)
        raise
    _PENDING_DOCS.reset(token)
    _build(pending)


def _build(pending: dict) -> None:
    """Build the pages waiting in `pending` (docs folder -> result keys); a full disk
    names the docs folder (GX's OSError names no file)."""
    for docs_dir, keys in pending.items():
        with writing(docs_dir):
            gx_context(docs_dir).build_data_docs(resource_identifiers=keys)


def import_meanwhile() -> None:
    """Import GX in a background thread: a step that starts Spark spends seconds waiting
    for the JVM, and GX's import is seconds of Python that the other core can do then."""
    import threading

    threading.Thread(target=__import__, args=("great_expectations",), daemon=True,
                     name="import great_expectations").start()


def suite_spec(name: str) -> dict:
    """A packaged suite template, by name."""
    return json.loads((files("probcep.lake") / "suites" / f"{name}.json").read_text())


def expand(spec: dict, symbols) -> list[dict]:
    """The suite's expectations with the symbol placeholders filled in."""
    row_sum = " + ".join(f"`{s}`" for s in symbols)
    out = []
    for e in spec["expectations"]:
        text = json.dumps(e).replace('"{domain}"', json.dumps(list(symbols)))
        if "{symbol}" in text:
            out += [json.loads(text.replace("{symbol}", s)) for s in symbols]
        else:
            out.append(json.loads(text.replace("{row_sum}", row_sum)))
    return out


def with_derived(frame, spec: dict, symbols):
    """`frame` with the suite's derived columns added (Spark or pandas). `{row_sum}` adds
    the symbols in their order as one flat expression: written `a + b + …`, one level
    per symbol, it overflowed Spark's stack and pandas' recursion past a few hundred."""
    derived = {name: e.replace("{row_sum}", "_row_sum_")
               for name, e in spec.get("derived_columns", {}).items()}
    if not derived:
        return frame
    if hasattr(frame, "sparkSession"):
        from pyspark.sql import functions as F

        from probcep.lake.spark import column_sum

        summed = frame.withColumn("_row_sum_", column_sum([F.col(f"`{s}`") for s in symbols]))
        return summed.withColumns({name: F.expr(e) for name, e in derived.items()}
                                  ).drop("_row_sum_")
    total = 0.0
    for s in symbols:
        total = total + frame[s]
    summed = frame.assign(_row_sum_=total)
    return frame.assign(**{name: summed.eval(e) for name, e in derived.items()})


def gx_context(docs_dir=None):
    """A GX context: ephemeral, or file-backed under `docs_dir` (where Data Docs go).
    Quiet: GX's per-metric progress bars would drown the pipeline's own lines."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = (gx.get_context(mode="ephemeral") if docs_dir is None
               else gx.get_context(mode="file", project_root_dir=str(docs_dir)))
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def table_name(suite: str) -> str:
    """The lake table a suite guards: `gold_groups` -> `gold/groups`."""
    return suite.replace("_", "/", 1)


def days_name(days) -> str:
    """How a validation of rows of these days (in order) names them: `2026-01-01`, or
    `2026-01-01..2026-01-06` for a backfill's pass."""
    return days[0].isoformat() if len(days) == 1 else f"{days[0]}..{days[-1]}"


def run_name(suite: str, day: str | None = None, run_id: str | None = None) -> str:
    """GX's run name for a validation: the suite, the day and the run, those given."""
    return " ".join(str(part) for part in (suite, day, run_id) if part)


def validate(frame, suite: str, symbols=(), docs_dir=None, *, day: str | None = None,
             run_id: str | None = None):
    """Validate a Spark or pandas DataFrame with a packaged suite; returns GX's result,
    raises ExpectationError on failure. `day` (YYYY-MM-DD) and `run_id` say what the
    rows are: they name the GX run (`<suite> <day> <run_id>`) and, with the table as
    the data asset, the Data Docs page."""
    import datetime as dt

    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    spec = suite_spec(suite)
    context = gx_context(docs_dir)
    gx_suite = context.suites.add_or_update(gx.ExpectationSuite(
        name=spec["name"],
        expectations=[ExpectationConfiguration(**e) for e in expand(spec, symbols)]))
    frame = with_derived(frame, spec, symbols)
    if hasattr(frame, "sparkSession"):
        # persist=False: GX would otherwise cache every validated frame for the rest of
        # the session (a backfill piles them up, and a re-ingested file would be read
        # from the stale cache)
        source = context.data_sources.add_or_update_spark("lake", persist=False)
    else:
        source = context.data_sources.add_or_update_pandas("lake_pandas")
    asset = next((a for a in source.assets if a.name == spec["name"]), None) or \
        source.add_dataframe_asset(spec["name"])
    batch = next((b for b in asset.batch_definitions if b.name == "day"), None) or \
        asset.add_batch_definition_whole_dataframe("day")
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=spec["name"], data=batch, suite=gx_suite))
    run = RunIdentifier(run_name=run_name(spec["name"], day, run_id),
                        run_time=dt.datetime.now(dt.UTC))
    # Pass or fail first, which costs a Spark DataFrame a third of a full result (GX
    # computes no unexpected values); only a failure is run again for its report.
    result = definition.run(batch_parameters={"dataframe": frame}, run_id=run,
                            result_format="BOOLEAN_ONLY")
    if not result.success:
        result = definition.run(batch_parameters={"dataframe": frame}, run_id=run)
    _name_batch(result, table_name(spec["name"]), day, run_id)
    if docs_dir is not None:
        key = _store_again(context, result, spec["name"], run)
        pending = _PENDING_DOCS.get()
        if pending is None:
            with writing(docs_dir):  # GX's OSError on a full disk names no file
                context.build_data_docs(resource_identifiers=[key])  # page and index
        else:
            pending.setdefault(str(docs_dir), []).append(key)
    if not result.success:
        raise ExpectationError(report(result, spec["name"]))
    return result


def _name_batch(result, table: str, day: str | None, run_id: str | None) -> None:
    """Name the table, day and run in the result's batch spec: GX 1.x leaves a dataframe
    batch's spec without a data asset name (Data Docs would say `Data asset: None`)."""
    spec = dict(result.meta.get("batch_spec") or {})
    spec["data_asset_name"] = table
    spec.update({k: v for k, v in (("day", day), ("run_id", run_id)) if v})
    result.meta["batch_spec"] = spec


def _store_again(context, result, suite: str, run):
    """Overwrite the stored result (ValidationDefinition.run stored it before the batch
    was named) under the same key, so Data Docs render the named one."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    key = ValidationResultIdentifier(
        expectation_suite_identifier=ExpectationSuiteIdentifier(name=suite),
        run_id=run, batch_identifier=result.batch_id)
    context.validation_results_store.set(key, result)
    return key


def report(result, suite: str) -> str:
    lines = [f"{suite.replace('_', '.', 1)} failed its expectations:"]
    for r in result.results:
        if r.success:
            continue
        config = r.expectation_config
        kwargs = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
        if config.description:  # say what they check and how many rows break it
            count = r.result.get("unexpected_count", r.result.get("observed_value"))
            lines.append(f"  - {config.description}: {count} rows break it")
            continue
        sample = r.result.get("partial_unexpected_list", [])[:3]
        lines.append(f"  - {config.type} {kwargs}: {r.result.get('unexpected_count', '?')} "
                     f"rows, e.g. {sample}")
    return "\n".join(lines)
