"""Asking the user before a risky tool call: the ``before_tool_call`` hook the CLI installs.

The policy (which calls are risky) lives in ``Workspace.needs_approval``; this module only wires
it to a question. ``ask`` is whatever the host uses to ask (a prompt-toolkit dialog, a JSON-RPC
request); a refusal blocks the call and the model is told the user declined, so it can adapt
instead of retrying blindly.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from tether.agent.types import BeforeToolCallContext, BeforeToolCallResult
from tether.ai.abort import AbortSignal
from tether.tools.workspace import Workspace
from tether.wire import ToolCall

AskUser = Callable[[ToolCall, str], Awaitable[bool]]
"""``ask(tool_call, question) -> approved``; ``question`` is a one-line summary for the user."""

BeforeToolCall = Callable[[BeforeToolCallContext, AbortSignal | None], Awaitable[BeforeToolCallResult | None]]


def approval_hook(policy: Workspace, ask: AskUser) -> BeforeToolCall:
    """A ``before_tool_call`` that asks ``ask`` about every call ``policy`` says needs approval."""

    async def before_tool_call(
        context: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        tool_call = context.tool_call
        if not policy.needs_approval(tool_call):
            return None
        if signal is not None and signal.aborted:
            return BeforeToolCallResult(True, "The run was aborted before the user approved this call.")
        if await ask(tool_call, describe_call(tool_call)):
            return None
        return BeforeToolCallResult(
            True, f"The user declined this {tool_call['name']} call. Do not retry it as is."
        )

    return before_tool_call


def describe_call(tool_call: ToolCall) -> str:
    """One line telling the user what the call would do."""
    args = tool_call["arguments"]
    name = tool_call["name"]
    if name == "bash" and isinstance(args.get("command"), str):
        return f"Run command: {args['command']}"
    if name in ("write", "edit") and isinstance(args.get("path"), str):
        return f"{name.capitalize()} file outside the workspace: {args['path']}"
    return f"{name} {json.dumps(args, ensure_ascii=False)}"
