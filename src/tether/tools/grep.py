"""``grep``: search file contents with a regular expression, skipping what ``.gitignore`` ignores.

Each file is first searched as a whole (one C-level regex scan) and only files with a hit are
split into lines, which keeps a search over a large tree close to the cost of reading it.
Results use ripgrep's familiar shape, ``path:line:text`` (context lines ``path-line-text``).
"""

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.globs import compile_glob
from tether.tools.opened import read_resolved
from tether.tools.sniff import looks_binary
from tether.tools.truncate import MAX_BYTES, shorten_line
from tether.tools.workspace import Workspace

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_FILE_BYTES = 10 * 1024 * 1024
"""Larger files are skipped (and counted in the result): they are data, not source."""
MATCH_LINE_CHARS = 500


class GrepParams(TypedDict):
    pattern: str
    path: NotRequired[str]
    glob: NotRequired[str | None]
    ignore_case: NotRequired[bool]
    literal: NotRequired[bool]
    context: NotRequired[int]
    limit: NotRequired[int]


GREP_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Regular expression (Python syntax) to search for, matched per line.",
        },
        "path": {
            "type": "string",
            "description": "File or directory to search (default: the workspace root).",
        },
        "glob": {
            "type": ["string", "null"],
            "description": "Only search files whose path matches this glob, e.g. '*.py' or 'src/**/*.ts'. "
            "A glob without '/' matches file names at any depth.",
        },
        "ignore_case": {"type": "boolean", "description": "Match case-insensitively (default false)."},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as plain text, not a regular expression (default false).",
        },
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 10,
            "description": "Lines of context to show around each match (default 0).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"Maximum matches to return (default {DEFAULT_LIMIT}, max {MAX_LIMIT}).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Search file contents for a regular expression (Python syntax), recursively from a directory, "
    "skipping files ignored by .gitignore, the .git directory and binary files. Results are "
    "`path:line:text` lines, context lines `path-line-text`. Narrow a search with glob (e.g. '*.py'). "
    "Results stop at `limit` matches with a note saying so."
)


def create_grep_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: GrepParams, signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        # the search process machinery loads with the first search
        from tether.tools.search_process import run_search

        return await run_search("grep", workspace, dict(params), signal)

    return AgentTool(
        name="grep",
        label="Grep",
        description=DESCRIPTION,
        parameters=GREP_PARAMETERS,
        execute=execute,
        execution_mode="parallel",
    )


def grep(workspace: Workspace, params: GrepParams) -> AgentToolResult[dict[str, Any]]:
    pattern, context, limit = params["pattern"], params.get("context", 0), params.get("limit", DEFAULT_LIMIT)
    flags = re.MULTILINE | (re.IGNORECASE if params.get("ignore_case") else 0)
    source = re.escape(pattern) if params.get("literal") else pattern
    try:
        regex = re.compile(source, flags)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc}. Set literal to search plain text."
        ) from None
    start = workspace.resolve(params.get("path", "."), reading=True)
    if not start.exists():
        raise ToolError(f"Path not found: {workspace.display(start)}")
    from tether.tools.files import walk_files  # runs in the search process, not at start-up

    files = [start] if start.is_file() else walk_files(workspace, start)
    name_filter = _glob_filter(params.get("glob"))
    base = start.parent if start.is_file() else start

    out: list[str] = []
    size = 0
    matches = files_with_matches = skipped_large = 0
    limited = False
    for file in files:
        relative = file.relative_to(base).as_posix()
        if name_filter is not None and not name_filter(relative):
            continue
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                skipped_large += 1
                continue
        except OSError:
            continue
        text = _read_text(workspace, file)
        if text is None:
            continue
        if regex.search(text) is None:
            continue
        files_with_matches += 1
        shown = workspace.display(file)
        block, limited = _file_matches(text, regex, shown, context, limit - matches)
        if context and out:
            out.append("--")
        match_prefix = f"{shown}:"
        for line in block:
            size += len(line.encode()) + 1
            if size > MAX_BYTES:
                limited = True
                break
            out.append(line)
            matches += line.startswith(match_prefix)
        if limited:
            break

    if not out:
        text = f"No matches for {pattern!r} in {workspace.display(start)}."
    else:
        text = "\n".join(out)
        if limited:
            text += (
                f"\n\n[Results stopped after {matches} matches (limit {limit} or the "
                f"{MAX_BYTES // 1024} KB output limit). Narrow the pattern, path or glob to see the rest.]"
            )
    if skipped_large:
        text += f"\n\n[{skipped_large} files over {MAX_FILE_BYTES // (1024 * 1024)} MB were not searched.]"
    details = {
        "matches": matches,
        "files": files_with_matches,
        "truncated": limited,
        "skippedLarge": skipped_large,
    }
    return AgentToolResult([{"type": "text", "text": text}], details)


def _read_text(workspace: Workspace, file: Path) -> str | None:
    """The file as text; ``None`` for unreadable or binary files, and for one that is no longer
    what the walk checked: opened as ``read`` opens it (``tether.tools.opened``), a link's
    target checked again, so a command turning names into links meanwhile reads nothing out."""
    try:
        if file.is_symlink():
            file = workspace.resolve(str(file), reading=True)
        data = read_resolved(file)
    except (OSError, ToolError):
        return None
    if looks_binary(data):
        return None
    return data.decode("utf-8", errors="replace")


def _file_matches(
    text: str, regex: re.Pattern[str], shown: str, context: int, budget: int
) -> tuple[list[str], bool]:
    """Output lines for one file (at most ``budget`` matches) and whether more matches were left."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if regex.search(line)]
    limited = len(hits) > budget
    hits = hits[:budget]
    if not context:
        return [f"{shown}:{i + 1}:{shorten_line(lines[i], MATCH_LINE_CHARS)}" for i in hits], limited
    hit_set = set(hits)
    out: list[str] = []
    last = -1
    for i in hits:
        low, high = max(0, i - context), min(len(lines) - 1, i + context)
        if last >= 0 and low > last + 1:
            out.append("--")
        for j in range(max(low, last + 1), high + 1):
            sep = ":" if j in hit_set else "-"
            out.append(f"{shown}{sep}{j + 1}{sep}{shorten_line(lines[j], MATCH_LINE_CHARS)}")
        last = high
    return out, limited


def _glob_filter(glob: str | None) -> Callable[[str], bool] | None:
    if not glob:
        return None
    regex = compile_glob(glob)
    if "/" in glob:
        return lambda relative: regex.match(relative) is not None
    return lambda relative: regex.match(relative.rsplit("/", 1)[-1]) is not None
