"""The built-in tools inside an editor: files and commands through the ACP client when it offers them.

An editor that offers ``fs/read_text_file`` and ``fs/write_text_file`` gets every read and edit of a
text file routed through it, so the agent sees unsaved buffers and the editor sees (and can undo)
every change; an editor with ``terminal/*`` runs ``bash`` in its own terminal, which it shows live
inside the tool call. Paths still go through the same ``Workspace`` policy, and results read the
same as the local tools' (``read_lines``, ``edit_text``, ``written``), so the model cannot tell the
difference. Whatever the client does not offer stays with the local tools.

Every tool is also wrapped to report ``in_progress`` the moment it really starts (after any
permission was given) and to record the change an edit or write made, which the editor shows as a
diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import RequestError
from acp.interfaces import Client

from tether.acp.updates import FileDiff, SessionUpdate, terminal_content, tool_call_progress
from tether.agent import AgentTool, AgentToolResult
from tether.agent.tool import ToolUpdate
from tether.agent.validation import validate_json_arguments
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools import (
    EDIT_PARAMETERS,
    WRITE_PARAMETERS,
    BashParams,
    EditParams,
    ReadParams,
    Workspace,
    WriteParams,
    edit_text,
    read_lines,
    written,
)
from tether.tools.bash import BASH_PARAMETERS, DEFAULT_TIMEOUT, DESCRIPTION as BASH_DESCRIPTION, shell_argv
from tether.tools.edit import refuse_uneditable
from tether.tools.read import line_window, read_file
from tether.tools.sniff import SNIFF_BYTES, image_mime_type, looks_binary
from tether.tools.truncate import MAX_BYTES, OutputBuffer
from tether.tools.write import refuse_unwritable
from tether.wire import ToolCall

SNAPSHOT_LIMIT = 2 * 1024 * 1024
"""Files larger than this are not copied into a diff (the editor would not show them well)."""
TERMINAL_OUTPUT_LIMIT = 4 * MAX_BYTES
"""Bytes of output the editor's terminal keeps (the tail); we then keep the head and tail as locally."""


Execute = Callable[[str, Any, AbortSignal | None, ToolUpdate | None], Awaitable[AgentToolResult[Any]]]


@dataclass(frozen=True, slots=True)
class EditorAccess:
    """What the client offered in ``initialize``."""

    read: bool = False
    write: bool = False
    terminal: bool = False


