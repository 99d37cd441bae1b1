"""``tether --mode acp``: tether as an Agent Client Protocol agent, for Zed, JetBrains and friends.

The editor starts ``tether --mode acp`` and talks JSON-RPC over its stdin and stdout, through the
official SDK (``acp``: agent-side connection, schema types); ``tether.acp.transport`` only adds the error
answers JSON-RPC asks for on unreadable input. Each ACP session is an ``AgentSession`` on an ordinary
tether session: it is stored like any other, listed by ``tether sessions`` and resumable with
``tether --resume``. ``session/load`` of a session another process is running (a terminal, an RPC
client, another editor) loads it read-only and keeps the client up to date as that process
stores new messages (``AcpSession.start_following``).

This module answers the protocol's methods; one session's work (updates, permissions, modes,
options) is ``tether.acp.session``, the updates themselves ``tether.acp.updates``, and the tools' way to the
editor's files and terminal ``tether.acp.tools``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Agent, Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AudioContentBlock,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from tether._event_loop import run as run_event_loop
from tether._version import __version__
from tether.acp.session import AcpSession
from tether.acp.tools import EditorAccess
from tether.acp.updates import (
    history_updates,
)
from tether.mcp.config import McpServerConfig
from tether.mcp.errors import McpConfigError
from tether.session.factory import SessionChoice, start_session
from tether.session.options import SessionOptions
from tether.wire import ImageContent

logger = logging.getLogger("tether.acp")

ENV_AUTH = "environment"
AUTH_DESCRIPTION = (
    "tether reads provider API keys from its environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, "
    "GEMINI_API_KEY, OPENROUTER_API_KEY, ...) and models from its settings and models.json. "
    "Set them in the environment the editor starts `tether --mode acp` with; there is nothing to "
    "log in to here."
)
AnyMcpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def run_acp(options: SessionOptions, take_over_stdout: Callable[[], BinaryIO]) -> int:
    """Serve ACP on stdin/stdout until the client closes stdin (or stdout).

    ``take_over_stdout`` gives the protocol's private handle on stdout and points fd 1 at
    stderr (``tether.cli.stdout``): what an extension or a child process writes to stdout must
    not get into the JSON-RPC stream."""
    unsuitable = [
        name for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)) if not _is_stream(stream)
    ]
    if unsuitable:
        sys.stderr.write(
            f"tether: --mode acp talks over pipes (editors start it that way); its {' and '.join(unsuitable)} "
            "is a regular file or closed\n"
        )
        return 1
    out = take_over_stdout()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="tether acp: %(message)s")
    try:
        run_event_loop(_serve(options, out))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(options: SessionOptions, out: BinaryIO) -> None:
    from acp.agent.connection import AgentSideConnection

    from tether.acp.transport import open_stdio

    transport = await open_stdio(sys.stdin, out)
    agent = TetherAcpAgent(options)
    # The SDK routes the methods an agent has; the unstable ones (fork, resume, close) we do not.
    connection = AgentSideConnection(cast("Agent", agent), transport, listening=False)
    try:
        await connection.listen()
    finally:
        await agent.close()
        await asyncio.shield(connection.close())


def _is_stream(stream: TextIO | None) -> bool:
    """A pipe, socket or terminal: what asyncio's pipe transports accept (a regular file is not;
    ``None``: the descriptor was closed when Python started)."""
    if stream is None:
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class TetherAcpAgent:
    """The ACP agent: the methods the SDK's router calls, by name, with snake_case parameters."""

    def __init__(self, options: SessionOptions) -> None:
        self._options = options
        self._client: Client | None = None
        self._access = EditorAccess()
        self._initialized = False
        """``initialize`` was answered: the client's capabilities (``_access``) are known."""
        self._sessions: dict[str, AcpSession] = {}
        self._announcements: set[asyncio.Task[None]] = set()
        """``available_commands_update`` sends in flight (kept alive until they finish)."""

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def close(self) -> None:
        # Together: a followed session takes up to a second to stop watching.
        await asyncio.gather(*(session.close() for session in self._sessions.values()))
        self._sessions.clear()

    # -- connection ----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_: Any,
    ) -> InitializeResponse:
        warm_up(self._options)
        caps = client_capabilities or ClientCapabilities()
        fs = caps.fs
        self._access = EditorAccess(
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
            terminal=bool(caps.terminal),
        )
        self._initialized = True
        return InitializeResponse(
            # We speak version 1, the only stable one: a client asking for another decides.
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[
                AuthMethodAgent(
                    id=ENV_AUTH, name="API keys from the environment", description=AUTH_DESCRIPTION
                )
            ],
            agent_info=Implementation(name="tether", title="tether", version=__version__),
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        self._check_initialized("authenticate")
        if method_id != ENV_AUTH:
            raise RequestError.invalid_params(
                {"details": f"unknown auth method {method_id!r}; use {ENV_AUTH!r}"}
            )
        return AuthenticateResponse()

    # -- sessions ------------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[AnyMcpServer] | None = None,
        **_: Any,
    ) -> NewSessionResponse:
        self._check_initialized("session/new")
        servers, notes, meta = _editor_mcp_servers(mcp_servers)
        session = self._start(cwd, SessionChoice(), servers, notes)
        if session.core.notice:  # what the setup skipped (bad MCP entries, an untrusted project)
            meta = {"tether": {**(meta or {}).get("tether", {}), "notice": session.core.notice}}
        self._announce_commands(session)
        return NewSessionResponse(
            session_id=session.id,
            modes=session.mode_state(),
            config_options=session.config_options(),
            field_meta=meta,
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[AnyMcpServer] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> LoadSessionResponse:
        self._check_initialized("session/load")
        servers, notes, meta = _editor_mcp_servers(mcp_servers)
        session = self._sessions.get(session_id)
        if session is not None and session.holder is not None:
            # Loaded again while followed: its writer may have closed it since, so start over,
            # writable if the lock is free now.
            del self._sessions[session_id]
            await session.close()
            session = None
        if session is None:
            session = self._start(cwd, SessionChoice(session_id=session_id), servers, notes)
        elif session.core.is_running:
            raise RequestError.invalid_request({"details": "the session is running a prompt"})
        for update in history_updates(session.core.messages, session.core.cwd):
            await session.send(update)
        if session.holder is not None:
            session.start_following()  # from where the history ends: nothing missed, nothing twice
            note = {"readOnly": True, "writer": session.holder}
            meta = {"tether": {**(meta or {}).get("tether", {}), **note}}
        else:
            self._announce_commands(session)
        return LoadSessionResponse(
            modes=session.mode_state(),
            config_options=session.config_options(),
            field_meta=meta,
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        self._check_initialized("session/list")
        from datetime import UTC, datetime

        from tether.session import SessionManager
        from tether.store.store import SessionDatabaseError

        try:
            with SessionManager() as manager:
                records = manager.list(cwd, empty=False)
        except SessionDatabaseError as exc:
            raise database_failure(exc) from None
        infos = [
            SessionInfo(
                session_id=r.id,
                cwd=r.cwd,
                title=(r.title or r.first_prompt or "").replace("\n", " ")[:80] or None,
                updated_at=datetime.fromtimestamp(r.updated / 1000, UTC).isoformat(),
            )
            for r in records
        ]
        return ListSessionsResponse(sessions=infos)

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        session.set_mode(mode_id)
        await session.send(session.mode_update())
        # The mode is also a config option: a client showing those must see the change too.
        options = ConfigOptionUpdate(
            session_update="config_option_update", config_options=session.config_options()
        )
        await session.send(options)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if not isinstance(value, str):
            raise RequestError.invalid_params(
                {"details": f"option {config_id!r} takes one of its listed values"}
            )
        session.set_option(config_id, value)
        if config_id == "mode":
            await session.send(session.mode_update())
        return SetSessionConfigOptionResponse(config_options=session.config_options())

    # -- turns ---------------------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        prompt: list[
            TextContentBlock
            | ImageContentBlock
            | AudioContentBlock
            | ResourceContentBlock
            | EmbeddedResourceContentBlock
        ],
        **_: Any,
    ) -> PromptResponse:
        session = self._session(session_id)
        text, images = prompt_input(prompt)
        return PromptResponse(stop_reason=await session.run_turn(text, images))

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.cancel()

    # -- helpers -------------------------------------------------------------------------------

    def _check_initialized(self, method: str) -> None:
        """``-32600`` for ``method`` asked before ``initialize``, which ACP says a client MUST
        call first: a session made then would run without the editor's files and terminal (its
        capabilities are said in ``initialize`` only), and with nothing telling the client why.
        (The session methods need a session, which only these methods make.)"""
        if not self._initialized:
            raise RequestError.invalid_request(
                {"details": f"{method} before initialize: the client must call initialize first"}
            )

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"details": f"no session {session_id!r} in this connection"})
        return session

    def _announce_commands(self, session: AcpSession) -> None:
        """Send the session's slash commands right after the response that names the session
        (an update before it would be about a session the client does not know yet)."""
        update = session.commands_update()
        if update is not None:
            task = asyncio.ensure_future(session.send(update))
            self._announcements.add(task)
            task.add_done_callback(self._announcements.discard)

    def _start(
        self,
        cwd: str,
        choice: SessionChoice,
        mcp_servers: Sequence[McpServerConfig] = (),
        mcp_notes: Sequence[str] = (),
    ) -> AcpSession:
        from tether.ai.paths import config_dir
        from tether.errors import ModelError
        from tether.session.settings import SettingsError, load_settings, untrusted_note
        from tether.store import SessionError
        from tether.store.store import SessionDatabaseError, SessionLockedError, SessionNotFoundError

        if self._client is None:
            raise RequestError.internal_error({"details": "no client connection"})
        directory = _directory(cwd)
        options = self._options
        session = AcpSession(self._client, self._access)
        try:
            settings = load_settings(config_dir(), directory)
        except SettingsError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        note = untrusted_note(settings, config_dir())
        if note is not None:  # an editor never asks about trust: the user adds the folder
            logger.warning("%s", note)
        try:
            try:
                core = start_session(
                    options,
                    cwd=directory,
                    settings=settings,
                    ask=session.ask,
                    session=choice,
                    mcp_servers=mcp_servers,
                    mcp_notes=mcp_notes,
                )
            except SessionLockedError as exc:
                if choice.session_id is None:
                    raise
                # Another process runs it: load it read-only, to follow it. No MCP servers: it
                # never prompts.
                choice = dataclasses.replace(choice, read_only=True)
                core = start_session(
                    options, cwd=directory, settings=settings, ask=session.ask, session=choice
                )
                session.holder = exc.holder or "another process"
        except SessionNotFoundError:
            raise RequestError.resource_not_found(choice.session_id) from None
        except ModelError as exc:
            if options.model is not None or settings.model is not None:
                raise RequestError.invalid_params({"details": str(exc)}) from None
            # No model was asked for and none can be used: the editor should tell about keys.
            raise RequestError.auth_required({"details": f"{exc}. {AUTH_DESCRIPTION}"}) from None
        except SessionDatabaseError as exc:
            raise database_failure(exc) from None
        except (SessionError, ValueError) as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        session.attach(core)
        self._sessions[session.id] = session
        if core.notice:  # stderr is the editor's log; the response's _meta carries it too
            logger.warning("%s", core.notice)
        return session


