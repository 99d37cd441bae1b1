"""Stream one reply from the coding agent, token by token.

    python examples/stream_reply.py "What is a monad, in one paragraph?"

The model is $EXAMPLE_MODEL (e.g. anthropic/claude-sonnet-4-5), else tether's default choice.
"""

import asyncio
import os
import sys

import tether


async def main(question: str) -> str | None:
    core = tether.create_agent_session(
        tether.AgentOptions(
            model=os.environ.get("EXAMPLE_MODEL"),
            tools=[],  # no built-in tools: just talk
        ),
        session=tether.SessionChoice(persist=False),  # keep nothing on disk
    )
    try:
        async for event in core.prompt(question):
            if event["type"] == "message_update":
                delta = event["assistantMessageEvent"]
                if delta["type"] == "text_delta":
                    print(delta["delta"], end="", flush=True)
        print()
        answer = core.last_assistant()
        if answer is not None and answer["stopReason"] in ("error", "aborted"):
            return f"error: {answer.get('errorMessage')}"  # a failed reply: exit 1 saying why
    finally:
        await core.close()


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(" ".join(sys.argv[1:]) or "Say hello in five words.")))
    except tether.TetherError as exc:  # no usable model, a bad setting: the message says what to do
        sys.exit(f"error: {exc}")
