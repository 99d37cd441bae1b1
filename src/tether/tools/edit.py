"""``edit``: replace an exact passage of a file, and show the change as a unified diff.

The passage must occur exactly once (unless ``replace_all``): an edit that could land in two
places is refused rather than guessed, and the error lists where the candidates are. A passage
that is not found gets a hint when the cause is a usual one (whitespace, copied line numbers).
Files with Windows line endings or a UTF-8 byte-order mark are matched as the model reads them
(``\\n``, no mark) and written back in their own convention.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.opened import read_resolved, write_resolved
from tether.tools.sniff import looks_binary
from tether.tools.workspace import Workspace

BOM = "\ufeff"
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)


class EditParams(TypedDict):
    path: str
    old_string: str
    new_string: str
    replace_all: NotRequired[bool]


EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to edit: relative to the workspace root, or absolute.",
        },
        "old_string": {
            "type": "string",
            "description": "The exact text to replace, including indentation, without read's line-number "
            "prefixes. It must occur exactly once unless replace_all is true: add surrounding lines to make "
            "it unique.",
        },
        "new_string": {
            "type": "string",
            "description": "The replacement text (may be empty to delete the passage).",
        },
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of exactly one (default false).",
        },
    },
    "required": ["path", "old_string", "new_string"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Edit a file by replacing an exact passage (old_string) with new text (new_string). old_string must "
    "match the file character for character, and exactly once unless replace_all is true. Returns the "
    "change as a unified diff. Read the file first; to create a file or rewrite it entirely use write."
)


def create_edit_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: EditParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        return edit_file(workspace, params)

    return AgentTool(
        name="edit",
        label="Edit",
        description=DESCRIPTION,
        parameters=EDIT_PARAMETERS,
        execute=execute,
        # concurrent with the turn's other calls, as in pi 1.6; an edit never yields to the event
        # loop, so a turn's edits and writes still apply one after another, in order (what pi's
        # per-file mutation queue gives)
        execution_mode="parallel",
    )


def edit_file(workspace: Workspace, params: EditParams) -> AgentToolResult[dict[str, Any]]:
    path = workspace.resolve(params["path"])
    shown = workspace.display(path)
    _check_strings(params)
    refuse_uneditable(path, shown)
    try:
        raw = read_resolved(path)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    if looks_binary(raw):
        raise ToolError(f"{shown} is a binary file; edit only works on text.")
    try:
        original = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); edit only works on UTF-8 text."
        ) from None
    outcome = edit_text(original, params, shown)
    try:
        write_resolved(path, outcome.new_text.encode())
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
    return outcome.result


def refuse_uneditable(path: Path, shown: str) -> None:
    """Refuse what ``edit`` cannot change: a directory, a missing file, a pipe, socket or device."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file.")
    if not path.exists():
        raise ToolError(f"File not found: {shown}. To create a file, use write.")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device); it cannot be edited.")


@dataclass(frozen=True, slots=True)
class EditOutcome:
    new_text: str
    """The whole new file content, in the file's own line endings and byte-order mark."""
    result: AgentToolResult[dict[str, Any]]
    """What the tool returns once ``new_text`` is written."""


def edit_text(original: str, params: EditParams, shown: str) -> EditOutcome:
    """The edit applied to a file's text; where the text comes from and goes to is the caller's.

    Raises ``ToolError`` when ``old_string`` is missing or ambiguous.
    """
    _check_strings(params)
    has_bom = original.startswith(BOM)
    text = original.removeprefix(BOM)
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    old, new = params["old_string"], params["new_string"]
    if crlf:
        text, old, new = (s.replace("\r\n", "\n") for s in (text, old, new))

    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string was not found in {shown}.{_not_found_hint(text, old)}")
    if count > 1 and not params.get("replace_all"):
        lines = ", ".join(str(n) for n in _match_lines(text, old)[:10])
        raise ToolError(
            f"old_string occurs {count} times in {shown} (starting on lines {lines}). Include more "
            "surrounding lines to pick one occurrence, or set replace_all to change them all."
        )
    updated = text.replace(old, new) if params.get("replace_all") else text.replace(old, new, 1)
    first_line = text[: text.index(old)].count("\n") + 1
    on_disk = updated.replace("\n", "\r\n") if crlf else updated

    diff = unified_diff(text, updated, shown)
    noun = "occurrence" if count == 1 else "occurrences"
    summary = f"Edited {shown}: replaced {count} {noun}."
    result = AgentToolResult(
        [{"type": "text", "text": f"{summary}\n\n{diff}"}],
        {"path": shown, "replacements": count, "firstChangedLine": first_line, "diff": diff},
    )
    return EditOutcome((BOM if has_bom else "") + on_disk, result)


def _check_strings(params: EditParams) -> None:
    if not params["old_string"]:
        raise ToolError("old_string is empty; to create a file or replace all of it, use write.")
    if params["old_string"] == params["new_string"]:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")


def unified_diff(before: str, after: str, name: str) -> str:
    """A ``git diff``-style unified diff with three lines of context."""
    import difflib  # loads with the first edit's diff, not at start-up

    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _match_lines(text: str, old: str) -> list[int]:
    lines: list[int] = []
    start = text.find(old)
    while start >= 0:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + len(old))
    return lines


def _not_found_hint(text: str, old: str) -> str:
    if _LINE_NUMBER_PREFIX.search(old):
        stripped = _LINE_NUMBER_PREFIX.sub("", old)
        if stripped in text:
            return " It starts with line-number prefixes copied from read's output; leave them out."
    line = _whitespace_match_line(text, old)
    if line is not None:
        return (
            f" A passage that differs only in whitespace or indentation starts on line {line}; "
            "copy it exactly as it appears in the file."
        )
    return " Read the file again and copy the passage exactly."


def _whitespace_match_line(text: str, old: str) -> int | None:
    """First line where ``old``'s lines appear with different whitespace, if anywhere."""
    wanted = [" ".join(line.split()) for line in old.strip("\n").split("\n")]
    if not any(wanted):
        return None
    lines = [" ".join(line.split()) for line in text.split("\n")]
    for i in range(len(lines) - len(wanted) + 1):
        if lines[i : i + len(wanted)] == wanted:
            return i + 1
    return None
