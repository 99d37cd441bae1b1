"""Keys saved with ``/login``: ``auth.json`` in the data folder, mode 0600, used before the
environment (as pi's ``auth.json``); a damaged file or entry is left out, one line each naming
the file and the place, never a value, and reported again when written."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tether.ai.auth_file import (
    AuthFileError,
    auth_file,
    auth_file_problems,
    remove_key,
    save_key,
    stored_key,
    stored_providers,
)
from tether.ai.keys import missing_key_message, resolve_api_key
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


def test_the_data_folders_tether_makes_are_private(tmp_path: Path) -> None:
    """Whoever makes the data folder first (a saved key, the interactive prompt's history) makes
    it 0700, as the session database does: it holds the transcripts; it was 0755."""
    from tether.cli.prompt_history import prompt_history

    data = tmp_path / "data"
    old_umask = os.umask(0o022)
    modes: list[str] = []
    try:
        os.chmod(tmp_path, 0o755)
        save_key("openai", "sk-saved")
        modes.append(oct(stat.S_IMODE(data.stat().st_mode)))
        (data / "auth.json").unlink()
        data.rmdir()
        prompt_history()
        modes.append(oct(stat.S_IMODE(data.stat().st_mode)))
    finally:
        os.umask(old_umask)
    assert modes == ["0o700", "0o700"]
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # TETHER_HOME, already there, is kept


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


DAMAGED = {
    "invalid JSON": (
        b'{"openai": {"key": "sk-SECRET",}}',
        "invalid JSON at line 1 column 32: Expecting property name",
    ),
    "not UTF-8": (b'{"openai": {"key": "sk-SECRET\xff"}}', "not UTF-8 text (byte 29)"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
    "not an object": (b'["sk-SECRET"]', "expected a JSON object at the top level, got a list"),
    "a huge integer": (b'{"openai": ' + b"7" * 5000 + b"}", "invalid JSON: a value cannot be read"),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_file_is_one_line_saying_what_and_where_never_the_content(damage: str) -> None:
    """It used to count as empty in silence: the user who ran ``/login`` saw "no API key" and
    nothing about the file. Now the file's problem is one line (a session shows it as a note)
    and the "no API key" error says why the saved key was not used."""
    content, problem = DAMAGED[damage]
    path = auth_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    [line] = auth_file_problems()
    assert line.startswith(f"{path}: {problem}") and line.endswith(
        "; fix or remove it (/login writes a new one)"
    )
    assert "SECRET" not in line and "777" not in line
    assert stored_key("openai") is None and stored_providers() == []
    message = missing_key_message(find_model("openai/gpt-4o-mini"))
    assert message.endswith(f"Not used: {line}") and "OPENAI_API_KEY" in message


def test_a_bad_entry_is_skipped_and_named_and_the_good_ones_are_used() -> None:
    path = auth_file()
    path.parent.mkdir(parents=True)
    entries = {
        "anthropic": {"type": "api_key", "key": "sk-GOOD"},
        "openai": {"type": "api_key", "key": 5},
        "groq": "sk-SECRET-pasted-as-the-entry",
        "mistral": {"type": "api_key"},
        "sk-SECRET-pasted-as-a-name-0123456789abcdef": {"key": ""},
    }
    path.write_text(json.dumps(entries))
    assert stored_key("anthropic") == "sk-GOOD" and stored_providers() == ["anthropic"]
    assert auth_file_problems() == [
        f"{path}: 'openai': \"key\": expected the API key as a string, got a number (skipped)",
        f'{path}: \'groq\': expected an object {{"type": "api_key", "key": "..."}}, got a string (skipped)',
        f"{path}: 'mistral': \"key\": expected the API key as a string, got nothing (skipped)",
        f'{path}: entry 5 (its name is not shown): "key": expected the API key as a string, '
        "got an empty string (skipped)",
    ]
    assert missing_key_message(find_model("openai/gpt-4o-mini")).endswith(
        f"Not used: {path}: 'openai': \"key\": expected the API key as a string, got a number (skipped)"
    )
    assert "Not used" not in missing_key_message(find_model("xai/grok-3"))  # nothing saved for it: no hint


def test_a_sound_or_missing_file_has_no_problems() -> None:
    assert auth_file_problems() == []
    save_key("openai", "sk-1")
    assert auth_file_problems() == []


def test_a_fifo_in_its_place_is_a_problem_not_a_hang() -> None:
    path = auth_file()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert auth_file_problems() == [
        f"{path}: cannot read: not a regular file (a pipe, socket or device); fix or remove it (/login writes a new one)"
    ]
    assert stored_key("openai") is None


def test_another_writers_temporary_file_is_left_alone() -> None:
    """Two tethers saving a key at once: each writes a temporary file of its own. The fixed
    ``auth.json.tmp`` was unlinked first, so one removed (or renamed in place) the other's."""
    path = auth_file()
    path.parent.mkdir(parents=True)
    theirs = path.with_name(path.name + ".tmp")
    theirs.write_text('{"groq": {"type": "api_key", "key": "theirs"}}')
    save_key("openai", "sk-mine")
    assert theirs.read_text() == '{"groq": {"type": "api_key", "key": "theirs"}}'
    assert stored_providers() == ["openai"] and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert {p.name for p in path.parent.iterdir()} == {path.name, theirs.name}  # none of ours left
