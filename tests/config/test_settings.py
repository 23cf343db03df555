"""Settings: where they are found, what a bad one says."""

from __future__ import annotations

from pathlib import Path

import pytest

from probcep.config.settings import PACKAGED, SettingsError, load_settings, settings_file


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
    with pytest.raises(SettingsError, match="'domain'.*not one of"):
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
