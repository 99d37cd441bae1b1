"""``read``: a file's lines with line numbers, or an image the model can look at.

Large files are read in windows (``offset``/``limit``) and the result always says which lines
were shown and how to continue, so the model never mistakes a prefix for the whole file. The
file is streamed line by line: reading the start of a 1 GB log costs the start, not a gigabyte,
and a line is read only as far as it can be shown (a one-line 300 MB file costs a few KB).
"""

import base64
import os
from collections.abc import Iterator
from typing import Any, BinaryIO, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.opened import open_resolved
from tether.tools.sniff import SNIFF_BYTES, image_mime_type, looks_binary
from tether.tools.truncate import MAX_BYTES, MAX_LINE_CHARS, MAX_LINES, shorten_line
from tether.tools.workspace import Workspace
from tether.wire import ImageContent, TextContent

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Provider limit for one inline image (Anthropic's, the strictest of the major APIs)."""


class ReadParams(TypedDict):
    path: str
    offset: NotRequired[int | None]
    limit: NotRequired[int | None]


READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to read: relative to the workspace root, or absolute.",
        },
        "offset": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "First line to return (1-based). Omit to start at the top.",
        },
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": f"Maximum number of lines to return (at most {MAX_LINES}).",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Read a file from the workspace. Text comes back with line numbers (`<number>\\t<line>`); the numbers "
    "are not part of the file. PNG, JPEG, GIF and WebP images come back as images you can see. "
    f"At most {MAX_LINES} lines or {MAX_BYTES // 1024} KB are returned per call; when a file is longer, "
    "the result says which lines were shown and which `offset` continues. Read a file before editing it."
)


def create_read_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: ReadParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        return read_file(workspace, params)

    return AgentTool(
        name="read",
        label="Read",
        description=DESCRIPTION,
        parameters=READ_PARAMETERS,
        execute=execute,
        execution_mode="parallel",
    )


def read_file(workspace: Workspace, params: ReadParams) -> AgentToolResult[dict[str, Any]]:
    path = workspace.resolve(params["path"], reading=True)
    shown = workspace.display(path)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file; use ls to list it.")
    if path.exists() and not path.is_file():
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device); it cannot be read.")
    try:
        handle = os.fdopen(open_resolved(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(SNIFF_BYTES)
        mime = image_mime_type(head)
        size = os.fstat(handle.fileno()).st_size
        if mime is not None:
            if size > MAX_IMAGE_BYTES:
                raise ToolError(
                    f"{shown} is a {mime} image of {size} bytes, over the {MAX_IMAGE_BYTES} byte limit "
                    "for images; resize it first (e.g. with a bash command) and read the smaller copy."
                )
            data = head + handle.read()
            image: ImageContent = {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}
            note: TextContent = {"type": "text", "text": f"Read image {shown} ({mime}, {size} bytes)."}
            return AgentToolResult([note, image], {"path": shown, "mimeType": mime, "bytes": size})
        if looks_binary(head):
            raise ToolError(
                f"{shown} is a binary file ({size} bytes) and cannot be shown as text; "
                "inspect it with a bash command such as `file` or `xxd | head`."
            )
        handle.seek(0)
        return read_lines(handle, shown, *line_window(params))


def line_window(params: ReadParams) -> tuple[int, int]:
    """``(offset, limit)`` of a call: from the top and ``MAX_LINES`` unless asked, never more."""
    return params.get("offset") or 1, min(params.get("limit") or MAX_LINES, MAX_LINES)


def read_lines(handle: BinaryIO, shown: str, offset: int, limit: int) -> AgentToolResult[dict[str, Any]]:
    """``read``'s text result for the lines of ``handle`` (also used on text an editor supplies)."""
    lines: list[str] = []
    size = 0
    total = 0
    cut_by_bytes = False
    for raw, rest in _bounded_lines(handle):
        total += 1
        if total < offset:
            continue
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        line = shorten_line(text, more=rest)
        numbered = f"{total}\t{line}"
        cost = len(numbered.encode()) + 1
        cut_by_bytes = bool(lines) and size + cost > MAX_BYTES
        if cut_by_bytes or len(lines) >= limit:
            total += _count_lines(handle)
            break
        lines.append(numbered)
        size += cost
    if total == 0:
        return AgentToolResult(
            [{"type": "text", "text": f"{shown} is empty."}], {"path": shown, "totalLines": 0}
        )
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines.")
    last = offset + len(lines) - 1
    text = "\n".join(lines)
    if last < total:
        why = f" (the {MAX_BYTES // 1024} KB output limit was reached)" if cut_by_bytes else ""
        text += f"\n\n[Showing lines {offset}-{last} of {total}{why}. Use offset={last + 1} to continue.]"
    details = {
        "path": shown,
        "startLine": offset,
        "endLine": last,
        "totalLines": total,
        "truncated": last < total,
    }
    return AgentToolResult([{"type": "text", "text": text}], details)


_LINE_READ = MAX_LINE_CHARS * 4 + 4
"""Bytes of one line read at most: enough for ``MAX_LINE_CHARS`` characters of any UTF-8."""


def _bounded_lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Each line's first ``_LINE_READ`` bytes and how many characters of it were skipped unread.

    A one-line 300 MB file is then read in 1 MB steps and never held whole: only the part
    of a line that can be shown is kept (the rest is counted, UTF-8 continuation bytes aside).
    """
    while head := handle.readline(_LINE_READ):
        rest = 0
        if len(head) == _LINE_READ and not head.endswith(b"\n"):
            while chunk := handle.readline(1 << 20):
                ended = chunk.endswith(b"\n")
                body = chunk.rstrip(b"\r\n") if ended else chunk
                rest += len(body.translate(None, _CONTINUATION_BYTES))
                if ended:
                    break
        yield head, rest


_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _count_lines(handle: BinaryIO) -> int:
    """Lines left from the current position, counted in blocks (fast on huge files)."""
    count = 0
    last = b"\n"
    while block := handle.read(1 << 20):
        count += block.count(b"\n")
        last = block[-1:]
    return count + (last != b"\n")
