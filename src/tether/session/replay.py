"""Replaying stored messages as agent events, so a UI renders a resumed session with the same
code that renders a live run.

The shape follows the agent loop: ``agent_start``; per turn a ``turn_start``, the messages that
led to the assistant reply, the reply, then for each tool result ``tool_execution_start``/``end``
and the result message; ``turn_end``; finally ``agent_end`` with every replayed message. No
``message_update`` events: a stored message is already complete. Trailing prompts that never got
a reply stay in an open turn (no ``turn_end``), as in a run that was interrupted there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

from tether.agent import AgentEvent, AgentToolResult
from tether.wire import AgentMessage, ToolResultMessage


def replay_events(messages: Sequence[AgentMessage]) -> Iterator[AgentEvent]:
    yield {"type": "agent_start"}
    in_turn = False
    assistant: AgentMessage | None = None
    results: list[ToolResultMessage] = []
    calls: dict[str, dict[str, Any]] = {}
    for message in messages:
        role = message["role"]
        if role != "toolResult" and assistant is not None:
            yield {"type": "turn_end", "message": assistant, "toolResults": results}
            in_turn, assistant, results, calls = False, None, [], {}
        if not in_turn:
            yield {"type": "turn_start"}
            in_turn = True
        if message["role"] == "toolResult":
            call_id = message["toolCallId"]
            name = message["toolName"]
            args = calls.get(call_id, {}).get("arguments", {})
            yield {"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args}
            result = AgentToolResult[Any](content=list(message["content"]), details=message.get("details"))
            yield {
                "type": "tool_execution_end",
                "toolCallId": call_id,
                "toolName": name,
                "result": result,
                "isError": message["isError"],
            }
            results.append(message)
        yield {"type": "message_start", "message": message}
        yield {"type": "message_end", "message": message}
        if role == "assistant":
            assistant = message
            for block in cast(list[Any], message.get("content") or []):
                if isinstance(block, dict) and block.get("type") == "toolCall":  # pyright: ignore[reportUnknownMemberType]
                    call = cast(dict[str, Any], block)
                    calls[str(call.get("id"))] = call
    if assistant is not None:
        yield {"type": "turn_end", "message": assistant, "toolResults": results}
    yield {"type": "agent_end", "messages": list(messages)}
