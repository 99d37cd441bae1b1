"""What an ACP client sees of tether: agent events and stored messages as ``session/update``s.

Pure functions over the wire types and the SDK's schema models; ``tether.acp.server`` sends what they
return. Live runs and replayed history (``session/load``) go through the same builders, so a
loaded session looks in the editor as it did while it ran: assistant text as
``agent_message_chunk``, thinking as ``agent_thought_chunk``, each tool call as ``tool_call``
(pending) followed by ``tool_call_update``s. The user's own prompt is sent only when replaying
history: during a live turn the client already shows what it sent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    FileEditToolCallContent,
    ImageContentBlock,
    SessionInfoUpdate,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from tether.errors import TetherError
from tether.wire import AgentMessage, AssistantMessage, ImageContent, TextContent, ToolCall

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | AvailableCommandsUpdate
    | SessionInfoUpdate
)
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

TOOL_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "ls": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
}
"""The ACP ``kind`` of each built-in tool: editors pick icons and grouping from it."""

REFUSAL_MARKERS = ("stop_reason: refusal", "stop_reason: sensitive", "finish_reason: content_filter")
"""How the providers word a refusal in ``errorMessage`` (our ``StopReason`` has no refusal)."""


@dataclass(frozen=True, slots=True)
class ToolView:
    """How one tool call is presented: a title, a kind, and the files it touches."""

    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]


@dataclass(frozen=True, slots=True)
class FileDiff:
    """A file change as ACP shows it: the whole old text (``None``: a new file) and new text."""

    path: str
    old_text: str | None
    new_text: str


def tool_view(name: str, arguments: Mapping[str, Any], cwd: Path) -> ToolView:
    """Title, kind and locations of a call, from its (possibly still invalid) arguments."""
    path = arguments.get("path")
    path = path if isinstance(path, str) and path else None
    where = absolute(cwd, path) if path is not None else None
    locations = [ToolCallLocation(path=where)] if where is not None else []
    if name == "read" and where is not None:
        offset = arguments.get("offset")
        line = offset if isinstance(offset, int) and offset > 0 else None
        locations = [ToolCallLocation(path=where, line=line)]
        title = f"Read {path}" + (f" from line {line}" if line else "")
    elif name in ("write", "edit") and path is not None:
        title = f"{name.capitalize()} {path}"
    elif name == "bash":
        command = arguments.get("command")
        first = command.strip().splitlines()[0] if isinstance(command, str) and command.strip() else ""
        title = f"`{_shorten(first, 100)}`" if first else "bash"
        locations = []
    elif name in ("grep", "find"):
        pattern = arguments.get("pattern")
        title = (
            f"{'Search for' if name == 'grep' else 'Find'} {_shorten(str(pattern), 60)!r} in {path or '.'}"
        )
        locations = locations or [ToolCallLocation(path=str(cwd))]
    elif name == "ls":
        title = f"List {path or '.'}"
        locations = locations or [ToolCallLocation(path=str(cwd))]
    else:
        title = name
    return ToolView(title, TOOL_KINDS.get(name, "other"), locations)


def absolute(cwd: Path, path: str) -> str:
    """ACP paths are absolute; a relative tool argument is taken from the session's cwd."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def tool_call_start(call: ToolCall, cwd: Path) -> ToolCallStart:
    view = tool_view(call["name"], call["arguments"], cwd)
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call["id"],
        title=view.title,
        kind=view.kind,
        status="pending",
        locations=view.locations,
        raw_input=call["arguments"],
    )


def permission_subject(call: ToolCall, cwd: Path, diff: FileDiff | None) -> ToolCallUpdate:
    """The tool call a permission request is about (with the change it would make, if known)."""
    view = tool_view(call["name"], call["arguments"], cwd)
    content: list[ToolContent] | None = [diff_content(diff)] if diff is not None else None
    return ToolCallUpdate(
        tool_call_id=call["id"],
        title=view.title,
        kind=view.kind,
        status="pending",
        locations=view.locations,
        raw_input=call["arguments"],
        content=content,
    )


