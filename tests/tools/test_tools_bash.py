from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from tools_support import call, details_of, text_of

from tether.agent.tool import AgentToolResult
from tether.ai.abort import AbortController
from tether.errors import ToolError
from tether.tools import PathOutsideWorkspace, Workspace, create_bash_tool


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a killed child of an exited shell may linger as a zombie until reaped by init
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def wait_until_dead(pid: int) -> bool:
    for _ in range(100):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_output_and_details(workspace: Workspace) -> None:
    result = await call(create_bash_tool(workspace), command="echo out; echo err >&2")
    assert text_of(result) == "out\nerr\n"
    assert result.details == {"exitCode": 0, "truncated": False, "totalBytes": 8}  # short: no file kept


async def test_runs_in_the_workspace_root_and_in_cwd(workspace: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    tool = create_bash_tool(workspace)
    assert text_of(await call(tool, command="pwd")).strip() == str(root.resolve())
    assert text_of(await call(tool, command="pwd", cwd="sub")).strip() == str((root / "sub").resolve())
    with pytest.raises(PathOutsideWorkspace):
        await call(tool, command="pwd", cwd="..")


async def test_nonzero_exit_is_an_error_with_the_output(workspace: Workspace) -> None:
    with pytest.raises(ToolError) as failure:
        await call(create_bash_tool(workspace), command="echo oops; exit 3")
    assert str(failure.value) == "oops\n\n\nCommand exited with code 3."


async def test_stdin_is_closed(workspace: Workspace) -> None:
    result = await call(create_bash_tool(workspace), command="cat; echo done")
    assert text_of(result) == "done\n"


async def test_timeout_kills_the_whole_process_group(workspace: Workspace, root: Path) -> None:
    command = "sleep 60 & echo $! > child.pid; echo started; wait"
    with pytest.raises(ToolError) as failure:
        await call(create_bash_tool(workspace), command=command, timeout=0.5)
    message = str(failure.value)
    assert message.startswith("started\n")
    assert "Command timed out after 0.5 seconds; its process group was killed." in message
    assert await wait_until_dead(int((root / "child.pid").read_text()))


async def test_abort_mid_command_kills_the_process_group(workspace: Workspace, root: Path) -> None:
    controller = AbortController()
    updates: list[str] = []

    def on_update(partial: AgentToolResult[Any]) -> None:
        updates.append(text_of(partial))
        controller.abort()  # abort as soon as the first output arrives

    command = "sh -c 'sleep 60' & echo $! > child.pid; echo working; wait"
    with pytest.raises(ToolError) as failure:
        await call(
            create_bash_tool(workspace), signal=controller.signal, on_update=on_update, command=command
        )
    assert "Command aborted; its process group was killed." in str(failure.value)
    assert updates and updates[0].startswith("working")
    assert await wait_until_dead(int((root / "child.pid").read_text()))


async def test_already_aborted_signal_runs_nothing(workspace: Workspace, root: Path) -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(ToolError, match="aborted"):
        await call(create_bash_tool(workspace), signal=controller.signal, command="touch ran")
    assert not (root / "ran").exists()


async def test_background_job_holding_the_pipe_does_not_block(workspace: Workspace) -> None:
    # If we waited for EOF on the pipe, the background sleep would hold it for 30 s and time out.
    result = await call(create_bash_tool(workspace), command="sleep 30 & echo quick", timeout=5)
    assert text_of(result) == "quick\n"


async def test_long_output_keeps_head_and_tail_with_a_note(workspace: Workspace) -> None:
    result = await call(create_bash_tool(workspace), command="seq 1 200000")
    text = text_of(result)
    lines = text.split("\n")
    assert lines[0] == "1"
    assert "\n200000\n" in text
    assert "[… output truncated:" in text
    assert details_of(result)["truncated"] is True
    assert details_of(result)["totalBytes"] == len("".join(f"{i}\n" for i in range(1, 200001)))
    assert len(text.encode()) < 60 * 1024
    full = Path(details_of(result)["fullOutputPath"])
    assert full.read_text() == "".join(f"{i}\n" for i in range(1, 200001))  # nothing lost on disk
    assert text.endswith(f"[Full output ({details_of(result)['totalBytes']} bytes) saved to {full}]")


async def test_many_short_lines_are_cut_by_line_count(workspace: Workspace) -> None:
    result = await call(create_bash_tool(workspace), command="seq 1 5000")
    text = text_of(result)
    assert "the first 1000 and last 1000 lines are shown" in text
    assert text.startswith("1\n2\n")
    assert "\n4001\n" in text and "\n3999\n" not in text
    full = Path(details_of(result)["fullOutputPath"])
    assert full.read_text() == "".join(f"{i}\n" for i in range(1, 5001))


async def test_ansi_colours_are_stripped(workspace: Workspace) -> None:
    result = await call(create_bash_tool(workspace), command=r"printf '\033[31mred\033[0m\n'")
    assert text_of(result) == "red\n"


async def test_empty_command_is_refused(workspace: Workspace) -> None:
    with pytest.raises(ToolError, match="command is empty"):
        await call(create_bash_tool(workspace), command="   ")