CWD_SHOWN = 200
"""The most of a ``cwd`` an error repeats: one of 5,000 characters came back whole."""


def _directory(cwd: str) -> Path:
    """``cwd`` as the session's folder, or invalid params: not absolute, not a directory, or
    too long to look up (``ENAMETOOLONG``, which ``is_dir`` raises: it was an internal error)."""
    directory = Path(cwd)
    why = ""
    try:
        usable = directory.is_absolute() and directory.is_dir()
    except OSError as exc:
        usable, why = False, f" ({exc.strerror})"
    if not usable:
        shown = repr(cwd[:CWD_SHOWN]) + (f"… ({len(cwd)} characters)" if len(cwd) > CWD_SHOWN else "")
        raise RequestError.invalid_params(
            {"details": f"cwd must be an existing absolute directory: {shown}{why}"}
        )
    return directory


WARM_MODULES = (
    "tether.session.manager",
    "tether.store.sqlite_store",  # the default store (sqlite3, its schema)
    "tether.store.writer",
    "tether.session.resources",
    "tether.session.wiring",
    "tether.mcp.files",
    "tether.mcp.servers",  # an editor's servers (not the MCP SDK: it loads when a server starts)
    "tether.ai.thinking",
)
"""What a first ``session/new`` would import (the rest of ``create`` is imported already)."""


