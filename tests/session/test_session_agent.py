"""``AgentSession``: the stateful ``Agent`` on a durable session."""

from __future__ import annotations

import gc
import weakref
from typing import Any, cast

from narrowing import content_of
from session_helpers import text
from tether.agent import Agent, default_convert_to_llm
from tether.session import AgentSession, CompactionSettings, PromptEditor, SessionManager, Settings
from tether.session.events import QueueSnapshot
from tether.session.settings import Retry
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, reply
from tether.wire import ModelInfo


async def test_agent_runs_are_recorded_and_resume_into_a_new_agent(manager: SessionManager) -> None:
    model = ScriptedModel([reply("first answer"), reply("second answer")])
    s = manager.create("/p")
    bound = AgentSession(
        Agent(model=model.model, stream_fn=model, system_prompt="Be kind.", thinking_level="low"), s
    )
    await bound.prompt("hello")
    assert [m["role"] for m in s.messages] == ["user", "assistant"]
    assert s.messages == bound.agent.messages
    # The agent's settings became entries at the start of the run.
    ctx = s.context
    assert (ctx.system_prompt, ctx.thinking_level) == ("Be kind.", "low")
    assert ctx.model is not None and ctx.model.model_id == model.model["id"]
    await bound.close()

    resumed = manager.open(s.id)
    agent = Agent(stream_fn=model)  # no model, default settings: all come from the session
    again = AgentSession(agent, resumed)
    assert agent.model == model.model and agent.system_prompt == "Be kind." and agent.thinking_level == "low"
    assert agent.messages == s.messages
    await again.prompt("and again")
    assert len(model.requests[-1].context["messages"]) == 3
    assert model.requests[-1].options is not None and model.requests[-1].options.reasoning == "low"
    agent.thinking_level = "high"
    model.push(reply("third"))
    await again.prompt("think harder")
    assert resumed.context.thinking_level == "high"
    assert [e["type"] for e in resumed.path()][-3:] == ["thinking_level_change", "message", "message"]


async def test_hooks_and_overflow_recovery_through_the_agent(manager: SessionManager) -> None:
    words = "alpha beta gamma delta " * 50
    model = ScriptedModel([reply(f"answer {i}: {words}") for i in range(3)])
    s = manager.create("/p")

    def tag(editor: PromptEditor) -> None:
        editor.append_to("last-user", [text("[tagged]")])

    bound = AgentSession(
        Agent(model=model.model, stream_fn=model),
        s,
        hooks=[tag],
        settings=Settings(compaction=CompactionSettings(keep_recent_tokens=300)),
    )
    for i in range(3):
        await bound.prompt(f"question {i}: {words}")
    assert model.requests[0].context["messages"][-1]["content"][-1] == text("[tagged]")  # type: ignore[index]
    assert all("[tagged]" not in str(content_of(m)) for m in s.messages)
    model.push(
        reply(error="This model's maximum context length is 8192 tokens"), reply("SUMMARY"), reply("ok")
    )
    added = await bound.prompt("last one")
    assert [m.get("stopReason") for m in added if m["role"] == "assistant"] == ["error", "stop"]
    assert bound.compactions == 1
    assert s.messages[0]["role"] == "compactionSummary"
    assert bound.agent.messages == s.messages
    summary_prompt = cast(str, model.requests[-2].context["messages"][0]["content"])
    assert summary_prompt.startswith("<conversation>")


async def test_a_run_ends_with_agent_settled_after_its_retries(manager: SessionManager) -> None:
    """``agent_end`` closes each pass and says whether the session retries it; ``agent_settled``
    comes once, last, when nothing more runs on its own."""
    model = ScriptedModel([reply(error="529 overloaded_error: Overloaded"), reply("second time")])
    bound = AgentSession(
        Agent(model=model.model, stream_fn=model),
        manager.create("/p"),
        settings=Settings(retry=Retry(base_delay_ms=1)),
    )
    events: list[dict[str, Any]] = []
    bound.subscribe(lambda e: events.append(cast(dict[str, Any], e)))
    await bound.prompt("hi")
    kinds = [e["type"] for e in events]
    assert [e["willRetry"] for e in events if e["type"] == "agent_end"] == [True, False]
    assert kinds.index("auto_retry_start") < kinds.index("auto_retry_end") < kinds.index("agent_settled")
    assert kinds.count("agent_settled") == 1 and events[-1] == {"type": "agent_settled", "aborted": False}

    bound.auto_retry = False
    model.push(reply(error="529 overloaded_error: Overloaded"))
    events.clear()
    await bound.prompt("again")
    assert [e["willRetry"] for e in events if e["type"] == "agent_end"] == [False]
    assert events[-1] == {"type": "agent_settled", "aborted": False}
    await bound.close()


