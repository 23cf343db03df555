"""Settings: where they are found, what a bad one says."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from probcep.config.settings import (
    PACKAGED,
    SettingsError,
    SettingsWarning,
    load_settings,
    settings_file,
)


def test_bad_settings_name_the_setting(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("lake_root: x\nlanding_dir: y\ntimestep_seconds: 7\n"
                    "epoch: '2026-01-01T00:00:00'\ndomain: [A]\n")
    with pytest.raises(SettingsError, match="'timestep_seconds'"):
        load_settings(path, env={})
    path.write_text(path.read_text().replace("7", "60"))
    with pytest.raises(SettingsError, match="PROBCEP_GAP_POLICY"):
        load_settings(path, env={"PROBCEP_GAP_POLICY": "guess"})
    loaded = load_settings(path, env={"PROBCEP_LAKE_ROOT": "/data/lake"})
    assert loaded.lake_root.as_posix() == "/data/lake"


@pytest.mark.parametrize("setting", ["max_quarantine_fraction", "target_file_mb",
                                     "hold_last_steps", "backfill_days"])
def test_a_yes_or_no_is_not_a_number(tmp_path, setting):
    path = tmp_path / "s.yaml"
    path.write_text("lake_root: x\nlanding_dir: y\ntimestep_seconds: 60\n"
                    f"epoch: '2026-01-01T00:00:00'\ndomain: [A]\n{setting}: true\n")
    with pytest.raises(SettingsError, match=f"'{setting}'"):
        load_settings(path, env={})


@pytest.mark.parametrize(("policy", "steps", "held", "label"), [
    ("hold_last", 5, 5, "hold_last (5 steps)"),
    ("hold_last", 10 ** 30, 1439, "hold_last (1439 steps)"),  # a Spark traceback, exit 1
    ("hold_last", 0, 0, "hold_last (0 steps)"),
    ("uniform", 10 ** 30, 0, "uniform"), ("no_reading", 7, 0, "no_reading")])
def test_a_hold_ends_with_its_day(tmp_path, policy, steps, held, label):
    """Every hold ends where its day ends, so a larger `hold_last_steps` means the same
    (QA, 2026-11-27: 10^14 and 10^30 reached Spark, after ingest had committed)."""
    path = tmp_path / "s.yaml"
    path.write_text("lake_root: x\nlanding_dir: y\ntimestep_seconds: 60\n"
                    f"epoch: '2026-01-01T00:00:00'\ndomain: [A]\ngap_policy: {policy}\n"
                    f"hold_last_steps: {steps}\n")
    loaded = load_settings(path, env={})
    assert (loaded.held_steps, loaded.gap_label) == (held, label)


def test_settings_are_found_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert settings_file(env={}) == PACKAGED  # nothing here: the packaged defaults
    packaged = load_settings(env={})
    assert packaged.lake_root == tmp_path / "lake" / "local"  # never into the package
    assert (packaged.landing_dir / "2026-01-01").is_dir()  # the bundled sample
    assert packaged.registry.is_file()
    local = tmp_path / "probcep.yaml"
    local.write_text(PACKAGED.read_text().replace("lake/local", "mine"))
    assert settings_file(env={}) == Path("probcep.yaml")
    assert load_settings(env={}).lake_root.resolve() == (tmp_path / "mine").resolve()
    named = tmp_path / "other.yaml"
    named.write_text(PACKAGED.read_text().replace("lake/local", "named"))
    assert settings_file(env={"PROBCEP_SETTINGS": str(named)}) == named
    assert settings_file(named.name, env={"PROBCEP_SETTINGS": "x.yaml"}) == Path(named.name)
    assert load_settings(env={"PROBCEP_SETTINGS": str(named)}).lake_root == tmp_path / "named"


def test_wide_sum_and_symbol_names_are_checked(tmp_path):
    path = tmp_path / "s.yaml"
    base = ("lake_root: x\nlanding_dir: y\ntimestep_seconds: 60\n"
            "epoch: '2026-01-01T00:00:00'\n")
    path.write_text(base + "domain: [A]\n")
    assert load_settings(path, env={}).wide_sum == "refuse"  # the default
    assert load_settings(path, env={"PROBCEP_WIDE_SUM": "renormalize"}).wide_sum == \
        "renormalize"
    with pytest.raises(SettingsError, match="'wide_sum'.*must be one of"):
        load_settings(path, env={"PROBCEP_WIDE_SUM": "guess"})
    path.write_text(base + "domain: [A, score]\n")  # a symbol named like a reading column
    with pytest.raises(SettingsError, match="'domain'.*none of"):
        load_settings(path, env={})


def test_folders_of_a_settings_file_named_relatively_are_absolute(tmp_path, monkeypatch):
    # Spark names the landing files it read by absolute path; ingest matches them to
    # the files it asked for, so a relative landing folder quarantined nothing and
    # refused the batch ("not a file of the batch by that name")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "s.yaml").write_text(
        "lake_root: ../lake\nlanding_dir: ../land\nregistry: p.yaml\ntimestep_seconds: 60\n"
        "epoch: '2026-01-01T00:00:00'\ndomain: [A]\n")
    monkeypatch.chdir(tmp_path)
    loaded = load_settings("cfg/s.yaml", env={})
    assert loaded.landing_dir == tmp_path / "land"
    assert loaded.lake_root == tmp_path / "lake"
    assert loaded.registry == tmp_path / "cfg" / "p.yaml"


BASE = "lake_root: x\nlanding_dir: y\ntimestep_seconds: 60\ndomain: [A]\n"


@pytest.mark.parametrize("text, env, said", [
    (b"\x00\x01\xff\xfe", {}, "not UTF-8 text"),
    (BASE + "epoch: 2026-02-30T00:00:00\n", {}, "day is out of range for month"),
    (BASE + "epoch: '2026-01-01T00:00:00'\n", {"PROBCEP_DOMAIN": "[Door"},
     "environment PROBCEP_DOMAIN: cannot read '\\[Door' as a YAML value"),
    (BASE + "epoch: '2026-01-01T00:00:00'\n", {"PROBCEP_EPOCH": "2026-13-01T00:00:00"},
     "environment PROBCEP_EPOCH: cannot read"),
    (BASE.replace("x", "/data/lk[1]") + "epoch: '2026-01-01T00:00:00'\n", {},
     r"lake root /data/lk\[1\]: delta-rs cannot open a table or list .* with '\[' or '\]'"),
    # delta-rs decodes a URL escape (its table would be looked for under "lake 100A")
    # and panics at `^` or `|` (QA, 2026-11-27); a `%` that escapes nothing is taken
    (BASE.replace("x", "'lake 100%41'") + "epoch: '2026-01-01T00:00:00'\n", {},
     r"lake root .*/lake 100%41: delta-rs cannot open a table or list .* with '%41'"),
    (BASE.replace("x", "'a^b|c'") + "epoch: '2026-01-01T00:00:00'\n", {},
     r"lake root .*/a\^b\|c: delta-rs cannot open a table or list .* with '\^' or '\|'"),
    # delta-rs opens a table under `#` or `?` but lists none of its commits: the clock
    # check passed and a killed run's cleanup removed committed files (QA, 2026-11-27)
    (BASE.replace("x", "'lake #2?'") + "epoch: '2026-01-01T00:00:00'\n", {},
     r"lake root .*/lake #2\?: delta-rs cannot open a table or list its commits under a "
     r"path with '#' or '\?'"),
    (BASE.replace("x", '"a\\tb"') + "epoch: '2026-01-01T00:00:00'\n", {},  # a tab, shown
     r"lake root '.*/a\\tb': delta-rs cannot open a table or list .* with '\\t'"),
    (BASE + "epoch: '2026-01-01T00:00:00'\nlake_root: elsewhere\n", {},  # not the last kept
     r"s.yaml, line 6: cannot read settings: 'lake_root' is named twice$"),
])
def test_unreadable_settings_are_one_error_naming_the_file_or_variable(tmp_path, text, env,
                                                                        said):
    path = tmp_path / "s.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SettingsError, match=said):
        load_settings(path, env=env)


def test_a_lake_given_later_is_checked_too(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "epoch: '2026-01-01T00:00:00'\n")
    with pytest.raises(SettingsError, match=r"with '\\\\'"):
        dataclasses.replace(load_settings(path, env={}), lake_root=Path("/data/a\\b"))


@pytest.mark.parametrize("epoch", ["'2026-01-01T05:00:00+05:00'", "2026-01-01T05:00:00+05:00",
                                   "'2026-01-01T00:00:00Z'", "'2026-01-01T00:00:00'"])
def test_an_epoch_with_an_offset_is_the_same_instant_in_utc(tmp_path, epoch):
    path = tmp_path / "s.yaml"
    path.write_text(BASE + f"epoch: {epoch}\n")
    assert load_settings(path, env={}).epoch == dt.datetime(2026, 1, 1)


@pytest.mark.parametrize(("override", "said"), [
    ({"epoch": "'2026-01-01T00:00:30'"}, "epoch.*multiple of 60 s.*0:00:30 after midnight UTC"),
    ({"epoch": "'2026-01-01T00:00:00+05:30'", "timestep_seconds": "3600"},
     "epoch.*multiple of 3600 s.*18:30:00 after midnight UTC"),
    ({"domain": "[Hallway, door, Door]"}, "domain.*distinct without regard to case"),
    ({"domain": "[Hallway, date]"}, "domain.*none of"),
    ({"domain": "[Hallway, T]"}, "domain.*none of"),
    ({"no_reading_symbol": "t"}, "no_reading_symbol"),
    ({"no_reading_symbol": "door"}, "no_reading_symbol' \\(.*s.yaml\\): must be"),
    # set by no file: its default, not "missing" (QA, 2026-11-27)
    ({"domain": "[Hallway, NoReading]"},
     "setting 'no_reading_symbol' \\(default\\): must be a name outside the domain.*"
     "got 'NoReading'"),
    ({"target_file_mb": ".inf"}, "target_file_mb.*megabytes in"),
    ({"target_file_mb": "1.0e20"}, "target_file_mb.*megabytes in"),
])
def test_settings_spark_or_the_clock_cannot_use_are_refused_at_start(tmp_path, override, said):
    """Each was taken, and failed later with a traceback after Spark's work (or, for the
    epoch, quarantined each day's last readings as outside it)."""
    values = {"lake_root": "x", "landing_dir": "y", "timestep_seconds": "60",
              "domain": "[Hallway, Door]", "epoch": "'2026-01-01T00:00:00'", **override}
    path = tmp_path / "s.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in values.items()))
    with pytest.raises(SettingsError, match=said):
        load_settings(path, env={})


