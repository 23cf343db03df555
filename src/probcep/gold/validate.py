"""Gold expectations (issue 4 item 8) with Great Expectations: `expectations/gold_groups.json`.

A day's gold rows are few, so they are checked as a pandas batch on the driver. A
failure raises `GoldValidationError` whose message lists each failed expectation with a
few offending values; `docs_dir` additionally writes GX Data Docs there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

SUITE = Path(__file__).resolve().parents[3] / "expectations" / "gold_groups.json"


class GoldValidationError(ValueError):
    """Gold rows that break the gold expectations."""


def validate_groups(frame: pd.DataFrame, suite_path: Path = SUITE,
                    docs_dir: Path | None = None):
    """Validate gold.groups rows; returns GX's result, raises on failure."""
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    from probcep.lake.validate import gx_context

    spec = json.loads(Path(suite_path).read_text())
    context = gx_context(docs_dir)
    suite = context.suites.add_or_update(gx.ExpectationSuite(
        name=spec["name"],
        expectations=[ExpectationConfiguration(**e) for e in spec["expectations"]]))
    source = context.data_sources.add_or_update_pandas("gold")
    asset = next((a for a in source.assets if a.name == "groups"), None) or \
        source.add_dataframe_asset("groups")
    batch = next((b for b in asset.batch_definitions if b.name == "whole"), None) or \
        asset.add_batch_definition_whole_dataframe("whole")
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name="gold_groups", data=batch, suite=suite))
    result = definition.run(batch_parameters={"dataframe": frame})
    if docs_dir is not None:
        context.build_data_docs()
    if not result.success:
        raise GoldValidationError(report(result))
    return result


def report(result) -> str:
    lines = ["gold.groups failed its expectations:"]
    for r in result.results:
        if r.success:
            continue
        kwargs = {k: v for k, v in r.expectation_config.kwargs.items() if k != "batch_id"}
        sample = r.result.get("partial_unexpected_list", [])[:3]
        lines.append(f"  - {r.expectation_config.type} {kwargs}: "
                     f"{r.result.get('unexpected_count', '?')} rows, e.g. {sample}")
    return "\n".join(lines)
