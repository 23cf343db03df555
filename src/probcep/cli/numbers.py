"""Probabilities given on the command line, read as the doubles the engine compares."""

from __future__ import annotations

import argparse
import re

_NONZERO_DIGIT = re.compile(r"[1-9]")


def probability(text: str) -> float:
    """`float(text)`, refusing a positive decimal that underflows to 0: θ = 1e-400 would
    otherwise be θ = 0, which keeps every match (docs/semantics.md §3), not almost none."""
    value = float(text)
    mantissa = re.split(r"[eE]", text.strip(), maxsplit=1)[0]
    if value == 0.0 and _NONZERO_DIGIT.search(mantissa):
        raise argparse.ArgumentTypeError(
            f"{text} is below the smallest positive double (about 5e-324) and would read "
            "as 0; write 0 to mean 0")
    return value
