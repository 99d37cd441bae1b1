"""Drive `tether --mode rpc` (the coding agent in a child process) with `tether.RpcClient`.

    python examples/rpc_client.py "Which Python files are in this folder?"

The child works in this folder with the built-in tools; risky calls (bash, writes) are refused
since nobody can approve them (put "--yes" in `args` to allow them). The model is $EXAMPLE_MODEL, else
tether's default choice.
"""

import asyncio
import os
import sys
from collections.abc import AsyncIterator

import tether
from tether.rpc import ServerEvent


async def show_text(events: AsyncIterator[ServerEvent]) -> None:
    async for frame in events:
        if isinstance(frame, dict) and frame["type"] == "message_update":
            delta = frame["assistantMessageEvent"]
            if delta["type"] == "text_delta":
                print(delta.get("delta", ""), end="", flush=True)
        elif isinstance(frame, dict) and frame["type"] == "prompt_result":
            return


async def main(question: str) -> None:
    model = os.environ.get("EXAMPLE_MODEL")
    args = ["--no-session", *(["--model", model] if model else [])]
    async with tether.RpcClient.spawn(args) as client:
        printer = asyncio.create_task(show_text(client.events()))  # subscribe before prompting
        result = await client.prompt(question)
        await printer
        print(f"\n[{result['status']}]")
        stats = await client.get_session_stats()
        print(f"messages: {stats['totalMessages']}")


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Which Python files are in this folder?"))
