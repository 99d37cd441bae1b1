"""Issue 14 (classes 5 and 9) on extensions: extension code that calls ``exit()``, raises outside
``Exception`` or registers something that is not what the API takes is one line naming the
extension, and tether goes on; it never ends the process (which, in RPC or ACP mode, would end
every session it serves) nor prints a traceback.

Each extension is a small file written by the test and loaded with ``-e`` into ``tether -p`` or
``--mode json`` in a child process, with the scripted model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


def _extension(cli: CliEnv, name: str, source: str) -> str:
    path = cli.home / f"{name}.py"
    path.write_text(source)
    return str(path)


LOAD_FAILURES = {
    "register_tool(5)": (
        "def setup(api):\n    api.register_tool(5)\n",
        "TypeError: register_tool takes an AgentTool",
    ),
    "register_command('')": (
        "def setup(api):\n    api.register_command('', lambda args, ctx: 'x')\n",
        "ValueError: register_command needs a name without spaces",
    ),
    "register_provider with bad models": (
        "def setup(api):\n    api.register_provider('zz', [5], None)\n",
        "TypeError: register_provider('zz'): models must be ModelInfo dicts",
    ),
    "a bare BaseException": ("def setup(api):\n    raise BaseException('boom')\n", "BaseException: boom"),
}


@pytest.mark.parametrize("case", list(LOAD_FAILURES))
def test_a_bad_registration_fails_the_load_in_one_line(cli: CliEnv, case: str) -> None:
    source, reason = LOAD_FAILURES[case]
    path = _extension(cli, "bad", source)
    done = cli.run("-e", path, "-p", "--no-session", "hi", script=cli.script("s", [text_reply("fine")]))
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert done.stderr.startswith(f"note: extension bad ({path}) failed to load: {reason}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_exit_in_a_hook_a_tool_or_a_command_does_not_end_tether(cli: CliEnv) -> None:
    path = _extension(
        cli,
        "exits",
        "import sys\n"
        "from tether.agent import tool\n"
        "def setup(api):\n"
        "    @api.on('tool_call')\n"
        "    def guard(context):\n"
        "        if context.tool_call['name'] == 'bash':\n"
        "            sys.exit(5)\n"
        "    @api.register_tool\n"
        "    @tool\n"
        "    def boom(text: str) -> str:\n"
        "        '''Fails.'''\n"
        "        sys.exit(6)\n"
        "    @api.command('bye')\n"
        "    async def bye(args, ctx):\n"
        "        sys.exit(7)\n",
    )
    (cli.project / "kept").write_text("x")
    replies = [
        tool_reply("bash", {"command": "rm kept"}, "c1"),
        tool_reply("boom", {"text": "a"}, "c2"),
        text_reply("still here"),
    ]
    done = cli.run(
        "-e", path, "--yes", "--mode", "json", "--no-session", "go", script=cli.script("s", replies)
    )
    assert done.returncode == 0, done.stderr
    ends = {e["toolCallId"]: e for e in json_lines(done.stdout) if e["type"] == "tool_execution_end"}
    assert ends["c1"]["isError"] and "Blocked: the extension exits failed" in str(ends["c1"]["result"])
    assert ends["c2"]["isError"] and "called exit(6)" in str(ends["c2"]["result"])
    assert (cli.project / "kept").exists()  # the guard that crashed blocked the command
    # JSON mode reports it as pi 1.6 does: one line on stderr, nothing in the event stream
    assert "extension_error" not in done.stdout
    assert f"Extension error ({path}): ExtensionExit: called exit(5)" in done.stderr
    assert "still here" in done.stdout and "agent_end" in done.stdout

    command = cli.run("-e", path, "-p", "--no-session", "/bye", script=cli.script("unused", []))
    assert command.returncode == 0, command.stderr
    assert "/bye failed: ExtensionExit: called exit(7)" in command.stdout + command.stderr
    assert "Traceback" not in command.stderr


def test_a_prompt_hook_raising_base_exception_is_skipped(cli: CliEnv, tmp_path: Path) -> None:
    path = _extension(
        cli,
        "odd",
        "def setup(api):\n    @api.on('prompt')\n    def hook(editor):\n        raise BaseException('odd')\n",
    )
    done = cli.run("-e", path, "-p", "--no-session", "hi", script=cli.script("s", [text_reply("answered")]))
    assert (done.returncode, done.stdout) == (0, "answered\n"), done.stderr
    assert "extension odd failed in prompt: ExtensionExit: raised BaseException: odd" in done.stderr
    assert "Traceback" not in done.stderr
