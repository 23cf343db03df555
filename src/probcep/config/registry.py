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

from probcep.engine import PatternError, Query
from probcep.engine.pattern import tokenize
from probcep.errors import ProbcepError

FIELDS = {"pattern", "policy", "threshold", "window", "alert_threshold", "description"}
REQUIRED = ("pattern", "policy")
#: An entry with `max_errors` asks for approximate matching (docs/semantics.md §7).
APPROX_FIELDS = {"pattern", "max_errors", "window", "budget", "description"}
APPROX_REQUIRED = ("pattern", "max_errors", "window")


class RegistryError(ProbcepError, ValueError):
    """A registry file or entry that cannot be used."""


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice (plain YAML keeps
    the last silently: a second entry of one name would replace the first unseen)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is named twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


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
    return {name: parse_entry(name, entry, tuple(domain), source=str(path))
            for name, entry in entries.items()}


def parse_entry(name, entry, domain: tuple[str, ...], source: str = "registry"):
    where = f"{source}: entry {name!r}"
    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"{where}: names must be identifiers (letters, digits, _)")
    if not isinstance(entry, dict):
        raise RegistryError(f"{where}: expected a mapping of {sorted(FIELDS)}")
    if "max_errors" in entry:
        return _parse_approx(name, entry, domain, where)
    _check_fields(entry, FIELDS, REQUIRED, where)
    try:
        query = Query.build(str(entry["pattern"]), domain, policy=entry["policy"],
                            threshold=float(entry.get("threshold", 0.0)),
                            window=entry.get("window"))
    except PatternError as exc:
        raise RegistryError(f"{where}: bad pattern: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{where}: {exc}") from exc
    alert = entry.get("alert_threshold", 0.5)
    if not isinstance(alert, int | float) or not 0.0 <= alert <= 1.0:
        raise RegistryError(f"{where}: alert_threshold must be a number in [0, 1], "
                            f"got {alert!r}")
    return RegisteredPattern(name=name, query=query, alert_threshold=float(alert),
                             description=str(entry.get("description", "")),
                             version=pattern_version(query))


def _check_fields(entry: dict, allowed: set, required: tuple, where: str) -> None:
    unknown = set(entry) - allowed
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}; "
                            f"allowed: {sorted(allowed)}")
    missing = [f for f in required if f not in entry]
    if missing:
        raise RegistryError(f"{where}: missing field(s) {missing}")


def _parse_approx(name, entry, domain, where) -> RegisteredApprox:
    _check_fields(entry, APPROX_FIELDS, APPROX_REQUIRED, f"{where} (approximate matching)")
    k, window, budget = entry["max_errors"], entry["window"], entry.get("budget")
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise RegistryError(f"{where}: max_errors must be an integer >= 0, got {k!r}")
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise RegistryError(f"{where}: window must be a positive integer, got {window!r}")
    if budget is not None and (not isinstance(budget, int | float) or budget <= 0):
        raise RegistryError(f"{where}: budget must be a positive number, got {budget!r}")
    try:
        from probcep.engine import compile_pattern

        compile_pattern(str(entry["pattern"]), domain)
    except PatternError as exc:
        raise RegistryError(f"{where}: bad pattern: {exc}") from exc
    pattern = " ".join(tok.text for tok in tokenize(str(entry["pattern"])))
    definition = {"pattern": pattern, "domain": list(domain), "max_errors": k,
                  "window": window, "budget": budget}
    version = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:12]
    return RegisteredApprox(name=name, pattern=str(entry["pattern"]), max_errors=k,
                            window=window, budget=None if budget is None else float(budget),
                            description=str(entry.get("description", "")), version=version)


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
