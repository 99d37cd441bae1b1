"""What a session's confined ``bash`` can learn of the user's secrets, through the real wiring
(``start_session`` builds the sandbox from the settings and the tether home): the keys saved with
``/login``, the serve token and MCP credentials in the config files, provider keys in the
environment, and tether's own environment through ``/proc``. Each is tried confined and with
``--sandbox off``, so a test cannot pass because the attempt was broken to begin with."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.agent.validation import validate_tool_arguments
from tether.ai.auth_file import save_key
from tether.ai.paths import config_dir
from tether.errors import ToolError
from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, create_agent_session, start_session
from tether.session.options import AgentOptions, SessionOptions
from tether.session.settings import load_settings
from tether.tools import CODING_TOOLS
from tether.tools.sandbox import unavailable
from tether.wire import ToolCall

pytestmark = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)

ENV_SECRET = "sk-env-secret-4a7c0f"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tether home with every kind of secret in it, outside ``/tmp`` (which the sandbox replaces
    by a private one, so a file there would be out of sight for the wrong reason)."""
    path = Path(tempfile.mkdtemp(prefix="tether-secrets-test-", dir=Path.home()))
    monkeypatch.setenv("TETHER_HOME", str(path))
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    config_dir().mkdir(parents=True)
    (config_dir() / "settings.json").write_text(json.dumps({"serve": {"token": "SERVE-TOKEN-SECRET"}}))
    server = {"command": "srv", "env": {"API_TOKEN": "MCP-TOKEN-SECRET"}}
    (config_dir() / "mcp.json").write_text(json.dumps({"mcpServers": {"s": server}}))
    (config_dir() / "models.json").write_text(
        json.dumps({"providers": {"box": {"apiKey": "MODELS-KEY-SECRET"}}})
    )
    save_key("anthropic", "AUTH-JSON-SECRET")
    (path / "project").mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def session(home: Path, sandbox: str, project: Path | None = None) -> AgentSession:
    script = home / "script.json"
    script.write_text("[]")
    options = SessionOptions(
        model=f"scripted:{script}", mcp=False, extensions=False, sandbox=sandbox, approval="yes"
    )
    project = project or home / "project"
    return start_session(
        options,
        cwd=project,
        settings=load_settings(config_dir(), project),
        ask=None,
        session=SessionChoice(persist=False),
    )


async def bash(core: AgentSession, command: str) -> tuple[bool, str]:
    tool = next(t for t in core.agent.tools if t.name == "bash")
    try:
        result = await tool.execute(
            "c1", validate_tool_arguments(tool, "bash", {"command": command}), None, None
        )
    except ToolError as failure:
        return False, str(failure)
    return True, "\n".join(block["text"] for block in result.content if block["type"] == "text")


@pytest.mark.parametrize(
    ("where", "secret"),
    [
        ("data/auth.json", "AUTH-JSON-SECRET"),
        ("config/settings.json", "SERVE-TOKEN-SECRET"),
        ("config/mcp.json", "MCP-TOKEN-SECRET"),
        ("config/models.json", "MODELS-KEY-SECRET"),
    ],
)
async def test_the_tether_homes_secrets_are_hidden(home: Path, where: str, secret: str) -> None:
    command = f"cat {home / where}"
    _, said = await bash(session(home, "workspace-write"), command)
    assert secret not in said
    ok, said = await bash(session(home, "off"), command)
    assert ok and secret in said


async def test_the_config_folder_cannot_be_rewritten_from_a_workspace_above_it(home: Path) -> None:
    # tether run in a folder holding its home (the home folder, say): the settings that say how
    # commands are confined are not a confined command's to change
    settings = config_dir() / "settings.json"
    command = f'echo \'{{"sandbox": "off"}}\' > {settings}'
    ok, said = await bash(session(home, "workspace-write", project=home), command)
    assert not ok and "settings.json: Permission denied" in said
    assert "SERVE-TOKEN-SECRET" in settings.read_text()
    ok, _ = await bash(session(home, "off", project=home), command)
    assert ok and "off" in settings.read_text()


async def test_secrets_in_tethers_environment_do_not_reach_a_confined_command(home: Path) -> None:
    confined = session(home, "workspace-write")
    ok, said = await bash(confined, "env; cat /proc/[0-9]*/environ | tr '\\0' '\\n'")
    assert ok and "PATH=" in said and ENV_SECRET not in said
    # a process holding the key in its environment from its start, as tether does when started
    # with it: out of sight inside, its environ readable with the sandbox off
    holder = subprocess.Popen(["sleep", "60"], env={**os.environ, "OPENAI_API_KEY": ENV_SECRET})
    try:
        command = f"tr '\\0' '\\n' < /proc/{holder.pid}/environ"
        _, said = await bash(confined, command)
        assert ENV_SECRET not in said
        ok, said = await bash(session(home, "off"), command)
        assert ok and ENV_SECRET in said
    finally:
        holder.kill()
        holder.wait()


async def test_a_library_program_approves_running_a_command_outside_the_sandbox(home: Path) -> None:
    """Inside the sandbox a command runs without asking and cannot write beside the workspace;
    run again with ``escalate``, it goes to the program's ``ask`` callback and, approved, runs
    outside; declined, it does not run."""
    target = home / "beside.txt"
    write = f"echo escaped > {target}"

    def call(command: str, escalate: bool) -> str:
        arguments = {"command": command, "escalate": escalate, "justification": "the test asks"}
        return json.dumps({"content": [{"type": "toolCall", "name": "bash", "arguments": arguments}]})

    done = '{"content": [{"type": "text", "chunks": ["ok"]}]}'
    for approve in (False, True):
        asked: list[str] = []

        async def ask(
            tool_call: ToolCall, question: str, approve: bool = approve, asked: list[str] = asked
        ) -> bool:
            asked.append(question)
            return approve

        script = home / "script.json"
        script.write_text("[" + ",".join([call(write, False), call(write, True), done]) + "]")
        core = create_agent_session(
            AgentOptions(model=f"scripted:{script}", tools=CODING_TOOLS),
            cwd=home / "project",
            session=SessionChoice(persist=False),
            ask=ask,
        )
        await core.prompt("write beside the workspace")
        await core.close()
        # the confined attempt asked nobody and was refused; the escalated one asked once
        assert len(asked) == 1 and "OUTSIDE the sandbox" in asked[0] and "the test asks" in asked[0]
        assert target.exists() is approve
