"""Asking before a risky tool call: the one approval policy every front end installs.

Which calls are risky: ``Workspace.needs_approval`` (``bash``, writes outside the workspace or to
the files the sandbox keeps read-only),
and tools whose ``metadata`` says ``needs_approval`` (MCP tools, unless their server marks them
read-only; ``tether.mcp.tools``) and that the user did not allow by name (``allow_tools``, the
``allowTools`` setting). ``ApprovalGate`` turns that into the agent's ``before_tool_call`` hook
under a policy (``ask``/``yes``/``deny``) and with whatever the host uses to ask (a terminal
dialog, an ACP request, or nobody). A refusal blocks the call and the model is told why, so it
can adapt instead of retrying blindly.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Literal, cast

from tether.agent.tool import AgentTool
from tether.ai.abort import AbortSignal
from tether.tools.workspace import ALWAYS_ASK_TOOLS, Workspace
from tether.wire import ToolCall

if TYPE_CHECKING:
    from tether.agent.hooks import BeforeToolCallContext, BeforeToolCallResult

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
    allow_tools: tuple[str, ...] = ()
    """Patterns (``allowed_by``) of the tools marked ``needs_approval`` that the user allows
    without asking."""
    asks_only_escalations: bool = False
    """``ask`` is for commands to run outside the sandbox only (RPC mode: ``tether.rpc.escalation``);
    other calls needing approval are refused as when nobody can answer."""

    async def __call__(
        self, context: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        call = context.tool_call
        if self.policy == "yes":
            return None
        tool = _find(context.context.tools, call["name"])
        if not self.needs_approval(call, tool):
            return None
        from tether.agent.hooks import BeforeToolCallResult  # loaded by now: the loop ran a tool call

        protected = self.workspace.protected_write(call)
        if protected is not None:
            question = (
                f"{call['name'].capitalize()} {call['arguments']['path']}: it is in {protected} "
                "(read-only to sandboxed commands)"
            )
        else:
            question = describe_call(call, tool) + self._unconfined_because(call)
        question = with_escapes(question)
        if self.policy == "deny":
            return BeforeToolCallResult(True, f"Not allowed by the approval policy 'deny': {question}")
        if self.ask is None or (self.asks_only_escalations and not (is_escalation(call) or protected)):
            return BeforeToolCallResult(
                True,
                f"This call needs the user's approval and nobody can give it here ({question}). "
                + (
                    "The user can rerun with --yes, or allow the tool in the allowTools setting."
                    if _marked(tool)
                    else "The user can rerun with --yes to allow it."
                ),
            )
        approved = await _unless_aborted(self.ask(call, question), signal)
        if approved is None:
            return BeforeToolCallResult(True, "The run was aborted before the user approved this call.")
        if approved:
            return None
        return BeforeToolCallResult(
            True, f"The user declined this {call['name']} call. Do not retry it as is."
        )

    def _unconfined_because(self, call: ToolCall) -> str:
        """Why a command that should be confined is asked about: the sandbox cannot run here.
        Front ends warn at start-up only when ``bwrap`` is missing (a cheap look); that it cannot
        make namespaces is known once the first command probed it, and is said here."""
        from tether.tools.sandbox import unavailable

        sandbox = self.workspace.sandbox
        if call["name"] not in ALWAYS_ASK_TOOLS or sandbox is None or not sandbox.active:
            return ""
        if is_escalation(call):
            return ""
        reason = unavailable()
        return f" (sandbox unavailable: {reason})" if reason is not None else ""

    def needs_approval(self, call: ToolCall, tool: AgentTool | None) -> bool:
        """Whether ``call`` (of ``tool``, when the agent has it) is risky under this gate."""
        if call["name"] in self.always_ask or self.workspace.needs_approval(call):
            return True
        return _marked(tool) and not allowed_by(self.allow_tools, call["name"])


def is_escalation(call: ToolCall) -> bool:
    """Whether ``call`` asks to run a command outside the sandbox (``bash`` with ``escalate``)."""
    return call["name"] in ALWAYS_ASK_TOOLS and call["arguments"].get("escalate") is True


TOOL_PATTERN = re.compile(r"^mcp__[A-Za-z0-9_-]+(__\S+)?$")
"""What ``allowTools`` accepts: ``mcp__<server>`` (every tool of the server), or a tool name with
``*`` wildcards, such as ``mcp__<server>__*`` or ``mcp__<server>__<tool>``."""


def allowed_by(patterns: Sequence[str], name: str) -> bool:
    """Whether a tool named ``name`` matches one of ``patterns`` (``TOOL_PATTERN``)."""
    return any(fnmatchcase(name, p if "__" in p.removeprefix("mcp__") else f"{p}__*") for p in patterns)


def _find(tools: Sequence[AgentTool], name: str) -> AgentTool | None:
    return next((t for t in tools if t.name == name), None)


def _marked(tool: AgentTool | None) -> bool:
    return tool is not None and tool.metadata.get("needs_approval") is True


def with_escapes(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``), so a question shows
    what the model sent. Such a code point (a JSON ``"\\ud800"`` in the call's arguments) has no
    UTF-8 form: the terminal showed ``?`` in its place (prompt-toolkit encodes with
    ``replace``), so ``echo \\ud800`` was asked as ``echo ?``, a glob; a protocol sends U+FFFD,
    which hides which code point it was."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode()


def describe_call(tool_call: ToolCall, tool: AgentTool | None = None) -> str:
    """One line telling the user what the call would do (``tool``: the tool it calls, when known)."""
    args = tool_call["arguments"]
    name = tool_call["name"]
    mcp: object = tool.metadata.get("mcp") if tool is not None else None
    if isinstance(mcp, dict):
        info = cast(dict[str, object], mcp)
        arguments = json.dumps(args, ensure_ascii=False)
        return f"Call {info.get('tool')} of MCP server {info.get('server')}: {arguments}"
    if name == "bash" and isinstance(args.get("command"), str):
        if args.get("escalate") is True:
            why = args.get("justification")
            reason = f" (reason: {why})" if isinstance(why, str) and why.strip() else ""
            return f"Run command OUTSIDE the sandbox: {args['command']}{reason}"
        return f"Run command: {args['command']}"
    if name in ("write", "edit") and isinstance(args.get("path"), str):
        return f"{name.capitalize()} file outside the workspace: {args['path']}"
    return f"{name} {json.dumps(args, ensure_ascii=False)}"


async def _unless_aborted(asking: Awaitable[bool], signal: AbortSignal | None) -> bool | None:
    """The user's answer, or ``None`` when the run is aborted first. The question is then
    cancelled (a dialog can close on its ``CancelledError``) rather than waited for: a user who
    never answers would otherwise hold ``abort()``, and ``close()``, for ever."""
    if signal is None:
        return await asking
    if signal.aborted:
        if inspect.iscoroutine(asking):
            asking.close()  # never started: no "coroutine was never awaited" warning
        return None
    question = asyncio.ensure_future(asking)
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((question, aborted), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        question.cancel()
        raise
    finally:
        aborted.cancel()
    if question.done():
        return question.result()
    question.cancel()
    question.add_done_callback(_retrieve)
    return None


def _retrieve(future: asyncio.Future[bool]) -> None:
    """Read a withdrawn question's outcome, so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