def warm_up(options: SessionOptions) -> None:
    """Do the one-time work of a first ``session/new`` while answering ``initialize``, which an
    editor waits for anyway as the agent's start: the modules ``WARM_MODULES``, the installed
    extensions' list (``installed_entry_points``: read from its cache, or searched once), the
    model catalog with its providers (``config_options`` lists their models) and the default
    model, resolved once. Measured over the SDK's client (agent CPU, median of 7): a
    first ``session/new`` cost 27 ms against 3 ms for the next ones, nearly all of it these;
    with them done here, 4 ms, and ``initialize`` ~30 ms more."""
    import importlib

    from tether.acp.session import model_choices
    from tether.ai.paths import data_dir
    from tether.session.model_choice import resolve_model
    from tether.session.resources import installed_entry_points

    for name in WARM_MODULES:
        importlib.import_module(name)
    # Only a head start: whatever fails here (a broken models.json, no key for the model) fails
    # again in session/new, which reports it to the editor as it always did.
    with contextlib.suppress(Exception):
        installed_entry_points(data_dir())
        model_choices("", ())
        resolve_model(options.model, None, provider=options.provider)


def database_failure(exc: Exception) -> RequestError:
    """The session database failed: not the editor's request but the file the message names, so
    an internal error whose message (what an editor shows) is that one line, not "Internal error"."""
    return RequestError(-32603, str(exc), {"details": str(exc)})