def test_a_misspelt_variable_is_named_and_the_ones_meant_for_others_are_not(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "epoch: '2026-01-01T00:00:00'\n")
    env = {"PROBCEP_LANDNG_DIR": "/elsewhere", "PROBCEP_HOME": "/opt/probcep",
           "PROBCEP_SETTINGS": str(path), "PROBCEP_SPHERE_DIR": "/data/sphere",
           "PROBCEP_SPHERE_RELEASE_DIR": "/data/sphere10",
           "PROBCEP_LAKE_ROOT": "/data/lake", "OTHER_LANDNG_DIR": "x"}
    with pytest.warns(SettingsWarning) as said:
        loaded = load_settings(path, env=env)
    assert [str(w.message) for w in said] == [
        "environment PROBCEP_LANDNG_DIR is not a setting and is ignored "
        "(did you mean PROBCEP_LANDING_DIR?)"]
    assert loaded.landing_dir == tmp_path / "y"
    assert loaded.lake_root.as_posix() == "/data/lake"
    with pytest.warns(SettingsWarning, match=r"PROBCEP_ZZZ is not a setting and is ignored$"):
        load_settings(path, env={"PROBCEP_ZZZ": "1"})


def test_the_command_prints_the_warning_as_one_line(tmp_path, monkeypatch, capsys):
    from probcep.cli import main

    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("y", str(tmp_path / "none")) +
                    "epoch: '2026-01-01T00:00:00'\n")
    monkeypatch.setenv("PROBCEP_LAKE_ROTO", str(tmp_path / "lake"))
    assert main(["ingest", "--date", "2026-01-02", "--settings", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("probcep ingest: warning: environment PROBCEP_LAKE_ROTO is not a "
                      "setting and is ignored (did you mean PROBCEP_LAKE_ROOT?)")
    assert err[1].startswith("probcep ingest: error: ")  # the registry: none here


def test_a_relative_path_from_the_environment_is_from_the_working_directory(tmp_path,
                                                                             monkeypatch):
    folder = tmp_path / "conf"
    folder.mkdir()
    path = folder / "s.yaml"
    path.write_text(BASE + "epoch: '2026-01-01T00:00:00'\n")
    monkeypatch.chdir(tmp_path)
    loaded = load_settings(path, env={"PROBCEP_LANDING_DIR": "out/landing",
                                      "PROBCEP_LAKE_ROOT": "lk"})
    assert loaded.landing_dir == tmp_path / "out" / "landing"
    assert loaded.lake_root == tmp_path / "lk"
    assert load_settings(path, env={}).landing_dir == folder / "y"  # the file's: beside it


def test_a_lake_root_is_checked_where_its_links_lead_and_as_given(tmp_path, monkeypatch):
    """A link to a folder under `#` reaches delta-rs as that folder (QA, 2026-11-27: the
    clock check was skipped through a link); `--lake` is the root checked, not the
    default it replaces (a working directory under `#` refused every `--lake`)."""
    (tmp_path / "a#b" / "lake").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a#b" / "lake")
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "epoch: '2026-01-01T00:00:00'\n")
    with pytest.raises(SettingsError, match=r"lake root .*/link \(resolved: .*/a#b/lake\): "
                                            r".* with '#'"):
        load_settings(path, env={}, lake=tmp_path / "link")
    inside = tmp_path / "a#b" / "s.yaml"  # its default lake lies under `#`
    inside.write_text(BASE.replace("lake_root: x", "lake_root: lake")
                      + "epoch: '2026-01-01T00:00:00'\n")
    with pytest.raises(SettingsError, match="with '#'"):
        load_settings(inside, env={})
    assert load_settings(inside, env={}, lake=tmp_path / "clean").lake_root == \
        tmp_path / "clean"
    monkeypatch.chdir(tmp_path)
    assert load_settings(inside, env={}, lake="rel").lake_root == tmp_path / "rel"


GOOD = ("lake_root: x\nlanding_dir: y\ntimestep_seconds: 60\n"
        "epoch: '2026-01-01T00:00:00'\n")


@pytest.mark.parametrize("text,env,message", [
    # QA, 2026-11-27: each of these ended in a traceback, or in gigabytes of message
    (GOOD + "domain: [A]\n? [x]\n: 1\n", {},
     r"s.yaml, line 6: cannot read settings: a key must be a name, not a list or mapping$"),
    (GOOD + "domain: [A]\n", {"PROBCEP_DOMAIN": "? [a]"},
     r"environment PROBCEP_DOMAIN: cannot read .* a key must be a name"),
    (GOOD + "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcde", "bcdef"))
     + "domain: *f\n", {}, r"s.yaml, line 1: cannot read settings: the document holds "
     r"more than 100000 values once its aliases \(\*name\) are expanded$"),
    (GOOD.replace("2026-01-01T00:00:00", "0001-01-01T00:00:00+01:00") + "domain: [A]\n", {},
     "'epoch' .*from year 1 UTC"),
    (GOOD + "domain: [s, ſ]\n", {}, "'domain' .*A-Za-z_"),  # one column to Spark
    (GOOD + "domain: [Door, Küche]\n", {}, "'domain' .*A-Za-z_"),  # no pattern names it
    (GOOD + f"domain: [{', '.join(f'S{i}' for i in range(601))}]\n", {},
     "'domain' .*: must hold at most 600 symbols, got 601$"),  # Spark ran out of heap
])
def test_hostile_settings_are_refused_in_one_line(tmp_path, text, env, message):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=message) as refused:
        load_settings(path, env=env)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 1000


@pytest.mark.parametrize("lake", ["landing", "landing/lake", "landing/2026-01-01/lake"])
def test_a_lake_in_the_landing_folder_is_refused(tmp_path, lake):
    """Its files landed: every night stopped at "landing changed since ingest" and
    quarantined the lake's folder (QA, 2026-11-27)."""
    path = tmp_path / "s.yaml"
    path.write_text(f"lake_root: {lake}\nlanding_dir: landing\ntimestep_seconds: 60\n"
                    "epoch: '2026-01-01T00:00:00'\ndomain: [A]\n")
    with pytest.raises(SettingsError, match=f"lake root .*{lake} lies in the landing folder "
                                            ".*landing: put it beside it"):
        load_settings(path, env={})
    assert load_settings(path, env={}, lake=tmp_path / "lake").lake_root == tmp_path / "lake"


def test_a_required_setting_left_out_names_the_file(tmp_path):
    """`setting 'lake_root' (missing): is required` said not where (QA, 2026-11-28)."""
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, env={})
    assert str(refused.value) == f"setting 'lake_root' (missing from {path}): is required"
