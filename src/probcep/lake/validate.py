"""Silver expectations with Great Expectations on Spark: `expectations/silver_distributions.json`.

The suite is a template over the silver symbols (`{symbol}` expands to one expectation
per symbol, `{row_sum}` to the SQL sum of their columns); row sums and gaps are SQL
checks (UnexpectedRowsExpectation). A failing validation raises `SilverValidationError`
with a readable report; Data Docs are built under `<lake_root>/gx`.
"""

from __future__ import annotations

import json
from pathlib import Path

SUITE = Path(__file__).resolve().parents[3] / "expectations" / "silver_distributions.json"


class SilverValidationError(ValueError):
    """Silver rows that break the silver expectations."""


def expand(spec: dict, symbols) -> list[dict]:
    """The suite's expectations with the symbol placeholders filled in."""
    row_sum = " + ".join(f"`{s}`" for s in symbols)
    out = []
    for e in spec["expectations"]:
        text = json.dumps(e)
        if "{symbol}" in text:
            out += [json.loads(text.replace("{symbol}", s)) for s in symbols]
        else:
            out.append(json.loads(text.replace("{row_sum}", row_sum)))
    return out


def validate_silver(frame, symbols, docs_dir: Path | None = None, suite_path: Path = SUITE):
    """Validate a Spark DataFrame of silver rows; returns GX's result, raises on failure."""
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    spec = json.loads(Path(suite_path).read_text())
    context = (gx.get_context(mode="ephemeral") if docs_dir is None
               else gx.get_context(mode="file", project_root_dir=str(docs_dir)))
    suite = context.suites.add_or_update(gx.ExpectationSuite(
        name=spec["name"],
        expectations=[ExpectationConfiguration(**e) for e in expand(spec, symbols)]))
    source = context.data_sources.add_or_update_spark("silver")
    asset = next((a for a in source.assets if a.name == "distributions"), None) or \
        source.add_dataframe_asset("distributions")
    batch = next((b for b in asset.batch_definitions if b.name == "day"), None) or \
        asset.add_batch_definition_whole_dataframe("day")
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name="silver_distributions", data=batch, suite=suite))
    result = definition.run(batch_parameters={"dataframe": frame})
    if docs_dir is not None:
        context.build_data_docs()
    if not result.success:
        raise SilverValidationError(report(result))
    return result


def report(result) -> str:
    lines = ["silver.distributions failed its expectations:"]
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
