"""Your own `tether.Agent` (your prompt, your tools, no coding tools) bound to an `AgentSession`;
without $EXAMPLE_MODEL it runs on a scripted model, the way your tests can.

    EXAMPLE_MODEL=anthropic/claude-sonnet-4-5 python examples/own_agent.py
"""

import asyncio
import os

import tether


@tether.tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def build_agent() -> tether.Agent:
    spec = os.environ.get("EXAMPLE_MODEL")
    if spec:
        model = tether.find_model(spec)
        return tether.Agent(model=model, system_prompt="Be brief.", tools=[word_count])
    scripted = tether.ScriptedModel(
        [
            tether.reply(tether.tool_call("word_count", {"text": "to be or not to be"})),
            tether.reply("It has 6 words."),
        ]
    )
    return tether.Agent(model=scripted.model, stream_fn=scripted, tools=[word_count])


async def main() -> None:
    core = tether.AgentSession(build_agent())  # no session: the transcript stays in memory
    try:
        added = await core.prompt("How many words are in 'to be or not to be'?")
        for message in added:
            print(message["role"], message.get("content"))
    finally:
        await core.close()


if __name__ == "__main__":
    asyncio.run(main())
