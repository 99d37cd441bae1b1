"""``write``: create or overwrite a file with the given content, creating parent directories."""

from pathlib import Path
from typing import Any, TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.opened import make_parents, write_resolved
from tether.tools.workspace import Workspace


class WriteParams(TypedDict):
    path: str
    content: str


WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to write: relative to the workspace root, or absolute.",
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Write a file: creates it (and any missing parent directories) or replaces its whole content. "
    "To change part of an existing file, prefer edit, which cannot lose the rest of the file."
)


def create_write_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: WriteParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        return write_file(workspace, params)

    return AgentTool(
        name="write",
        label="Write",
        description=DESCRIPTION,
        parameters=WRITE_PARAMETERS,
        execute=execute,
        # concurrent with the turn's other calls, as in pi 1.6; a write never yields to the event
        # loop, so a turn's edits and writes still apply one after another, in order (what pi's
        # per-file mutation queue gives)
        execution_mode="parallel",
    )


def write_file(workspace: Workspace, params: WriteParams) -> AgentToolResult[dict[str, Any]]:
    path = workspace.resolve(params["path"])
    shown = workspace.display(path)
    refuse_unwritable(path, shown)
    data = params["content"].encode()
    existed = path.exists()
    try:
        make_parents(path)
        write_resolved(path, data)
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
    return written(shown, params["content"], existed)


def refuse_unwritable(path: Path, shown: str) -> None:
    """Refuse a directory or a special file by name before anything is written, wherever it goes."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give the path of a file inside it.")
    if path.exists() and not path.is_file():
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device); it cannot be written.")


def written(shown: str, content: str, existed: bool) -> AgentToolResult[dict[str, Any]]:
    """The result of writing ``content`` to the file shown as ``shown``, however it was written."""
    size = len(content.encode())
    verb = "Overwrote" if existed else "Created"
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    text = f"{verb} {shown} ({size} bytes, {lines} lines)."
    return AgentToolResult(
        [{"type": "text", "text": text}], {"path": shown, "bytes": size, "created": not existed}
    )
