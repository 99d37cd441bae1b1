"""``tether --mode rpc`` end to end with the scripted model: prompts, steering, follow-ups, abort,
retry. Every frame the server writes is checked against the committed schema (``CheckedClient``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from rpc_support import RpcEnv, bash_reply, next_of, text_reply, user_texts

from tether.rpc import RpcError
from tether.rpc.server import run_error

pytestmark = pytest.mark.subprocess


async def test_prompt_streams_pi_events_then_prompt_result(rpc: RpcEnv) -> None:
    rpc.script([text_reply("Hel", "lo ", "there")])
    async with rpc.spawn() as client:
        assert client.ready is not None and client.ready["protocolVersion"] == 1
        events = client.events()
        result = await client.prompt("hi")
        assert result == {"type": "prompt_result", "id": result["id"], "status": "completed"}
        kinds: list[str] = []
        deltas: list[str] = []
        while True:
            frame: Mapping[str, Any] = await asyncio.wait_for(events.__anext__(), 5)
            assert isinstance(frame, dict)
            kinds.append(frame["type"])
            if frame["type"] == "message_update" and frame["assistantMessageEvent"]["type"] == "text_delta":
                deltas.append(frame["assistantMessageEvent"]["delta"])
                assert "partial" not in frame["assistantMessageEvent"] and "message" not in frame
            if frame["type"] == "prompt_result":
                break
        assert kinds[:3] == ["agent_start", "turn_start", "message_start"]
        assert kinds[-4:] == ["turn_end", "agent_end", "agent_settled", "prompt_result"]
        assert deltas == ["Hel", "lo ", "there"]
        messages = await client.get_messages()
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert await client.get_last_assistant_text() == "Hello there"
        state = await client.get_state()
        assert state["isStreaming"] is False and state["messageCount"] == 2
        assert state["sessionId"] == client.ready["sessionId"]
    assert client.process.returncode == 0


async def test_steering_during_tool_execution_reaches_the_next_model_call(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("sleep 1; echo slept"), text_reply("steered answer")])
    async with rpc.spawn("--yes") as client:
        events = client.events()
        run = asyncio.create_task(client.prompt("do the thing"))
        await next_of(events, "tool_execution_start")
        await client.steer("actually, do the other thing")
        queued = await next_of(events, "queue_update")
        assert queued["steering"] == ["actually, do the other thing"]
        assert (await run)["status"] == "completed"
        messages = await client.get_messages()
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant", "toolResult", "user", "assistant"]
        assert "slept" in messages[2]["content"][0]["text"]
        assert user_texts(messages) == ["do the thing", "actually, do the other thing"]
        assert (await client.get_state())["pendingMessageCount"] == 0


async def test_prompt_while_running_needs_streaming_behavior(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("sleep 1"), text_reply("first done"), text_reply("follow-up done")])
    async with rpc.spawn("--yes") as client:
        events = client.events()
        first = asyncio.create_task(client.prompt("first"))
        await next_of(events, "tool_execution_start")
        with pytest.raises(RpcError, match="streamingBehavior"):
            await client.prompt("no behaviour given")
        second = asyncio.create_task(client.prompt("then this", streaming_behavior="followUp"))
        results = await asyncio.gather(first, second)
        assert [r["status"] for r in results] == ["completed", "completed"]
        messages = await client.get_messages()
        assert user_texts(messages) == ["first", "then this"]
        assert messages[-1]["content"][0]["text"] == "follow-up done"


async def test_follow_up_command_runs_after_the_agent_would_stop(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("sleep 0.5"), text_reply("one"), text_reply("two")])
    async with rpc.spawn("--yes") as client:
        events = client.events()
        run = asyncio.create_task(client.prompt("start"))
        await next_of(events, "tool_execution_start")
        await client.follow_up("and afterwards this")
        assert (await next_of(events, "queue_update"))["followUp"] == ["and afterwards this"]
        await run
        messages = await client.get_messages()
        assert [m["role"] for m in messages] == [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant",
        ]
        assert await client.get_last_assistant_text() == "two"


async def test_abort_stops_a_running_tool_and_the_prompt_settles_as_aborted(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("sleep 30"), text_reply("never")])
    async with rpc.spawn("--yes") as client:
        events = client.events()
        run = asyncio.create_task(client.prompt("wait forever"))
        await next_of(events, "tool_execution_start")
        started = asyncio.get_running_loop().time()
        await client.abort()
        result = await asyncio.wait_for(run, 10)
        assert result["status"] == "aborted"
        assert asyncio.get_running_loop().time() - started < 10
        state = await client.get_state()
        assert state["isStreaming"] is False


async def test_transient_error_is_retried_with_events(rpc: RpcEnv) -> None:
    rpc.settings(retry={"baseDelayMs": 20})
    rpc.script(
        [
            {"content": [], "error": "529 overloaded_error: Overloaded"},
            text_reply("worked the second time"),
        ]
    )
    async with rpc.spawn() as client:
        events = client.events()
        result = await client.prompt("hi")
        assert result["status"] == "completed"
        start = await next_of(events, "auto_retry_start")
        assert start["attempt"] == 1 and start["delayMs"] == 20 and "overloaded" in start["errorMessage"]
        end = await next_of(events, "auto_retry_end")
        assert end == {"type": "auto_retry_end", "success": True, "attempt": 1}
        messages = await client.get_messages()
        assert [m["role"] for m in messages] == ["user", "assistant"]  # the failure is off the path
        assert await client.get_last_assistant_text() == "worked the second time"


async def test_retry_disabled_leaves_the_error_and_prompt_result_says_so(rpc: RpcEnv) -> None:
    rpc.script([{"content": [], "error": "503 service unavailable"}])
    async with rpc.spawn() as client:
        await client.set_auto_retry(False)
        assert (await client.get_state())["autoRetryEnabled"] is False
        result = await client.prompt("hi")
        assert result["status"] == "error" and "503" in result.get("error", "")


async def test_event_filter_excludes_events_and_gives_back_pi073_snapshots(rpc: RpcEnv) -> None:
    rpc.script([text_reply("a", "b"), text_reply("c")])
    async with rpc.spawn() as client:
        assert (await client.set_event_filter()) == {"exclude": [], "messageUpdate": "delta"}
        await client.prompt("hi")
        updates: list[dict[str, Any]] = [
            f for f in client.frames if isinstance(f, dict) and f["type"] == "message_update"
        ]
        assert updates and all(
            set(f) == {"type", "usage", "assistantMessageEvent"}
            and "partial" not in f["assistantMessageEvent"]
            for f in updates
        )  # pi 1.x's frame by default
        applied = await client.set_event_filter(exclude=["turn_start", "turn_end"], message_update="full")
        assert applied == {"exclude": ["turn_end", "turn_start"], "messageUpdate": "full"}
        events = client.events()
        since = len(client.frames)
        await client.prompt("again")
        seen: list[dict[str, Any]] = [f for f in client.frames[since:] if isinstance(f, dict)]
        updates = [f for f in seen if f["type"] == "message_update"]
        assert updates and all(
            list(f) == ["type", "message", "usage", "assistantMessageEvent"]
            and "partial" in f["assistantMessageEvent"]
            for f in updates
        )  # pi 0.73's snapshots, with 1.x's usage
        assert [
            f["assistantMessageEvent"].get("delta")
            for f in updates
            if f["assistantMessageEvent"]["type"] == "text_delta"
        ] == ["c"]
        assert not any(f["type"] in ("turn_start", "turn_end") for f in seen)
        await events.aclose()
        with pytest.raises(RpcError, match="unknown event type"):
            await client.set_event_filter(exclude=["no_such_event"])


def test_a_failed_run_is_reported_in_one_line() -> None:
    assert run_error(ValueError("bad\nmore")) == "bad"
    assert run_error(RuntimeError()) == "RuntimeError"


async def test_retries_give_up_after_max_retries(rpc: RpcEnv) -> None:
    rpc.settings(retry={"baseDelayMs": 1, "maxRetries": 2})
    overloaded: dict[str, Any] = {"content": [], "error": "429 rate limit reached"}
    rpc.script([overloaded, overloaded, overloaded])
    async with rpc.spawn() as client:
        events = client.events()
        result = await client.prompt("hi")
        assert result["status"] == "error" and "429" in result.get("error", "")
        starts = [await next_of(events, "auto_retry_start") for _ in range(2)]
        assert [s["attempt"] for s in starts] == [1, 2] and [s["delayMs"] for s in starts] == [1, 2]
        end = await next_of(events, "auto_retry_end")
        assert end["success"] is False and end["attempt"] == 2 and "429" in end["finalError"]


async def test_unknown_commands_and_bad_parameters_are_errors_naming_them(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn() as client:
        with pytest.raises(RpcError, match="Unknown command: teleport"):
            await client.request("teleport")
        with pytest.raises(
            RpcError, match=r"bad parameters for set_thinking_level: level: Input should be 'off'"
        ):
            await client.request("set_thinking_level", level="extreme")
        with pytest.raises(RpcError, match=r"no open extension dialog with id .*no extensions"):
            await client.request("extension_ui_response", value="x")
        assert (await client.get_state())["isStreaming"] is False  # still serving
