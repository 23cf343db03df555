"""The registry's `correlations:` section: live ⋈ archive correlations
(docs/semantics.md §8) by name, each joining a registered pattern's groups with an archive
pattern over a lookback range of the same stream.

A separate parser over the same file as the patterns: it reads the patterns already
checked by `load_registry` and the timestep of the settings (lookback and gap may be
durations such as `30d`, `2h`, `15min`, or whole timesteps). A correlation's version is
a hash of everything that can change its rows (the live pattern's version, the archive
pattern, domain, window, lookback, gap, mode and minimum probability); the strategy and
the alert threshold change what is read and what alerts, never a row, so they leave it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from probcep.config.registry import VALUES, RegisteredPattern, RegistryError
from probcep.config.yaml_keys import UniqueKeyLoader
from probcep.engine import PatternError
from probcep.engine.correlate import MODES, Correlation
from probcep.engine.grouping import QueryError
from probcep.engine.pattern import tokenize
from probcep.engine.read_plans import STRATEGIES

FIELDS = {"live", "archive_pattern", "archive_window", "lookback", "gap", "mode",
          "min_probability", "alert_threshold", "strategy", "description"}
REQUIRED = ("live", "archive_pattern", "lookback")
UNITS = {"s": 1, "min": 60, "h": 3600, "d": 86_400}
_DURATION = re.compile(r"\s*(\d+)\s*(s|min|h|d)\s*")


@dataclass(frozen=True)
class RegisteredCorrelation:
    name: str
    live: RegisteredPattern
    correlation: Correlation
    alert_threshold: float
    strategy: str
    description: str
    version: str

    @property
    def archive_pattern(self) -> str:
        return self.correlation.dfa.pattern


def load_correlations(path: str | Path, domain, patterns: dict,
                      step: dt.timedelta) -> dict[str, RegisteredCorrelation]:
    """The checked `correlations:` entries of a registry file (none when it has no such
    section), keyed by name in file order; `patterns` are its loaded pattern entries."""
    path = Path(path)
    try:
        document = yaml.load(path.read_text(), Loader=UniqueKeyLoader)  # noqa: S506
    except (OSError, yaml.YAMLError) as exc:
        raise RegistryError(f"{path}: cannot read the patterns registry: {exc}") from exc
    entries = document.get("correlations") if isinstance(document, dict) else None
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise RegistryError(f"{path}: expected a mapping 'correlations:' of named entries")
    clash = sorted(set(entries) & set(patterns))
    if clash:
        raise RegistryError(f"{path}: correlation(s) {clash} have the name of a pattern")
    lines = getattr(entries, "lines", {})
    return {name: parse_correlation(name, entry, tuple(domain), patterns, step, str(path),
                                    line=lines.get(name))
            for name, entry in entries.items()}


def parse_correlation(name, entry, domain: tuple[str, ...], patterns: dict,
                      step: dt.timedelta, source: str = "registry",
                      line: int | None = None) -> RegisteredCorrelation:
    """Check one entry (`line`: where its name stands in the file) and build it."""
    where = f"{source}{'' if line is None else f', line {line}'}: correlation {name!r}"
    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"{where}: names must be identifiers (letters, digits, _)")
    if not isinstance(entry, dict):
        raise RegistryError(f"{where}: expected a mapping of {sorted(FIELDS)}")
    unknown, missing = set(entry) - FIELDS, [f for f in REQUIRED if f not in entry]
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}; "
                            f"allowed: {sorted(FIELDS)}")
    if missing:
        raise RegistryError(f"{where}: missing field(s) {missing}")
    live = patterns.get(entry["live"]) if isinstance(entry["live"], str) else None
    if not isinstance(live, RegisteredPattern):
        exact = [n for n, p in patterns.items() if isinstance(p, RegisteredPattern)]
        raise RegistryError(f"{where}: live must name an exact pattern of the registry "
                            f"({exact}), got {entry['live']!r}")
    strategy = entry.get("strategy", "auto")
    if strategy not in STRATEGIES:
        raise RegistryError(f"{where}: strategy must be one of {STRATEGIES}, got {strategy!r}")
    mode = entry.get("mode", "exists")
    if mode not in MODES:
        raise RegistryError(f"{where}: mode must be one of {MODES}, got {mode!r}")
    window = entry.get("archive_window")  # empty: no window, as a pattern's `window:`
    is_window, what = VALUES["window"]  # as a pattern's: 2.0 would be another version of 2
    if window is not None and not is_window(window):
        raise RegistryError(f"{where}: archive_window must be {what}, got {window!r}")
    for field, value in (("min_probability", entry.get("min_probability", 0.0)),
                         ("alert_threshold", entry.get("alert_threshold", 0.5))):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RegistryError(f"{where}: {field} must be a number, got "
                                f"{'nothing' if value is None else repr(value)}")
    archive = entry["archive_pattern"]
    if not isinstance(archive, str) or not archive.strip():
        raise RegistryError(f"{where}: archive_pattern must be pattern text, such as "
                            f"'Door Room+ Door', got "
                            f"{'nothing' if archive is None else repr(archive)}")
    alert = entry.get("alert_threshold", 0.5)
    if not 0.0 <= alert <= 1.0:
        raise RegistryError(f"{where}: alert_threshold must lie in [0, 1], got {alert!r}")
    try:
        corr = Correlation.build(archive, domain, window=window,
                                 lookback=timesteps(entry["lookback"], step, f"{where}: lookback"),
                                 gap=timesteps(entry.get("gap", 1), step, f"{where}: gap"),
                                 mode=mode,
                                 min_probability=float(entry.get("min_probability", 0.0)))
    except PatternError as exc:
        raise RegistryError(f"{where}: bad archive pattern: {exc}") from exc
    except QueryError as exc:
        raise RegistryError(f"{where}: {exc}") from exc
    if corr.dfa.unfit(corr.window):
        raise RegistryError(f"{where}: archive_window: {corr.dfa.unfit(corr.window)}")
    return RegisteredCorrelation(name=name, live=live, correlation=corr,
                                 alert_threshold=float(alert), strategy=strategy,
                                 description=str(entry.get("description", "")),
                                 version=correlation_version(live, corr))


def timesteps(value, step: dt.timedelta, where: str) -> int:
    """Whole timesteps from an integer or a duration (`30d`, `2h`, `15min`, `90s`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = _DURATION.fullmatch(str(value)) if isinstance(value, str) else None
    if found is None:
        raise RegistryError(f"{where}: expected whole timesteps or a duration such as "
                            f"'30d', '2h', '15min', '90s', got {value!r}")
    seconds = int(found[1]) * UNITS[found[2]]
    if seconds % step.total_seconds():
        raise RegistryError(f"{where}: {value!r} is not a whole number of timesteps of "
                            f"{int(step.total_seconds())} s")
    return int(seconds // step.total_seconds())


def correlation_version(live: RegisteredPattern, corr: Correlation) -> str:
    """A short hash of what decides the rows; whitespace in the pattern does not count."""
    definition = {
        "live": live.name, "live_version": live.version,
        "archive_pattern": " ".join(tok.text for tok in tokenize(corr.dfa.pattern)),
        "domain": list(corr.dfa.domain), "archive_window": corr.window,
        "lookback": corr.lookback, "gap": corr.gap, "mode": corr.mode,
        "min_probability": float(corr.min_probability),
    }
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:12]
