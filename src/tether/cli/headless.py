"""Print mode (``tether -p``) and JSON mode (``tether --mode json``): one prompt, then exit.

Print mode writes the final assistant text to stdout and everything else (notices, errors) to
stderr, so ``answer=$(tether -p ...)`` captures exactly the answer; when stdout is a terminal the
text streams as it arrives. JSON mode writes a ``session`` line, then every core event as one JSON
line for scripts, in the form pi 1.x's JSON mode has (``docs/json.md``: a header with ``version``
3, ``agent_settled`` last, ``message_update`` with deltas and ``usage`` only, not 0.73's cumulative
snapshots, which made the output grow with the square of the answer). Both exit 1 when the run
ended in an error or was aborted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

from tether.session.agent_session import AgentSession
from tether.session.events import message_text, wire_message_update
from tether.session.pi_format import PI_SESSION_VERSION, iso_timestamp
from tether.wire import dumps


def note_failed_servers(core: AgentSession, err: TextIO) -> None:
    """One stderr line per MCP server that failed to start: without it a script would only see
    the model miss a tool (``/mcp`` and ``tether mcp list`` are not there to look at)."""
    for server in core.mcp.statuses() if core.mcp else ():
        if server.status == "failed":
            reason = (server.error or "no reason given").splitlines()[0]
            err.write(f"note: MCP server '{server.name}' did not start: {reason}\n")


async def run_print(core: AgentSession, prompt: str, out: TextIO, err: TextIO, *, stream: bool) -> int:
    """Run ``prompt``; print the answer. ``stream``: write text deltas as they come."""
    streamed = noted = False

    def on_event(event: Mapping[str, Any]) -> None:
        nonlocal streamed, noted
        kind = event["type"]
        if stream and kind == "message_update":
            inner = event["assistantMessageEvent"]
            if inner["type"] == "text_delta":
                out.write(inner["delta"])
                out.flush()
                streamed = True
        elif kind == "message_end" and event["message"]["role"] == "assistant" and streamed:
            out.write("\n")
            out.flush()
            streamed = False
        elif kind == "agent_start" and not noted:  # the MCP servers have started or failed by now
            note_failed_servers(core, err)
            noted = True
        elif kind == "tool_execution_start":
            err.write(f"[tool] {event['toolName']}\n")
        elif kind == "compaction_start":
            err.write(f"[compacting the conversation: {event['reason']}]\n")
        elif kind == "notice":
            (out if "command" in event else err).write(f"{event['message']}\n")

    unsubscribe = core.subscribe(on_event)
    try:
        added = await core.submit(prompt, shell=False)
    finally:
        unsubscribe()
    if not added:  # no model call: an extension's command ran, or one stopped the run (a notice says why)
        return 0 if is_command(core, prompt) else 1
    return _finish(core, out if not stream else None, err)


async def run_json(core: AgentSession, prompt: str, out: TextIO, err: TextIO) -> int:
    """A ``session`` line first (pi's header fields, then model and thinking level), then one
    line per event."""
    model = core.model
    header = {
        "type": "session",
        "version": PI_SESSION_VERSION,
        "id": core.session_id,
        "timestamp": iso_timestamp(time.time() * 1000),
        "cwd": str(core.cwd),
        "model": f"{model['provider']}/{model['id']}",
        "thinkingLevel": core.thinking_level,
    }
    out.write(dumps(header) + "\n")
    if core.notice:
        err.write(f"note: {core.notice}\n")

    noted = False

    def on_event(event: Mapping[str, Any]) -> None:
        nonlocal noted
        if event["type"] == "agent_start" and not noted:  # the MCP servers have started or failed by now
            note_failed_servers(core, err)
            noted = True
        if event["type"] == "message_update":
            event = wire_message_update(event, snapshots=False)
        out.write(dumps(event))
        out.write("\n")
        out.flush()

    unsubscribe = core.subscribe(on_event)
    try:
        added = await core.submit(prompt, shell=False)
    finally:
        unsubscribe()
    if not added:  # no model call: an extension's command ran, or one stopped the run (a notice says why)
        return 0 if is_command(core, prompt) else 1
    return _finish(core, None, err)


def is_command(core: AgentSession, prompt: str) -> bool:
    """Whether ``prompt`` is an extension's slash command (which may finish without the model)."""
    return core.resources is not None and core.resources.extension_command(prompt) is not None


def _finish(core: AgentSession, out: TextIO | None, err: TextIO) -> int:
    last = core.last_assistant()
    if last is None:
        err.write("error: the run produced no answer\n")
        return 1
    if last["stopReason"] == "aborted":
        err.write("aborted\n")
        return 1
    if last["stopReason"] == "error":
        err.write(f"error: {last.get('errorMessage') or 'the model request failed'}\n")
        return 1
    if out is not None:
        text = message_text(last)
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
    return 0
