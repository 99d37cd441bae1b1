"""``ls``: the entries of one directory, directories marked with a trailing ``/``.

Unlike ``find`` and ``grep``, ``ls`` shows everything, dotfiles and ignored files included:
when the model asks what is in a directory, the honest answer is all of it.
"""

import os
import stat
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.opened import open_folder
from tether.tools.workspace import Workspace
from tether.wire.file_names import path_text

DEFAULT_LIMIT = 500


class LsParams(TypedDict):
    path: NotRequired[str]
    limit: NotRequired[int]


LS_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: the workspace root)."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 5000,
            "description": f"Maximum entries to return (default {DEFAULT_LIMIT}).",
        },
    },
    "additionalProperties": False,
}


DESCRIPTION = (
    "List one directory: entry names sorted alphabetically, directories with a trailing '/', "
    "hidden and git-ignored entries included. Use find for recursive listings."
)


def create_ls_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: LsParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        return list_directory(workspace, params)

    return AgentTool(
        name="ls",
        label="List",
        description=DESCRIPTION,
        parameters=LS_PARAMETERS,
        execute=execute,
        execution_mode="parallel",
    )


def list_directory(workspace: Workspace, params: LsParams) -> AgentToolResult[dict[str, Any]]:
    path = workspace.resolve(params.get("path", "."), reading=True)
    limit = params.get("limit", DEFAULT_LIMIT)
    shown = workspace.display(path)
    try:
        folder = open_folder(path)
        try:  # a link's kind read while the folder is open (it is read through the folder)
            entries = [
                (path_text(entry.name), _is_dir(workspace, path, entry)) for entry in os.scandir(folder)
            ]
        finally:
            os.close(folder)
    except FileNotFoundError:
        raise ToolError(f"Directory not found: {shown}") from None
    except NotADirectoryError:
        raise ToolError(f"{shown} is a file, not a directory; use read to see it.") from None
    except OSError as exc:
        raise ToolError(f"Cannot list {shown}: {exc.strerror or exc}") from None
    names = [name + ("/" if is_dir else "") for name, is_dir in sorted(entries, key=lambda e: e[0].lower())]
    shown_names = names[:limit]
    if not names:
        text = f"{shown} is empty."
    else:
        text = "\n".join(shown_names)
        if len(names) > limit:
            text += f"\n\n[{len(names) - limit} more entries not shown; raise limit or use find.]"
    return AgentToolResult(
        [{"type": "text", "text": text}], {"count": len(names), "truncated": len(names) > limit}
    )


def _is_dir(workspace: Workspace, folder: Path, entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` of ``folder`` (a resolved path) is a folder; a link only when where it
    leads is a folder the tools may read: ``/`` on a link to a folder outside the workspace, or
    one the sandbox hides, said what ``read`` refuses to say (that something is there, and what)."""
    try:
        if not entry.is_symlink():
            return entry.is_dir(follow_symlinks=False)
        real = Path(os.path.realpath(folder / entry.name))
        return workspace.readable(real) and stat.S_ISDIR(os.lstat(real).st_mode)
    except OSError:
        return False
