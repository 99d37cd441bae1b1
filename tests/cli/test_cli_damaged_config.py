"""Issue 14 (class 9) on the user's own JSON files that landed after it: one that is not text, or
nested deeper than Python's parser recurses, is one line naming the file, never a traceback, and
(issue 37: a bad entry never stops a run) the run goes on without it: no MCP servers from a
damaged ``mcp.json``, no trusted folders from a damaged list.

``tether -p`` runs in a subprocess with a scripted model; the file under test sits where tether
reads it (the trusted-folders list is read when the project has a ``.tether`` folder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply

pytestmark = pytest.mark.subprocess

DAMAGED = {
    "nested 100k deep": b"[" * 100_000 + b"]" * 100_000,
    "an object nested 100k deep": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "not UTF-8": b'{"\xff": 1}',
}


@pytest.mark.parametrize("damage", list(DAMAGED))
@pytest.mark.parametrize("name", ["trusted-folders.json", "mcp.json"])
def test_a_damaged_user_file_is_one_line_naming_it(cli: CliEnv, name: str, damage: str) -> None:
    config = cli.home / "config"
    config.mkdir()
    (config / name).write_bytes(DAMAGED[damage])
    (cli.project / ".tether" / "prompts").mkdir(parents=True)  # makes tether ask whether it is trusted
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]))
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine\n"
    about = [
        line
        for line in done.stderr.splitlines()
        if line.removeprefix("note: ").startswith(f"{config / name}: ")
    ]
    assert len(about) == 1 and "JSON" in about[0], done.stderr


def _sparse(path: Path, size: int, head: bytes) -> Path:
    """A file of ``size`` bytes that costs no disk: ``head``, then a hole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        file.write(head)
        file.truncate(size)
    return path


@pytest.mark.parametrize("where", ["untrusted project skill", "user prompt template"])
def test_a_huge_skill_or_template_is_skipped_unread(cli: CliEnv, where: str) -> None:
    """A repository's ``.pi/skills`` is read on every start without trust: a 1 GB ``SKILL.md``
    (sparse: anyone can make one) is skipped with a note instead of being read into memory
    (which took 2 GB of memory and over 30 s, this test's timeout)."""
    head = b"---\nname: big\ndescription: a big one\n---\n"
    if where == "untrusted project skill":
        huge = _sparse(cli.project / ".pi" / "skills" / "big" / "SKILL.md", 1 << 30, head)
    else:
        huge = _sparse(cli.home / "config" / "prompts" / "big.md", 1 << 30, head)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine\n"
    assert f"note: {huge}: cannot read: larger than 1 MB, not read;" in done.stderr


def test_a_huge_context_file_in_a_parent_folder_is_left_out_unread(cli: CliEnv) -> None:
    """Every ``AGENTS.md`` from the root down is read, so any parent (a shared ``/tmp``) may hold
    one: a sparse 1 GB one cost 3 GB of memory and half a minute before the first request."""
    huge = _sparse(cli.project.parent / "AGENTS.md", 1 << 30, b"# Rules\n")
    (cli.project / "AGENTS.md").write_text("Answer briefly.\n")
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert done.stderr == f"note: {huge}: larger than 1 MB, not read; left out of the system prompt\n"


@pytest.mark.parametrize(("target", "why"), [("gone.md", "No such file"), ("AGENTS.md", "Too many levels")])
def test_a_context_file_that_cannot_be_read_is_one_note(cli: CliEnv, target: str, why: str) -> None:
    """An ``AGENTS.md`` that could not be read (a link to nothing, a loop, no permission) was
    left out of the system prompt in silence: the project's rules did not apply, unsaid."""
    (cli.project / "AGENTS.md").symlink_to(target)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]))
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert done.stderr.startswith(f"note: {cli.project / 'AGENTS.md'}: cannot read: {why}"), done.stderr
    assert done.stderr.endswith("; left out of the system prompt\n") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("target", ["/dev/zero", "a FIFO", "a file outside the project"])
