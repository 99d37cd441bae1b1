"""MCP prompts as slash commands, Claude Code's way: ``/mcp__<server>__<prompt> args``.

The specification makes prompts *user-controlled* ("exposed from servers to clients with the
intention of the user being able to explicitly select them"), so they are commands the user
types, not tools the model calls (resources are data the model may read, hence tools there).
The command name follows the tool names (``tether.mcp.tools.tool_name``; ``McpServers`` names them). Arguments are given
in the prompt's declared order, shell-quoted when they hold spaces (``/mcp__gh__review 12 "be
brief"``), or by name (``focus=security``); a required one missing is one line naming it.

What the server answers becomes the user's prompt: text as text, images as images, an embedded
text resource as its text, anything else a line saying what it was. An assistant message of
the prompt (a few-shot example) is kept as text marked ``(assistant)``: the conversation only
takes what the user said and what the model answered.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import ToolError

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import GetPromptResult

    from tether.wire import ImageContent, TextContent

MAX_PAGES = 100
"""Pages of prompts read from one server: a paginator that never ends must not hang a start."""


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """One prompt a server lists."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...]

    def usage(self) -> str:
        """``<path> [focus]``: the arguments as the command's hint."""
        return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in self.arguments)


class PromptArgumentsError(ToolError):
    """The text after a prompt command does not fit its arguments; the message says how."""


async def list_prompts(client: Client) -> list[PromptInfo]:
    """Every prompt the server lists (all pages, at most ``MAX_PAGES``)."""
    found: list[PromptInfo] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_prompts(cursor=cursor)
        for prompt in page.prompts:
            arguments = tuple(
                PromptArgument(a.name, a.description or "", bool(a.required)) for a in prompt.arguments or []
            )
            found.append(PromptInfo(prompt.name, prompt.description or prompt.title or "", arguments))
        cursor = page.next_cursor
        if cursor is None:
            break
    return found


def parse_arguments(info: PromptInfo, text: str) -> dict[str, str]:
    """The arguments of ``/command text``: words in declared order, or ``name=value``."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise PromptArgumentsError(f"/{info.name}: {exc} in {text!r}") from None
    names = {a.name for a in info.arguments}
    given: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        name, equals, value = word.partition("=")
        if equals and name in names:
            given[name] = value
        else:
            positional.append(word)
    free = [a for a in info.arguments if a.name not in given]
    if len(positional) > len(free):
        if not free:
            raise PromptArgumentsError(
                f"{info.name} takes no more arguments (usage: {info.usage() or 'none'})"
            )
        positional[len(free) - 1 :] = [" ".join(positional[len(free) - 1 :])]  # the last takes the rest
    given.update((a.name, word) for a, word in zip(free, positional, strict=False))
    missing = [a.name for a in info.arguments if a.required and a.name not in given]
    if missing:
        raise PromptArgumentsError(
            f"{info.name} needs {', '.join(missing)} (usage: {info.usage()}; or name=value)"
        )
    return given


def prompt_content(result: GetPromptResult) -> list[TextContent | ImageContent]:
    """The prompt's messages as the content of one user message."""
    content: list[TextContent | ImageContent] = []
    for message in result.messages:
        block: Any = message.content
        if getattr(block, "type", None) == "image":
            content.append({"type": "image", "data": str(block.data), "mimeType": str(block.mime_type)})
            continue
        text = _text_of(block)
        content.append({"type": "text", "text": text if message.role == "user" else f"(assistant) {text}"})
    return content


def _text_of(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        text = getattr(block.resource, "text", None)
        return str(text) if text is not None else f"[binary resource {block.resource.uri}, not shown]"
    if kind == "resource_link":
        return f"[resource {block.name}: {block.uri}]"
    return f"[{kind or 'unknown'} content, not shown]"
