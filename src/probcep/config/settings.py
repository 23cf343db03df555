"""Settings: one YAML file plus `PROBCEP_<NAME>` environment overrides.

The file is the one named by `--settings`, else by `PROBCEP_SETTINGS`, else
`./probcep.yaml` in the working directory, else the packaged defaults (`probcep.yaml`
beside this module). Relative paths are relative to the file; the packaged defaults put
the lake under the working directory instead, never into the installed package.
Everything is checked once at start; a wrong value fails with the setting's name, where
it came from and what is allowed, before any Spark or Delta work begins.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
import warnings
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import yaml

from probcep.config.clock import Clock
from probcep.config.readings import READING_COLUMNS
from probcep.config.yaml_keys import UniqueKeyLoader
from probcep.engine.pattern import SYMBOL_NAME
from probcep.engine.state_cache import POLICIES as CACHE_POLICIES
from probcep.errors import ProbcepError, ProbcepWarning

PACKAGED = Path(__file__).with_name("probcep.yaml")
LOCAL = Path("probcep.yaml")
AGGREGATIONS = ("sum", "max")
GAP_POLICIES = ("no_reading", "uniform", "hold_last")
MISSING_DAYS = ("silence", "refuse")
WIDE_SUMS = ("refuse", "renormalize")
#: Names a symbol cannot have: the columns of a reading in landing files, and those
#: beside the symbol columns in silver (probcep.lake.tables.SILVER_KEYS). Spark compares
#: column names without regard to case, so no two of them may differ only in case.
RESERVED_NAMES = (*READING_COLUMNS, "t", "date")
#: The most symbols a domain may hold: the widest tested, a night of one wide reading
#: over 600 in 2 minutes (2026-11-27, local[2]); at 1,000 Spark's executor ran out of
#: its default heap planning the wide row's checks.
MAX_SYMBOLS = 600
#: The largest target file size: Spark takes the bytes as a 64-bit count.
MAX_FILE_MB = 1 << 20
#: Characters of a lake path delta-rs refuses as a URL or reads as a separator, those
#: under which it opens a table but lists none of its commits (`#`, `?`: the clock check
#: and the cleanup after a killed run read commits), and a URL escape (`%41`), which it
#: decodes: the table would be looked for in another folder.
LAKE_PATH_REFUSED = "[]\\^|#?"
LAKE_PATH_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
#: `PROBCEP_*` variables that are not settings: the settings file, where a deployment
#: keeps `jobs/` (the DAGs), and the SPHERE data of the real-data tests.
OTHER_VARIABLES = ("PROBCEP_SETTINGS", "PROBCEP_HOME", "PROBCEP_SPHERE_DIR",
                   "PROBCEP_SPHERE_RELEASE_DIR")


def _refused_in(path: str) -> list[str]:
    """What in a lake path delta-rs cannot take (`LAKE_PATH_REFUSED`, control characters,
    URL escapes)."""
    return (sorted(set(path) & set(LAKE_PATH_REFUSED))
            + sorted({c for c in path if ord(c) < 32 or ord(c) == 127})
            + sorted(set(LAKE_PATH_ESCAPE.findall(path))))


def _shown(path: str) -> str:
    return path if path.isprintable() else repr(path)  # a line break stays on one line


class SettingsError(ProbcepError, ValueError):
    """A setting that cannot be used."""


class SettingsWarning(ProbcepWarning):
    """A `PROBCEP_*` variable that no setting reads: most likely a misspelt override,
    which would otherwise leave the setting it meant as it was without a word."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The checked settings. A field with a default here may be left out of the file;
    `_checked` takes its defaults from these fields."""

    lake_root: Path
    landing_dir: Path
    spark_master: str | None = None
    timestep_seconds: int
    epoch: dt.datetime
    domain: tuple[str, ...]
    no_reading_symbol: str = "NoReading"
    aggregation: str = "sum"
    gap_policy: str = "no_reading"
    hold_last_steps: int = 5
    max_quarantine_fraction: float = 0.05
    registry: Path  # by default patterns.yaml beside the settings file: `_checked` sets it
    target_file_mb: float = 128.0
    missing_day: str = "silence"
    wide_sum: str = "refuse"
    backfill_days: int = 31  # days a backfill ingests and normalizes in one Spark pass
    live_checkpoint: Path | None = None  # None: <lake_root>/_live/checkpoint
    live_trigger_seconds: int = 60
    allowed_lateness_seconds: int = 120
    live_max_files_per_trigger: int = 100
    live_cache_streams: int = 100_000
    live_cache_policy: str = "priority"

    def __post_init__(self):  # here, so that `--lake` and dataclasses.replace check it too
        path = str(self.lake_root)
        # as given, and where its links lead (a resolved path reaches delta-rs as well)
        for where in (path, os.path.realpath(path)):
            odd = _refused_in(where)
            if odd:
                shown = _shown(path)
                if where != path:  # through a link, or a relative root's folder
                    shown += f" (resolved: {_shown(where)})"
                raise SettingsError(f"lake root {shown}: delta-rs cannot open a table or "
                                    f"list its commits under a path with "
                                    f"{' or '.join(map(repr, odd))}")
        lake, landing = (Path(os.path.realpath(p)) for p in (path, self.landing_dir))
        if lake == landing or landing in lake.parents:  # its files would land: each
            # night found the day changed since ingest, and quarantined the lake
            raise SettingsError(f"lake root {_shown(path)} lies in the landing folder "
                                f"{_shown(str(self.landing_dir))}: put it beside it")

    @property
    def checkpoint(self) -> Path:
        """Where live mode's Structured Streaming query keeps its checkpoint."""
        return self.live_checkpoint or self.lake_root / "_live" / "checkpoint"

    @property
    def target_file_bytes(self) -> int:
        return int(self.target_file_mb * 1024 * 1024)

    @property
    def step(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.timestep_seconds)

    @property
    def clock(self) -> Clock:
        return Clock(self.epoch, self.step)

    @property
    def silver_domain(self) -> tuple[str, ...]:
        """Silver's probability columns: the domain, plus the reserved "no reading"
        symbol (gaps may fall back to it under every policy)."""
        return (*self.domain, self.no_reading_symbol)

    @property
    def silence(self) -> tuple[float, ...]:
        """The distribution over the silver domain of a timestep with no reading (and,
        under `hold_last`, none held): silver stores no row for it."""
        if self.gap_policy == "uniform":
            return (*[1.0 / len(self.domain)] * len(self.domain), 0.0)
        return (*[0.0] * len(self.domain), 1.0)

    def steps_per_day(self) -> int:
        return int(dt.timedelta(days=1) / self.step)

    @property
    def held_steps(self) -> int:
        """How many timesteps after a reading repeat it: `hold_last_steps` under
        `hold_last` (none otherwise), at most to the day's end, where every hold ends."""
        if self.gap_policy != "hold_last":
            return 0
        return min(self.hold_last_steps, self.steps_per_day() - 1)

    @property
    def gap_label(self) -> str:
        """What fills silver's gaps, as silver's commits record it: a lake made under one
        has its rows, groups and engine states, which another would not give."""
        if self.gap_policy == "hold_last":
            return f"hold_last ({self.held_steps} steps)"
        return self.gap_policy


