"""MCP tools as agent tools: names, schemas and results.

A server's tool ``search`` on server ``docs`` becomes ``mcp__docs__search`` (characters providers
reject become ``_``; a name over 64 characters is cut and given a short hash, so two long names
stay distinct; two names that become the same are told apart by ``McpServers``). A tool the
server says needs task-augmented execution (``execution.taskSupport: "required"``) is not offered:
tether calls tools directly, so every call would fail. Its JSON Schema is the tool's ``parameters``, so the loop validates arguments as
for the built-in tools. Results map to tool-result content: text stays text, images stay images,
a structured result without content is sent as its JSON; audio, resources and links become a
line of text saying what they are. The text goes through the same output budget as command
output (``OutputBuffer``: head and tail kept, with the same note in between). An ``isError``
result fails the call with its text.

Every tool is marked ``needs_approval`` (``tether.tools.approval``: it asks like ``bash``) unless
the server annotates it read-only and not destructive, as Codex decides: a server's tool can do
anything its process can, and only the server can say otherwise.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, cast

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.read import MAX_IMAGE_BYTES
from tether.tools.sniff import SNIFF_BYTES, image_mime_type
from tether.tools.truncate import OutputBuffer

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from tether.mcp.connection import McpConnection, ToolInfo
    from tether.wire import ImageContent, TextContent

PREFIX = "mcp"
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str, *, unique: bool = False) -> str:
    """``mcp__<server>__<tool>``, within what every provider accepts as a tool name; ``unique``:
    with a short hash of the exact names, for a tool whose plain name another one took."""
    raw = f"{PREFIX}__{server}__{tool}"
    name = _UNSAFE.sub("_", raw)
    if len(name) <= MAX_NAME and not unique:
        return name
    digest = hashlib.sha1((raw if unique else name).encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def agent_tool(connection: McpConnection, info: ToolInfo, name: str | None = None) -> AgentTool:
    """The agent tool that calls ``info`` on ``connection``, named ``name`` (default: its
    ``tool_name``). Progress notifications become tool updates (``progress 3/10: message``)."""
    server = connection.name

    async def execute(
        _tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        def progress(done: float, total: float | None, message: str | None) -> None:
            if on_update is not None:
                on_update(progress_update(done, total, message, server=server, tool=info.name))

        result = await connection.call(info.name, dict(params or {}), signal, on_progress=progress)
        return tool_result(result, server=server, tool=info.name)

    return AgentTool(
        name=name or tool_name(server, info.name),
        label=f"{server}: {info.name}",
        description=info.description or f"The {info.name!r} tool of the MCP server {server!r}.",
        parameters=_object_schema(info.input_schema),
        execute=execute,
        metadata={
            "mcp": {"server": server, "tool": info.name, "readOnly": info.read_only},
            "needs_approval": not info.read_only,
        },
    )


def progress_update(
    done: float, total: float | None, message: str | None, *, server: str, tool: str
) -> AgentToolResult[Any]:
    """A progress notification as a partial result: ``progress 3/10: copying`` (numbers as the
    server sent them; ``total`` may be unknown)."""
    amount = f"{done:g}/{total:g}" if total is not None else f"{done:g}"
    text = f"progress {amount}" + (f": {message}" if message else "")
    details: dict[str, Any] = {"server": server, "tool": tool, "progress": done, "total": total}
    if message:
        details["message"] = message
    return AgentToolResult(content=[{"type": "text", "text": text}], details=details)


def tool_result(result: CallToolResult, *, server: str, tool: str) -> AgentToolResult[Any]:
    """A call's result as tool-result content; ``isError`` raises ``ToolError`` with its text."""
    import mcp_types

    texts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            image, problem = _checked_image(block.data, block.mime_type)
            images += [image] if image is not None else []
            texts += [problem] if problem is not None else []
        else:
            texts.append(_describe_block(block))
    if not texts and not images and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    text = within_budget("\n".join(texts))
    if result.is_error:
        raise ToolError(text or f"The MCP tool {tool!r} of server {server!r} reported an error.")
    content: list[TextContent | ImageContent] = []
    if text or not images:
        content.append({"type": "text", "text": text})
    content.extend(images)
    details: dict[str, Any] = {"server": server, "tool": tool}
    if result.structured_content is not None:
        if _smaller_than(result.structured_content, STRUCTURED_LIMIT):
            details["structuredContent"] = result.structured_content
        else:  # stored with the session: a 50 MB copy of the text would be kept for ever
            details["structuredContentOmitted"] = f"larger than {STRUCTURED_LIMIT // 1024} KB"
    return AgentToolResult(content=content, details=details)


STRUCTURED_LIMIT = 256 * 1024
"""Characters of a result's ``structuredContent`` kept in the tool result's details (which are
recorded in the session); the model sees the text either way."""


def _smaller_than(value: object, limit: int) -> bool:
    """Whether ``value``'s strings and keys add up to fewer than ``limit`` characters; stops
    counting once past it, without serialising anything."""
    left = limit
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            left -= len(item)
        elif isinstance(item, dict):
            for key, inner in cast(dict[str, object], item).items():
                left -= len(key) + 4
                stack.append(inner)
        elif isinstance(item, list):
            left -= 2
            stack.extend(cast(list[object], item))
        else:
            left -= 8
        if left < 0:
            return False
    return True


def _checked_image(data: str, declared: str) -> tuple[ImageContent | None, str | None]:
    """The image as content for the model, or why it is left out. An image goes into the
    session's history and is sent again with every request: one the provider refuses (damaged
    base64, not an image, a type it does not take, over its size limit) would fail every
    request of the session from then on. Its type is taken from its bytes, as ``read`` does."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None, f"[image result ({declared}) left out: its data is not valid base64]"
    mime = image_mime_type(raw[:SNIFF_BYTES])
    if mime is None:
        return None, f"[image result ({declared}) left out: not a PNG, JPEG, GIF or WebP image]"
    if len(raw) > MAX_IMAGE_BYTES:
        return (
            None,
            f"[{mime} image result of {len(raw)} bytes left out: over the {MAX_IMAGE_BYTES} byte limit]",
        )
    return {"type": "image", "data": data, "mimeType": mime}, None


def _describe_block(block: Any) -> str:
    """Audio, an embedded resource or a resource link, as one line (or the resource's text)."""
    kind = block.type
    if kind == "audio":
        return f"[audio result ({block.mime_type}), not shown]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'}), not shown]"
    if kind == "resource_link":
        return f"[resource {block.name}: {block.uri}]"
    return f"[{kind} result, not shown]"


_FEED = 1 << 20
"""Characters encoded at a time for ``OutputBuffer``: a 50 MB text is never encoded whole."""


def within_budget(text: str) -> str:
    """``text`` within the output budget of command output (head and tail kept)."""
    buffer = OutputBuffer()
    for start in range(0, len(text), _FEED):
        buffer.feed(text[start : start + _FEED].encode("utf-8", errors="surrogatepass"))
    buffer.finish()
    return buffer.text() if buffer.truncated else text


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's schema, with ``type: object`` made explicit (some servers leave it out and
    some providers reject a tool schema without it)."""
    return schema if schema.get("type") == "object" else {"type": "object", **schema}
