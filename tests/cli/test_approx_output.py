"""`probcep approx`'s column writer against one `json.dumps` per line, byte for byte, and
its Parquet output against its lines."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from probcep.cli import main
from probcep.cli.approx_output import match_lines, stream_matches, symbol_codes
from probcep.engine.approx.bundles import Bundle


@dataclass
class Found:
    """What the writer reads of an engine `MatchClass`."""

    sigmas: list
    errors: int
    match_point: int

    def subsequences(self):
        return iter(self.sigmas)


def reference(sid, found, tags, symbols, bundles) -> str:
    # docs/approx.md: by the completing event, the first event, the errors, the positions
    rows = sorted(((tuple(sigma), f) for f in found for sigma in f.subsequences()),
                  key=lambda r: (r[0][-1], r[0][0], r[1].errors, r[0], r[1].match_point))
    lines = [json.dumps({"type": "match", "stream_id": sid, "positions": list(sigma),
                         "tags": [tags[i] for i in sigma],
                         "symbols": [symbols[i] for i in sigma],
                         "errors": f.errors, "match_point": f.match_point}) + "\n"
             for sigma, f in rows]
    lines += [json.dumps({"type": "bundle", "stream_id": sid, **b.as_dict()}) + "\n"
              for b in bundles]
    return "".join(lines)


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=4)


@settings(max_examples=150, deadline=None)
@given(texts, st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=8, max_size=8),
       st.lists(texts, min_size=8, max_size=8),
       st.lists(st.tuples(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=4),
                                   max_size=3),
                          st.integers(0, 3), st.integers(-5, 10 ** 12)), max_size=5),
       st.lists(st.tuples(st.integers(0, 9), st.integers(-9, 99), st.integers(0, 9)),
                max_size=3))
def test_lines_are_those_of_json_dumps(sid, tags, symbols, matches, bundles):
    found = [Found([tuple(s) for s in sigmas], e, p) for sigmas, e, p in matches]
    bundles = [Bundle(i, a, a + b, n, 1) for i, (a, b, n) in enumerate(bundles)]
    codes, names = symbol_codes(symbols)
    s = stream_matches(sid, found, np.array(tags, np.int64), codes, names, bundles)
    text = "".join(c if isinstance(c, str) else str(c, "ascii") for c in match_lines(s))
    assert text == reference(sid, found, tags, symbols, bundles)


def test_parquet_output_holds_the_json_lines(tmp_path, capsys):
    events = "a1 e2 e3 b4 c5 e6 a7 e8 e9 c10 d11 a12 e13 b14 d15".split()
    frame = pd.concat([pd.DataFrame({"stream_id": sid, "tag": [int(e[1:]) for e in events],
                                     "symbol": [e[0] for e in events]}) for sid in "yx"])
    path = tmp_path / "e.csv"
    frame.to_csv(path, index=False)
    args = ["approx", "--pattern", "a ( b | c ) d b", "--max-errors", "2", "--window", "5",
            "--bundles", str(path)]
    assert main(args) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    out = tmp_path / "m.parquet"
    assert main([*args, "-o", str(out)]) == 0
    rows = pd.read_parquet(out).to_dict("records")
    assert len(rows) == len(lines) and {r["type"] for r in lines} == {"match", "bundle"}
    for row, line in zip(rows, lines):
        got = {k: (list(v) if isinstance(v, np.ndarray) else v) for k, v in row.items()
               if k in line}
        assert got == line and all(pd.isna(v) or v is None for k, v in row.items()
                                   if k not in line)


def test_lines_of_one_match_point_are_ordered_by_their_own_fields(tmp_path, capsys):
    # a2 b5 c6 and a2 c6 complete at the same event from the same first event, with the
    # same errors: by their positions, not in the order the engine met them (a2 c6 first)
    frame = pd.DataFrame({"stream_id": "s", "tag": [1, 2, 3, 4, 5, 6, 7],
                          "symbol": ["b", "c", "a", "c", "x", "b", "c"]})
    path = tmp_path / "e.csv"
    frame.to_csv(path, index=False)
    assert main(["approx", "--pattern", "a b? c", "--max-errors", "2", "--window", "7",
                 str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    keys = [(m["positions"][-1], m["positions"][0], m["errors"], m["positions"])
            for m in lines]
    assert keys == sorted(keys) and len(set(map(str, keys))) == len(keys)
    assert [(m["positions"], m["errors"]) for m in lines if m["match_point"] == 7] == [
        ([0, 6], 1), ([2, 5, 6], 0), ([2, 6], 0), ([5, 6], 1), ([6], 1)]
