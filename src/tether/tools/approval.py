"""Asking before a risky tool call: the one approval policy every front end installs.

Which calls are risky lives in ``Workspace.needs_approval`` (``bash``, and writes outside the
workspace); ``ApprovalGate`` turns that into the agent's ``before_tool_call`` hook under a policy
(``ask``/``yes``/``deny``) and with whatever the host uses to ask (a terminal dialog, an RPC or
ACP request, or nobody). A refusal blocks the call and the model is told why, so it can adapt
instead of retrying blindly.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from tether.agent.types import BeforeToolCallContext, BeforeToolCallResult
from tether.ai.abort import AbortSignal
from tether.tools.workspace import Workspace
from tether.wire import ToolCall

Approval = Literal["ask", "yes", "deny"]
"""``ask``: ask before ``bash`` and writes outside the workspace (refused when nobody can answer);
``yes``: allow everything; ``deny``: refuse every call that needs approval."""

APPROVAL_POLICIES: tuple[Approval, ...] = ("ask", "yes", "deny")

AskUser = Callable[[ToolCall, str], Awaitable[bool]]
"""``ask(tool_call, question) -> approved``; ``question`` is a one-line summary for the user."""


@dataclass(slots=True)
class ApprovalGate:
    """A ``before_tool_call`` hook (call it as one) that applies ``policy`` to risky calls.

    The fields are meant to change while a session runs: ``/yes``-style answers set ``policy``,
    and ACP's "ask before edits" mode puts ``edit`` and ``write`` in ``always_ask``.
    """

    workspace: Workspace
    """Decides which calls are risky."""
    policy: Approval = "ask"
    ask: AskUser | None = None
    """How to ask the user; ``None``: nobody can answer, so ``ask`` refuses."""
    always_ask: frozenset[str] = frozenset()
    """Tool names that need approval on every call, on top of the workspace policy."""

    async def __call__(
        self, context: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        call = context.tool_call
        if self.policy == "yes":
            return None
        if call["name"] not in self.always_ask and not self.workspace.needs_approval(call):
            return None
        question = describe_call(call)
        if self.policy == "deny":
            return BeforeToolCallResult(True, f"Not allowed by the approval policy 'deny': {question}")
        if self.ask is None:
            return BeforeToolCallResult(
                True,
                f"This call needs the user's approval and nobody can give it here ({question}). "
                "The user can rerun with --yes to allow it.",
            )
        if signal is not None and signal.aborted:
            return BeforeToolCallResult(True, "The run was aborted before the user approved this call.")
        if await self.ask(call, question):
            return None
        return BeforeToolCallResult(
            True, f"The user declined this {call['name']} call. Do not retry it as is."
        )


def describe_call(tool_call: ToolCall) -> str:
    """One line telling the user what the call would do."""
    args = tool_call["arguments"]
    name = tool_call["name"]
    if name == "bash" and isinstance(args.get("command"), str):
        return f"Run command: {args['command']}"
    if name in ("write", "edit") and isinstance(args.get("path"), str):
        return f"{name.capitalize()} file outside the workspace: {args['path']}"
    return f"{name} {json.dumps(args, ensure_ascii=False)}"
