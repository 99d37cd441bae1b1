"""``tether --mode acp``: tether as an Agent Client Protocol agent, for Zed, JetBrains and friends.

The editor starts ``tether --mode acp`` and talks JSON-RPC over its stdin and stdout, through the
official SDK (``acp``: agent-side connection, schema types); ``acp_transport`` only adds the error
answers JSON-RPC asks for on unreadable input. Each ACP session is a ``Runtime`` on an ordinary
tether session: it is stored like any other, listed by ``tether sessions`` and resumable with
``tether --resume``. What the client sees is built by ``acp_updates``; how the tools reach the
editor's files and terminal is ``acp_tools``.

Permissions: a call our policy says needs approval becomes ``session/request_permission`` with
*allow once*, *always allow* (that tool, for the rest of the session) and *reject*. The session
modes choose the policy: ``ask`` (ask before edits: every ``edit``, ``write`` and ``bash``) and
``auto`` (edits inside the workspace go ahead; commands and writes outside it still ask, or
nothing asks under ``--yes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Agent, Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
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
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from tether import __version__
from tether.cli.acp_tools import EditorAccess, ToolBridge, bridge_tools
from tether.cli.acp_updates import (
    SessionUpdate,
    ToolContent,
    TurnFailed,
    diff_content,
    finished_locations,
    history_updates,
    permission_subject,
    result_content,
    stop_reason,
    terminal_content,
    text_chunk,
    thought_chunk,
    tool_call_progress,
    tool_call_start,
)
from tether.cli.options import RunOptions
from tether.cli.runtime import Runtime, RuntimeEvent, SessionChoice
from tether.cli.settings import THINKING_LEVELS, Approval
from tether.tools import Workspace
from tether.wire import ImageContent, ToolCall

logger = logging.getLogger("tether.acp")

ModeId = Literal["ask", "auto"]
MODES = (
    SessionMode(
        id="ask",
        name="Ask before edits",
        description="Ask before every file edit and every shell command.",
    ),
    SessionMode(
        id="auto",
        name="Auto",
        description="Edit files in the workspace without asking; shell commands and writes "
        "outside the workspace still ask (nothing asks when tether runs with --yes).",
    ),
)
ASK_BEFORE_EDITS = frozenset({"edit", "write"})

ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
ENV_AUTH = "environment"
AUTH_DESCRIPTION = (
    "tether reads provider API keys from its environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, "
    "GEMINI_API_KEY, OPENROUTER_API_KEY, ...) and models from its settings and models.json. "
    "Set them in the environment the editor starts `tether --mode acp` with; there is nothing to "
    "log in to here."
)
AnyMcpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def run_acp(options: RunOptions) -> int:
    """Serve ACP on stdin/stdout until the client closes stdin."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="tether acp: %(message)s")
    try:
        asyncio.run(_serve(options))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(options: RunOptions) -> None:
    from acp.agent.connection import AgentSideConnection
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
    from acp.stdio import stdio_streams

    from tether.cli.acp_transport import JsonRpcStdio

    reader, writer = await stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    sys.stdout = sys.stderr  # stdout carries JSON-RPC only: a stray print must not corrupt it
    agent = TetherAcpAgent(options)
    # The SDK routes the methods an agent has; the unstable ones (fork, resume, close) we do not.
    connection = AgentSideConnection(cast("Agent", agent), JsonRpcStdio(reader, writer), listening=False)
    try:
        await connection.listen()
    finally:
        await agent.close()
        await asyncio.shield(connection.close())


