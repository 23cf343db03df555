"""The registry's `correlations:` section: durations, versions, errors naming the entry."""

from __future__ import annotations

import datetime as dt

import pytest

from probcep.config.correlations import load_correlations
from probcep.config.registry import RegistryError, load_registry

DOMAIN = ("Hallway", "Door", "Room")
MINUTE = dt.timedelta(minutes=1)
BASE = """patterns:
  visit:
    pattern: 'Door Room+ Door'
    policy: single
correlations:
  loitered:
    live: visit
    archive_pattern: 'Door Hallway{3,} Door'
    archive_window: 30
    lookback: 1d
"""


def load(tmp_path, text, step=MINUTE):
    path = tmp_path / "patterns.yaml"
    path.write_text(text)
    return load_correlations(path, DOMAIN, load_registry(path, DOMAIN), step)


def test_an_entry_loads_with_its_defaults(tmp_path):
    c = load(tmp_path, BASE)["loitered"]
    assert (c.correlation.lookback, c.correlation.gap, c.correlation.mode) == (1440, 1, "exists")
    assert (c.correlation.window, c.correlation.min_probability) == (30, 0.0)
    assert (c.strategy, c.alert_threshold, c.live.name) == ("auto", 0.5, "visit")
    assert load(tmp_path, BASE.split("correlations:")[0]) == {}


def test_durations_are_timesteps_of_the_settings(tmp_path):
    for lookback, gap, step, want in (("2h", "15min", MINUTE, (120, 15)),
                                      ("90s", "30s", dt.timedelta(seconds=30), (3, 1)),
                                      (45, 3, MINUTE, (45, 3))):
        text = BASE.replace("lookback: 1d", f"lookback: {lookback}\n    gap: {gap}")
        c = load(tmp_path, text, step)["loitered"].correlation
        assert (c.lookback, c.gap) == want


def test_version_covers_what_changes_rows_and_not_the_strategy(tmp_path):
    v0 = load(tmp_path, BASE)["loitered"].version
    same = (BASE + "    strategy: lazy\n    alert_threshold: 0.9\n    description: x\n",
            BASE.replace("lookback: 1d", "lookback: 1440"),
            BASE.replace("'Door Hallway{3,} Door'", "'Door  Hallway{3,}   Door'"))
    for text in same:
        assert load(tmp_path, text)["loitered"].version == v0
    changed = (BASE + "    gap: 2\n", BASE + "    mode: absent\n",
               BASE + "    min_probability: 0.1\n", BASE.replace("30", "31"),
               BASE.replace("lookback: 1d", "lookback: 2d"),
               BASE.replace("Hallway{3,}", "Hallway{2,}"),
               BASE.replace("policy: single", "policy: complete"))
    for text in changed:
        assert load(tmp_path, text)["loitered"].version != v0


@pytest.mark.parametrize("extra, message", [
    ("    gap: 0\n", "correlation 'loitered': gap must be an integer >= 1"),
    ("    gap: 2d\n", "correlation 'loitered': lookback must be an integer >= gap"),
    ("    mode: maybe\n", "mode must be one of"),
    ("    strategy: eager\n", "strategy must be one of"),
    ("    colour: red\n", "unknown field(s) ['colour']"),
    ("    alert_threshold: 3\n", "alert_threshold must lie in [0, 1]"),
    ("    min_probability: high\n", "min_probability must be a number"),
    # empty values and a list: one line each, not a traceback (QA, 2026-11-27)
    ("    min_probability:\n", "min_probability must be a number, got nothing"),
    ("    alert_threshold:\n", "alert_threshold must be a number, got nothing"),
])
def test_bad_entries_are_refused_naming_them(tmp_path, extra, message):
    with pytest.raises(RegistryError, match="loitered") as info:
        load(tmp_path, BASE + extra)
    assert message in str(info.value)


@pytest.mark.parametrize("old, new, message", [
    ("lookback: 1d", "lookback: 1 week", "expected whole timesteps or a duration"),
    ("lookback: 1d", "lookback: 90s", "is not a whole number of timesteps of 60 s"),
    ("live: visit", "live: nothing", "live must name an exact pattern"),
    ("Hallway{3,}", "Lobby{3,}", "bad archive pattern"),
    ("  loitered:", "  visit:", "have the name of a pattern"),
    ("archive_window: 30", "archive_window: 4",
     "archive_window: the window of 4 is shorter than the shortest match"),
    ("live: visit", "live: [visit]", "live must name an exact pattern"),
    ("archive_window: 30", "archive_window: 30.0",  # another version of 30
     "archive_window must be a positive integer, got 30.0"),
    ("archive_window: 30", "archive_window: 0", "archive_window must be a positive integer"),
    ("archive_pattern: 'Door Hallway{3,} Door'", "archive_pattern:",
     "archive_pattern must be pattern text, such as 'Door Room+ Door', got nothing"),
])
def test_bad_values_are_refused(tmp_path, old, new, message):
    with pytest.raises(RegistryError, match="correlation") as info:
        load(tmp_path, BASE.replace(old, new))
    assert message in str(info.value)


def test_a_bad_entry_is_named_with_its_line(tmp_path):
    """As a pattern entry is (QA, 2026-11-27: correlation errors named no line)."""
    with pytest.raises(RegistryError, match=r"patterns.yaml, line 6: correlation 'loitered': "
                                            r"mode must be one of"):
        load(tmp_path, BASE + "    mode: maybe\n")
