"""Steer a running agent: a message typed while a tool works reaches the model's next call.

    python examples/steering.py

The model is $EXAMPLE_MODEL (e.g. anthropic/claude-sonnet-4-5), else tether's default choice.
"""

import asyncio
import os

import tether


@tether.tool
async def slow_search(query: str) -> str:
    """Search the archive (slow)."""
    await asyncio.sleep(1)
    return f"3 documents match {query!r}"


async def main() -> None:
    core = tether.create_agent_session(
        tether.AgentOptions(model=os.environ.get("EXAMPLE_MODEL"), tools=[]),
        extra_tools=[slow_search],
        session=tether.SessionChoice(persist=False),
    )
    try:
        async for event in core.prompt("Use slow_search to look for 'tether', then summarise."):
            if event["type"] == "tool_execution_start":
                core.steer("Answer in French, please.")  # not async: it only queues
            elif event["type"] == "queue_update":
                print(f"queued for the next model call: {event['steering']}")
        for message in core.messages:
            print(f"{message['role']}: {tether.message_text(message)}")
    finally:
        await core.close()


if __name__ == "__main__":
    asyncio.run(main())
