"""Session commands over RPC: compaction, fork/clone/switch, bash, stats, export, settings."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rpc_support import RpcEnv, next_of, text_reply, user_texts

from tether.rpc import RpcError

pytestmark = pytest.mark.subprocess


async def test_manual_compaction_emits_events_and_answers_with_the_summary(rpc: RpcEnv) -> None:
    rpc.settings(compaction={"keepRecentTokens": 1})
    rpc.script([text_reply("one okapi"), text_reply("two"), text_reply("SUMMARY: we said one and two")])
    async with rpc.spawn() as client:
        await client.prompt("first zebra")
        await client.prompt("second")
        events = client.events()
        result = await client.compact("keep it short")
        assert result["summary"] == "SUMMARY: we said one and two"
        assert result["tokensBefore"] > 0
        start = await next_of(events, "compaction_start")
        assert start == {"type": "compaction_start", "reason": "manual"}
        end = await next_of(events, "compaction_end")
        assert end["result"]["summary"] == result["summary"] and end["aborted"] is False
        assert end["willRetry"] is False
        messages = await client.get_messages()
        assert messages[0]["role"] == "compactionSummary"
        assert "first zebra" not in [m.get("content") for m in messages]  # compacted away
        assert (await client.get_state())["isCompacting"] is False
        # the page is the whole session, as pi's: what the compaction summarised too
        page = (rpc.project / await client.export_html("page.html")).read_text()
        assert "first zebra" in page and "one okapi" in page and "SUMMARY: we said one and two" in page


async def test_compaction_with_nothing_to_compact_is_an_error_response(rpc: RpcEnv) -> None:
    rpc.script([text_reply("hi")])
    async with rpc.spawn() as client:
        await client.prompt("short")
        events = client.events()
        with pytest.raises(RpcError, match="Compaction failed: nothing to compact"):
            await client.compact()
        end = await next_of(events, "compaction_end")
        assert "result" not in end and "nothing to compact" in end["errorMessage"]  # as pi sends it


async def test_threshold_compaction_runs_before_the_model_call(rpc: RpcEnv) -> None:
    # The scripted model's window is 100000 tokens: reserving 99990 makes any real context "full".
    rpc.settings(compaction={"reserveTokens": 99_990, "keepRecentTokens": 1})
    rpc.script([text_reply("one " * 20), text_reply("SUMMARY"), text_reply("two")])
    async with rpc.spawn() as client:
        await client.prompt("first " * 20)
        events = client.events()
        assert (await client.prompt("second"))["status"] == "completed"
        assert (await next_of(events, "compaction_start"))["reason"] == "threshold"
        await client.set_auto_compaction(False)
        assert (await client.get_state())["autoCompactionEnabled"] is False


async def test_fork_switch_and_clone(rpc: RpcEnv) -> None:
    rpc.script([text_reply("A1"), text_reply("A2")])
    async with rpc.spawn() as client:
        await client.prompt("question one")
        await client.prompt("question two")
        original = (await client.get_state())["sessionId"]
        assert original is not None
        forkable = await client.get_fork_messages()
        assert [m["text"] for m in forkable] == ["question one", "question two"]

        forked = await client.fork(forkable[1]["entryId"])
        assert forked == {"text": "question two", "cancelled": False}
        state = await client.get_state()
        assert state["sessionId"] not in (None, original)
        assert user_texts(await client.get_messages()) == ["question one"]

        cloned = await client.clone()
        assert cloned == {"cancelled": False}
        clone_id = (await client.get_state())["sessionId"]
        assert clone_id not in (original, state["sessionId"])
        assert user_texts(await client.get_messages()) == ["question one"]

        assert await client.switch_session(original) == {"cancelled": False}
        assert (await client.get_state())["sessionId"] == original
        assert user_texts(await client.get_messages()) == ["question one", "question two"]

        with pytest.raises(RpcError, match="has no entry 'nope'"):
            await client.fork("nope")
        with pytest.raises(RpcError):
            await client.switch_session("no-such-session")


async def test_new_session_records_the_parent_it_is_given_as_a_fork_does(rpc: RpcEnv) -> None:
    """``new_session``'s ``parentSession`` (an id or a ``sessionFile``) is recorded as the new
    session's parent, as pi's ``newSession({parentSession})`` does; tether accepted it and dropped
    it. A fork at the first user message is linked too (tether's sessions start with settings
    entries, so it copies those; a session with none takes the ``new_session`` way)."""
    from tether.session.manager import SessionManager

    rpc.script([text_reply("A1"), text_reply("B1"), text_reply("C1")])
    async with rpc.spawn() as client:
        await client.prompt("question one")
        state = await client.get_state()
        original, session_file = state["sessionId"], state["sessionFile"]
        assert original is not None and session_file is not None
        [first] = await client.get_fork_messages()
        assert await client.fork(first["entryId"]) == {"text": "question one", "cancelled": False}
        assert (await client.get_state())["messageCount"] == 0
        await client.prompt("question again")
        forked = (await client.get_state())["sessionId"]
        assert await client.new_session(parent_session=session_file) == {"cancelled": False}
        await client.prompt("a child by name")
        child = (await client.get_state())["sessionId"]
        assert await client.new_session() == {"cancelled": False}
        await client.prompt("an orphan")
        orphan = (await client.get_state())["sessionId"]
    store_path = session_file.rpartition("/")[0]
    with SessionManager.at(store_path) as sessions:
        parents = {record.id: record.parent_session_id for record in sessions.list()}
    assert parents[forked] == original and parents[child] == original
    assert parents[orphan] is None and parents[original] is None


async def test_new_session_starts_empty_and_names_are_kept(rpc: RpcEnv) -> None:
    rpc.script([text_reply("hello")])
    async with rpc.spawn() as client:
        await client.prompt("hi")
        await client.set_session_name("  my work  ")
        assert (await client.get_state())["sessionName"] == "my work"
        with pytest.raises(RpcError, match="cannot be empty"):
            await client.set_session_name("   ")
        before = (await client.get_state())["sessionId"]
        assert await client.new_session() == {"cancelled": False}
        state = await client.get_state()
        assert state["sessionId"] != before and state["messageCount"] == 0
        assert "sessionName" not in state


async def test_name_option_names_the_session_as_pi_does(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn("-n", "  my task ") as client:
        assert (await client.get_state())["sessionName"] == "my task"
    refused = subprocess.run(
        [*rpc.argv("--name", "x", "--no-session")],
        cwd=rpc.project,
        env=rpc.env(),
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert (
        refused.stderr
        == "tether: --name names the stored session this run writes: drop --no-session/--follow\n"
    )


async def test_bash_streams_its_output_and_records_it_for_the_next_prompt(rpc: RpcEnv) -> None:
    rpc.script([text_reply("seen")])
    async with rpc.spawn() as client:
        events = client.events()
        result = await client.bash("echo from-bash; sleep 0.2; echo more; exit 3")
        assert result == {
            "output": "from-bash\nmore\n",
            "exitCode": 3,
            "cancelled": False,
            "truncated": False,
        }
        (bash_id,) = {f["id"] for f in client.frames if f.get("command") == "bash"}
        updates = [f for f in client.frames if f["type"] == "bash_execution_update"]
        assert len(updates) == 2 and all(list(f) == ["type", "id", "delta"] for f in updates)  # pi 1.6's
        assert {f["id"] for f in updates} == {bash_id}
        assert "".join(f["delta"] for f in updates) == result["output"]
        messages = await client.get_messages()
        assert messages[-1]["role"] == "bashExecution" and "excludeFromContext" not in messages[-1]
        await client.bash("echo private", exclude_from_context=True)
        assert (await client.get_messages())[-1]["excludeFromContext"] is True
        await client.prompt("what did it print?")
        kinds = [f["type"] async for f in _until_settled(events)]
        assert kinds.count("bash_execution_update") == 3 and "agent_start" in kinds


async def _until_settled(events: AsyncIterator[Any]) -> AsyncIterator[dict[str, Any]]:
    async for frame in events:
        if isinstance(frame, dict):
            yield frame
            if frame["type"] == "agent_settled":
                return


async def test_abort_bash_cancels_a_running_command(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn() as client:
        running = asyncio.create_task(client.bash("sleep 30"))
        await asyncio.sleep(0.5)
        await client.abort_bash()
        result = await asyncio.wait_for(running, 10)
        assert result["cancelled"] is True


async def test_abort_bash_cancels_every_command_running(rpc: RpcEnv) -> None:
    """A second ``bash`` while one runs took the place of the first's abort, and dropped it when
    it ended: ``abort_bash`` (and closing stdin) no longer reached the first, which ran on."""
    rpc.script([])
    async with rpc.spawn() as client:
        long = asyncio.create_task(client.bash("sleep 30"))
        await asyncio.sleep(0.5)
        short = await client.bash("true")
        assert short["cancelled"] is False
        await client.abort_bash()
        assert (await asyncio.wait_for(long, 10))["cancelled"] is True


async def test_stats_export_and_model_commands(rpc: RpcEnv) -> None:
    rpc.script([text_reply("answer")])
    async with rpc.spawn() as client:
        await client.prompt("q")
        stats = await client.get_session_stats()
        assert (stats["userMessages"], stats["assistantMessages"], stats["totalMessages"]) == (1, 1, 2)
        assert stats["contextUsage"]["contextWindow"] == 100000

        html = await client.export_html()
        assert html.endswith(".html") and "answer" in (rpc.project / html).read_text()
        exported = await client.export(str(rpc.home / "out.jsonl"))
        lines = (rpc.home / "out.jsonl").read_text().splitlines()
        assert exported == str(rpc.home / "out.jsonl") and json.loads(lines[0])
        with pytest.raises(RpcError, match=r"must end in \.html"):
            await client.export_html("x.txt")

        models = await client.get_available_models()
        assert models[0]["provider"] == "scripted"
        assert await client.cycle_model() is None  # no key in the test env: nothing to cycle to
        with pytest.raises(RpcError, match="Model not found"):
            await client.set_model("nowhere", "nothing")
        assert (await client.set_model("scripted", "script"))["provider"] == "scripted"

        await client.set_thinking_level("high")
        assert (await client.get_state())["thinkingLevel"] == "off"  # the scripted model does not reason
        assert await client.cycle_thinking_level() is None
        assert await client.get_available_thinking_levels() == ["off"]
        await client.set_steering_mode("all")
        await client.set_follow_up_mode("all")
        state = await client.get_state()
        assert (state["steeringMode"], state["followUpMode"]) == ("all", "all")
        assert await client.get_commands() == []
        await client.abort_retry()


async def test_context_overflow_compacts_and_continues_by_itself(rpc: RpcEnv) -> None:
    rpc.settings(compaction={"keepRecentTokens": 1})
    rpc.script(
        [
            text_reply("one"),
            {"content": [], "error": "prompt is too long: 210000 tokens > 200000 maximum"},
            text_reply("SUMMARY of one"),
            text_reply("recovered"),
        ]
    )
    async with rpc.spawn() as client:
        await client.prompt("first")
        events = client.events()
        assert (await client.prompt("second"))["status"] == "completed"
        assert (await next_of(events, "compaction_start"))["reason"] == "overflow"
        end = await next_of(events, "compaction_end")
        assert end["willRetry"] is True and end["result"]["summary"] == "SUMMARY of one"
        assert await client.get_last_assistant_text() == "recovered"
        messages = await client.get_messages()
        assert messages[0]["role"] == "compactionSummary"
        assert all(m.get("stopReason") != "error" for m in messages)  # the failed reply is off the path


async def test_slash_commands_in_a_prompt_run_in_the_core_never_reach_the_model(rpc: RpcEnv) -> None:
    rpc.script([text_reply("one"), text_reply("two"), text_reply("about frob")])
    async with rpc.spawn() as client:
        await client.prompt("first")
        await client.prompt("second")
        entries = (await client.get_entries())["entries"]
        first_answer = next(
            e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"
        )
        tree = await client.request("prompt", message="/tree")
        assert tree["disposition"] == "handled" and first_answer["id"] in tree["text"]
        branched = await client.request("prompt", message=f"/tree {first_answer['id']}")
        assert branched["text"] == f"now on entry {first_answer['id']}"
        assert user_texts(await client.get_messages()) == ["first"]
        named = await client.request("prompt", message="/name greeting")
        assert named["text"] == "session named 'greeting'"
        assert "greeting" in (await client.request("prompt", message="/session"))["text"]
        with pytest.raises(RpcError, match="/quit does not work over RPC: send the shutdown command"):
            await client.request("prompt", message="/quit")
        with pytest.raises(RpcError, match="usage: /thinking"):
            await client.request("prompt", message="/thinking loud")
        # an unknown /word is a prompt, as in pi
        assert (await client.prompt("/frob is a word"))["status"] == "completed"
        said = user_texts(await client.get_messages())
        assert said == ["first", "/frob is a word"]  # no command text went to the model


async def test_a_resumed_session_records_another_model_with_its_next_turn_not_at_start(rpc: RpcEnv) -> None:
    """As pi 1.6: opening a stored session with another ``--model`` writes nothing to it (quit
    before a prompt and the session is as it was); the model is recorded once a turn runs on it,
    before that turn's messages. (A stored scripted model is not restored by a resume, so each
    start names its model.)"""
    first = rpc.script([text_reply("from a"), text_reply("a again")], name="a")
    other = rpc.script([text_reply("from b")], name="b")
    async with rpc.spawn("--model", f"scripted:{first}") as client:
        await client.prompt("q1")
        session_id = (await client.get_state())["sessionId"]
        stored = (await client.get_entries())["entries"]
    assert [e["modelId"] for e in stored if e["type"] == "model_change"] == ["a"]

    async with rpc.spawn("--session", session_id, "--model", f"scripted:{other}") as client:
        assert (await client.get_state())["model"]["id"] == "b"
        assert (await client.get_entries())["entries"] == stored  # opening wrote nothing
    async with rpc.spawn("--session", session_id, "--model", f"scripted:{first}") as client:
        assert (await client.get_entries())["entries"] == stored  # nor did closing it

    async with rpc.spawn("--session", session_id, "--model", f"scripted:{other}") as client:
        await client.prompt("q2")
        entries = (await client.get_entries())["entries"]
    added = entries[len(stored) :]
    assert [(e["type"], e.get("modelId") or e.get("message", {}).get("role")) for e in added] == [
        ("model_change", "b"),
        ("message", "user"),
        ("message", "assistant"),
    ]
