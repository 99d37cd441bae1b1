"""One MCP server's connection: start, list tools, call, restart after a crash, stop.

The SDK's ``Client`` is an async context manager holding anyio task groups, which must be
entered and left by the same task; so each connection runs in a task of its own that spawns a
stdio server's process at once (``tether.mcp.stdio``: the server starts while the SDK loads in a
thread, ``tether.mcp.sdk``), enters the client, lists the tools, then waits to be told to stop.
Calls come from the agent's tool tasks and go through the client directly (its requests are
task-agnostic).

The start-up timeout is a cancel scope around the whole start (the SDK's load included) whose
deadline is lifted once the tools are listed (the prompts get what is left of it, and not
listed in time they are left out, not the tools): a server that never answers ``initialize`` is
stopped (its process group killed) instead of being waited on forever. A call waits at most
``tool_timeout`` seconds without an answer or a progress notification (each restarts the wait),
then is cancelled and fails saying so. A stdio server whose process exits while idle is marked
failed at once, so the next call starts it again before sending anything; one that exits
mid-call turns that call into an error that says so. A stdio server's stderr is appended to
``<log_dir>/<name>.log``, never the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar, cast

from tether.agent.tool_check import parameters_problem
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.mcp import sdk
from tether.mcp.config import McpServerConfig
from tether.mcp.prompts import PromptInfo, list_prompts
from tether.mcp.stdio import copy_log, process_transport, spawn, stop_process
from tether.own_files import make_own_folder

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, Tool, ToolAnnotations

Progress = Callable[[float, float | None, str | None], None]
"""``(progress, total, message)`` of a progress notification during a call."""

Status = Literal["stopped", "starting", "ready", "failed"]
_T = TypeVar("_T")

MAX_LOG_BYTES = 4 << 20
"""What a server's log keeps of one start's stderr (``stdio.copy_log``), and the size past which
the log is started afresh when the server starts, the old one kept as ``<server>.log.1``: the
log is appended to by every start of every session, so a server that writes much to stderr
(debug output, a stack trace per request) filled the disk over time."""

MAX_DESCRIPTION = 2048
"""Characters of a tool's description kept (Claude Code's cut for MCP tool descriptions): every
declared tool's description goes with every model request, and a server's 5 MB description was
sent whole each time. A longer one is cut and ends with a line saying so."""

MAX_SCHEMA_BYTES = 64 << 10
"""The largest input schema (as compact JSON) of a tool offered: it goes with every request too,
and one of 64 KiB is already some 16,000 tokens a turn (servers' schemas run to a few KB). A tool
over it is left out with why (``tether mcp list``, and a note), not cut: half a schema is not one."""

TASKS_ONLY = "it requires MCP task-augmented execution, which tether does not use"
"""Why a tool the server offers only as a task is left out: by the server's design, not a
defect, so ``/mcp`` lists it but the session does not tell of it on every run."""

_STOP_GRACE = 10.0
"""Seconds to wait for a connection task to wind down; stopping a process is bounded on its own
(close stdin, SIGTERM, SIGKILL: about 6 s at worst), this only guards against a stuck transport."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    """The server marks it read-only (``readOnlyHint``) and not destructive (``destructiveHint``):
    a call needs no approval (``tether.mcp.tools``)."""
    left_out: str | None = None
    """Why the tool is not offered to the agent (``None``: it is)."""


class McpConnection:
    """A live (or stopped, or failed) connection to one server; see the module docstring."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        log_dir: Path | None = None,
        notify: Callable[[str], None] = lambda _text: None,
    ) -> None:
        self.config = config
        self.log_dir = log_dir
        self.notify = notify
        """Where a sign-in address goes (the session's notices)."""
        self.settled: Callable[[McpConnection], None] = lambda _connection: None
        """Called when a start ends in ``ready`` or ``failed`` (not when stopped while starting):
        ``McpServers`` keeps or forgets the listing (``tether.mcp.tool_cache``)."""
        self.status: Status = "stopped"
        self.error: str | None = None
        """Why the server is not ready, in words for the user and the model."""
        self.tools: list[ToolInfo] = []
        """The tools of the last successful start (kept across a crash: calls restart it)."""
        self.repeated: tuple[str, ...] = ()
        """Tool names the server listed more than once at its last start (the first one is kept)."""
        self.has_resources = False
        """The server said at its last start that it offers resources (``tether.mcp.resources``)."""
        self.prompts: list[PromptInfo] = []
        """The prompts of the last successful start (``tether.mcp.prompts``: slash commands)."""
        self.unlisted_prompts: str | None = None
        """Why the server's prompts were not listed at its last start (``None``: they were, or it
        has none): its tools are offered all the same."""
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._cancel: Any = None  # the anyio cancel scope of a start in progress
        self._closed = False
        self._process: asyncio.subprocess.Process | None = None
        self._cut_off: str | None = None
        """Why tether disconnected the server it runs now (``stdio.process_transport``), if it did."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def log_file(self) -> Path | None:
        return (
            self.log_dir / f"{self.config.slug}.log"
            if self.log_dir is not None and self.config.command
            else None
        )

    def start(self) -> None:
        """Start connecting in the background (needs a running event loop); no-op when running
        or closed."""
        if self._closed or (self._task is not None and not self._task.done()):
            return
        self.status, self.error = "starting", None
        self._ready, self._stop = asyncio.Event(), asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp server {self.name}")

    async def wait_ready(self) -> bool:
        """Wait until the start in progress succeeded or failed (bounded by the start-up timeout)."""
        if self.status == "starting":
            await self._ready.wait()
        return self.status == "ready"

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        signal: AbortSignal | None = None,
        *,
        on_progress: Progress | None = None,
    ) -> CallToolResult:
        """Call a tool; a dead server is started again first. Failures raise ``ToolError``;
        so does ``tool_timeout`` seconds without an answer or a progress notification."""
        client = await self._ready_client()
        loop = asyncio.get_running_loop()
        heard = loop.time()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal heard
            heard = loop.time()
            if on_progress is not None:
                on_progress(progress, total, message)

        call = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=progress))
        remove = signal.add_listener(lambda _reason: _cancel(call)) if signal is not None else None
        timeout = self.config.tool_timeout
        try:
            while not call.done():
                left = heard + timeout - loop.time()
                if left <= 0:
                    call.cancel()
                    await asyncio.gather(call, return_exceptions=True)
                    raise ToolError(
                        f"MCP server {self.name!r}: {tool!r} did not answer within {timeout:g} s (nor "
                        "report progress), so the call was cancelled; give the server a longer "
                        "'timeout' (seconds) in its MCP config if it needs more time."
                    )
                await asyncio.wait({call}, timeout=left)
            return call.result()
        except asyncio.CancelledError:
            if signal is None or not signal.aborted or not call.cancelled():
                raise
            raise ToolError(f"The call to {tool!r} on MCP server {self.name!r} was aborted.") from None
        except ToolError:
            raise
        except Exception as exc:
            if _connection_lost(exc):
                self._lost(f"a call to {tool!r}")
                raise ToolError(
                    f"MCP server {self.name!r} stopped during the call to {tool!r} "
                    f"({self._cut_off or 'it crashed or exited'}); it will be started again on the next call."
                ) from None
            raise ToolError(f"MCP server {self.name!r}: {tool!r} failed: {describe_error(exc)}") from None
        finally:
            if not call.done():  # this task was cancelled: the call goes with it
                call.cancel()
            if remove is not None:
                remove()

    async def request(self, what: str, make: Callable[[Client], Awaitable[_T]]) -> _T:
        """A request other than a tool call (``make(client)``: list or read resources), with the
        same restart-before-sending and ``tool_timeout`` as a call; failures raise ``ToolError``
        naming ``what``."""
        client = await self._ready_client()
        timeout = self.config.tool_timeout
        try:
            return await asyncio.wait_for(make(client), timeout)
        except TimeoutError:
            raise ToolError(f"MCP server {self.name!r}: {what} got no answer within {timeout:g} s.") from None
        except Exception as exc:
            if _connection_lost(exc):
                self._lost(what)
            raise ToolError(f"MCP server {self.name!r}: {what} failed: {describe_error(exc)}") from None

    async def _ready_client(self) -> Client:
        """The client, the server (re)started first when it is not running."""
        if self._closed:
            raise ToolError(f"MCP server {self.name!r} was stopped: its session is closed.")
        if self.status == "starting" and not await self.wait_ready():  # share a start in progress
            raise ToolError(f"MCP server {self.name!r} is not available: {self.error}")
        if self.status != "ready" or self._exited():
            await self.stop()
            self.start()
            if not await self.wait_ready():
                raise ToolError(f"MCP server {self.name!r} is not available: {self.error}")
        client = self._client
        assert client is not None
        return client

    def _exited(self) -> bool:
        """The stdio server's process has exited (before its watcher in ``_serve`` saw it)."""
        return self._process is not None and self._process.returncode is not None

    async def close(self) -> None:
        """Stop for good: no call or ``start()`` starts the server again."""
        self._closed = True
        await self.stop()

    async def stop(self) -> None:
        """Stop the server (its process and children too, for stdio) and wait for it."""
        task = self._task
        if task is None:
            return
        self._stop.set()
        if self._cancel is not None:  # still starting: abandon the start
            self._cancel.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), _STOP_GRACE)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._task = None
        if self.status == "ready":
            self.status = "stopped"

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        timeout = self.config.startup_timeout
        log = None
        process: asyncio.subprocess.Process | None = None
        copying: asyncio.Future[None] | None = None
        waiting = "initialize"  # what the start waits for: said when it takes too long
        self._cut_off = None
        try:
            log = self._open_log()
            if self.config.command is not None:
                process = await spawn(self.config, log)  # before the SDK is loaded: see stdio.py
                self._process = process
                if log is not None and process.stderr is not None:
                    copying = asyncio.ensure_future(copy_log(process.stderr, log, MAX_LOG_BYTES))
            sdk.load_in_background()  # not before: a command that does not exist needs no SDK
            import anyio

            with anyio.CancelScope(deadline=started + timeout) as scope:
                self._cancel = scope
                if self._stop.is_set():  # stop() came while spawning
                    scope.cancel()
                await sdk.loaded()
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._client_for(process))
                    waiting = "tools/list"
                    self.tools, self.repeated = await _list_tools(client)
                    self.has_resources = client.server_capabilities.resources is not None
                    left, scope.deadline = scope.deadline - anyio.current_time(), math.inf
                    self.prompts, self.unlisted_prompts = await _prompts(client, left, timeout)
                    self._cancel = None
                    self._client, self.status = client, "ready"
                    self._ready.set()
                    self.settled(self)
                    await self._until_stopped_or_exited(process)
            if scope.cancelled_caught and self.status == "starting":
                self._fail(
                    "stopped while starting"
                    if self._stop.is_set()
                    else f"did not start within {timeout:g} s (no answer to {waiting}){self._log_hint()}"
                )
        except Exception as exc:
            if self.status != "failed":
                self._fail(f"{describe_error(exc)}{self._log_hint()}")
        finally:
            failed_start = not self._ready.is_set() and self.status == "failed" and not self._stop.is_set()
            self._client, self._cancel, self._process = None, None, None
            if process is not None and process.returncode is None:  # the transport never took it
                await stop_process(process)
            if copying is not None:  # the group is gone, its end of the pipe with it (a daemon's: 1 s)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(copying, 1.0)
            if log is not None:
                log.close()
            self._ready.set()
            if failed_start:
                self.settled(self)

    async def _until_stopped_or_exited(self, process: asyncio.subprocess.Process | None) -> None:
        """Serve until ``stop()``, or until the server's process exits by itself: then the
        server is failed at once, so the next call restarts it instead of being sent to it."""
        stopped = asyncio.ensure_future(self._stop.wait())
        waits: set[asyncio.Future[Any]] = {stopped}
        if process is not None:
            waits.add(asyncio.ensure_future(process.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if process is not None and process.returncode is not None and not self._stop.is_set():
            self._client = None
            self._fail(f"the server exited (code {process.returncode}){self._log_hint()}")

    def _open_log(self) -> TextIO | None:
        if self.log_file is None:
            return None
        make_own_folder(self.log_file.parent)
        with contextlib.suppress(OSError):  # missing, or another session just moved it
            if self.log_file.stat().st_size > MAX_LOG_BYTES:
                self.log_file.replace(self.log_file.with_name(self.log_file.name + ".1"))
        log = self.log_file.open("a", encoding="utf-8", errors="replace")
        log.write(f"--- tether: starting {self.name} at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        log.flush()
        return log

    def _client_for(self, process: asyncio.subprocess.Process | None) -> Client:
        from mcp import Client
        from mcp_types import Implementation

        from tether._version import __version__

        info = Implementation(name="tether", version=__version__)
        if process is not None:
            return Client(process_transport(process, self._cut), client_info=info)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self.config.url is not None
        headers = dict(self.config.headers) or None
        if self.config.sse:
            from mcp.client.sse import sse_client

            return Client(sse_client(self.config.url, headers=headers), client_info=info)
        auth = None
        if self.config.uses_oauth:
            from tether.ai.paths import data_dir
            from tether.mcp.oauth import oauth_for

            auth = oauth_for(self.config, data_dir(), self._signing_in)
        http = create_mcp_http_client(headers=headers, auth=auth)
        return Client(streamable_http_client(self.config.url, http_client=http), client_info=info)

    def _signing_in(self, url: str) -> None:
        """The server wants a sign-in: say where, and give the user ``SIGN_IN_TIMEOUT`` for it
        instead of what is left of the start-up timeout."""
        import anyio

        from tether.mcp.oauth import SIGN_IN_TIMEOUT

        if self._cancel is not None:
            self._cancel.deadline = anyio.current_time() + SIGN_IN_TIMEOUT
        self.notify(f"MCP server {self.name!r} asks you to sign in: open {url}")

    def _fail(self, error: str) -> None:
        self.status, self.error = "failed", error

    def _cut(self, why: str) -> None:
        self._cut_off = why

    def _lost(self, during: str) -> None:
        """The connection went away during ``during``: the server closed it, or tether did and
        said why (``_cut_off``: a line over the limit, which the user must not take for a crash)."""
        if self._cut_off is not None:
            self._fail(f"disconnected during {during}: {self._cut_off}{self._log_hint()}")
        else:
            self._fail(f"the server closed the connection during {during}{self._log_hint()}")

    def _log_hint(self) -> str:
        return f" (server log: {self.log_file})" if self.log_file is not None else ""


async def _prompts(client: Client, left: float, timeout: float) -> tuple[list[PromptInfo], str | None]:
    """The server's prompts, if it has any, and why they were not listed: a server whose list
    fails, or gets no answer in the ``left`` seconds of its start-up ``timeout``, still serves
    its tools (a broken extra must not cost the rest; a hang failed the whole server)."""
    import anyio

    if client.server_capabilities.prompts is None:
        return [], None
    try:
        with anyio.fail_after(left):
            return await list_prompts(client), None
    except TimeoutError:
        return [], f"no answer to prompts/list within its start-up timeout ({timeout:g} s)"
    except Exception as exc:
        return [], f"prompts/list failed: {describe_error(exc)}"


async def _list_tools(client: Client) -> tuple[list[ToolInfo], tuple[str, ...]]:
    """The server's tools, each name once (the first listing of it), and the names it listed
    again (a paginator repeating its pages does so for all): each listing of a name counted as
    another tool, so the name was taken as a collision and offered under a hash
    (``mcp__s__echo_1a2b3c4d``), which a model calling ``mcp__s__echo`` did not reach."""
    from pydantic import ValidationError

    tools: list[ToolInfo] = []
    cursor: str | None = None
    for _ in range(100):  # a paginator that never ends must not hang the start
        try:
            page = await client.list_tools(cursor=cursor)
        except ValidationError:  # one damaged tool fails the SDK's whole page: take them one by one
            found, cursor = await _tools_one_by_one(client, cursor)
            tools.extend(found)
        else:
            tools.extend(_tool_info(t) for t in page.tools)
            cursor = page.next_cursor
        if cursor is None:
            break
    first: dict[str, ToolInfo] = {}
    repeated = dict.fromkeys(t.name for t in tools if first.setdefault(t.name, t) is not t)
    return list(first.values()), tuple(repeated)


def _tool_info(tool: Tool, left_out: str | None = None) -> ToolInfo:
    return ToolInfo(
        tool.name,
        _cut(tool.description or tool.title or ""),
        dict(tool.input_schema),
        _read_only(tool.annotations),
        left_out or _left_out(tool),
    )


async def _tools_one_by_one(client: Client, cursor: str | None) -> tuple[list[ToolInfo], str | None]:
    """A ``tools/list`` page read without the SDK's check of the whole page, so that a tool the
    SDK refuses (an input schema whose ``type`` is not ``object``, ``required`` not a list) is
    left out, with why, and the server's other tools are still offered. The request is the
    SDK's own (``_stamp`` adds the negotiated protocol's fields), sent through its dispatcher."""
    from mcp_types import ListToolsResult, Tool
    from pydantic import ValidationError

    session = client.session
    data: dict[str, Any] = {"method": "tools/list", "params": {"cursor": cursor} if cursor else {}}
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # pyright: ignore[reportPrivateUsage, reportArgumentType]
    raw = await session._dispatcher.send_raw_request("tools/list", data.get("params"), opts)  # pyright: ignore[reportPrivateUsage, reportArgumentType]
    listed = raw.get("tools")
    if not isinstance(listed, list):  # read as no tools, the server was "ready" with none, unsaid
        raise ValueError(f"its tools/list answer has no list of tools (tools: {type(listed).__name__})")
    infos: list[ToolInfo] = []
    kept: list[Tool] = []
    for index, entry in enumerate(cast(list[object], listed)):
        item = cast(dict[str, Any], entry) if isinstance(entry, dict) else {}
        name = item.get("name")
        schema = item.get("inputSchema")
        left_out = (
            parameters_problem(schema) if isinstance(name, str) else f"tool {index} of the list has no name"
        )
        try:
            tool = Tool.model_validate(
                item if left_out is None else {**item, "inputSchema": {"type": "object"}}
            )
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            if isinstance(name, str):
                infos.append(ToolInfo(name, "", {}, left_out=f"{where}: {first['msg']}"))
            continue
        infos.append(_tool_info(tool, left_out))
        kept += [tool] if left_out is None else []
    next_cursor = raw.get("nextCursor")
    next_cursor = next_cursor if isinstance(next_cursor, str) else None
    # the SDK checks a call's result against the output schema of its listing, and lists again
    # (failing as above) for a tool it has not seen: give it the tools that passed
    session._absorb_tool_listing(  # pyright: ignore[reportPrivateUsage]
        ListToolsResult(tools=kept), complete=cursor is None and next_cursor is None
    )
    return infos, next_cursor


def _cut(description: str) -> str:
    if len(description) <= MAX_DESCRIPTION:
        return description
    return (
        f"{description[:MAX_DESCRIPTION]}\n[description cut at {MAX_DESCRIPTION} of its "
        f"{len(description)} characters]"
    )


def _left_out(tool: Tool) -> str | None:
    if tool.execution is not None and tool.execution.task_support == "required":
        return TASKS_ONLY
    # a schema providers refuse would fail every request of the session, not just this tool's calls
    return parameters_problem(dict(tool.input_schema)) or _schema_size_problem(tool.input_schema)


def _schema_size_problem(schema: dict[str, Any]) -> str | None:
    try:
        size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")).encode())
    except RecursionError:  # the provider's request would fail the same way, every turn
        return "its input schema is nested too deeply to send"
    if size > MAX_SCHEMA_BYTES:
        return f"its input schema is {size:,} bytes, over the {MAX_SCHEMA_BYTES:,}-byte limit"
    return None


def _read_only(annotations: ToolAnnotations | None) -> bool:
    """Codex's rule: read-only only when the server says so and does not also say destructive
    (the MCP specification's defaults: not read-only, destructive)."""
    return (
        annotations is not None
        and annotations.read_only_hint is True
        and annotations.destructive_hint is not True
    )


def _connection_lost(exc: BaseException) -> bool:
    import anyio
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream)


def _cancel(call: asyncio.Future[Any]) -> None:
    call.cancel()


def describe_error(exc: BaseException) -> str:
    """One line for an error from the SDK or a transport (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        exc = group.exceptions[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    if isinstance(exc, NotADirectoryError) and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
