"""The patterns registry: named patterns with their policy, θ, window and alert threshold.

A YAML file maps each name to its definition. Every entry is checked once, at load,
against the symbol domain, and a bad entry fails with its name and the problem. A
pattern's version is a hash of what decides its groups (pattern, domain, policy, θ,
window): change any of them and gold rows carry a new version; the alert threshold and
the description only decide alerts and prose, so they leave the version alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from probcep.config.yaml_keys import UniqueKeyLoader
from probcep.engine import PatternError, Query
from probcep.engine.approx.errors import MAX_ERRORS, check_approx_size
from probcep.engine.approx.matcher import MAX_BUDGET, MAX_WINDOW
from probcep.engine.grouping import POLICIES, QueryError
from probcep.engine.pattern import tokenize
from probcep.errors import ProbcepError

FIELDS = {"pattern", "policy", "threshold", "window", "alert_threshold", "description"}
REQUIRED = ("pattern", "policy")
#: An entry with `max_errors` asks for approximate matching (docs/semantics.md §7).
APPROX_FIELDS = {"pattern", "max_errors", "window", "budget", "description"}
APPROX_REQUIRED = ("pattern", "max_errors", "window")


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _integer(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: What each field must hold: its check and, for the message, what it must be. YAML
#: gives `ten` and `"0.5"` as strings, `yes` as a boolean: none of them is a number.
VALUES = {
    "pattern": (lambda v: isinstance(v, str) and bool(v.strip()),
                "text, such as 'Door Room+ Door'"),
    "policy": (lambda v: v in POLICIES, f"one of {', '.join(map(repr, POLICIES))}"),
    "threshold": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "window": (lambda v: _integer(v) and v >= 1, "a positive integer"),
    "alert_threshold": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "description": (lambda v: isinstance(v, str), "text"),
    "max_errors": (lambda v: _integer(v) and 0 <= v <= MAX_ERRORS,
                   f"an integer in 0..{MAX_ERRORS}"),
    "budget": (lambda v: _number(v) and 0 < v <= MAX_BUDGET,
               f"a positive number up to {MAX_BUDGET:g}"),
}
#: Fields that may be left empty (`window:` alone: no window).
NULLABLE = {"window", "description"}
APPROX_NULLABLE = {"budget", "description"}
KINDS = {bool: "a boolean", int: "an integer", float: "a decimal number", str: "text",
         list: "a list", dict: "a mapping", type(None): "empty"}


class RegistryError(ProbcepError, ValueError):
    """A registry file or entry that cannot be used."""




@dataclass(frozen=True)
class RegisteredPattern:
    name: str
    query: Query
    alert_threshold: float
    description: str
    version: str

    @property
    def pattern(self) -> str:
        return self.query.dfa.pattern


@dataclass(frozen=True)
class RegisteredApprox:
    """An approximate-matching entry: at most `max_errors` insertions within `window`
    tags, optionally under `budget` work units per event (RC-ACEP)."""

    name: str
    pattern: str
    max_errors: int
    window: int
    budget: float | None
    description: str
    version: str


def load_registry(path: str | Path, domain) -> dict[str, RegisteredPattern | RegisteredApprox]:
    """Read and check a registry file; entries keyed by name, in file order."""
    path = Path(path)
    try:
        document = yaml.load(path.read_text(), Loader=UniqueKeyLoader)  # noqa: S506
    except yaml.MarkedYAMLError as exc:
        raise RegistryError(f"{path}, line {exc.problem_mark.line + 1}: cannot read the "
                            f"patterns registry: {exc.problem}") from exc
    except (OSError, yaml.YAMLError) as exc:
        raise RegistryError(f"{path}: cannot read the patterns registry: {exc}") from exc
    entries = (document or {}).get("patterns") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise RegistryError(f"{path}: expected a mapping 'patterns:' of named entries")
    lines = getattr(entries, "lines", {})
    return {name: parse_entry(name, entry, tuple(domain), source=str(path),
                              line=lines.get(name))
            for name, entry in entries.items()}


def parse_entry(name, entry, domain: tuple[str, ...], source: str = "registry",
                line: int | None = None):
    """Check one entry (`line`: where its name stands in the file) and build it."""
    lines = getattr(entry, "lines", {})

    def where(key: str | None = None) -> str:
        at = lines.get(key) or line
        return f"{source}{'' if at is None else f', line {at}'}: entry {name!r}"

    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"{where()}: names must be identifiers (letters, digits, _)")
    if not isinstance(entry, dict):
        raise RegistryError(f"{where()}: expected a mapping of {sorted(FIELDS)}")
    if "max_errors" in entry:
        return _parse_approx(name, entry, domain, where)
    _check_fields(entry, FIELDS, REQUIRED, where)
    _check_values(entry, NULLABLE, where)
    try:
        query = Query.build(entry["pattern"], domain, policy=entry["policy"],
                            threshold=float(entry.get("threshold", 0.0)),
                            window=entry.get("window"))
    except PatternError as exc:
        raise RegistryError(f"{where('pattern')}: bad pattern: {exc}") from exc
    except QueryError as exc:  # a value its type and range let through (window > MAX_WINDOW)
        raise RegistryError(f"{where(str(exc).split()[0])}: {exc}") from exc
    if query.dfa.unfit(query.window):  # its alerts would never come, unsaid
        raise RegistryError(f"{where('window')}: {query.dfa.unfit(query.window)}")
    alert = entry.get("alert_threshold", 0.5)
    return RegisteredPattern(name=name, query=query, alert_threshold=float(alert),
                             description=entry.get("description") or "",
                             version=pattern_version(query))


def _check_fields(entry: dict, allowed: set, required: tuple, where, kind: str = "") -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise RegistryError(f"{where(unknown[0])}{kind}: unknown field(s) {unknown}; "
                            f"allowed: {sorted(allowed)}")
    missing = [f for f in required if f not in entry]
    if missing:
        raise RegistryError(f"{where()}{kind}: missing field(s) {missing}")


def _check_values(entry: dict, nullable: set, where) -> None:
    """Each value of the type and range its field needs (`VALUES`); the message names
    the entry, the field, the value, what it is and what it must be."""
    for key, value in entry.items():
        ok, expected = VALUES[key]
        if value is None and key in nullable or ok(value):
            continue
        kind = KINDS.get(type(value), type(value).__name__)
        raise RegistryError(f"{where(key)}: {key} must be {expected}, got {value!r} ({kind})")


def _parse_approx(name, entry, domain, where) -> RegisteredApprox:
    _check_fields(entry, APPROX_FIELDS, APPROX_REQUIRED, where, " (approximate matching)")
    _check_values(entry, APPROX_NULLABLE, where)
    k, window, budget = entry["max_errors"], entry["window"], entry.get("budget")
    if window > MAX_WINDOW:  # silver's t is a 64-bit integer, as the command's tags are
        raise RegistryError(f"{where('window')}: window must be at most {MAX_WINDOW} "
                            f"(2^63 - 1), got {window}")
    try:
        from probcep.engine import compile_pattern

        check_approx_size(dfa := compile_pattern(entry["pattern"], domain))
    except PatternError as exc:
        raise RegistryError(f"{where('pattern')}: bad pattern: {exc}") from exc
    if isinstance(window, int) and isinstance(k, int) and dfa.min_length() - k > window:
        raise RegistryError(  # the pipeline's tags are consecutive timesteps
            f"{where('window')}: the window of {window} is shorter than the fewest events "
            f"a match of {entry['pattern']!r} needs with at most {k} inserted "
            f"({dfa.min_length() - k}): its matches would never come")
    pattern = " ".join(tok.text for tok in tokenize(entry["pattern"]))
    definition = {"pattern": pattern, "domain": list(domain), "max_errors": k,
                  "window": window, "budget": budget}
    version = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:12]
    return RegisteredApprox(name=name, pattern=entry["pattern"], max_errors=k,
                            window=window, budget=None if budget is None else float(budget),
                            description=entry.get("description") or "", version=version)


def pattern_version(query: Query) -> str:
    """A short hash of what decides the groups; whitespace in the pattern does not count."""
    definition = {
        "pattern": " ".join(tok.text for tok in tokenize(query.dfa.pattern)),
        "domain": list(query.dfa.domain),
        "policy": query.policy,
        "threshold": float(query.threshold),
        "window": query.window,
    }
    digest = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()
    return digest[:12]
