"""An ``AgentSession``'s MCP servers while it runs: their tools given to the agent before each
prompt, and the servers an extension adds or takes away (``api.register_mcp_server``).

A part of ``AgentSession`` (see ``tether.session.core_state``): the servers come from the MCP
files (``create_agent_session``) or from extensions; the tools of a server still starting join
once it has listed them, so a prompt waits only for what it could use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from tether.ai.abort import AbortController
from tether.session.core_state import CoreState

if TYPE_CHECKING:
    from tether.mcp import McpServerConfig


class McpControl(CoreState):
    """The MCP half of ``AgentSession``'s tools."""

    _mcp_tools: list[Any]
    _mcp_noted: set[object]

    async def _install_mcp_tools(self) -> bool:
        """Wait for MCP servers still starting whose tools are not kept from an earlier run
        (``tether.mcp.tool_cache``), then give the agent the tools of every server that has them
        (a server that failed to start has none; ``mcp.statuses()`` says why).
        ``False``: the run was aborted while waiting."""
        if not self.mcp:
            return True
        controller = AbortController()
        if self._aborted:
            controller.abort()
        self._mcp_abort = controller
        try:
            if not await self.mcp.listed(controller.signal):
                return False
        finally:
            self._mcp_abort = None
        if not self._mcp_read:  # a session opened, resumed or moved to
            self._mcp_read = True
            self.mcp.found.extend(found_in(self.agent.messages))
        self._offer_mcp_tools()
        return True

    def _offer_mcp_tools(self) -> None:
        """Give the agent the servers' tools within the budget of its model; also as soon as
        ``search_mcp_tools`` found some, so the run's next model call declares them."""
        assert self.mcp is not None
        from tether.mcp.tool_budget import tool_limit

        installed = {id(t) for t in self._mcp_tools}
        own = [t for t in self.agent.tools if id(t) not in installed]
        model = self.agent.model
        if model is not None:  # without one, the budget stays what it was (no request is made)
            self.mcp.fit(tool_limit(model["api"]), len(own))
        tools = self.mcp.tools()
        self.agent.tools = [*own, *tools]
        self._mcp_tools = tools
        # once each: the model sees a name the user did not write, or misses tools they may expect
        said = (*self.mcp.renames, *self.mcp.repeats, *self.mcp.unlisted, *self.mcp.refused)
        for key, line in (*((line, line) for line in said), *self.mcp.budget_notes().items()):
            if key not in self._mcp_noted:
                self._mcp_noted.add(key)
                self.notify(line)

    def add_mcp_server(self, config: McpServerConfig) -> bool:
        """An extension's server while the session runs (``api.register_mcp_server``): started
        now, in the commands' sandbox under ``sandbox.mcp`` as the files' servers are, its tools
        offered from the next prompt on; closed with the session. ``False``: a server of the MCP
        files has that name and stays."""
        from tether.mcp import McpServers

        policy = self.approval.workspace.sandbox if self.approval is not None else None
        if config.command is not None and policy is not None and policy.active and policy.mcp:
            config = replace(config, sandbox=self.confinement())
        if self.mcp is None:  # no server until now: this core starts (so closes) the first
            self.mcp = McpServers([], max_tools=self.settings.mcp_max_tools)
            self.mcp.notify = self.notify
            self.mcp.on_found = self._offer_mcp_tools
            self._owns.add("mcp")
        added = self.mcp.add(config)
        if not added:
            self.notify(
                f"MCP server {config.name!r} of an extension: the MCP files' server of that name is kept"
            )
        self.mcp.start()
        return added

    def remove_mcp_server(self, name: str) -> bool:
        """Stop an extension's server; its tools are gone from the next prompt on."""
        return self.mcp.remove(name) if self.mcp is not None else False


def found_in(messages: list[Any]) -> list[tuple[str, str]]:
    """The (server, tool) pairs ``search_mcp_tools`` found in a transcript (its results'
    ``details.found``): a resumed session offers them again without a search. Cheap: read once
    per transcript opened, and the pairs are all the session records for it. Each pair once,
    where it was last found (``McpServers.found``'s order: latest last)."""
    from tether.mcp.tool_search import SEARCH_TOOL

    pairs: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") != "toolResult" or message.get("toolName") != SEARCH_TOOL:
            continue
        details: object = message.get("details")
        found = cast(dict[str, object], details).get("found") if isinstance(details, dict) else None
        for pair in cast(list[object], found) if isinstance(found, list) else []:
            if isinstance(pair, list | tuple):
                items = cast(Sequence[object], pair)
                if len(items) == 2 and isinstance(items[0], str) and isinstance(items[1], str):
                    pairs.append((items[0], items[1]))
    return list(dict.fromkeys(reversed(pairs)))[::-1]
