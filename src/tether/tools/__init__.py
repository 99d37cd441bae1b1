"""tether.tools: the built-in coding tools and the prompt-side ``!cmd`` / ``$code`` / ``@path`` helpers.

``create_coding_tools(workspace)`` gives the agent its tools; every path they touch goes through
the ``Workspace`` policy, and ``ApprovalGate`` asks the user before risky calls. The ``@path``
completer for prompt-toolkit is in ``tether.tools.completion`` (not imported here: only the
interactive mode needs prompt-toolkit).
"""

# Names load on first use (module __getattr__): a run that never reads a `!cmd` or an `@path`
# does not load their helpers. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.tools.approval import (
        APPROVAL_POLICIES as APPROVAL_POLICIES,
        Approval as Approval,
        ApprovalGate as ApprovalGate,
        AskUser as AskUser,
        describe_call as describe_call,
    )
    from tether.tools.bash import (
        BASH_PARAMETERS as BASH_PARAMETERS,
        BashParams as BashParams,
        create_bash_tool as create_bash_tool,
    )
    from tether.tools.coding import (
        CODING_TOOLS as CODING_TOOLS,
        READ_ONLY_TOOLS as READ_ONLY_TOOLS,
        TOOL_FACTORIES as TOOL_FACTORIES,
        coding_tools as coding_tools,
        create_coding_tools as create_coding_tools,
    )
    from tether.tools.edit import (
        EDIT_PARAMETERS as EDIT_PARAMETERS,
        EditOutcome as EditOutcome,
        EditParams as EditParams,
        create_edit_tool as create_edit_tool,
        edit_text as edit_text,
        unified_diff as unified_diff,
    )
    from tether.tools.errors import PathOutsideWorkspace as PathOutsideWorkspace
    from tether.tools.find import (
        FIND_PARAMETERS as FIND_PARAMETERS,
        FindParams as FindParams,
        create_find_tool as create_find_tool,
    )
    from tether.tools.grep import (
        GREP_PARAMETERS as GREP_PARAMETERS,
        GrepParams as GrepParams,
        create_grep_tool as create_grep_tool,
    )
    from tether.tools.ls import (
        LS_PARAMETERS as LS_PARAMETERS,
        LsParams as LsParams,
        create_ls_tool as create_ls_tool,
    )
    from tether.tools.prompt_input import (
        PythonInput as PythonInput,
        ShellInput as ShellInput,
        file_mention_item as file_mention_item,
        file_mentions_message as file_mentions_message,
        find_mentions as find_mentions,
        parse_prompt_input as parse_prompt_input,
        run_python_input as run_python_input,
        run_shell_input as run_shell_input,
    )
    from tether.tools.read import (
        READ_PARAMETERS as READ_PARAMETERS,
        ReadParams as ReadParams,
        create_read_tool as create_read_tool,
        read_lines as read_lines,
    )
    from tether.tools.workspace import Workspace as Workspace
    from tether.tools.write import (
        WRITE_PARAMETERS as WRITE_PARAMETERS,
        WriteParams as WriteParams,
        create_write_tool as create_write_tool,
        written as written,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
