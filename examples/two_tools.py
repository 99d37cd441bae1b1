"""An agent with two tools of your own: one async, one a plain function.

    python examples/two_tools.py "What is the weather in Lisbon, and what is 17 * 23?"

The model is $EXAMPLE_MODEL (e.g. openai/gpt-5), else tether's default choice.
"""

import asyncio
import os
import sys

import tether


@tether.tool
async def weather(city: str) -> str:
    """The current weather in a city."""
    await asyncio.sleep(0.1)  # stands for an HTTP call
    return f"{city}: 21°C, clear sky"


@tether.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b  # a plain function runs in a worker thread


def answer_text(message: tether.AssistantMessage | None) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text") if message else ""


async def main(question: str) -> str | None:
    core = tether.create_agent_session(
        tether.AgentOptions(
            model=os.environ.get("EXAMPLE_MODEL"),
            tools=[],  # none of the built-in coding tools, only ours
        ),
        extra_tools=[weather, multiply],
        session=tether.SessionChoice(persist=False),
    )
    try:
        async for event in core.prompt(question):
            if event["type"] == "tool_execution_start":
                print(f"-> {event['toolName']}({event['args']})")
            elif event["type"] == "tool_execution_end":
                print(f"<- {event['toolName']}: {event['result'].content}")
        answer = core.last_assistant()
        if answer is not None and answer["stopReason"] in ("error", "aborted"):
            return f"error: {answer.get('errorMessage')}"  # a failed reply: exit 1 saying why
        print(answer_text(core.last_assistant()))
    finally:
        await core.close()


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(" ".join(sys.argv[1:]) or "Weather in Lisbon? And 17 * 23?")))
    except tether.TetherError as exc:  # no usable model, a bad setting: the message says what to do
        sys.exit(f"error: {exc}")
