"""``--yes`` approves calls; only ``--allow-outside`` (or ``"allowOutside": true``) widens the
workspace, and a project file may ask for that only in a trusted folder (issue 20, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


def tool_ends(cli: CliEnv, *args: str, calls: list[tuple[str, dict[str, str]]]) -> list[dict[str, object]]:
    replies = [tool_reply(name, arguments, f"call_{i}") for i, (name, arguments) in enumerate(calls)]
    done = cli.run(
        "--mode", "json", "go", "--no-session", *args, script=cli.script("s", [*replies, text_reply("ok")])
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [e for e in json_lines(done.stdout) if e["type"] == "tool_execution_end"]


def text_of(end: dict[str, object]) -> str:
    return json.dumps(end["result"])


@pytest.fixture
def outside(cli: CliEnv) -> Path:
    path = cli.project.parent / "outside.txt"
    path.write_text("secret-outside-42")
    return path


def test_yes_alone_never_reaches_outside_the_workspace(cli: CliEnv, outside: Path) -> None:
    target = str(outside.parent / "written.txt")
    calls = [("read", {"path": str(outside)}), ("write", {"path": target, "content": "x"})]
    ends = tool_ends(cli, "--yes", calls=calls)
    assert all(e["isError"] for e in ends)
    assert all("outside the workspace" in text_of(e) and "--allow-outside" in text_of(e) for e in ends)
    assert "secret-outside-42" not in json.dumps(ends) and not Path(target).exists()


def test_allow_outside_reads_and_asks_before_writing_there(cli: CliEnv, outside: Path) -> None:
    target = outside.parent / "written.txt"
    calls = [("read", {"path": str(outside)}), ("write", {"path": str(target), "content": "x"})]
    read, write = tool_ends(cli, "--allow-outside", calls=calls)
    assert read["isError"] is False and "secret-outside-42" in text_of(read)
    assert write["isError"] is True and "approval" in text_of(write) and not target.exists()
    read, write = tool_ends(cli, "--allow-outside", "--yes", calls=calls)
    assert (read["isError"], write["isError"]) == (False, False) and target.read_text() == "x"


def test_the_setting_widens_from_the_user_file_and_from_a_trusted_project_only(
    cli: CliEnv, outside: Path
) -> None:
    calls = [("read", {"path": str(outside)})]
    project_file = cli.project / ".tether" / "settings.json"
    project_file.parent.mkdir()
    project_file.write_text(json.dumps({"allowOutside": True}))
    replies = [tool_reply("read", {"path": str(outside)}), text_reply("ok")]
    done = cli.run("--mode", "json", "go", "--no-session", script=cli.script("p", replies))
    assert f'{project_file}: ignored "allowOutside"' in done.stderr
    assert [e["isError"] for e in json_lines(done.stdout) if e["type"] == "tool_execution_end"] == [True]
    config = cli.home / "config"
    config.mkdir()
    (config / "trusted-folders.json").write_text(json.dumps([str(cli.project)]))
    assert [e["isError"] for e in tool_ends(cli, calls=calls)] == [False]
    project_file.unlink()
    (config / "settings.json").write_text(json.dumps({"allowOutside": True}))
    assert [e["isError"] for e in tool_ends(cli, calls=calls)] == [False]
    (config / "settings.json").write_text(json.dumps({"allowOutside": "yes"}))
    done = cli.run("-p", "go", "--no-session", script=cli.script("q", [text_reply("ok")]))
    assert done.returncode == 1 and '"allowOutside": expected true or false' in done.stderr
