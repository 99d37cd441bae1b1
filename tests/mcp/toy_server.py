"""A tiny MCP server built with the SDK's own server API, for the MCP client tests.

Run as ``python toy_server.py [stdio|http PORT|sse PORT|garbage|mute|collide]``: over stdio
(the default), over streamable HTTP or the older HTTP+SSE transport on 127.0.0.1, with a tool
``get.time`` whose safe name collides with ``get_time``, two prompts (``review``, and ``show``
with an assistant message and an image), printing a non-JSON line on stdout before serving, or never
answering at all (a server stuck before ``initialize``). With ``TOY_PID_DIR`` set it leaves
a file named by its pid there. ``TOY_MARK`` (environment) is echoed by
the ``env`` tool so the tests can see ``${VAR}`` expansion reach the server.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ImageContent, ToolAnnotations
from pydantic import BaseModel

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("toy")


class Sum(BaseModel):
    total: int
    count: int


READ_ONLY = ToolAnnotations(read_only_hint=True)
"""``add`` and ``total`` say they only compute (no approval needed); the other tools say
nothing, like most servers, and ``forget`` claims both read-only and destructive."""


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool(annotations=READ_ONLY)
def total(numbers: list[int]) -> Sum:
    """Sum a list of integers (a structured result)."""
    return Sum(total=sum(numbers), count=len(numbers))


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG image."""
    return Image(data=PNG_1PX, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def big(lines: int) -> str:
    """Return that many numbered lines."""
    return "".join(f"line {i}\n" for i in range(lines))


@server.tool()
def env() -> str:
    """The TOY_MARK environment variable and the working directory."""
    return f"{os.environ.get('TOY_MARK', '')} {os.getcwd()}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=True))
def forget() -> str:
    """Claims to be read-only and destructive at once (destructive wins: it needs approval)."""
    return "forgotten"


@server.tool()
def pid() -> str:
    """This server's process id."""
    return str(os.getpid())


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say so (long enough to be aborted)."""
    with open(os.environ.get("TOY_SLEEP_LOG", os.devnull), "a") as log:
        log.write(f"start {os.getpid()}\n")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    sys.stderr.write("toy: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def steps(count: int, pause: float, ctx: Context) -> str:
    """Take ``count`` steps of ``pause`` seconds, reporting progress after each."""
    for step in range(1, count + 1):
        await asyncio.sleep(pause)
        await ctx.report_progress(step, count, f"step {step}")
    return f"took {count} steps"


@server.tool()
def get_time() -> str:
    """A plain name that ``get.time`` (mode ``collide``) also becomes once made provider-safe."""
    return "plain"


def get_time_dotted() -> str:
    """A dotted name, as SEP-986 allows."""
    return "dotted"


@server.resource("toy://greeting", name="greeting", description="A friendly line", mime_type="text/plain")
def greeting() -> str:
    return "hello from the toy"


@server.resource("toy://pixel.png", name="pixel", mime_type="image/png")
def pixel_resource() -> bytes:
    return PNG_1PX


@server.resource("toy://items/{item}", name="item", description="One item by its id")
def item(item: str) -> str:
    return f"item {item}"


@server.prompt(name="review", description="Review a file for one concern")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path}, looking for {focus}."


@server.prompt(name="show", description="A prompt with an example answer and an image")
def show(subject: str) -> list[Message]:
    return [
        UserMessage(f"Describe {subject}."),
        AssistantMessage("A short description."),
        UserMessage(
            ImageContent(type="image", data=base64.b64encode(PNG_1PX).decode(), mime_type="image/png")
        ),
    ]


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else "stdio"
    if os.environ.get("TOY_PID_DIR"):  # lets a test check that no server outlives its session
        # Written beside the folder, then renamed in: a test that sees the file can read its mode
        # (write_text creates it empty first, and a test under load read "" there).
        pids = Path(os.environ["TOY_PID_DIR"])
        draft = pids.parent / f".toy-pid-{os.getpid()}"
        draft.write_text(mode)
        os.replace(draft, pids / str(os.getpid()))
    sys.stderr.write(f"toy: serving {mode}\n")
    sys.stderr.flush()
    if mode == "collide":
        server.add_tool(get_time_dotted, name="get.time")
    if mode == "mute":
        time.sleep(3600)
    if mode == "garbage":
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    if mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    elif mode == "sse":
        server.run("sse", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
