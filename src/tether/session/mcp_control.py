"""An ``AgentSession``'s MCP servers while it runs: their tools given to the agent before each
prompt, and the servers an extension adds or takes away (``api.register_mcp_server``).

A part of ``AgentSession`` (see ``tether.session.core_state``): the servers come from the MCP
files (``create_agent_session``) or from extensions; the tools of a server still starting join
once it has listed them, so a prompt waits only for what it could use.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.ai.abort import AbortController
from tether.session.core_state import CoreState

if TYPE_CHECKING:
    from tether.mcp import McpServerConfig


class McpControl(CoreState):
    """The MCP half of ``AgentSession``'s tools."""

    _mcp_tools: list[Any]
    _mcp_noted: set[str]

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
        for line in (*self.mcp.renames, *self.mcp.left_out):
            if line not in self._mcp_noted:
                self._mcp_noted.add(line)
                self.notify(line)
        return True

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
