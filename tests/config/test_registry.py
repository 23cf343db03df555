"""The patterns registry: checked entries, derived versions, errors naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from probcep.config import settings
from probcep.config.registry import RegistryError, load_registry

DOMAIN = ("Hallway", "Door", "Room")
PACKAGED = Path(settings.__file__).with_name("patterns.yaml")


def write(tmp_path, text):
    path = tmp_path / "patterns.yaml"
    path.write_text(text)
    return path


def test_bundled_registry_loads():
    registry = load_registry(PACKAGED, DOMAIN)
    assert "room_visit" in registry
    entry = registry["room_visit"]
    assert entry.query.policy == "single" and entry.query.window == 60
    assert len(entry.version) == 12


def test_version_follows_the_definition(tmp_path):
    base = "patterns:\n  p:\n    pattern: 'Door Room+ Door'\n    policy: single\n"
    v0 = load_registry(write(tmp_path, base), DOMAIN)["p"].version
    spaced = base.replace("'Door Room+ Door'", "'Door  Room +  Door'")
    assert load_registry(write(tmp_path, spaced), DOMAIN)["p"].version == v0
    alerted = base + "    alert_threshold: 0.9\n    description: words\n"
    assert load_registry(write(tmp_path, alerted), DOMAIN)["p"].version == v0
    for changed in (base + "    window: 5\n", base + "    threshold: 0.1\n",
                    base.replace("single", "complete"), base.replace("Room+", "Room*")):
        assert load_registry(write(tmp_path, changed), DOMAIN)["p"].version != v0


@pytest.mark.parametrize("entry,message", [
    ("    pattern: 'Door Rom'\n    policy: single\n", "entry 'bad': bad pattern: unknown"),
    ("    pattern: 'Door'\n", "entry 'bad': missing field(s) ['policy']"),
    ("    pattern: 'Door'\n    policy: both\n", "entry 'bad': policy must be one of"),
    ("    pattern: 'Door'\n    policy: single\n    threshold: 2\n",
     "line 8: entry 'bad': threshold must be a number in [0, 1], got 2 (an integer)"),
    ("    pattern: 'Door'\n    policy: single\n    window: -3\n", "window must be"),
    ("    pattern: 'Door'\n    policy: single\n    alert_threshold: high\n",
     "alert_threshold must be a number"),
    ("    pattern: 'Door'\n    policy: single\n    windw: 3\n", "unknown field(s) ['windw']"),
    ("    pattern: 'Door Room{2,} Door'\n    policy: single\n    window: 3\n",
     "line 8: entry 'bad': the window of 3 is shorter than the shortest match of "
     "'Door Room{2,} Door' (4 timesteps): it can never match"),
    ("    pattern: 'Door Room Room Room Door'\n    max_errors: 1\n    window: 3\n",
     "line 8: entry 'bad': the window of 3 is shorter than the fewest events a match of "
     "'Door Room Room Room Door' needs with at most 1 inserted (4)"),
    ("    pattern: '(Door | Room)* Door (Door | Room){12}'\n    max_errors: 1\n"
     "    window: 30\n", "too complex for approximate matching: its automaton has 8,192 "
                        "states, more than the limit of 2,048 (MAX_APPROX_STATES"),
])
def test_bad_entries_name_entry_and_problem(tmp_path, entry, message):
    path = write(tmp_path, "patterns:\n  good:\n    pattern: Door\n    policy: single\n"
                           "  bad:\n" + entry)
    with pytest.raises(RegistryError) as err:
        load_registry(path, DOMAIN)
    assert message in str(err.value) and str(path) in str(err.value)


def test_empty_or_malformed_file(tmp_path):
    for text in ("", "patterns: []\n", "patterns:\n  x: [\n"):
        with pytest.raises(RegistryError):
            load_registry(write(tmp_path, text), DOMAIN)


def test_a_name_given_twice_is_refused_with_its_line(tmp_path):
    text = ("patterns:\n  p:\n    pattern: 'Door'\n    policy: single\n"
            "  p:\n    pattern: 'Room'\n    policy: single\n")
    with pytest.raises(RegistryError, match=r"patterns.yaml, line 5: .*'p' is named twice"):
        load_registry(write(tmp_path, text), DOMAIN)


@pytest.mark.parametrize("field", ["threshold", "alert_threshold"])
@pytest.mark.parametrize("value", ["1e-400", "1.0e-400", "0.00001e-320"])
def test_a_probability_that_reads_as_zero_is_refused_with_its_line(tmp_path, field, value):
    """`threshold: 1e-400` was θ = 0 (every match), `alert_threshold: 1e-400` every group
    an alert (QA, 2026-11-27); the command line already refused it."""
    text = f"patterns:\n  p:\n    pattern: Door\n    policy: single\n    {field}: {value}\n"
    with pytest.raises(RegistryError, match=rf"line 5: .*{value} is below the smallest "
                                            "positive double"):
        load_registry(write(tmp_path, text), DOMAIN)
    for taken in ("0", "0.0", "0e-400", "5e-324"):
        text = f"patterns:\n  p:\n    pattern: Door\n    policy: single\n    {field}: {taken}\n"
        load_registry(write(tmp_path, text), DOMAIN)


def test_aliases_expanding_past_the_limit_are_refused_at_once(tmp_path):
    """Nine lists of nine aliases each are 9^9 values in 15 lines: printing one in the
    refusal of a bad `description` took a minute and gigabytes (QA, 2026-11-27). A
    few aliases are still read."""
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    with pytest.raises(RegistryError, match=r"patterns.yaml, line 1: .*more than 100000 "
                                            r"values once its aliases \(\*name\) are expanded"):
        load_registry(write(tmp_path, laughs + "patterns:\n  p: {pattern: 'Door', policy: "
                                               "single, description: *i}\n"), DOMAIN)
    shared = "w: &w 5\npatterns:\n  p: {pattern: 'Door', policy: single, window: *w}\n"
    assert load_registry(write(tmp_path, shared), DOMAIN)["p"].query.window == 5


def test_a_key_that_is_a_list_is_refused_with_its_line(tmp_path):
    with pytest.raises(RegistryError, match=r"patterns.yaml, line 2: .*a key must be a name"):
        load_registry(write(tmp_path, "patterns:\n  ? [a, b]\n  : {pattern: 'Door'}\n"), DOMAIN)


def test_a_window_past_the_engines_limit_names_its_file_line_and_entry(tmp_path):
    """QA, 2026-11-27: refused as the engine's `window … (MAX_WINDOW)` alone."""
    text = ("patterns:\n  x:\n    pattern: 'Door'\n    policy: single\n"
            "    window: 99999999999999999999999999\n")
    with pytest.raises(RegistryError, match=r"patterns.yaml, line 5: entry 'x': window "
                                            r"99999999999999999999999999 is more than the limit"):
        load_registry(write(tmp_path, text), DOMAIN)