def test_a_project_settings_file_linking_out_is_refused_unread(cli: CliEnv, target: str) -> None:
    """A cloned repository's ``.tether/settings.json`` is read on every start, trusted or not: a
    link to ``/dev/zero`` filled memory until killed, a FIFO blocked the start for good, and a
    link to a JSON file outside (``~/.config/tether/auth.json``) had its values echoed by the
    error about them. Each is now one line naming the file, read no further than its name."""
    settings = cli.project / ".tether" / "settings.json"
    settings.parent.mkdir()
    if target == "a FIFO":
        os.mkfifo(settings)
    elif target == "/dev/zero":
        settings.symlink_to("/dev/zero")
    else:
        secret = cli.home / "auth.json"
        secret.write_text('{"anthropic": {"type": "api_key", "key": "sk-ant-SECRET"}}')
        settings.symlink_to(secret)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert done.returncode == 1
    assert "SECRET" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"tether: {settings}: cannot read: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_bad_models_json_entry_is_a_note_and_the_other_models_work(cli: CliEnv) -> None:
    """A mistake in one provider of ``models.json`` stopped every run with any model ("tether:
    ...models.json: providers.typo.models: ..."); now that provider is left out with a note
    line naming the file, entry and field, and a model of another provider is used. (Its server
    refuses the connection here: the run gets that far, and fails for that reason alone.)"""
    config = cli.home / "config"
    config.mkdir()
    providers = {
        "typo": {"baseURL": "http://127.0.0.1:1/v1", "api": "openai-completions"},
        "mine": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "models": [{"id": "m"}]},
    }
    (config / "models.json").write_text(json.dumps({"providers": providers}))
    done = cli.run("-p", "hi", "--no-session", "--model", "mine/m", timeout=30)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert (
        f"note: {config / 'models.json'}: providers.typo.baseURL: unknown field (provider 'typo' left out)"
        in lines
    )
    assert done.returncode == 1 and "127.0.0.1:1" in done.stderr, done.stderr
    assert not any(line.startswith("tether: ") for line in lines), done.stderr


@pytest.mark.parametrize("args", [("--model", "mine/m"), ("--provider", "mine", "--model", "m")])
def test_a_model_of_a_provider_left_out_says_why_it_is_unknown(cli: CliEnv, args: tuple[str, ...]) -> None:
    """The run stops at the model, before the session that prints the notes: "unknown model
    'mine/m'" alone, for a provider left out over one misspelt field."""
    config = cli.home / "config"
    config.mkdir()
    mine = {
        "baseUrl": "http://127.0.0.1:1/v1",
        "api": "openai-completions",
        "apiKey": "K",
        "models": [{"id": "m"}],
    }
    (config / "models.json").write_text(json.dumps({"providers": {"mine": mine}}))
    done = cli.run("-p", "hi", "--no-session", *args, timeout=30)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("tether: unknown "), done.stderr
    assert done.stderr.endswith(
        f"; {config / 'models.json'}: providers.mine.apiKey: unknown field (provider 'mine' left out)\n"
    ), done.stderr


AUTH_DAMAGE = {
    "invalid JSON": b'{"openai": {"type": "api_key", "key": "sk-SECRET"},,}',
    "nested too deeply": b"[" * 100_000 + b"]" * 100_000,
    "an entry of the wrong type": b'{"openai": "sk-SECRET", "groq": {"type": "api_key", "key": "gsk-fine"}}',
}


@pytest.mark.parametrize("damage", list(AUTH_DAMAGE))
def test_a_damaged_auth_file_is_one_note_on_stderr_and_the_protocol_stays_clean(
    cli: CliEnv, damage: str
) -> None:
    """A damaged ``auth.json`` (the keys ``/login`` saves) counted as empty in silence: the user
    got "no API key" and no word of the file. Now it is one ``note:`` line on stderr naming the
    file and the place (never a key), the run goes on, and JSON mode's stdout holds only its
    protocol lines."""
    auth = cli.home / "data" / "auth.json"
    auth.parent.mkdir()
    auth.write_bytes(AUTH_DAMAGE[damage])
    script = cli.script("s", [text_reply("fine")])
    printed = cli.run("-p", "hi", "--no-session", script=script)
    assert (printed.returncode, printed.stdout) == (0, "fine\n"), printed.stderr
    assert "Traceback" not in printed.stderr and "SECRET" not in printed.stderr
    [line] = printed.stderr.splitlines()
    assert line.startswith(f"note: {auth}: "), printed.stderr
    streamed = cli.run("--mode", "json", "--no-session", "hi", script=script)
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stderr == printed.stderr
    events = json_lines(streamed.stdout)  # every line is the protocol's
    assert events[0]["type"] == "session" and events[-1]["type"] == "agent_settled"
    assert "SECRET" not in streamed.stdout


def test_no_api_key_says_why_the_saved_one_was_not_used(cli: CliEnv) -> None:
    auth = cli.home / "data" / "auth.json"
    auth.parent.mkdir()
    auth.write_text('{"openai": {"type": "api_key", "key": ["sk-SECRET"]}}')
    done = cli.run("-p", "hi", "--no-session", "--model", "openai/gpt-4o-mini")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "SECRET" not in done.stderr
    problem = f"{auth}: 'openai': \"key\": expected the API key as a string, got a list (skipped)"
    assert f"note: {problem}" in done.stderr.splitlines(), done.stderr
    assert f"Not used: {problem}" in done.stderr, done.stderr
