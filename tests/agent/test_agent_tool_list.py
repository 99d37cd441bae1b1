"""``agent.tools`` is the agent's own list (as pi's ``agent.state.tools``: changing it changes the
next run) and keeps one tool per name through every change, as assigning it does: the tool added
takes the place of the one of its name. ``agent.tools.append(dup)`` got past the rule: both
tools reached the model (a provider refuses the request) and only the later one ran."""

from __future__ import annotations

from typing import Any

import pytest

from tether.agent import Agent, AgentTool, tool
from tether.testing.scripted import ScriptedModel, reply, tool_call


def named(name: str, answer: str) -> AgentTool:
    @tool(name=name)
    async def made() -> str:
        """A tool."""
        return answer

    return made


async def test_a_tool_appended_under_a_taken_name_replaces_that_one_in_the_run() -> None:
    builtin, other, mine = named("read", "built-in"), named("ls", "ls"), named("read", "mine")
    model = ScriptedModel([reply(tool_call("read", {})), reply("done")])
    agent = Agent(model=model.model, stream_fn=model, tools=[builtin, other])
    agent.tools.append(mine)
    assert agent.tools == [mine, other]
    await agent.prompt("go")
    sent: list[Any] = model.requests[0].context.get("tools", [])
    assert [t["name"] for t in sent] == ["read", "ls"]
    result: Any = agent.messages[2]
    assert result["content"] == [{"type": "text", "text": "mine"}]


def test_every_change_that_adds_a_tool_keeps_one_per_name() -> None:
    a, b, c = named("a", "a1"), named("b", "b1"), named("c", "c1")
    a2, b2, c2 = named("a", "a2"), named("b", "b2"), named("c", "c2")
    agent = Agent(tools=[a, b])
    tools = agent.tools
    tools.extend([c, a2])
    assert tools == [a2, b, c]
    tools.insert(0, b2)  # b's first place is now 0
    assert tools == [b2, a2, c]
    tools += [c2, c2]
    assert tools == [b2, a2, c2]
    tools[1] = b  # a's place, which b comes after: b holds its first place
    assert tools == [b, c2]
    tools[1:] = [a, a2, c]
    assert tools == [b, a2, c]
    tools *= 2
    assert tools == [b, a2, c]
    tools.remove(a2)
    tools.pop()
    assert agent.tools is tools and tools == [b]


def test_the_list_is_the_agents_own_and_assigning_copies() -> None:
    a, b = named("a", "a"), named("b", "b")
    mine = [a]
    agent = Agent(tools=mine)
    agent.tools.append(b)  # pi: mutating the returned array mutates the state
    assert agent.tools == [a, b] and mine == [a]
    agent.tools = mine
    mine.append(b)
    assert agent.tools == [a]


def test_a_method_tool_taken_from_the_class_is_refused_when_appended() -> None:
    class Notes:
        @tool
        def find(self, query: str) -> str:
            """Find a note."""
            return query

    agent = Agent()
    with pytest.raises(TypeError, match=r"Notes.find: take it from an instance \(obj.find\)"):
        agent.tools.append(Notes.find)
    assert agent.tools == []


def test_what_is_not_a_tool_is_refused_in_one_line() -> None:
    # a bare AssertionError (gone under python -O) for an item, an AttributeError deep inside
    # for a function whose @tool was forgotten
    agent = Agent(tools=[named("read", "a")])

    def plain() -> str:
        return "x"

    for change in (  # each hands over what is not a tool, which the checker refuses too (hence the ignores)
        lambda: agent.tools.append(plain),  # type: ignore[arg-type]
        lambda: agent.tools.__setitem__(0, "read"),  # type: ignore[call-overload]
        lambda: agent.tools.__setitem__(slice(0, 1), ["read"]),  # type: ignore[list-item]
        lambda: Agent(tools=[plain]),  # type: ignore[list-item]
    ):
        with pytest.raises(TypeError, match=r"is not a tool: make one with @tether\.tool"):
            change()
    assert [t.name for t in agent.tools] == ["read"]
