"""The stream files the README's first commands read (examples/fig1.csv, visits.csv):
valid input, and fig1.csv is docs/semantics.md §6's stream (QA, 2026-11-28: the README
named a `streams.csv` that did not ship)."""

from __future__ import annotations

import json
from pathlib import Path

from probcep.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_fig1_gives_the_worked_example_s_complete_groups(tmp_path, capsys):
    out = tmp_path / "g.jsonl"
    assert main(["group", "--pattern", "a b+ c", "--policy", "complete", "--threshold",
                 "0.05", str(EXAMPLES / "fig1.csv"), "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["t_start"], r["t_first"], r["t_end"], round(r["probability"], 4),
             r["n_matches"], round(r["max_match_probability"], 4)) for r in rows] == [
        (1, 3, 6, 0.86, 5, 0.3528), (1, 4, 6, 0.88, 5, 0.3528)]


def test_visits_are_read_and_hold_the_plot_example_s_visit(tmp_path, capsys):
    out = tmp_path / "g.jsonl"
    assert main(["group", "--pattern", "Door Room+ Door", "--policy", "complete",
                 "--threshold", "0.01", "--window", "40", str(EXAMPLES / "visits.csv"),
                 "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["stream_id"] for r in rows} == {"visitor-0", "visitor-1"}
    assert any(r["stream_id"] == "visitor-1" and 180 <= r["t_start"] and r["t_end"] <= 260
               and r["probability"] > 0.4 for r in rows)
