"""An editor-like ACP client built on the SDK's client side, and a spawned ``tether --mode acp``.

``EditorClient`` records every ``session/update`` and permission request in one ordered log,
answers permission requests from a scripted list of choices, and can offer the editor
capabilities: files served from in-memory buffers (so a test can tell an editor read from a disk
read) and terminals that really run their command.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


@dataclass
class EditorClient:
    """The client side of the connection, recording what the agent does."""

    permission_choices: list[str] = field(default_factory=lambda: [])
    """Option ids to answer permission requests with, in order (``cancelled`` answers cancelled)."""
    buffers: dict[str, str] | None = None
    """Offer ``fs/*``: path -> text the editor has open (unsaved); missing paths come from disk."""
    terminals_enabled: bool = False
    log: list[dict[str, Any]] = field(default_factory=lambda: [])
    """Every update (``{"update": ...}``) and permission request (``{"permission": ...}``), in order."""
    writes: list[tuple[str, str]] = field(default_factory=lambda: [])
    terminals: dict[str, Terminal] = field(default_factory=lambda: {})
    commands: list[list[str]] = field(default_factory=lambda: [])
    on_update: Callable[[dict[str, Any]], None] | None = None
    """Called with every update as it arrives (e.g. to cancel at the right moment)."""
    on_permission: Callable[[], Awaitable[None]] | None = None
    """Awaited when a permission request arrives, before it is answered."""

    def capabilities(self) -> ClientCapabilities:
        files = self.buffers is not None
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=files, write_text_file=files),
            terminal=self.terminals_enabled,
        )

    # -- the Client protocol -------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.log.append({"update": data, "sessionId": session_id})
        if self.on_update is not None:
            self.on_update(data)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        entry = {
            "permission": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [o.model_dump(mode="json", by_alias=True) for o in options],
        }
        self.log.append(entry)
        if self.on_permission is not None:
            await self.on_permission()
        choice = self.permission_choices.pop(0) if self.permission_choices else "cancelled"
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        assert self.buffers is not None, "fs/read_text_file was not offered"
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except FileNotFoundError:
            raise acp.RequestError.resource_not_found(path) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        assert self.buffers is not None, "fs/write_text_file was not offered"
        self.writes.append((path, content))
        self.buffers[path] = content  # the editor keeps it in its buffer; the disk is untouched
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        assert self.terminals_enabled, "terminal/create was not offered"
        argv = [command, *(args or [])]
        self.commands.append(argv)
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        terminal = Terminal(process)

        async def pump() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                terminal.output.extend(chunk)

        terminal.reader = asyncio.ensure_future(pump())
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"), truncated=False, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return WaitForTerminalExitResponse(exit_code=code)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()
        return ReleaseTerminalResponse()

    # -- reading the log -----------------------------------------------------------------------

    def updates(self) -> list[dict[str, Any]]:
        return [entry["update"] for entry in self.log if "update" in entry]

    def clear(self) -> None:
        self.log.clear()


@dataclass(frozen=True)
class AcpEnv:
    home: Path
    project: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "TETHER_SCRIPTED"}
        env.update({"TETHER_HOME": str(self.home), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
        env.update(extra)
        return env

    def script(self, name: str, responses: Sequence[Mapping[str, Any]]) -> Path:
        path = self.home / f"{name}.json"
        path.write_text(json.dumps({"responses": list(responses)}))
        return path

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "tether.cli", "--mode", "acp", *args]

    @contextlib.asynccontextmanager
    async def agent(
        self, client: EditorClient, script: Path, *args: str, env: Mapping[str, str] | None = None
    ) -> AsyncGenerator[acp.core.ClientSideConnection, None]:
        """``tether --mode acp`` in a subprocess, connected to ``client`` through the SDK (with
        ``env`` added to its environment)."""
        command = self.command(*args)
        environment = self.env(TETHER_SCRIPTED=str(script), **(env or {}))
        # the SDK answers a request for a method the client lacks with "method not found", so the
        # client implements only what the tests use, not the whole Client protocol
        async with acp.spawn_agent_process(
            cast(acp.Client, client), command[0], *command[1:], env=environment, cwd=self.project
        ) as (connection, _process):
            yield connection


def text_reply(*chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


def thinking_reply(thought: str, *chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "thinking", "chunks": [thought]}, {"type": "text", "chunks": list(chunks)}]}


def tool_reply(name: str, arguments: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": dict(arguments)}]}


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def for_call(log: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    """The log entries about one tool call, in order (updates and permission requests)."""
    entries: list[dict[str, Any]] = []
    for entry in log:
        body: dict[str, Any] = entry.get("update") or entry.get("permission") or {}
        if body.get("toolCallId") == call_id:
            entries.append(entry)
    return entries


def status_trail(log: list[dict[str, Any]], call_id: str) -> list[str]:
    """``permission`` or the status each update of a call carried (``-`` when it had none)."""
    trail: list[str] = []
    for entry in for_call(log, call_id):
        if "permission" in entry:
            trail.append("permission")
        else:
            trail.append(entry["update"].get("status", "-"))
    return trail
