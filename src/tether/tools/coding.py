"""The built-in coding tools by name, and the list an agent is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tether.agent.tool import AgentTool
from tether.tools.bash import create_bash_tool
from tether.tools.edit import create_edit_tool
from tether.tools.find import create_find_tool
from tether.tools.grep import create_grep_tool
from tether.tools.ls import create_ls_tool
from tether.tools.read import create_read_tool
from tether.tools.workspace import Workspace
from tether.tools.write import create_write_tool

TOOL_FACTORIES: dict[str, Callable[[Workspace], AgentTool]] = {
    "read": create_read_tool,
    "bash": create_bash_tool,
    "edit": create_edit_tool,
    "write": create_write_tool,
    "grep": create_grep_tool,
    "find": create_find_tool,
    "ls": create_ls_tool,
}
"""Every built-in tool by name, in the order the model sees them."""

READ_ONLY_TOOLS = ("read", "grep", "find", "ls")
"""The built-in tools that neither write nor execute: what a library's ``create_agent_session()``
gets unless the program asks for more (``AgentOptions(tools=CODING_TOOLS)``)."""

CODING_TOOLS = tuple(TOOL_FACTORIES)
"""Every built-in tool: the coding agent as the CLI ships it (``bash`` asks first)."""


def coding_tools(cwd: str | Path | None = None, names: Sequence[str] = CODING_TOOLS) -> list[AgentTool]:
    """The built-in tools (default: all of them, writing and executing ones included) working in
    ``cwd`` (default: the current directory), for ``AgentOptions(tools=...)`` or an
    ``Agent`` of your own. ``AgentOptions`` also takes the names alone."""
    return create_coding_tools(Workspace(Path(cwd) if cwd is not None else Path.cwd()), names)


def create_coding_tools(workspace: Workspace, names: Sequence[str] | None = None) -> list[AgentTool]:
    """The built-in tools bound to ``workspace``; ``names`` picks a subset (in the given order)."""
    if names is None:
        return [factory(workspace) for factory in TOOL_FACTORIES.values()]
    unknown = [name for name in names if name not in TOOL_FACTORIES]
    if unknown:
        known = ", ".join(TOOL_FACTORIES)
        raise ValueError(f"Unknown tool(s): {', '.join(unknown)}. Built-in tools: {known}.")
    return [TOOL_FACTORIES[name](workspace) for name in names]
