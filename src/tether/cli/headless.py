"""Print mode (``tether -p``) and JSON mode (``tether --mode json``): the prompts, then exit.

Each positional word after the first is a prompt of its own, run once the one before has
settled, as pi runs them (``tether -p "read a.py" "now test it"``).

Print mode writes the final assistant text to stdout and everything else (notices, errors) to
stderr, so ``answer=$(tether -p ...)`` captures exactly the answer; when stdout is a terminal the
text streams as it arrives. JSON mode writes a ``session`` line, then every core event as one JSON
line for scripts, in the form pi 1.x's JSON mode has (``docs/json.md``: a header with ``version``
3, ``agent_settled`` last, ``message_update`` with deltas and ``usage`` only, not 0.73's cumulative
snapshots, which made the output grow with the square of the answer). Print mode exits 1 when
the last reply ended in an error, was aborted or was cut at the output limit; JSON mode exits 0
then, as pi's does: the error is in the event stream, where a script reads it (a line on stderr
says it too).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from tether._hang_up import watch_hang_up
from tether.session.agent_session import AgentSession
from tether.session.events import WireEvents, message_text, note_lines
from tether.session.pi_format import PI_SESSION_VERSION, iso_timestamp
from tether.wire import dumps
from tether.wire.file_names import path_text
from tether.wire.json_line import replace_lone_surrogates


def write_notes(core: AgentSession, err: TextIO) -> None:
    """What the setup left out (``AgentSession.notice``), as ``note:`` lines (``note_lines``)."""
    err.write(note_lines(core.notice or ""))


def note_failed_servers(core: AgentSession, err: TextIO, noted: set[str]) -> None:
    """One stderr line per MCP server that failed (to start, or by crashing in a call), once
    (``noted``: the names said):
    without it a script would only see the model miss a tool (``/mcp`` and ``tether mcp list``
    are not there to look at). Called as the run starts (servers waited for have started or
    failed) and after each tool call (one whose tools were kept from an earlier run starts when
    first called, ``tether.mcp.tool_cache``)."""
    for server in core.mcp.statuses() if core.mcp else ():
        if server.status == "failed" and server.name not in noted:
            noted.add(server.name)
            reason = (server.error or "no reason given").splitlines()[0]
            err.write(note_lines(f"MCP server '{server.name}' failed: {reason}"))


async def run_print(
    core: AgentSession, prompts: Sequence[str], out: TextIO, err: TextIO, *, stream: bool
) -> int:
    """Run the ``prompts`` in turn; print the last answer. ``stream``: write text deltas as they
    come (each answer's, then)."""
    streamed = False
    held = ""  # a delta's last high surrogate: its pair's other half may start the next delta
    noted: set[str] = set()

    def on_event(event: Mapping[str, Any]) -> None:
        nonlocal streamed, held
        kind = event["type"]
        if stream and kind == "message_update":
            inner = event["assistantMessageEvent"]
            if inner["type"] == "text_delta":
                text = held + inner["delta"]
                held = text[-1] if text and "\ud800" <= text[-1] <= "\udbff" else ""
                out.write(replace_lone_surrogates(text[: len(text) - len(held)]))
                out.flush()
                streamed = True
        elif kind == "message_end" and event["message"]["role"] == "assistant" and streamed:
            out.write(replace_lone_surrogates(held) + "\n")
            held = ""
            out.flush()
            streamed = False
        elif kind in ("agent_start", "tool_execution_end"):
            note_failed_servers(core, err, noted)
        elif kind == "tool_execution_start":
            err.write(f"[tool] {event['toolName']}\n")
        elif kind == "compaction_start":
            err.write(f"[compacting the conversation: {event['reason']}]\n")
        elif kind == "notice":
            (out if "command" in event else err).write(f"{event['message']}\n")

    unsubscribe = core.subscribe(on_event)
    try:
        added = await _submit_while_read(core, prompts, out, _ReaderGone(core))
    finally:
        unsubscribe()
    if not added[-1]:  # no model call: an extension's command ran, or one stopped the run (a notice says why)
        return 0 if is_command(core, prompts[-1]) else 1
    return _finish(core, out if not stream else None, err)


async def run_json(core: AgentSession, prompts: Sequence[str], out: TextIO, err: TextIO) -> int:
    """A ``session`` line first (pi's header fields, then model and thinking level), then one
    line per event of each prompt's run, in turn."""
    model = core.model
    header = {
        "type": "session",
        "version": PI_SESSION_VERSION,
        "id": core.session_id,
        "timestamp": iso_timestamp(time.time() * 1000),
        "cwd": path_text(core.cwd),
        "model": f"{model['provider']}/{model['id']}",
        "thinkingLevel": core.thinking_level,
    }
    out.write(dumps(header) + "\n")
    write_notes(core, err)

    noted: set[str] = set()
    wire = WireEvents(pending=True)
    gone = _ReaderGone(core)

    def on_event(event: Mapping[str, Any]) -> None:
        kind = event["type"]
        if kind in ("agent_start", "tool_execution_end"):
            note_failed_servers(core, err, noted)
        if kind == "extension_error":  # pi 1.6's JSON mode: stderr, not the stream
            err.write(f"Extension error ({event['extensionPath']}): {event['error']}\n")
            return
        elif kind == "notice" and event.get("failure"):
            return  # the extension_error line said it
        if gone.error is not None:
            return
        try:
            out.write(dumps(wire(event)))
            out.write("\n")
            out.flush()
        except OSError as exc:
            gone(exc)

    unsubscribe = core.subscribe(on_event)
    try:
        added = await _submit_while_read(core, prompts, out, gone)
    finally:
        unsubscribe()
    if added[-1]:
        _finish(core, None, err)  # the stderr line; the stream already said it
    return 0


class _ReaderGone:
    """The failure of a run's stdout (its reader gone, or a write refused): the run cannot be
    reported, so it is aborted (nobody reads what it makes: no more paid calls or tool runs for
    it) and the failure is the program's error (``cli.main`` says it in one line), not a
    listener failure of the run."""

    def __init__(self, core: AgentSession) -> None:
        self._core = core
        self.error: OSError | None = None

    def __call__(self, exc: OSError) -> None:
        if self.error is None:
            self.error = exc
            self._core.abort()


async def _submit_while_read(
    core: AgentSession, prompts: Sequence[str], out: TextIO, gone: _ReaderGone
) -> list[list[Any]]:
    """Each prompt's added messages, run in turn while ``out`` has a reader (``watch_hang_up``):
    once it has gone (``gone``), the run under way is aborted, the prompts after it are not run
    and its error is raised."""
    unwatch = watch_hang_up(out, lambda: gone(BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))))
    added: list[list[Any]] = []
    try:
        for prompt in prompts:
            added.append(await core.submit(prompt, shell=False))
            if gone.error is not None:
                raise gone.error
    finally:
        unwatch()
    return added


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
        # half an emoji a stream cut in two stays a lone surrogate in the reply: no UTF-8 for it
        text = replace_lone_surrogates(message_text(last))
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
    if last["stopReason"] == "length":  # pi: the answer is printed, and the cut is an error
        err.write("error: the reply was cut off: the model reached its output token limit\n")
        return 1
    return 0
