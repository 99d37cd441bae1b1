"""System prompt: base text, tools, project instruction files outermost first, settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply

from tether.session import SessionManager
from tether.session.system_prompt import BASE_PROMPT, build_system_prompt, context_files, prompt_text
from tether.store import default_db_path


def test_context_files_outermost_first_and_agents_md_preferred(tmp_path: Path) -> None:
    inner = tmp_path / "repo" / "pkg"
    inner.mkdir(parents=True)
    (tmp_path / "repo" / "AGENTS.md").write_text("repo rules")
    (tmp_path / "repo" / "CLAUDE.md").write_text("ignored: AGENTS.md wins in the same folder")
    (inner / "CLAUDE.md").write_text("package rules")
    found = [p for p in context_files(inner) if tmp_path in p.parents]
    assert found == [tmp_path / "repo" / "AGENTS.md", inner / "CLAUDE.md"]
    prompt = build_system_prompt(inner, [("read", "Read a file.\nMore.")], append="extra words")
    assert prompt.startswith(BASE_PROMPT)
    assert "- read: Read a file." in prompt and "More." not in prompt
    assert prompt.index("repo rules") < prompt.index("package rules")
    assert "ignored" not in prompt
    assert prompt.endswith("extra words")
    assert f"Working directory: {inner}" in prompt


def test_replace_and_no_tools(tmp_path: Path) -> None:
    prompt = build_system_prompt(tmp_path, [], replace="You are terse.")
    assert prompt.startswith("You are terse.")
    assert BASE_PROMPT not in prompt
    assert "no tools" in prompt


def test_the_users_global_agents_md_comes_first_and_context_can_be_left_out(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("my own habits")
    project = tmp_path / "repo"
    project.mkdir()
    (project / "AGENTS.md").write_text("project rules")
    prompt = build_system_prompt(project, [], user_dir=config)
    assert f'<user-instructions path="{config / "AGENTS.md"}">\nmy own habits' in prompt
    assert prompt.index("my own habits") < prompt.index("project rules")
    inside = build_system_prompt(config, [], user_dir=config)  # config folder inside the tree
    assert inside.count("my own habits") == 1
    bare = build_system_prompt(project, [], user_dir=config, context=False)
    assert "my own habits" not in bare and "project rules" not in bare


def test_prompt_text_reads_a_file_or_keeps_the_text(tmp_path: Path) -> None:
    extra = tmp_path / "extra.md"
    extra.write_text("from a file")
    assert prompt_text(str(extra)) == "from a file"
    assert prompt_text("Answer in French.") == "Answer in French."
    assert prompt_text("x" * 5000) == "x" * 5000  # too long to be a file name: a text


@pytest.mark.subprocess
def test_cli_context_options_shape_the_recorded_system_prompt(cli: CliEnv, tmp_path: Path) -> None:
    (cli.home / "config").mkdir()
    (cli.home / "config" / "AGENTS.md").write_text("global habit")
    (cli.project / "AGENTS.md").write_text("project rule")
    extra = tmp_path / "extra.md"
    extra.write_text("appended from a file")
    script = cli.script("s", [text_reply("ok")])
    appended = ["--append-system-prompt", str(extra), "--append-system-prompt", "appended text"]
    with_context = cli.run("--mode", "json", "q", *appended, script=script)
    without = cli.run("--mode", "json", "q", "--no-context-files", script=script)
    prompts: list[str] = []
    for done in (with_context, without):
        assert done.returncode == 0, done.stderr
        session_id = json_lines(done.stdout)[0]["id"]
        with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
            prompts.append(sessions.open(session_id, readonly=True).context.system_prompt or "")
    full, bare = prompts
    assert full.index("global habit") < full.index("project rule")
    assert full.endswith("appended from a file\n\nappended text")
    assert "global habit" not in bare and "project rule" not in bare and "appended" not in bare


def _hostile_repository(root: Path, outside: Path) -> Path:
    """A clone whose context files point where a repository must not reach: the process's
    environment, a file outside it, a FIFO (opening it would block), a huge sparse file."""
    repo = root / "evil"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git tells one
    (repo / "CLAUDE.md").symlink_to("/proc/self/environ")
    (repo / "out").mkdir()
    (repo / "out" / "AGENTS.md").symlink_to(outside)
    (repo / "out" / "fifo").mkdir()
    os.mkfifo(repo / "out" / "fifo" / "AGENTS.md")
    huge = repo / "out" / "fifo" / "huge"
    huge.mkdir()
    with (huge / "AGENTS.md").open("wb") as file:
        file.truncate(2 << 30)
    inner = huge / "ok"
    inner.mkdir()
    (inner / "rules.md").write_text("inner rule kept")
    (inner / "AGENTS.md").symlink_to("rules.md")  # a link within the repository is fine
    return inner


def test_context_files_under_the_read_policy(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("OUTSIDE-SECRET")
    inner = _hostile_repository(tmp_path, outside)
    os.environ["PROBE_SECRET_33"] = "sk-probe-environ"
    left_out: list[str] = []
    try:
        prompt = build_system_prompt(inner, [], user_dir=tmp_path / "config", left_out=left_out)
    finally:
        del os.environ["PROBE_SECRET_33"]
    assert "sk-probe-environ" not in prompt and "OUTSIDE-SECRET" not in prompt
    assert "inner rule kept" in prompt
    reasons = "\n".join(left_out)
    assert len(left_out) == 4, reasons
    assert "/proc" in reasons and str(outside) in reasons
    assert "not a regular file" in reasons and "larger than 1 MB" in reasons


@pytest.mark.subprocess
def test_cli_a_hostile_repository_leaks_no_environment(cli: CliEnv, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("OUTSIDE-SECRET")
    inner = _hostile_repository(cli.project, outside)
    script = cli.script("s", [text_reply("ok")])
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "--mode", "json", "hello"],
        cwd=inner,
        env=cli.env(TETHER_SCRIPTED=str(script), PROBE_SECRET_33="sk-probe-environ"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "sk-probe-environ" not in done.stdout + done.stderr
    assert "CLAUDE.md: resolves to /proc/" in done.stderr and "left out of the system prompt" in done.stderr
    session_id = json_lines(done.stdout)[0]["id"]
    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        prompt = sessions.open(session_id, readonly=True).context.system_prompt or ""
    assert "inner rule kept" in prompt and "OUTSIDE-SECRET" not in prompt
    database = default_db_path({"TETHER_HOME": str(cli.home)})
    for path in database.parent.iterdir():
        if path.is_file():
            assert b"sk-probe-environ" not in path.read_bytes(), path


@pytest.mark.subprocess
def test_cli_a_repository_cannot_link_its_context_files_to_the_users_keys(cli: CliEnv) -> None:
    # the user's config folder is a place a project's context file may link to (for their skills
    # and instructions), but it also holds the serve token and the MCP servers' tokens: those,
    # and the home folder's credentials (the project may be the home folder), never go in
    config = cli.home / "config"
    config.mkdir()
    (config / "settings.json").write_text('{"serve": {"token": "SERVE-TOKEN-SECRET"}}')
    (config / "mcp.json").write_text('{"mcpServers": {}, "note": "MCP-TOKEN-SECRET"}')
    (cli.project / ".ssh").mkdir()
    (cli.project / ".ssh" / "id_ed25519").write_text("SSH-KEY-SECRET")
    repo = cli.project / "clone"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "AGENTS.md").symlink_to(os.path.relpath(config / "settings.json", repo))
    inner = repo / "pkg"
    inner.mkdir()
    (inner / "CLAUDE.md").symlink_to(config / "mcp.json")
    (cli.project / "AGENTS.md").symlink_to(".ssh/id_ed25519")  # the folder above the clone
    script = cli.script("s", [text_reply("ok")])
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "--mode", "json", "hello"],
        cwd=inner,
        env=cli.env(TETHER_SCRIPTED=str(script), HOME=str(cli.project)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    session_id = json_lines(done.stdout)[0]["id"]
    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        prompt = sessions.open(session_id, readonly=True).context.system_prompt or ""
    assert [s for s in ("SERVE-TOKEN", "MCP-TOKEN", "SSH-KEY") if s + "-SECRET" in prompt] == []
    assert done.stderr.count("holds credentials or tether's keys; not read") == 3, done.stderr