def settings_file(path: str | Path | None = None, env=None) -> Path:
    """Which file holds the settings: `path`, PROBCEP_SETTINGS, ./probcep.yaml, or the
    packaged defaults, in that order."""
    env = os.environ if env is None else env
    if path or env.get("PROBCEP_SETTINGS"):
        return Path(path or env["PROBCEP_SETTINGS"])
    return LOCAL if LOCAL.is_file() else PACKAGED


def load_settings(path: str | Path | None = None, env=None,
                  lake: str | Path | None = None) -> Settings:
    """Read the settings file (see `settings_file`), then the environment's overrides,
    then `lake` (a command's `--lake`) for the lake root: the root checked is the one
    used, not a default that `--lake` replaces."""
    env = os.environ if env is None else env
    path = settings_file(path, env)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader) or {}  # noqa: S506
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: cannot read settings: not UTF-8 text ({exc})") from exc
    except yaml.MarkedYAMLError as exc:  # one line naming the file, as the registry's
        mark = exc.problem_mark or exc.context_mark
        at = "" if mark is None else f", line {mark.line + 1}"
        raise SettingsError(f"{path}{at}: cannot read settings: "
                            f"{exc.problem or exc.context}") from exc
    except (OSError, yaml.YAMLError, ValueError) as exc:  # ValueError: a date like 02-30
        raise SettingsError(f"{path}: cannot read settings: {exc}") from exc
    if not isinstance(raw, dict):
        raise SettingsError(f"{path}: expected a mapping of settings")
    known = {f.name for f in fields(Settings)}
    unknown = set(raw) - known
    if unknown:
        raise SettingsError(f"{path}: unknown setting(s) {sorted(unknown)}; "
                            f"known: {sorted(known)}")
    values, origin = dict(raw), {k: str(path) for k in raw}
    for name in known:
        key = f"PROBCEP_{name.upper()}"
        if key in env:
            try:
                values[name] = yaml.load(env[key], Loader=UniqueKeyLoader)  # noqa: S506
            except (yaml.YAMLError, ValueError) as exc:
                raise SettingsError(f"environment {key}: cannot read {env[key]!r} as a "
                                    f"YAML value: {' '.join(str(exc).split())}") from exc
            origin[name] = f"environment {key}"
    _warn_stray(env, [f"PROBCEP_{name.upper()}" for name in sorted(known)])
    if lake is not None:
        values["lake_root"], origin["lake_root"] = str(Path(lake).absolute()), "--lake"
    packaged = path.resolve() == PACKAGED.resolve()
    return _checked(values, origin, base=path.parent,
                    lake_base=Path.cwd() if packaged else path.parent, source=path)


