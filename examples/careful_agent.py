"""An agent that may change files, on a short leash: asked-for tools, an approval callback, a
tool that honours abort, the retry policy spelled out, a typed answer, and errors as exceptions.

    python examples/careful_agent.py

The model is $EXAMPLE_MODEL (e.g. anthropic/claude-sonnet-4-5), else tether's default choice.
"""

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel

import tether


class Summary(BaseModel):
    files: list[str]
    verdict: str


async def approve(tool_call: tether.ToolCall, question: str) -> bool:
    """Asked before a risky call (a write outside the workspace, bash unsandboxed): here, no."""
    print(f"approve? {question} -> no")
    return False


@tether.tool
async def slow_count(path: str, signal: tether.AbortSignal) -> int:
    """Count the lines of a file, slowly."""
    for _ in range(50):
        if signal.aborted:  # stop early when the run is aborted
            raise RuntimeError("aborted")
        await asyncio.sleep(0.01)
    return len(Path(path).read_text().splitlines())


async def main() -> None:
    core = tether.create_agent_session(
        tether.AgentOptions(
            model=os.environ.get("EXAMPLE_MODEL"),
            tools=[*tether.coding_tools(Path.cwd()), slow_count],  # asked for: writes and bash too
        ),
        ask=approve,  # without it, risky calls are refused
        settings=tether.Settings(retry=tether.RetrySettings(max_retries=2, max_delay_ms=10_000)),
        session=tether.SessionChoice(persist=False),
    )
    try:
        summary = await core.run("Look at this folder, then summarise it.", output=Summary)
        print(f"files: {summary.files}; verdict: {summary.verdict}")
    except tether.OutputError as exc:  # no valid answer: the model or the provider failed
        print(f"no summary ({exc.reason}): {exc}")
    finally:
        await core.close()  # returns within about a second, whatever a tool does


asyncio.run(main())