class TetherAcpAgent:
    """The ACP agent: the methods the SDK's router calls, by name, with snake_case parameters."""

    def __init__(self, options: RunOptions) -> None:
        self._options = options
        self._client: Client | None = None
        self._access = EditorAccess()
        self._sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def close(self) -> None:
        for session in list(self._sessions.values()):
            await session.runtime.close()
        self._sessions.clear()

    # -- connection ----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_: Any,
    ) -> InitializeResponse:
        caps = client_capabilities or ClientCapabilities()
        fs = caps.fs
        self._access = EditorAccess(
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
            terminal=bool(caps.terminal),
        )
        return InitializeResponse(
            # We speak version 1, the only stable one: a client asking for another decides.
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
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
        session = self._start(cwd, SessionChoice())
        meta = _mcp_note(mcp_servers)
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
        session = self._sessions.get(session_id)
        if session is None:
            session = self._start(cwd, SessionChoice(session_id=session_id))
        elif session.runtime.is_running:
            raise RequestError.invalid_request({"details": "the session is running a prompt"})
        for update in history_updates(session.runtime.messages, session.runtime.cwd):
            await session.send(update)
        return LoadSessionResponse(
            modes=session.mode_state(),
            config_options=session.config_options(),
            field_meta=_mcp_note(mcp_servers),
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        from datetime import UTC, datetime

        from tether.session import SessionManager

        with SessionManager() as manager:
            records = manager.list(cwd)
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

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"details": f"no session {session_id!r} in this connection"})
        return session

    def _start(self, cwd: str, choice: SessionChoice) -> AcpSession:
        from tether.ai.paths import config_dir
        from tether.cli.model_choice import ModelError
        from tether.cli.settings import SettingsError, load_settings
        from tether.session import SessionError
        from tether.session.store import SessionNotFoundError

        if self._client is None:
            raise RequestError.internal_error({"details": "no client connection"})
        directory = Path(cwd)
        if not directory.is_absolute() or not directory.is_dir():
            raise RequestError.invalid_params(
                {"details": f"cwd must be an existing absolute directory: {cwd!r}"}
            )
        options = self._options
        session = AcpSession(self._client, self._access)
        try:
            settings = load_settings(config_dir(), directory)
            runtime = Runtime.start(
                cwd=directory,
                settings=settings,
                model_spec=options.model,
                thinking=options.thinking,
                tool_names=options.tools,
                system_prompt=options.system_prompt,
                approval="yes" if options.yes else None,
                ask=session.ask,
                session=choice,
            )
        except SessionNotFoundError:
            raise RequestError.resource_not_found(choice.session_id) from None
        except ModelError as exc:
            raise RequestError.auth_required({"details": f"{exc}. {AUTH_DESCRIPTION}"}) from None
        except (SettingsError, SessionError, ValueError) as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        session.attach(runtime)
        self._sessions[session.id] = session
        return session


