from __future__ import annotations

from pathlib import Path

from tether.ai.paths import config_dir, data_dir, models_file, tether_home


def test_tether_home_holds_both_folders() -> None:
    env = {"TETHER_HOME": "/srv/t", "XDG_CONFIG_HOME": "/x/config", "XDG_DATA_HOME": "/x/data"}
    assert config_dir(env) == Path("/srv/t/config")
    assert data_dir(env) == Path("/srv/t/data")
    assert models_file(env) == Path("/srv/t/config/models.json")


def test_xdg_folders_without_tether_home() -> None:
    env = {"XDG_CONFIG_HOME": "/x/config", "XDG_DATA_HOME": "/x/data"}
    assert config_dir(env) == Path("/x/config/tether")
    assert data_dir(env) == Path("/x/data/tether")


def test_defaults_under_home_when_unset_empty_or_relative() -> None:
    home = Path.home()
    for env in (
        {},
        {"XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "TETHER_HOME": ""},
        {"XDG_CONFIG_HOME": "rel/config", "XDG_DATA_HOME": "rel/data"},
    ):
        assert config_dir(env) == home / ".config" / "tether"
        assert data_dir(env) == home / ".local" / "share" / "tether"


def test_tether_home_expands_user_and_is_absolute() -> None:
    assert tether_home({"TETHER_HOME": "~/th"}) == Path.home() / "th"
    relative = tether_home({"TETHER_HOME": "th"})
    assert relative is not None and relative.is_absolute() and relative.name == "th"
    assert tether_home({}) is None


def test_reads_the_process_environment_on_each_call(tether_home: Path) -> None:
    # conftest points TETHER_HOME at a temporary folder for every test
    assert config_dir() == tether_home / "config"
    assert not config_dir().exists()  # nothing is created by asking


def test_a_tether_home_naming_no_known_user_is_a_folder_not_a_traceback() -> None:
    """``~nosuchuser/th`` cannot be expanded (``expanduser`` raises RuntimeError, which ended
    every command in a traceback): it is taken as the folder it spells, relative to here."""
    from tether.store.paths import data_dir as store_data_dir

    env = {"TETHER_HOME": "~nosuchuser-tether/th"}
    home = tether_home(env)
    assert home is not None and home.is_absolute() and home.parts[-2:] == ("~nosuchuser-tether", "th")
    assert config_dir(env) == home / "config" and data_dir(env) == home / "data"
    assert store_data_dir(env) == home / "data"