@dataclass(slots=True)
class ToolBridge:
    """One ACP session's link between the tools and the client."""

    client: Client
    session_id: str
    workspace: Workspace
    access: EditorAccess
    send: Callable[[SessionUpdate], Awaitable[None]]
    diffs: dict[str, FileDiff] = field(default_factory=lambda: {})
    """Per tool call id: the change the call made (taken by the tool's final update)."""
    terminals: dict[str, str] = field(default_factory=lambda: {})
    """Per tool call id: the client terminal its command ran in."""

    async def read_text(self, path: Path) -> str:
        """A text file as the editor has it (unsaved changes included), else from disk."""
        if self.access.read:
            try:
                response = await self.client.read_text_file(session_id=self.session_id, path=str(path))
            except RequestError as exc:
                raise ToolError(
                    f"Cannot read {self.workspace.display(path)}: {_client_message(exc)}"
                ) from None
            return response.content
        return _disk_text(path, limit=None) or ""

    async def write_text(self, path: Path, content: str) -> None:
        shown = self.workspace.display(path)
        if not self.access.write:
            raise AssertionError("write_text needs the client's fs/write_text_file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            await self.client.write_text_file(session_id=self.session_id, path=str(path), content=content)
        except OSError as exc:
            raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
        except RequestError as exc:
            raise ToolError(f"Cannot write {shown}: {_client_message(exc)}") from None

    async def preview(self, call: ToolCall) -> FileDiff | None:
        """The change an ``edit`` or ``write`` call would make, for a permission request."""
        args = call["arguments"]
        try:
            if call["name"] == "write":
                params: WriteParams = validate_json_arguments(WRITE_PARAMETERS, "write", args)
                path = self.workspace.resolve(params["path"])
                return FileDiff(str(path), await self.old_text(path), params["content"])
            if call["name"] == "edit":
                edit: EditParams = validate_json_arguments(EDIT_PARAMETERS, "edit", args)
                path = self.workspace.resolve(edit["path"])
                if not path.is_file():
                    return None
                original = await self.read_text(path)
                outcome = edit_text(original, edit, self.workspace.display(path))
                return FileDiff(str(path), original, outcome.new_text)
        except (ValueError, ToolError):
            return None  # the call will fail and say why; there is nothing to preview
        return None

    async def old_text(self, path: Path) -> str | None:
        """A file's text before a change (``None``: no such file, or not one a diff can show)."""
        if not path.is_file():
            return None
        if self.access.read:
            with contextlib.suppress(ToolError):
                return await self.read_text(path)
            return None
        return _disk_text(path, limit=SNAPSHOT_LIMIT)


def bridge_tools(tools: list[AgentTool], bridge: ToolBridge) -> list[AgentTool]:
    """The session's tools: routed through the client where it can, all reporting to it."""
    bridged: list[AgentTool] = []
    for tool in tools:
        execute = tool.execute
        description, parameters, metadata = tool.description, tool.parameters, tool.metadata
        if tool.name == "bash" and bridge.access.terminal:
            # The editor runs the command, outside our sandbox: described and gated as unconfined.
            description, parameters = BASH_DESCRIPTION, BASH_PARAMETERS
            metadata = {**metadata, "needs_approval": True}
        if tool.name == "read" and bridge.access.read:
            execute = _client_read(bridge)
        elif tool.name == "write" and bridge.access.write:
            execute = _client_write(bridge)
        elif tool.name == "edit" and bridge.access.write:
            execute = _client_edit(bridge)
        elif tool.name == "bash" and bridge.access.terminal:
            execute = _client_bash(bridge)
        elif tool.name in ("write", "edit"):
            execute = _recording_diff(bridge, execute)
        bridged.append(
            AgentTool(
                name=tool.name,
                label=tool.label,
                description=description,
                parameters=parameters,
                execute=_reporting_start(bridge, execute),
                execution_mode=tool.execution_mode,
                prepare_arguments=tool.prepare_arguments,
                metadata=metadata,
            )
        )
    return bridged


def _reporting_start(bridge: ToolBridge, execute: Execute) -> Execute:
    async def run(
        tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        await bridge.send(tool_call_progress(tool_call_id, status="in_progress"))
        return await execute(tool_call_id, params, signal, on_update)

    return run


def _recording_diff(bridge: ToolBridge, execute: Execute) -> Execute:
    """A local ``edit``/``write``: snapshot the file before and after, for the editor's diff view."""

    async def run(
        tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        try:
            path: Path | None = bridge.workspace.resolve(params["path"])
        except ToolError:
            path = None
        before = _disk_text(path, limit=SNAPSHOT_LIMIT) if path is not None else None
        result = await execute(tool_call_id, params, signal, on_update)
        after = _disk_text(path, limit=SNAPSHOT_LIMIT) if path is not None else None
        if path is not None and after is not None:
            bridge.diffs[tool_call_id] = FileDiff(str(path), before, after)
        return result

    return run


def _client_read(bridge: ToolBridge) -> Execute:
    workspace = bridge.workspace

    async def run(
        _tool_call_id: str, params: ReadParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        path = workspace.resolve(params["path"])
        if not _is_text_file(path):
            return read_file(workspace, params)  # images, binaries, directories, missing files
        text = await bridge.read_text(path)
        return read_lines(io.BytesIO(text.encode()), workspace.display(path), *line_window(params))

    return run


def _client_write(bridge: ToolBridge) -> Execute:
    workspace = bridge.workspace

    async def run(
        tool_call_id: str, params: WriteParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        path = workspace.resolve(params["path"])
        shown = workspace.display(path)
        refuse_unwritable(path, shown)
        existed = path.exists()
        before = await bridge.old_text(path)
        await bridge.write_text(path, params["content"])
        bridge.diffs[tool_call_id] = FileDiff(str(path), before, params["content"])
        return written(shown, params["content"], existed)

    return run


def _client_edit(bridge: ToolBridge) -> Execute:
    workspace = bridge.workspace

    async def run(
        tool_call_id: str, params: EditParams, _signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        path = workspace.resolve(params["path"])
        shown = workspace.display(path)
        refuse_uneditable(path, shown)
        original = await bridge.read_text(path)
        outcome = edit_text(original, params, shown)
        await bridge.write_text(path, outcome.new_text)
        bridge.diffs[tool_call_id] = FileDiff(str(path), original, outcome.new_text)
        return outcome.result

    return run


def _client_bash(bridge: ToolBridge) -> Execute:
    """``bash`` in the editor's terminal: shown live in the tool call, killed on abort or timeout."""
    workspace, client, session_id = bridge.workspace, bridge.client, bridge.session_id

    async def run(
        tool_call_id: str, params: BashParams, signal: AbortSignal | None, _on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        if not params["command"].strip():
            raise ToolError("command is empty.")
        cwd = workspace.resolve(cwd) if (cwd := params.get("cwd")) else workspace.real_root
        if not cwd.is_dir():
            raise ToolError(f"cwd {workspace.display(cwd)} is not a directory.")
        argv = shell_argv(params["command"])
        try:
            created = await client.create_terminal(
                session_id=session_id,
                command=argv[0],
                args=argv[1:],
                cwd=str(cwd),
                output_byte_limit=TERMINAL_OUTPUT_LIMIT,
            )
        except RequestError as exc:
            raise ToolError(f"The editor could not start the command: {_client_message(exc)}") from None
        terminal_id = created.terminal_id
        bridge.terminals[tool_call_id] = terminal_id
        timeout = params.get("timeout") or DEFAULT_TIMEOUT
        try:
            await bridge.send(tool_call_progress(tool_call_id, content=[terminal_content(terminal_id)]))
            ending = await _wait_for_exit(client, session_id, terminal_id, timeout, signal)
            if ending != "exited":
                with contextlib.suppress(RequestError):
                    await client.kill_terminal(session_id=session_id, terminal_id=terminal_id)
            output = await client.terminal_output(session_id=session_id, terminal_id=terminal_id)
        except RequestError as exc:
            raise ToolError(f"The editor's terminal failed: {_client_message(exc)}") from None
        finally:
            with contextlib.suppress(RequestError, ConnectionError):
                await client.release_terminal(session_id=session_id, terminal_id=terminal_id)
        text = _bounded(output.output, output.truncated) or "(no output)"
        status = output.exit_status
        exit_code = status.exit_code if status is not None else None
        if ending == "aborted":
            raise ToolError(f"{text}\n\nCommand aborted; the editor's terminal was killed.")
        if ending == "timeout":
            raise ToolError(f"{text}\n\nCommand timed out after {timeout:g} seconds; it was killed.")
        if exit_code != 0:
            how = (
                f"code {exit_code}" if exit_code is not None else f"signal {status.signal if status else '?'}"
            )
            raise ToolError(f"{text}\n\nCommand exited with {how}.")
        details = {"exitCode": exit_code, "truncated": output.truncated, "terminalId": terminal_id}
        return AgentToolResult([{"type": "text", "text": text}], details)

    return run


async def _wait_for_exit(
    client: Client, session_id: str, terminal_id: str, timeout: float, signal: AbortSignal | None
) -> str:
    """``exited``, ``timeout`` or ``aborted``, whichever comes first."""
    exited = asyncio.ensure_future(
        client.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
    )
    waiters: set[asyncio.Future[Any]] = {exited}
    aborted = asyncio.ensure_future(signal.wait()) if signal is not None else None
    if aborted is not None:
        waiters.add(aborted)
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            if not waiter.done():
                waiter.cancel()
    if exited in done:
        exited.result()  # a client error surfaces here
        return "exited"
    return "aborted" if aborted is not None and aborted in done else "timeout"


def _bounded(output: str, cut_by_client: bool) -> str:
    buffer = OutputBuffer()
    buffer.feed(output.encode())
    buffer.finish()
    text = buffer.text()
    return f"[… earlier output dropped by the terminal …]\n{text}" if cut_by_client else text


def _is_text_file(path: Path) -> bool:
    if not path.is_file():
        return False  # opening a pipe would block; read_file explains what it is
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    return image_mime_type(head) is None and not looks_binary(head)


def _disk_text(path: Path, *, limit: int | None) -> str | None:
    """A small UTF-8 file's text; ``None`` when missing, too large or not text."""
    try:
        if not path.is_file() or (limit is not None and path.stat().st_size > limit):
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _client_message(exc: RequestError) -> str:
    data: object = exc.data
    if isinstance(data, dict):
        details = cast(dict[str, object], data).get("details")
        if details:
            return f"{exc} ({details})"
    return str(exc)