def tool_call_progress(
    tool_call_id: str,
    *,
    status: Literal["pending", "in_progress", "completed", "failed"] | None = None,
    content: list[ToolContent] | None = None,
    locations: list[ToolCallLocation] | None = None,
    raw_output: Any = None,
) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_call_id,
        status=status,
        content=content,
        locations=locations,
        raw_output=raw_output,
    )


def result_content(blocks: list[TextContent | ImageContent]) -> list[ToolContent]:
    """A tool result's text and images as tool-call content."""
    content: list[ToolContent] = []
    for block in blocks:
        if block["type"] == "text":
            if block["text"]:
                text = TextContentBlock(type="text", text=block["text"])
                content.append(ContentToolCallContent(type="content", content=text))
        else:
            image = ImageContentBlock(type="image", data=block["data"], mime_type=block["mimeType"])
            content.append(ContentToolCallContent(type="content", content=image))
    return content


def diff_content(diff: FileDiff) -> FileEditToolCallContent:
    return FileEditToolCallContent(
        type="diff", path=diff.path, old_text=diff.old_text, new_text=diff.new_text
    )


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def finished_locations(name: str, details: Any, cwd: Path) -> list[ToolCallLocation] | None:
    """Where an edit landed (its first changed line), once it is known."""
    if name != "edit" or not isinstance(details, dict):
        return None
    values = cast(dict[str, Any], details)
    path, line = values.get("path"), values.get("firstChangedLine")
    if not isinstance(path, str) or not isinstance(line, int):
        return None
    return [ToolCallLocation(path=absolute(cwd, path), line=line)]


def text_chunk(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
    )


def thought_chunk(text: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=text)
    )


class TurnFailed(TetherError):
    """The turn ended in an error the client must see as one (``session/prompt`` fails)."""


def stop_reason(last: AssistantMessage | None, cancelled: bool) -> StopReason:
    """Our final stop reason as ACP's; raises ``TurnFailed`` for a failed model request."""
    if cancelled:
        return "cancelled"  # the protocol requires it once the client cancelled, whatever happened
    if last is None:
        return "end_turn"
    reason = last["stopReason"]
    if reason == "length":
        return "max_tokens"
    if reason == "aborted":
        return "cancelled"
    if reason == "error":
        message = last.get("errorMessage") or "the model request failed"
        if any(marker in message for marker in REFUSAL_MARKERS):
            return "refusal"
        raise TurnFailed(message)
    return "end_turn"


def history_updates(messages: list[AgentMessage], cwd: Path) -> Iterator[SessionUpdate]:
    """A stored conversation as the updates a client would have seen live, user turns included."""
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                yield UserMessageChunk(
                    session_update="user_message_chunk", content=TextContentBlock(type="text", text=content)
                )
                continue
            for block in content:
                if block["type"] == "text":
                    text = TextContentBlock(type="text", text=block["text"])
                    yield UserMessageChunk(session_update="user_message_chunk", content=text)
                elif block["type"] == "image":
                    image = ImageContentBlock(type="image", data=block["data"], mime_type=block["mimeType"])
                    yield UserMessageChunk(session_update="user_message_chunk", content=image)
        elif message["role"] == "assistant":
            for part in message["content"]:
                if part["type"] == "text" and part["text"]:
                    yield text_chunk(part["text"])
                elif part["type"] == "thinking" and part["thinking"]:
                    yield thought_chunk(part["thinking"])
                elif part["type"] == "toolCall":
                    yield tool_call_start(part, cwd)
            if message["stopReason"] == "error" and message.get("errorMessage"):
                yield text_chunk(f"\n\n[error: {message.get('errorMessage')}]")
        elif message["role"] == "toolResult":
            yield tool_call_progress(
                message["toolCallId"],
                status="failed" if message["isError"] else "completed",
                content=result_content(message["content"]),
                locations=finished_locations(message["toolName"], message.get("details"), cwd),
            )
        elif message["role"] == "bashExecution":
            yield text_chunk(f"\n$ {message['command']}\n{message['output']}\n")
        elif message["role"] == "compactionSummary" or message["role"] == "branchSummary":
            yield text_chunk(f"[Summary of earlier conversation]\n{message['summary']}\n\n")


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
