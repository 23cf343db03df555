"""Numbers given on the command line, checked where argparse can name the option and
show the usage (docs/bad-input.md), not later by the engine."""

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
    if not 0 <= value <= 1:  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability in [0, 1]")
    return value


def positive_int(text: str) -> int:
    """A window or a count: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value
