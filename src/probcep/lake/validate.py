"""Bronze and silver expectations with Great Expectations on Spark DataFrames.

Suites are templates in `expectations/`: in the silver suite `{symbol}` expands to one
expectation per silver symbol and `{row_sum}` to the SQL sum of their columns (row sums
and gaps are SQL checks, UnexpectedRowsExpectation); in the bronze suite `"{domain}"`
becomes the list of symbols. A failing validation raises `LakeValidationError` with a
readable report; with `docs_dir`, Data Docs are built there.
"""

from __future__ import annotations

import json
from pathlib import Path

SUITES = Path(__file__).resolve().parents[3] / "expectations"
SUITE = SUITES / "silver_distributions.json"
BRONZE_SUITE = SUITES / "bronze_readings.json"


class LakeValidationError(ValueError):
    """Rows that break their table's expectations."""


SilverValidationError = LakeValidationError

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


def gx_context(docs_dir=None):
    """A GX context: ephemeral, or file-backed under `docs_dir` (where Data Docs go).
    Quiet: GX's per-metric progress bars would drown the pipeline's own lines."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = (gx.get_context(mode="ephemeral") if docs_dir is None
               else gx.get_context(mode="file", project_root_dir=str(docs_dir)))
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def validate_bronze(frame, domain, docs_dir: Path | None = None):
    """Validate a Spark DataFrame of bronze readings; raises on failure."""
    return validate_silver(frame, domain, docs_dir, BRONZE_SUITE)


def validate_silver(frame, symbols, docs_dir: Path | None = None, suite_path: Path = SUITE):
    """Validate a Spark DataFrame with a suite (silver's by default); returns GX's result,
    raises LakeValidationError on failure."""
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    spec = json.loads(Path(suite_path).read_text())
    context = gx_context(docs_dir)
    suite = context.suites.add_or_update(gx.ExpectationSuite(
        name=spec["name"],
        expectations=[ExpectationConfiguration(**e) for e in expand(spec, symbols)]))
    source = context.data_sources.add_or_update_spark("lake")
    asset = next((a for a in source.assets if a.name == spec["name"]), None) or \
        source.add_dataframe_asset(spec["name"])
    batch = next((b for b in asset.batch_definitions if b.name == "day"), None) or \
        asset.add_batch_definition_whole_dataframe("day")
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=spec["name"], data=batch, suite=suite))
    result = definition.run(batch_parameters={"dataframe": frame})
    if docs_dir is not None:
        context.build_data_docs()
    if not result.success:
        raise LakeValidationError(report(result, spec["name"]))
    return result


def report(result, table: str = "silver_distributions") -> str:
    lines = [f"{table.replace('_', '.', 1)} failed its expectations:"]
    for r in result.results:
        if r.success:
            continue
        config = r.expectation_config
        kwargs = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
        if config.description:  # the SQL checks: say what they check and how many rows
            lines.append(f"  - {config.description}: {r.result.get('observed_value')} "
                         f"rows break it")
            continue
        sample = r.result.get("partial_unexpected_list", [])[:3]
        lines.append(f"  - {config.type} {kwargs}: {r.result.get('unexpected_count', '?')} "
                     f"rows, e.g. {sample}")
    return "\n".join(lines)
