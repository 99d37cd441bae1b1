"""The agent (``tether.agent.Agent``, default stream function) with a real tool, through a real
llama-cpp-python server.

A 135M model does not choose tools on its own, so the first run forces the tool with a named
``tool_choice`` and stops after that turn; the second run continues from the tool result without
forcing anything, so the model answers in text having seen the result.
"""

from __future__ import annotations

from typing import Any

import pytest

from tether.agent import Agent, TurnContext, tool
from tether.ai.types import SimpleStreamOptions
from tether.wire import ModelInfo

pytestmark = [pytest.mark.local_model, pytest.mark.subprocess]

FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


async def test_forced_tool_call_runs_the_tool_then_the_model_answers(model: ModelInfo) -> None:
    asked: list[str] = []

    @tool
    async def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        asked.append(city)
        return f"Sunny and 21 C in {city}."

    def stop_after_the_tool(turn: TurnContext) -> bool:
        return bool(turn.tool_results)

    agent = Agent(
        model=model,
        system_prompt="You are a helpful assistant.",
        tools=[get_weather],
        options=SimpleStreamOptions(max_tokens=40, temperature=0, tool_choice=FORCE_WEATHER),
        should_stop_after_turn=stop_after_the_tool,
    )
    events: list[str] = []
    agent.subscribe(lambda event, _signal: events.append(event["type"]))

    first = await agent.prompt("What is the weather in Paris?")
    user, call_message, result = first
    assert user["role"] == "user"
    assert call_message["role"] == "assistant" and call_message["stopReason"] == "toolUse"
    (call,) = call_message["content"]
    assert call["type"] == "toolCall" and call["name"] == "get_weather"
    assert asked == [call["arguments"]["city"]]  # the validated arguments reached the tool
    assert result["role"] == "toolResult" and not result["isError"]
    assert (result["toolCallId"], result["toolName"]) == (call["id"], "get_weather")
    assert result["content"] == [{"type": "text", "text": f"Sunny and 21 C in {asked[0]}."}]
    assert events.count("tool_execution_start") == events.count("tool_execution_end") == 1

    # Sends the tool call and its result back: the server must accept our tool history.
    agent.options = SimpleStreamOptions(max_tokens=16, temperature=0)
    (answer,) = await agent.continue_()
    assert answer["role"] == "assistant" and answer["stopReason"] in ("stop", "length")
    texts: list[Any] = [b for b in answer["content"] if b["type"] == "text"]
    assert texts and texts[0]["text"].strip()
    assert agent.messages == [*first, answer] and agent.error_message is None
