"""What an approval question shows of a call holding a lone surrogate (a model's JSON
``"\\ud800"`` in a bash command): the code point's escape. It has no UTF-8 form, so the terminal
showed ``?`` in its place (``echo ?``, a glob) and print mode's refusal carried it raw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.agent import AgentContext, BeforeToolCallContext
from tether.tools import ApprovalGate, Workspace, create_coding_tools
from tether.wire import ToolCall

COMMAND = "echo \ud800 \udcff é"
SHOWN = "echo \\ud800 \\udcff é"


def context(workspace: Workspace, arguments: dict[str, Any]) -> BeforeToolCallContext:
    call: ToolCall = {"type": "toolCall", "id": "1", "name": "bash", "arguments": arguments}
    message: Any = {"role": "assistant", "content": [call]}
    return BeforeToolCallContext(message, call, arguments, AgentContext(tools=create_coding_tools(workspace)))


async def test_the_question_shows_the_escape(tmp_path: Path) -> None:
    asked: list[str] = []

    async def ask(call: ToolCall, question: str) -> bool:
        asked.append(question)
        return False

    workspace = Workspace(tmp_path)
    await ApprovalGate(workspace, ask=ask)(context(workspace, {"command": COMMAND}), None)
    assert asked == [f"Run command: {SHOWN}"]
    asked[0].encode()  # what a terminal or a protocol can write


@pytest.mark.parametrize("policy", ["ask", "deny"])
async def test_a_refusal_shows_the_escape(tmp_path: Path, policy: Any) -> None:
    """Print mode (nobody to ask) and the ``deny`` policy refuse with the question in the reason."""
    workspace = Workspace(tmp_path)
    refused = await ApprovalGate(workspace, policy)(context(workspace, {"command": COMMAND}), None)
    assert refused is not None and refused.block and refused.reason is not None
    assert f"Run command: {SHOWN}" in refused.reason
    refused.reason.encode()