def prompt_input(
    blocks: list[
        TextContentBlock
        | ImageContentBlock
        | AudioContentBlock
        | ResourceContentBlock
        | EmbeddedResourceContentBlock
    ],
) -> tuple[str, list[ImageContent]]:
    """An ACP prompt as our user message: text (links and embedded context inlined) and images."""
    parts: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append({"type": "image", "data": block.data, "mimeType": block.mime_type})
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[@{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'\n<context ref="{resource.uri}">\n{resource.text}\n</context>\n')
            elif (resource.mime_type or "").startswith("image/"):
                images.append({"type": "image", "data": resource.blob, "mimeType": resource.mime_type or ""})
            else:
                parts.append(
                    f"[@{resource.uri}] (binary content, {resource.mime_type or 'unknown type'}, not shown)"
                )
        else:
            raise RequestError.invalid_params(
                {"details": "audio prompts are not supported (see promptCapabilities)"}
            )
    return "".join(parts), images


def _editor_mcp_servers(
    servers: list[AnyMcpServer] | None,
) -> tuple[list[McpServerConfig], list[str], dict[str, Any] | None]:
    """The editor's MCP servers (stdio and HTTP) as this session's; a line for each one tether
    cannot take (an ``env`` name with ``=``: it failed ``session/new`` for every server), which
    joins the session's notice; and a ``_meta`` note naming the ones tether cannot use (SSE,
    ACP-tunnelled); those are also logged on stderr."""
    configs: list[McpServerConfig] = []
    problems: list[str] = []
    ignored: list[str] = []
    named: dict[str, str] = {}
    """Escaped name -> the editor's name it was given to."""
    for server in servers or []:
        name = escaped = re.sub(r"[^A-Za-z0-9_-]", "_", server.name) or "server"
        # ``toy box`` and ``toy_box`` are one name once escaped: the second took the first's
        # place (its tools too), and nothing said so. Each is kept, the second numbered.
        suffix = 1
        while name in named:
            suffix += 1
            name = f"{escaped}_{suffix}"
        if suffix > 1:
            problems.append(
                f"the editor's MCP servers {named[escaped]!r} and {server.name!r} are both named "
                f"{escaped!r} once escaped: the second is {name!r}"
            )
        named[name] = server.name
        try:
            if isinstance(server, McpServerStdio):
                env = {v.name: v.value for v in server.env}
                configs.append(
                    McpServerConfig(
                        name, command=server.command, args=tuple(server.args), env=env, source="editor"
                    )
                )
            elif isinstance(server, HttpMcpServer | SseMcpServer):
                headers = {h.name: h.value for h in server.headers}
                sse = isinstance(server, SseMcpServer)
                configs.append(
                    McpServerConfig(name, url=server.url, headers=headers, source="editor", sse=sse)
                )
            else:
                ignored.append(server.name)
        except McpConfigError as exc:
            problems.append(f"the editor's {exc} (skipped)")
    if not ignored:
        return configs, problems, None
    logger.warning("MCP servers over ACP are not supported; ignoring %s", ", ".join(ignored))
    return configs, problems, {"tether": {"mcpServers": "partly unsupported (ACP)", "ignored": ignored}}