def _warn_stray(env, keys: list[str]) -> None:
    """A warning for each `PROBCEP_*` variable that is neither a setting nor one of
    `OTHER_VARIABLES`, naming the closest setting's variable."""
    for key in sorted(k for k in env if k.startswith("PROBCEP_")
                      and k not in keys and k not in OTHER_VARIABLES):
        close = difflib.get_close_matches(  # by the names after the shared prefix
            key.removeprefix("PROBCEP_"),
            [k.removeprefix("PROBCEP_") for k in (*keys, *OTHER_VARIABLES)], n=1)
        warnings.warn(SettingsWarning(
            f"environment {key} is not a setting and is ignored" +
            (f" (did you mean PROBCEP_{close[0]}?)" if close else "")), stacklevel=3)


def _integer(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _one_of(choices: tuple):
    return (lambda x: x in choices), f"one of {choices}"


def _whole(least: int):
    return (lambda x: _integer(x) and x >= least), f"an integer >= {least}"


#: The settings checked alone, in the order they are checked: each one's check and, for
#: the message, what it must be.
CHECKS = {
    "aggregation": _one_of(AGGREGATIONS),
    "gap_policy": _one_of(GAP_POLICIES),
    "hold_last_steps": _whole(0),
    "max_quarantine_fraction": (lambda x: _number(x) and 0 <= x <= 1, "a number in [0, 1]"),
    "target_file_mb": (lambda x: _number(x) and 0 < x <= MAX_FILE_MB,
                       f"a number of megabytes in (0, {MAX_FILE_MB}]"),
    "missing_day": _one_of(MISSING_DAYS),
    "wide_sum": _one_of(WIDE_SUMS),
    "backfill_days": _whole(1),
    "live_trigger_seconds": _whole(1),
    "allowed_lateness_seconds": _whole(0),
    "live_max_files_per_trigger": _whole(1),
    "live_cache_streams": _whole(1),
    "live_cache_policy": _one_of(CACHE_POLICIES),
    "spark_master": (lambda x: x is None or isinstance(x, str), "a Spark master URL"),
}
#: The defaults of the settings a file may leave out (`Settings`' own).
DEFAULTS = {f.name: f.default for f in fields(Settings) if f.default is not MISSING}


def _checked(v: dict, origin: dict, base: Path, lake_base: Path, source: Path) -> Settings:
    required = ("lake_root", "landing_dir", "timestep_seconds", "epoch", "domain")

    def fail(name, message):  # a setting no file set is missing, or its default
        where = origin.get(name) or (f"missing from {source}" if name in required
                                     else "default")
        raise SettingsError(f"setting {name!r} ({where}): {message}")

    for name in required:
        if v.get(name) in (None, ""):
            fail(name, "is required")
    step = v["timestep_seconds"]
    if not _integer(step) or step < 1 or 86_400 % step:
        fail("timestep_seconds", f"must be a whole number of seconds dividing a day, "
                                 f"got {step!r}")
    try:
        epoch = dt.datetime.fromisoformat(str(v["epoch"]))
        utc = epoch.astimezone(dt.UTC) if epoch.tzinfo else epoch
    except (ValueError, OverflowError):  # 0001-01-01T00:00+01:00 is before year 1 UTC
        fail("epoch", f"must be an ISO date-time such as 2026-01-01T00:00:00, from year 1 "
                      f"UTC, got {v['epoch']!r}")
    into_day = utc - utc.replace(hour=0, minute=0, second=0, microsecond=0)
    if into_day % dt.timedelta(seconds=step):  # a timestep would straddle each midnight
        fail("epoch", f"must lie on the timestep grid of midnight UTC (a multiple of "
                      f"{step} s after it), so that each day is whole timesteps: got "
                      f"{v['epoch']!r}, {into_day} after midnight UTC")
    domain = v["domain"]
    if isinstance(domain, list) and len(domain) > MAX_SYMBOLS:
        fail("domain", f"must hold at most {MAX_SYMBOLS} symbols, got {len(domain)}")
    if (not isinstance(domain, list) or not domain
            or not all(isinstance(s, str) and SYMBOL_NAME.fullmatch(s) for s in domain)
            or len({s.lower() for s in domain}) != len(domain)
            or {s.lower() for s in domain} & set(RESERVED_NAMES)):
        fail("domain", f"must be a list of symbol names ([A-Za-z_][A-Za-z0-9_]*, as "
                       f"patterns write them) distinct without regard to case (as Spark's "
                       f"columns), none of {RESERVED_NAMES}, got {domain!r}")
    value = {name: v.get(name, default) for name, default in DEFAULTS.items()}
    reserved = value["no_reading_symbol"]
    if not isinstance(reserved, str) or not SYMBOL_NAME.fullmatch(reserved) \
            or reserved.lower() in {s.lower() for s in (*domain, *RESERVED_NAMES)}:
        fail("no_reading_symbol", f"must be a name outside the domain and none of "
                                  f"{RESERVED_NAMES} (without regard to case), got "
                                  f"{reserved!r}")
    for name, (ok, allowed) in CHECKS.items():
        if not ok(value[name]):
            fail(name, f"must be {allowed}, got {value[name]!r}")

    def where(name, folder=base):  # absolute, as Spark names the files it read
        p = Path(str(v.get(name)))
        if origin.get(name, "").startswith("environment "):
            folder = Path.cwd()  # a shell's relative path: from where the command runs
        return p if p.is_absolute() else Path(os.path.abspath(folder / p))

    return Settings(**{
        **value, "lake_root": where("lake_root", lake_base), "landing_dir": where("landing_dir"),
        "timestep_seconds": step,
        "epoch": epoch.astimezone(dt.UTC).replace(tzinfo=None) if epoch.tzinfo else epoch,
        "domain": tuple(domain),
        "max_quarantine_fraction": float(value["max_quarantine_fraction"]),
        "registry": where("registry") if v.get("registry")
        else Path(os.path.abspath(base / "patterns.yaml")),
        "target_file_mb": float(value["target_file_mb"]),
        "live_checkpoint": where("live_checkpoint", lake_base) if v.get("live_checkpoint")
        else None})