async def test_queued_messages_have_dispositions_clear_queue_takes_them_back_and_abort_settles(
    manager: SessionManager,
) -> None:
    model = ScriptedModel([reply("a long answer " * 50)])
    bound = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"))
    events: list[dict[str, Any]] = []
    taken: list[QueueSnapshot] = []

    def on_event(event: Any) -> None:
        events.append(event)
        if event["type"] == "message_update" and not taken:
            assert bound.steer("turn left") == "queued"
            assert bound.follow_up("then stop") == "queued"
            taken.append(bound.clear_queue())
            bound.abort()

    bound.subscribe(on_event)
    await bound.prompt("go")
    assert taken == [QueueSnapshot(("turn left",), ("then stop",))]
    assert bound.queued() == QueueSnapshot((), ())
    assert events[-1] == {"type": "agent_settled", "aborted": True}
    assert [e for e in events if e["type"] == "queue_update"][-1] == {
        "type": "queue_update",
        "steering": [],
        "followUp": [],
    }
    assert not [m for m in bound.messages if m["role"] == "user" and m["content"] != "go"]
    await bound.close()


async def test_a_closed_core_and_its_agent_are_freed_without_the_garbage_collector(
    manager: SessionManager,
) -> None:
    """A service closes thousands of sessions: each, once closed and let go, is freed at once by
    reference counting (no cycle between the core and its agent left for a full collection),
    and the agent has its own hooks back."""
    model = ScriptedModel([reply("Hi.")])
    agent = Agent(model=model.model, stream_fn=model)
    own_hooks = (agent.convert_to_llm, agent.transform_context, agent.before_tool_call)
    core = AgentSession(agent, manager.create("/p"))
    await core.prompt("hello")
    await core.close()
    assert (agent.convert_to_llm, agent.transform_context, agent.before_tool_call) == own_hooks
    gc.disable()
    try:
        watched = weakref.ref(core), weakref.ref(agent)
        del core, agent
        assert [ref() for ref in watched] == [None, None]
    finally:
        gc.enable()


async def test_closing_a_core_leaves_the_hooks_of_a_core_that_took_its_agent_over(
    manager: SessionManager,
) -> None:
    model = ScriptedModel([reply("Hi.")])
    agent = Agent(model=model.model, stream_fn=model)
    first = AgentSession(agent, manager.create("/p"))
    second = AgentSession(agent, None)
    await first.close()
    assert agent.transform_context == second._transform_context  # pyright: ignore[reportPrivateUsage]
    await second.close()


async def test_either_of_two_cores_on_one_agent_records_its_runs_once_the_other_is_closed() -> None:
    """The first core bound records as the agent's recorder, a second one as a listener (as
    every core did): whichever is closed first, the other goes on recording its runs."""
    for closed_first in (0, 1):
        model = ScriptedModel([reply("Hi."), reply("Again.")])
        agent = Agent(model=model.model, stream_fn=model)
        cores = [AgentSession(agent, None), AgentSession(agent, None)]
        await cores[closed_first].close()
        other = cores[1 - closed_first]
        assert [m["role"] for m in await other.prompt("hi")] == ["user", "assistant"]
        await other.close()
        assert [m["role"] for m in await AgentSession(agent, None).prompt("again")] == ["user", "assistant"]


async def test_the_agents_own_context_hooks_run_after_the_sessions(manager: SessionManager) -> None:
    """An agent given its own ``convert_to_llm`` and ``transform_context`` keeps them when bound:
    ``transform_context`` edits the session's view of the request (compacted, prompt hooks done)
    and ``convert_to_llm`` lowers the agent's own message kinds before the session lowers its
    own; both hooks were replaced without a word, the note never reaching the model. They run
    on after another core takes the agent over, and ``close`` gives them back."""
    model = ScriptedModel([reply("first"), reply("second")])
    seen: list[list[str]] = []

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        seen.append([m["role"] for m in messages])
        return [*messages, {"role": "note", "text": "be brief", "timestamp": 0}]

    async def convert(messages: list[Any]) -> list[Any]:
        return [
            {"role": "user", "content": m["text"], "timestamp": 0} if m["role"] == "note" else m
            for m in messages
        ]

    agent = Agent(model=model.model, stream_fn=model, convert_to_llm=convert, transform_context=transform)
    first = AgentSession(agent, manager.create("/p"))
    await first.prompt("hello")
    await first.close()
    assert (agent.convert_to_llm, agent.transform_context) == (convert, transform)
    second = AgentSession(agent, None)
    third = AgentSession(agent, None)
    await third.prompt("again")
    assert seen == [["user"], ["user", "assistant", "user"]]
    for request in model.requests:
        assert [content_of(m) for m in request.context["messages"]][-1] == "be brief"
    await third.close()
    await second.close()
    assert (agent.convert_to_llm, agent.transform_context) == (convert, transform)


