"""Probabilities given on the command line, read as the doubles the engine compares."""

from __future__ import annotations

import argparse

from probcep.config.yaml_keys import underflow


def probability(text: str) -> float:
    """`float(text)`, refusing a positive decimal that underflows to 0: θ = 1e-400 would
    otherwise be θ = 0, which keeps every match (docs/semantics.md §3), not almost none.
    The registry refuses it the same way (`probcep.config.yaml_keys`)."""
    value = float(text)
    problem = underflow(text, value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value