@dataclass(slots=True)
class AcpSession:
    """One ACP session: its runtime, its mode, and what it streams to the client."""

    client: Client
    access: EditorAccess
    mode: ModeId = "ask"
    always_allowed: set[str] = field(default_factory=lambda: set[str]())
    """Tools the user allowed for the rest of the session ("always allow")."""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    _runtime: Runtime | None = None
    _bridge: ToolBridge | None = None
    _announced: set[str] = field(default_factory=lambda: set[str]())
    _base_approval: Approval = "ask"

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("session not started")
        return self._runtime

    @property
    def id(self) -> str:
        session_id = self.runtime.session_id
        if session_id is None:
            raise RuntimeError("ACP sessions are always stored")
        return session_id

    def attach(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._base_approval = runtime.approval
        self._bridge = ToolBridge(self.client, self.id, Workspace(runtime.cwd), self.access, self.send)
        runtime.agent.tools = bridge_tools(runtime.agent.tools, self._bridge)
        self.set_mode("auto" if runtime.approval == "yes" else "ask")

    async def send(self, update: SessionUpdate) -> None:
        with contextlib.suppress(ConnectionError):  # the client left; the turn still finishes and is stored
            await self.client.session_update(session_id=self.id, update=update)

    # -- modes and options ---------------------------------------------------------------------

    def mode_state(self) -> SessionModeState:
        return SessionModeState(current_mode_id=self.mode, available_modes=list(MODES))

    def mode_update(self) -> CurrentModeUpdate:
        return CurrentModeUpdate(session_update="current_mode_update", current_mode_id=self.mode)

    def set_mode(self, mode_id: str) -> None:
        if mode_id not in ("ask", "auto"):
            known = ", ".join(m.id for m in MODES)
            raise RequestError.invalid_params({"details": f"unknown mode {mode_id!r}; modes: {known}"})
        self.mode = "ask" if mode_id == "ask" else "auto"
        runtime = self.runtime
        if self.mode == "ask":
            runtime.always_ask = ASK_BEFORE_EDITS
            runtime.approval = "deny" if self._base_approval == "deny" else "ask"
        else:
            runtime.always_ask = frozenset()
            runtime.approval = self._base_approval

    def config_options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        """Mode, model and (for reasoning models) thinking level as session config options."""
        runtime = self.runtime
        current = f"{runtime.model['provider']}/{runtime.model['id']}"
        options: list[SessionConfigOptionSelect | SessionConfigOptionBoolean] = [
            SessionConfigOptionSelect(
                type="select",
                id="mode",
                name="Mode",
                category="mode",
                current_value=self.mode,
                options=[
                    SessionConfigSelectOption(value=m.id, name=m.name, description=m.description)
                    for m in MODES
                ],
            ),
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                category="model",
                current_value=current,
                options=[
                    SessionConfigSelectOption(value=spec, name=name) for spec, name in _model_choices(current)
                ],
            ),
        ]
        levels = _thinking_levels(runtime)
        if len(levels) > 1:
            options.append(
                SessionConfigOptionSelect(
                    type="select",
                    id="thinking",
                    name="Thinking",
                    category="thought_level",
                    current_value=runtime.thinking_level,
                    options=[SessionConfigSelectOption(value=level, name=level) for level in levels],
                )
            )
        return options

    def set_option(self, config_id: str, value: str) -> None:
        from tether.cli.model_choice import ModelError

        runtime = self.runtime
        if config_id == "mode":
            self.set_mode(value)
        elif config_id == "model":
            current = f"{runtime.model['provider']}/{runtime.model['id']}"
            if value != current:
                try:
                    runtime.set_model(value)
                except ModelError as exc:
                    raise RequestError.invalid_params({"details": str(exc)}) from None
        elif config_id == "thinking":
            if value not in _thinking_levels(runtime):
                raise RequestError.invalid_params(
                    {"details": f"{value!r} is not a thinking level of this model"}
                )
            runtime.set_thinking(value)
        else:
            raise RequestError.invalid_params({"details": f"unknown config option {config_id!r}"})

    # -- a turn --------------------------------------------------------------------------------

    async def run_turn(
        self, text: str, images: list[ImageContent]
    ) -> Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]:
        runtime = self.runtime
        if runtime.is_running:
            raise RequestError.invalid_request({"details": "this session is already running a prompt"})
        self.cancelled.clear()
        self._announced.clear()
        unsubscribe = runtime.subscribe(self._on_event)
        try:
            await runtime.prompt(text, images)
        finally:
            unsubscribe()
        try:
            return stop_reason(runtime.last_assistant(), self.cancelled.is_set())
        except TurnFailed as exc:
            raise RequestError(-32603, f"The model request failed: {exc}", {"details": str(exc)}) from None

    def cancel(self) -> None:
        self.cancelled.set()
        self.runtime.abort()

    async def ask(self, call: ToolCall, _question: str) -> bool:
        """Our approval hook: ``session/request_permission``, unless the tool is always allowed."""
        if call["name"] in self.always_allowed:
            return True
        bridge = self._bridge
        preview = await bridge.preview(call) if bridge is not None else None
        options = [
            PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
            PermissionOption(
                option_id=ALLOW_ALWAYS, name=f"Always allow {call['name']}", kind="allow_always"
            ),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        request = asyncio.ensure_future(
            self.client.request_permission(
                session_id=self.id,
                tool_call=permission_subject(call, self.runtime.cwd, preview),
                options=options,
            )
        )
        cancelled = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({request, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not request.done():
                request.cancel()
        if request.cancelled():
            return False
        try:
            outcome = request.result().outcome
        except (RequestError, ConnectionError) as exc:
            logger.warning("permission request failed, taking it as a refusal: %s", exc)
            return False
        if not isinstance(outcome, AllowedOutcome):
            return False  # the client cancelled the request
        if outcome.option_id == ALLOW_ALWAYS:
            self.always_allowed.add(call["name"])
            return True
        return outcome.option_id == ALLOW_ONCE

    async def _on_event(self, event: RuntimeEvent) -> None:
        for update in self._updates(event):
            await self.send(update)

    def _updates(self, event: RuntimeEvent) -> list[SessionUpdate]:
        kind = event["type"]
        cwd = self.runtime.cwd
        if kind == "message_update":
            inner = event["assistantMessageEvent"]
            if inner["type"] == "text_delta":
                return [text_chunk(inner["delta"])]
            if inner["type"] == "thinking_delta":
                return [thought_chunk(inner["delta"])]
            if inner["type"] == "toolcall_end":
                call: ToolCall = inner["toolCall"]
                self._announced.add(call["id"])
                return [tool_call_start(call, cwd)]
            return []
        if kind == "tool_execution_start" and event["toolCallId"] not in self._announced:
            self._announced.add(event["toolCallId"])
            raw: object = event["args"]
            args = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
            call = {
                "type": "toolCall",
                "id": event["toolCallId"],
                "name": event["toolName"],
                "arguments": args,
            }
            return [tool_call_start(call, cwd)]
        bridge = self._bridge
        if bridge is None:
            return []
        if kind == "tool_execution_update" and event["toolCallId"] not in bridge.terminals:
            return [
                tool_call_progress(
                    event["toolCallId"], content=result_content(event["partialResult"].content)
                )
            ]
        if kind == "tool_execution_end":
            call_id = event["toolCallId"]
            result, failed = event["result"], bool(event["isError"])
            diff = bridge.diffs.pop(call_id, None)
            terminal = bridge.terminals.pop(call_id, None)
            content: list[ToolContent]
            if terminal is not None:
                content = [terminal_content(terminal)]
            elif diff is not None and not failed:
                content = [diff_content(diff)]
            else:
                content = result_content(result.content)
            return [
                tool_call_progress(
                    call_id,
                    status="failed" if failed else "completed",
                    content=content,
                    locations=finished_locations(event["toolName"], result.details, cwd),
                )
            ]
        return []


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


def _mcp_note(servers: list[AnyMcpServer] | None) -> dict[str, Any] | None:
    """MCP servers are accepted but not used yet: say so in ``_meta`` and on stderr."""
    if not servers:
        return None
    names = [str(getattr(server, "name", "?")) for server in servers]
    logger.warning("MCP servers are not supported yet; ignoring %s", ", ".join(names))
    return {"tether": {"mcpServers": "unsupported", "ignored": names}}


def _model_choices(current: str) -> list[tuple[str, str]]:
    """The current model, then every model of a provider with a key in the environment."""
    from tether.ai.models import get_provider_info, list_models, provider_has_key

    choices = [(current, current)]
    keyed: dict[str, bool] = {}
    for model in list_models():
        provider = model["provider"]
        if provider not in keyed:
            info = get_provider_info(provider)
            keyed[provider] = not info.local and info.api_key_env is not None and provider_has_key(info)
        spec = f"{provider}/{model['id']}"
        if keyed[provider] and spec != current:
            choices.append((spec, f"{model.get('name') or model['id']} ({provider})"))
    return choices


def _thinking_levels(runtime: Runtime) -> list[str]:
    from tether.ai.thinking import clamp_thinking_level

    levels: list[str] = []
    for level in THINKING_LEVELS:
        clamped = clamp_thinking_level(runtime.model, cast(Any, level))
        if clamped not in levels:
            levels.append(clamped)
    return levels