async def test_cores_closed_in_the_order_they_were_opened_give_the_agent_its_own_hooks_back() -> None:
    """The second core over one agent gave back the hooks it found, the first's, closed: the
    agent was left with a closed core's hooks whichever order they were closed in."""
    model = ScriptedModel([reply("ok")])

    def convert(messages: list[Any]) -> list[Any]:
        return default_convert_to_llm(messages)

    agent = Agent(model=model.model, stream_fn=model, convert_to_llm=convert)
    own = (agent.convert_to_llm, agent.transform_context, agent.before_tool_call)
    cores = [AgentSession(agent, None) for _ in range(3)]
    for core in cores:
        await core.close()
    assert (agent.convert_to_llm, agent.transform_context, agent.before_tool_call) == own
    assert [m["role"] for m in await AgentSession(agent, None).prompt("hi")] == ["user", "assistant"]


async def test_an_agents_own_convert_to_llm_gets_the_sessions_roles_lowered(manager: SessionManager) -> None:
    """A hook written as ``Agent``'s docstring suggests (lower my kinds, hand the rest to
    ``default_convert_to_llm``) ran before the session lowered its roles and dropped them all:
    after a compaction the model lost the summary, and a shell run the user made too."""
    model = ScriptedModel([reply("ok")])
    session = manager.create("/p")
    first = session.append_message({"role": "user", "content": "old talk", "timestamp": 1})
    kept = session.append_message(
        cast(
            Any, {"role": "bashExecution", "command": "ls", "output": "a.txt", "exitCode": 0, "timestamp": 2}
        )
    )
    assert first != kept
    session.append_compaction("SUMMARY of the talk", kept, tokens_before=100)

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        return [*messages, {"role": "note", "text": "be brief", "timestamp": 0}]

    def convert(messages: list[Any]) -> list[Any]:
        mine = [
            {"role": "user", "content": m["text"], "timestamp": 0} for m in messages if m["role"] == "note"
        ]
        return [*default_convert_to_llm(messages), *mine]

    agent = Agent(model=model.model, stream_fn=model, convert_to_llm=convert, transform_context=transform)
    await AgentSession(agent, session).prompt("hello")
    sent = [str(content_of(m)) for m in model.requests[0].context["messages"]]
    assert "SUMMARY of the talk" in sent[0] and "<command>\nls\n</command>" in sent[1]
    assert sent[2:] == ["hello", "be brief"]


async def test_developer_messages_survive_a_docstring_style_convert_to_llm(manager: SessionManager) -> None:
    """For a model that takes the ``developer`` role, a file mention and an extension's custom
    message go to it as developer messages, through a hook that hands the rest to
    ``default_convert_to_llm`` too: that keeps the roles every provider knows, and dropped them."""
    info = cast(ModelInfo, {**SCRIPTED_MODEL, "compat": {"supportsDeveloperRole": True}})
    model = ScriptedModel([reply("ok"), reply("ok")], model=info)
    session = manager.create("/p")
    mention: Any = {"role": "fileMention", "files": [{"path": "a.py", "content": "print(1)"}], "timestamp": 1}
    custom: Any = {"role": "custom", "customType": "x.y", "content": "ctx", "display": False, "timestamp": 2}
    session.append_messages([mention, custom])

    def convert(messages: list[Any]) -> list[Any]:
        return default_convert_to_llm(messages)

    async def convert_later(messages: list[Any]) -> list[Any]:
        return default_convert_to_llm(messages)

    for hook in (convert, convert_later):
        agent = Agent(model=info, stream_fn=model, convert_to_llm=hook)
        core = AgentSession(agent, manager.open(session.id) if hook is convert_later else session)
        await core.prompt("hello")
        sent = model.requests[-1].context["messages"]
        assert [m["role"] for m in sent[:3]] == ["developer", "developer", "user"]
        assert (
            '<file path="a.py">\nprint(1)\n</file>' in str(content_of(sent[0]))
            and content_of(sent[1]) == "ctx"
        )
        await core.close()


async def test_a_listener_failing_on_agent_start_keeps_the_users_prompt(manager: SessionManager) -> None:
    """The run's error reply was all it recorded: the prompt, appended to the loop's transcript
    after ``agent_start``, was never announced, so never stored."""
    model = ScriptedModel([reply("never asked")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"))

    def listen(event: Any) -> None:
        if event["type"] == "agent_start":
            raise RuntimeError("listener broke")

    core.subscribe(listen)
    added = await core.prompt("keep me")
    assert [m["role"] for m in added] == ["user", "assistant"] and content_of(added[0]) == "keep me"
    assert "event listener failed: RuntimeError: listener broke" in str(added[1].get("errorMessage"))
    assert core.session is not None and core.session.messages == added and not model.requests
    await core.close()
