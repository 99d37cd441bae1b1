"""tether.tools: the built-in coding tools and the prompt-side ``!cmd`` / ``$code`` / ``@path`` helpers.

``create_coding_tools(workspace)`` gives the agent its tools; every path they touch goes through
the ``Workspace`` policy, and ``ApprovalGate`` asks the user before risky calls. The ``@path``
completer for prompt-toolkit is in ``tether.tools.completion`` (not imported here: only the
interactive mode needs prompt-toolkit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tether.agent.tool import AgentTool
from tether.tools.approval import APPROVAL_POLICIES, Approval, ApprovalGate, AskUser, describe_call
from tether.tools.bash import BASH_PARAMETERS, BashParams, create_bash_tool
from tether.tools.edit import (
    EDIT_PARAMETERS,
    EditOutcome,
    EditParams,
    create_edit_tool,
    edit_text,
    unified_diff,
)
from tether.tools.errors import PathOutsideWorkspace, ToolError
from tether.tools.find import FIND_PARAMETERS, FindParams, create_find_tool
from tether.tools.grep import GREP_PARAMETERS, GrepParams, create_grep_tool
from tether.tools.ls import LS_PARAMETERS, LsParams, create_ls_tool
from tether.tools.prompt_input import (
    PythonInput,
    ShellInput,
    file_mention_item,
    file_mentions_message,
    find_mentions,
    parse_prompt_input,
    run_python_input,
    run_shell_input,
)
from tether.tools.read import READ_PARAMETERS, ReadParams, create_read_tool, read_lines
from tether.tools.workspace import Workspace
from tether.tools.write import WRITE_PARAMETERS, WriteParams, create_write_tool, written

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


def create_coding_tools(workspace: Workspace, names: Sequence[str] | None = None) -> list[AgentTool]:
    """The built-in tools bound to ``workspace``; ``names`` picks a subset (in the given order)."""
    if names is None:
        return [factory(workspace) for factory in TOOL_FACTORIES.values()]
    unknown = [name for name in names if name not in TOOL_FACTORIES]
    if unknown:
        known = ", ".join(TOOL_FACTORIES)
        raise ValueError(f"Unknown tool(s): {', '.join(unknown)}. Built-in tools: {known}.")
    return [TOOL_FACTORIES[name](workspace) for name in names]


__all__ = [
    "APPROVAL_POLICIES",
    "BASH_PARAMETERS",
    "EDIT_PARAMETERS",
    "FIND_PARAMETERS",
    "GREP_PARAMETERS",
    "LS_PARAMETERS",
    "READ_PARAMETERS",
    "TOOL_FACTORIES",
    "WRITE_PARAMETERS",
    "Approval",
    "ApprovalGate",
    "AskUser",
    "BashParams",
    "EditOutcome",
    "EditParams",
    "FindParams",
    "GrepParams",
    "LsParams",
    "PathOutsideWorkspace",
    "PythonInput",
    "ReadParams",
    "ShellInput",
    "ToolError",
    "Workspace",
    "WriteParams",
    "create_bash_tool",
    "create_coding_tools",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_write_tool",
    "describe_call",
    "edit_text",
    "file_mention_item",
    "file_mentions_message",
    "find_mentions",
    "parse_prompt_input",
    "read_lines",
    "run_python_input",
    "run_shell_input",
    "unified_diff",
    "written",
]
