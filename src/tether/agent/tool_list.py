"""``Agent.tools``: a list that keeps one tool per name through every change made to it.

``Agent`` applies ``one_per_name`` where tools are set (its constructor, ``agent.tools = ...``),
but it hands out the list itself, as pi's ``agent.state.tools`` does (mutating it mutates the
agent's state), so ``agent.tools.append(tool)`` got past the rule: two tools of one name reached
the model (a provider refuses the request: Anthropic's "tool names must be unique") and only
the later one ran. Each change that adds a tool (``append``, ``extend``, ``insert``, ``+=``, an
item or slice assignment) applies the same rule: each name stays once, at the first place it
has in the list, held by the tool last added of that name. So ``agent.tools.append(my_read)``
replaces the built-in ``read`` where it was, as ``extra_tools`` and an extension's tool do, and
the list you read is what the model gets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self, SupportsIndex, cast, overload

from tether.agent.tool import AgentTool, one_per_name


class ToolList(list[AgentTool]):
    """The tools of an ``Agent``, one per name; see the module docstring."""

    def __init__(self, tools: Iterable[AgentTool] = ()) -> None:
        super().__init__(one_per_name(tools))

    def append(self, tool: AgentTool, /) -> None:
        self.extend((tool,))

    def extend(self, tools: Iterable[AgentTool], /) -> None:
        added = one_per_name(tools)
        super().extend(added)
        self._settle(added)

    def insert(self, index: SupportsIndex, tool: AgentTool, /) -> None:
        added = one_per_name((tool,))
        super().insert(index, added[0])
        self._settle(added)

    def __iadd__(self, tools: Iterable[AgentTool], /) -> Self:
        self.extend(tools)
        return self

    def __imul__(self, times: SupportsIndex, /) -> Self:
        super().__imul__(times)
        self._settle([])
        return self

    @overload
    def __setitem__(self, index: SupportsIndex, tool: AgentTool, /) -> None: ...
    @overload
    def __setitem__(self, index: slice, tools: Iterable[AgentTool], /) -> None: ...
    def __setitem__(self, index: SupportsIndex | slice, value: AgentTool | Iterable[AgentTool], /) -> None:
        # ``one_per_name`` refuses what is not a tool, in one line
        if isinstance(index, slice):
            added = one_per_name(cast("Iterable[AgentTool]", value))
            super().__setitem__(index, added)
        else:
            added = one_per_name((cast(AgentTool, value),))
            super().__setitem__(index, added[0])
        self._settle(added)

    def _settle(self, added: list[AgentTool]) -> None:
        """Each name once, at its first place, held by the tool ``added`` has of it, if any."""
        if len({t.name for t in self}) == len(self):
            return
        newest = {t.name: t for t in added}
        kept: dict[str, AgentTool] = {}
        for each in self:
            kept.setdefault(each.name, newest.get(each.name, each))
        super().__setitem__(slice(None), list(kept.values()))
