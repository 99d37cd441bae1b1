"""Asking an RPC client before a command runs outside the sandbox.

pi's RPC has no permission request (pi never asks before a tool call), but it has dialogs: an
``extension_ui_request`` with method ``confirm``, answered by the client's
``extension_ui_response`` (``tether.rpc.extension_ui``). An escalated ``bash`` call (``escalate:
true``: the sandbox refused something and the model wants the command run unconfined) is asked
as such a dialog, so a pi client that shows extension dialogs shows this one too; so is a
``write``/``edit`` of a file the sandbox keeps read-only (``.tether/``, ``.mcp.json``, ``.git/``:
``tether.tools.sandbox_protect``), the file tools' way past the same line. The dialog
carries its time limit; no answer within it, an abort, or a client that goes away is a refusal,
so a client that ignores dialogs costs the model one refused call, never a stalled run. Other
calls needing approval (``--sandbox off``'s ``bash``, writes outside the workspace, MCP tools)
are still refused without ``--yes``: asking about every command would stall a pi client that does
not expect dialogs on each of them.
"""

from __future__ import annotations

import asyncio

from tether.rpc.extension_ui import RpcExtensionUI
from tether.tools.approval import ApprovalGate, with_escapes
from tether.tools.sandbox import SandboxPolicy
from tether.wire import ToolCall

TITLE = "Run a command outside the sandbox?"
PROTECTED_TITLE = "Change a file the sandbox keeps read-only?"


def install(gate: ApprovalGate, ui: RpcExtensionUI) -> None:
    """Let ``gate`` ask ``ui``'s client about escalations, when it asks at all and nobody else
    does (``--yes`` needs no question; a library caller's ``ask`` stays theirs)."""
    if gate.policy != "ask" or gate.ask is not None:
        return
    policy = gate.workspace.sandbox or SandboxPolicy()
    timeout = policy.escalation_timeout

    async def ask(call: ToolCall, question: str) -> bool:
        title, text = (
            (TITLE, message(call, policy)) if call["name"] == "bash" else (PROTECTED_TITLE, question)
        )
        try:
            return await asyncio.wait_for(ui.confirm(title, text, timeout=timeout), timeout)
        except TimeoutError:  # the dialog is withdrawn: a late answer is an error response
            return False

    gate.ask = ask
    gate.asks_only_escalations = True


def message(call: ToolCall, policy: SandboxPolicy) -> str:
    """The command, the model's reason (lone surrogates as escapes: ``with_escapes``), and what
    running it unconfined gives it."""
    args = call["arguments"]
    why = args.get("justification")
    reason = why.strip() if isinstance(why, str) and why.strip() else "(none given)"
    return (
        f"Command: {with_escapes(str(args.get('command')))}\n"
        f"Reason: {with_escapes(reason)}\n"
        f"The sandbox ({policy.describe()}) refused something this command needs. Outside it the "
        "command runs with all your rights: it can write anywhere you can, read your credentials "
        "(~/.ssh, ~/.aws, ...) and tether's sessions and keys, see other processes, and reach "
        "the network."
    )
