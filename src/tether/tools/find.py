"""``find``: list the files whose path matches a glob, skipping what ``.gitignore`` ignores."""

from typing import Any, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.globs import compile_glob
from tether.tools.workspace import Workspace

DEFAULT_LIMIT = 1000
MAX_LIMIT = 5000


class FindParams(TypedDict):
    pattern: str
    path: NotRequired[str]
    limit: NotRequired[int]


FIND_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob to match, e.g. '*.py' (a glob without '/' matches file names at any depth), "
            "'src/**/*.ts' or 'tests/test_*.py' (a glob with '/' matches the path from the search directory).",
        },
        "path": {"type": "string", "description": "Directory to search (default: the workspace root)."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"Maximum paths to return (default {DEFAULT_LIMIT}, max {MAX_LIMIT}).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Find files by glob pattern, recursively, skipping files ignored by .gitignore and the .git "
    "directory. `*` and `?` stay within one path segment, `**` spans directories. Returns one path per "
    "line, relative to the workspace root, sorted."
)


def create_find_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: FindParams, signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        # the search process machinery loads with the first search
        from tether.tools.search_process import run_search

        return await run_search("find", workspace, dict(params), signal)

    return AgentTool(
        name="find",
        label="Find",
        description=DESCRIPTION,
        parameters=FIND_PARAMETERS,
        execute=execute,
        execution_mode="parallel",
    )


def find_files(workspace: Workspace, params: FindParams) -> AgentToolResult[dict[str, Any]]:
    start = workspace.resolve(params.get("path", "."), reading=True)
    limit = params.get("limit", DEFAULT_LIMIT)
    if not start.is_dir():
        what = "not found" if not start.exists() else "not a directory"
        raise ToolError(f"{workspace.display(start)} is {what}; find searches a directory.")
    pattern = (
        params["pattern"].removeprefix("./").lstrip("/")
    )  # patterns are relative to the search directory
    from tether.tools.files import walk_files  # runs in the search process, not at start-up

    regex = compile_glob(pattern)
    by_name = "/" not in pattern
    found: list[str] = []
    limited = False
    for file in walk_files(workspace, start):
        relative = file.relative_to(start).as_posix()
        if regex.match(relative.rsplit("/", 1)[-1] if by_name else relative):
            if len(found) == limit:
                limited = True
                break
            found.append(workspace.display(file))
    found.sort()
    if not found:
        text = f"No files match {params['pattern']!r} in {workspace.display(start)}."
    else:
        text = "\n".join(found)
        if limited:
            text += f"\n\n[Stopped at {limit} paths; narrow the pattern or path to see the rest.]"
    return AgentToolResult([{"type": "text", "text": text}], {"count": len(found), "truncated": limited})
