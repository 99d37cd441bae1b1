"""The built-in tools driven by the real agent loop (scripted model), approval hook included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from narrowing import block_text
from tether.agent import AgentContext, AgentLoopConfig, BeforeToolCallContext, run_agent_loop
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.tools import ApprovalGate, Workspace, create_coding_tools
from tether.wire import AgentMessage, ToolCall, ToolResultMessage


async def run(
    model: ScriptedModel, workspace: Workspace, asked: list[str], approve: bool
) -> list[AgentMessage]:
    async def ask(call: ToolCall, question: str) -> bool:
        asked.append(question)
        return approve

    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    config = AgentLoopConfig(model=model.model, before_tool_call=ApprovalGate(workspace, ask=ask))
    context = AgentContext(tools=create_coding_tools(workspace))
    return await run_agent_loop(
        [{"role": "user", "content": "go", "timestamp": 0}], context, config, emit, None, model
    )


def results(messages: list[AgentMessage]) -> list[ToolResultMessage]:
    return [m for m in messages if m["role"] == "toolResult"]


async def test_write_edit_read_then_a_declined_command(workspace: Workspace, root: Path) -> None:
    model = ScriptedModel(
        [
            reply(tool_call("write", {"path": "notes/a.txt", "content": "hello\nworld\n"})),
            reply(tool_call("edit", {"path": "notes/a.txt", "old_string": "world", "new_string": "there"})),
            reply(tool_call("read", {"path": "notes/a.txt"}), tool_call("read", {"path": "missing.txt"})),
            reply(tool_call("bash", {"command": "rm -rf notes"})),
            reply("done"),
        ]
    )
    asked: list[str] = []
    messages = await run(model, workspace, asked, approve=False)
    write, edit, read, missing, bash = results(messages)
    assert not write["isError"] and (root / "notes/a.txt").read_text() == "hello\nthere\n"
    assert not edit["isError"] and "details" in edit and edit["details"]["diff"].endswith("-world\n+there\n")
    assert read["content"] == [{"type": "text", "text": "1\thello\n2\tthere"}]
    assert missing["isError"] and missing["content"] == [
        {"type": "text", "text": "File not found: missing.txt"}
    ]
    assert (
        bash["isError"]
        and block_text(bash["content"][0]) == "The user declined this bash call. Do not retry it as is."
    )
    assert asked == ["Run command: rm -rf notes"]  # only bash needed approval
    assert (root / "notes").is_dir()
    tools_seen = [tool["name"] for tool in model.requests[0].context.get("tools", [])]
    assert tools_seen == ["read", "bash", "edit", "write", "grep", "find", "ls"]


async def test_approved_command_runs_and_escape_is_an_error_result(workspace: Workspace, root: Path) -> None:
    model = ScriptedModel(
        [
            reply(tool_call("bash", {"command": "echo ran > out.txt; cat out.txt"})),
            reply(tool_call("read", {"path": "../../etc/passwd"})),
            reply("done"),
        ]
    )
    asked: list[str] = []
    bash, escape = results(await run(model, workspace, asked, approve=True))
    assert not bash["isError"] and bash["content"] == [{"type": "text", "text": "ran\n"}]
    assert escape["isError"] and "outside the workspace" in block_text(escape["content"][0])


async def test_hook_signature_matches_the_loop(workspace: Workspace) -> None:
    async def never(call: ToolCall, question: str) -> bool:
        raise AssertionError("read needs no approval")

    hook = ApprovalGate(workspace, ask=never)
    call: ToolCall = {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "x"}}
    message: Any = {"role": "assistant", "content": [call]}
    assert await hook(BeforeToolCallContext(message, call, {"path": "x"}, AgentContext()), None) is None
