"""Keys saved with ``/login``: ``auth.json`` in the data folder, mode 0600, used before the
environment (as pi's ``auth.json``), a damaged file read as empty and reported when written."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tether.ai.auth_file import AuthFileError, auth_file, remove_key, save_key, stored_key, stored_providers
from tether.ai.keys import resolve_api_key
from tether.ai.models import find_model, get_provider_info, provider_has_key


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))


def test_a_saved_key_is_private_and_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    model = find_model("openai/gpt-4o-mini")
    assert resolve_api_key(model) is None and not provider_has_key(get_provider_info("openai"))
    written = save_key("openai", "sk-saved")
    assert written == auth_file() and stat.S_IMODE(written.stat().st_mode) == 0o600
    assert json.loads(written.read_text()) == {"openai": {"type": "api_key", "key": "sk-saved"}}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    key = resolve_api_key(model)
    assert key is not None and (key.value, key.env_var) == ("sk-saved", None)
    assert provider_has_key(get_provider_info("openai"))
    save_key("anthropic", "sk-2")  # the file is rewritten whole, the first key kept
    assert stored_providers() == ["anthropic", "openai"]
    assert remove_key("openai") and not remove_key("openai")
    key = resolve_api_key(model)
    assert key is not None and key.value == "sk-env"
    assert stat.S_IMODE(auth_file().stat().st_mode) == 0o600


def test_a_damaged_file_gives_no_key_and_writing_names_it() -> None:
    path = auth_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert stored_key("openai") is None
    assert resolve_api_key(find_model("openai/gpt-4o-mini")) is None
    with pytest.raises(AuthFileError, match=str(path)):
        save_key("openai", "k")
    path.write_text('{"openai": {"type": "api_key", "key": 5}, "groq": "x"}')
    assert stored_key("openai") is None and stored_key("groq") is None
    # nested deeper than the parser recurses: its RecursionError failed every model request
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert stored_key("openai") is None
    with pytest.raises(AuthFileError, match=str(path)):
        save_key("openai", "k")
