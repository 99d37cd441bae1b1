"""An agent with the tools of an MCP server: here the reference time server from PyPI.

    python examples/mcp_tools.py "What time is it in Tokyo?"

The server runs as ``uvx mcp-server-time`` (or the command line in $EXAMPLE_MCP_SERVER); its tools
reach the model as ``mcp__time__get_current_time`` and ``mcp__time__convert_time``. The model is
$EXAMPLE_MODEL (e.g. openai/gpt-5), else tether's default choice.
"""

import asyncio
import os
import shlex
import sys

import tether
from tether.mcp import McpServerConfig


def time_server() -> McpServerConfig:
    command = shlex.split(os.environ.get("EXAMPLE_MCP_SERVER", "uvx mcp-server-time"))
    return McpServerConfig("time", command=command[0], args=tuple(command[1:]), startup_timeout=60)


def answer_text(message: tether.AssistantMessage | None) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text") if message else ""


async def main(question: str) -> str | None:
    core = tether.create_agent_session(
        tether.AgentOptions(
            model=os.environ.get("EXAMPLE_MODEL"),
            tools=[],  # none of the built-in coding tools: only the server's
        ),
        mcp_servers=[time_server()],  # started now, in the background; stopped by close()
        session=tether.SessionChoice(persist=False),
    )
    try:
        async for event in core.prompt(question):
            if event["type"] == "tool_execution_end":
                result = event["result"].content
                print(f"{event['toolName']}: {' '.join(b['text'] for b in result if b['type'] == 'text')}")
        assert core.mcp is not None
        for server in core.mcp.statuses():  # a server that failed to start says why here
            error = server.error or "no error"
            print(f"[{server.name}: {server.status}, {len(server.tools)} tools, {error}]")
        answer = core.last_assistant()
        if answer is not None and answer["stopReason"] in ("error", "aborted"):
            return f"error: {answer.get('errorMessage')}"  # a failed reply: exit 1 saying why
        print(answer_text(core.last_assistant()))
    finally:
        await core.close()


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(" ".join(sys.argv[1:]) or "What time is it in Tokyo?")))
    except tether.TetherError as exc:  # no usable model, a bad setting: the message says what to do
        sys.exit(f"error: {exc}")
