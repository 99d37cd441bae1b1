"""What an extension sees: the one ``ExtensionAPI`` object its ``setup(api)`` receives.

An extension is a Python module with a ``setup(api)`` function (sync or async). Through ``api``
it registers tools (``@tool`` functions of the library), slash commands and model providers, and
subscribes to the points where it may intercept a run:

- ``before_run`` (``BeforeRunContext``): the prompt about to start a run; return
  ``BeforeRunResult(block=True, reason=...)`` to stop it, or add messages to ``context.messages``;
- ``tool_call`` (the agent's ``BeforeToolCallContext``): block the call with
  ``BeforeToolCallResult(block=True, reason=...)``, or change ``context.args`` in place;
- ``tool_result`` (``AfterToolCallContext``): change the result field by field with an
  ``AfterToolCallResult``;
- ``prompt`` (a ``PromptEditor``): edit the request before each model call; what a hook adds is
  synthetic and never stored.

These are the library's own hook types, so a hook written for a program that drives an ``Agent``
works unchanged in an extension. A hook sees ``context.args`` as a dict for every tool.

The session's lifecycle events (``LIFECYCLE_EVENTS``, pi's names: ``session_start``,
``agent_start``, ``turn_end``, ``message_end``, ``tool_execution_start``, ...)
can be observed with ``api.on`` too: the hook gets the event (a dict, as front ends see it) and
what it returns is ignored. While the session runs, ``api`` also controls it as pi's
``ExtensionAPI`` does (``docs/extensions.md`` has the side-by-side): ``send_user_message``,
``append_entry``, ``set_session_name``/``get_session_name``, ``get_active_tools``/
``set_active_tools``/``get_all_tools``, ``set_model``, ``get_thinking_level``/
``set_thinking_level``, ``exec`` (a program in the session's sandbox), ``events`` (a bus
between extensions), ``register_mcp_server``; a command's ``ctx`` has ``wait_for_idle``,
``new_session`` and ``compact``. ``register_message_renderer`` shapes how the terminal shows
the extension's messages. ``api.ui`` asks the user; how depends on the front end (a
terminal dialog, an RPC ``extension_ui_request``, an ACP permission request), and where nobody can
answer (print mode) ``confirm`` is ``False`` and ``select``/``input`` are ``None``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from tether.agent.hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from tether.session.extensions.bus import EventBus, ExtensionEvents
from tether.session.extensions.context import CommandContext, ContextUsage, SessionControl, control
from tether.session.extensions.ui import Asking, Dialogs, ExtensionUI, NotifyLevel, RichUI, WidgetPlacement
from tether.wire import AgentMessage

__all__ = [
    "CommandContext",
    "ContextUsage",
    "Dialogs",
    "ExtensionUI",
    "NotifyLevel",
    "RichUI",
    "SessionControl",
    "WidgetPlacement",
]

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tether.agent import AgentTool
    from tether.ai.abort import AbortSignal
    from tether.ai.types import StreamFn
    from tether.mcp.config import McpServerConfig
    from tether.session.prompt import PromptEditor
    from tether.tools.exec_program import ExecResult
    from tether.wire import ModelInfo


@dataclass(slots=True)
class BeforeRunContext:
    """A prompt about to start a run: ``messages`` are what will be sent (add to the list to send
    more); ``text`` is the prompt's text."""

    text: str
    messages: list[AgentMessage]


@dataclass(slots=True)
class BeforeRunResult:
    """``block=True`` stops the run before any model call; ``reason`` is shown to the user."""

    block: bool = False
    reason: str | None = None


@dataclass(slots=True)
class InputEvent:
    """A line the user sent, before slash commands, skills and templates are expanded (pi's
    ``input`` event): ``source`` is ``interactive`` (typed in the terminal) or ``rpc`` (a client's
    prompt, an editor's, print mode's)."""

    text: str
    source: str


@dataclass(slots=True)
class InputResult:
    """What an ``input`` hook decides: ``continue`` (the default), ``transform`` (go on with
    ``text`` instead; transforms chain) or ``handled`` (no run: the extension answered it)."""

    action: Literal["continue", "transform", "handled"] = "continue"
    text: str | None = None


@dataclass(slots=True)
class Shared:
    """What every extension's ``api`` and the host share: the messages ``send_message`` holds for
    the next prompt, and the flags registered and the values given on the command line."""

    next_turn: list[AgentMessage] = field(default_factory=lambda: [])
    asking: Asking = field(default_factory=Asking)
    events: EventBus = field(default_factory=EventBus)
    """The bus between the extensions (``api.events``)."""
    mcp_servers: dict[str, tuple[str, McpServerConfig]] = field(default_factory=lambda: {})
    """MCP servers the extensions registered: name -> (extension, config)."""
    observe: Callable[[dict[str, Any]], None] = lambda _event: None
    """The host's ``observe``: what tells the lifecycle hooks of ``mcp_servers_change``."""
    """The dialogs any extension has open (a hook's time limit pauses while one waits)."""
    flags: dict[str, ExtensionFlag] = field(default_factory=lambda: {})
    flag_values: dict[str, bool | str] = field(default_factory=lambda: {})


@dataclass(frozen=True, slots=True)
class ExtensionFlag:
    """A command-line flag of an extension (pi's ``registerFlag``): ``--flag NAME`` sets a
    ``boolean`` one, ``--flag NAME=VALUE`` a ``string`` one."""

    name: str
    description: str
    type: Literal["boolean", "string"]
    default: bool | str | None
    extension: str


@dataclass(slots=True)
class SessionBeforeResult:
    """What a ``session_before_switch``/``_fork``/``_tree`` hook decides (pi's result): ``cancel``
    stops the switch, fork or move (``reason`` says why to the user). A ``session_before_tree``
    hook may also give the ``summary`` of the branch left (used when the user asked for one,
    instead of the model's), other summary ``instructions``, or the ``label`` to set."""

    cancel: bool = False
    reason: str | None = None
    summary: str | None = None
    instructions: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderResponse:
    """What ``after_provider_response`` hooks see: the HTTP status and the response headers."""

    status: int
    headers: dict[str, str]


_SENDING: set[asyncio.Task[None]] = set()
"""``send_user_message`` runs waiting for the session (kept referenced until they end)."""


BeforeRunHook = Callable[[BeforeRunContext], Awaitable[BeforeRunResult | None] | BeforeRunResult | None]
ToolCallHook = Callable[
    [BeforeToolCallContext], Awaitable[BeforeToolCallResult | None] | BeforeToolCallResult | None
]
ToolResultHook = Callable[
    [AfterToolCallContext], Awaitable[AfterToolCallResult | None] | AfterToolCallResult | None
]
PromptHookFn = Callable[["PromptEditor"], Awaitable[None] | None]
CommandHandler = Callable[[str, CommandContext], Awaitable[str | None] | str | None]
"""``handler(args, ctx)``: returns text to show the user (or ``None``)."""

INTERCEPTING_EVENTS = (
    "input",
    "before_run",
    "tool_call",
    "tool_result",
    "prompt",
    "before_provider_headers",
    "before_provider_request",
    "after_provider_response",
    "session_before_switch",
    "session_before_fork",
    "session_before_tree",
)
"""``before_provider_headers`` and ``before_provider_request`` get the HTTP request to the
provider (``tether.ai.types.ProviderRequest``: change ``headers`` in place, ``None`` removes
one; a ``before_provider_request`` hook that returns a value replaces ``payload``);
``after_provider_response`` gets a ``ProviderResponse`` (status, headers) before the body is
read. They fire for each attempt, retries included, and only for providers over HTTP.

``session_before_switch`` (``reason``: ``new`` or ``resume``, ``targetSessionFile`` for a resume),
``session_before_fork`` (``entryId``, ``position``: ``before`` a user message or ``at`` an entry)
and ``session_before_tree`` (``preparation``: ``targetId``, ``oldLeafId``, ``userWantsSummary``,
``customInstructions``, ``label``) get a dict and may return a ``SessionBeforeResult``; a hook
that fails, or takes longer than the host's limit (not counting its dialogs), is reported and
does not cancel."""
LIFECYCLE_EVENTS = (
    "session_start",
    "session_shutdown",
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "thinking_level_select",
    "model_select",
    "session_info_changed",
    "compaction_start",
    "compaction_end",
    "session_tree",
    "mcp_servers_change",
)
"""Observed, never intercepted: the session's events of these types (``session_start`` when the
session is set up, ``session_shutdown`` when it closes, each with pi's ``reason``: a switch, a
new session or a fork is a ``session_shutdown`` then a ``session_start`` too; ``session_tree``
after a move in the tree; ``mcp_servers_change`` (``servers``) when an extension registers or
unregisters an MCP server once the session runs; ``thinking_level_select`` for the
session's ``thinking_level_changed``; ``model_select`` with ``model``, ``previous_model`` and
``source`` (``set`` or ``cycle``) when the model changes)."""
EVENT_ALIASES = {"thinking_level_changed": "thinking_level_select"}
"""Session event type -> the lifecycle event name extensions subscribe to (pi's)."""
EventName = str
_Hook = TypeVar("_Hook", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ExtensionCommand:
    name: str
    description: str
    handler: CommandHandler
    extension: str


@dataclass(frozen=True, slots=True)
class ExtensionProvider:
    """Models served by an extension: ``NAME/ID`` specs select them (``--model``, ``/model``)."""

    name: str
    models: tuple[ModelInfo, ...]
    stream_fn: StreamFn
    extension: str


ShortcutHandler = Callable[[CommandContext], Awaitable[None] | None]
MessageRenderer = Callable[[dict[str, Any], bool], str | Sequence[str] | None]
"""``render(message, expanded)``: the lines the terminal shows for an extension's message."""


@dataclass(frozen=True, slots=True)
class ExtensionRenderer:
    """How the terminal shows the messages of one ``customType`` (pi's ``registerMessageRenderer``)."""

    custom_type: str
    render: MessageRenderer
    extension: str


@dataclass(frozen=True, slots=True)
class ExtensionShortcut:
    """A key of the interactive mode (pi's ``registerShortcut``): ``key`` in pi's spelling
    (``ctrl+shift+p``, ``alt+x``, ``f5``)."""

    key: str
    description: str
    handler: ShortcutHandler
    extension: str


@dataclass(slots=True)
class Registrations:
    """Everything one extension registered (read by the host)."""

    tools: list[AgentTool] = field(default_factory=lambda: [])
    commands: list[ExtensionCommand] = field(default_factory=lambda: [])
    providers: list[ExtensionProvider] = field(default_factory=lambda: [])
    shortcuts: list[ExtensionShortcut] = field(default_factory=lambda: [])
    renderers: list[ExtensionRenderer] = field(default_factory=lambda: [])
    hooks: dict[str, list[Callable[..., Any]]] = field(default_factory=lambda: {})


class ExtensionAPI:
    """The object ``setup(api)`` receives; see the module docstring.

    Args:
        name: The extension's name (its module or entry-point name), used in error reports.
        cwd: The workspace of the session.
        ui: How to ask the user (the front end's, possibly replaced once it is running).
    """

    def __init__(
        self,
        name: str,
        cwd: Path,
        ui: Callable[[], ExtensionUI],
        session: Callable[[], SessionControl | None] = lambda: None,
        shared: Shared | None = None,
    ) -> None:
        self.name = name
        self.cwd = cwd
        self._ui = ui
        self._session = session
        self.registered = Registrations()
        self._shared = shared if shared is not None else Shared()

    # -- controlling the session (pi's ExtensionAPI; not during setup) -----------------------------

    def _running(self, what: str) -> SessionControl:
        return control(self._session(), what)

    def send_user_message(
        self, text: str, *, deliver_as: Literal["steer", "follow_up"] = "follow_up"
    ) -> None:
        """Send ``text`` as the user (pi's ``sendUserMessage``): while the agent works it is queued
        as a follow-up (or ``deliver_as="steer"``); otherwise it starts a run, once what runs now
        (a slash command, say) has ended."""
        session = self._running("send_user_message")
        if session.agent.is_streaming:
            (session.steer if deliver_as == "steer" else session.follow_up)(text)
            return
        self._when_idle(session, text)

    def send_message(
        self,
        content: str | Sequence[Any],
        *,
        custom_type: str,
        display: bool = True,
        details: Any = None,
        deliver_as: Literal["steer", "follow_up", "next_turn"] = "steer",
        trigger_turn: bool = False,
    ) -> None:
        """Put an extension's own message into the conversation (pi's ``sendMessage``): a
        ``custom`` message the model reads (as developer text; images as user content), stored
        with the session and shown when ``display``. While the agent works it is steered in
        (``steer``, before the next model call) or queued for when it would stop
        (``follow_up``); ``next_turn`` holds it for the next prompt. When the agent is idle,
        ``trigger_turn=True`` runs the model on it now; otherwise it goes with the next prompt."""
        session = self._running("send_message")
        message: dict[str, Any] = {
            "role": "custom",
            "customType": custom_type,
            "content": content if isinstance(content, str) else list(content),
            "display": display,
            "timestamp": int(time.time() * 1000),
        }
        if details is not None:
            message["details"] = details
        custom = cast(AgentMessage, message)
        if deliver_as != "next_turn" and session.agent.is_streaming:
            (session.steer if deliver_as == "steer" else session.follow_up)(custom)
        elif deliver_as != "next_turn" and trigger_turn:
            self._when_idle(session, custom)
        else:
            self._shared.next_turn.append(custom)

    def _when_idle(self, session: SessionControl, prompt: str | AgentMessage) -> None:
        """Run ``prompt`` once what runs now (a slash command, say) has ended."""

        async def when_idle() -> None:
            await session.wait_for_idle()
            await session.prompt(prompt)

        task = asyncio.get_running_loop().create_task(when_idle())
        _SENDING.add(task)
        task.add_done_callback(_SENDING.discard)

    def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        timeout: float | None = None,
        signal: AbortSignal | None = None,
        cwd: str | Path | None = None,
        max_buffer: int | None = None,
    ) -> Awaitable[ExecResult]:
        """Run a program without a shell (pi's ``pi.exec``): ``ExecResult(stdout, stderr, code,
        killed, truncated)``. It runs as the session's commands do: inside its sandbox, with no
        credentials in its environment, stopped by ``timeout`` (seconds) or ``signal``, from
        ``cwd`` (relative to the workspace; the workspace by default); ``max_buffer`` bytes of
        output at most (256 MiB by default, pi's), past which it is stopped (``truncated``).
        Awaited; the session is checked at the call, so a call during ``setup`` fails there."""
        from tether.tools.exec_program import DEFAULT_MAX_BUFFER, exec_program

        session = self._running("exec")
        return exec_program(
            command,
            list(args),
            cwd=self.cwd / cwd if cwd is not None else self.cwd,
            timeout=timeout,
            signal=signal,
            max_buffer=max_buffer if max_buffer is not None else DEFAULT_MAX_BUFFER,
            sandbox=session.confinement(),
            env_passthrough=session.settings.shell_env_passthrough,
        )

    def register_mcp_server(self, name: str, config: Mapping[str, Any]) -> None:
        """Add an MCP server for this session (pi's ``registerMcpServer``): ``config`` is an
        ``mcpServers`` entry of ``mcp.json`` (``command``/``args``/``env``/``cwd``, or ``url``/
        ``headers``/``oauth``; ``timeout``, ``startupTimeout``, ``enabled``). Registered in
        ``setup``, it starts with the session's servers; later, at once. Its tools are
        ``mcp__NAME__TOOL``; it stops when the session closes. A server of the MCP files with
        the same name wins. Registering a name again replaces this extension's server; a name
        another extension registered, a bad name or a bad config raise (``McpConfigError``)."""
        from tether.mcp.config import server_config

        owner = self._shared.mcp_servers.get(name, (self.name, None))[0]
        if owner != self.name:
            raise ValueError(f"MCP server {name!r} is registered by the extension {owner}")
        parsed = server_config(
            name, dict(config), source="extension", base=self.cwd, where=f"extension {self.name}"
        )
        self._shared.mcp_servers[name] = (self.name, parsed)
        session = self._session()
        if session is not None:
            session.add_mcp_server(parsed)
            self._mcp_changed()

    def unregister_mcp_server(self, name: str) -> None:
        """Stop this extension's server ``name`` and forget it (pi's ``unregisterMcpServer``);
        its tools are gone from the next prompt on. A name it did not register raises."""
        if self._shared.mcp_servers.get(name, ("", None))[0] != self.name:
            raise ValueError(f"the extension {self.name} registered no MCP server {name!r}")
        del self._shared.mcp_servers[name]
        session = self._session()
        if session is not None:
            session.remove_mcp_server(name)
            self._mcp_changed()

    def _mcp_changed(self) -> None:
        """pi's ``mcp_servers_change`` (after ``setup``): every registered server's name."""
        self._shared.observe({"type": "mcp_servers_change", "servers": sorted(self._shared.mcp_servers)})

    def get_mcp_servers(self) -> list[McpServerConfig]:
        """The servers every extension registered (pi's ``getMcpServers``)."""
        return [config for _, config in self._shared.mcp_servers.values()]

    def set_label(self, entry_id: str, label: str | None) -> None:
        """Label an entry of the session's tree (pi's ``setLabel``; shown by ``/tree``); ``None``
        removes the label."""
        stored = self._running("set_label").session
        if stored is None:
            raise RuntimeError("set_label needs a stored session (this one runs with --no-session)")
        stored.label(entry_id, label)

    def get_commands(self) -> list[Any]:
        """The slash commands the user's files add, as RPC ``get_commands`` lists them (pi's
        ``getCommands``): extensions' first, then templates, then ``skill:NAME``; each a
        ``CommandInfo`` (``name``, ``description``, ``source``, ``path``, ``scope``)."""
        resources = self._running("get_commands").resources
        return list(resources.commands()) if resources is not None else []

    def register_shortcut(self, key: str, handler: ShortcutHandler, *, description: str = "") -> None:
        """``key`` (pi's spelling: ``ctrl+shift+p``, ``alt+x``, ``f5``) runs ``handler(ctx)`` in
        the interactive mode (pi's ``registerShortcut``); the other modes have no keys. A key the
        terminal cannot tell apart, or one tether uses, is reported when the TUI starts."""
        if not key or not callable(handler):
            raise ValueError(f"register_shortcut needs a key and a handler, got {key!r}")
        self.registered.shortcuts.append(ExtensionShortcut(key.lower(), description, handler, self.name))

    def register_message_renderer(self, custom_type: str, render: MessageRenderer) -> None:
        """Show this extension's messages of ``custom_type`` (``send_message(custom_type=...)``)
        in the terminal as ``render(message, expanded)`` says: text (a string or lines, plain,
        under the message's type), or ``None`` for the default (its text as markdown). pi's
        ``registerMessageRenderer``, with text where pi takes a TUI component; ``expanded`` is
        true in the transcript (Ctrl-O). Other front ends show messages their own way."""
        if not custom_type or not callable(render):
            raise ValueError(
                f"register_message_renderer needs a custom type and a function, got {custom_type!r}"
            )
        self.registered.renderers.append(ExtensionRenderer(custom_type, render, self.name))

    def register_flag(
        self,
        name: str,
        *,
        description: str = "",
        type: Literal["boolean", "string"] = "boolean",
        default: bool | str | None = None,
    ) -> None:
        """A command-line flag for this extension (pi's ``registerFlag``): ``tether --flag NAME``
        (boolean) or ``--flag NAME=VALUE`` (string); ``get_flag`` reads it once the session runs
        (in ``setup`` it is the default). A flag given that no extension registered is reported."""
        if not name or not all(c.isalnum() or c in "-_" for c in name) or type not in ("boolean", "string"):
            raise ValueError(f"register_flag needs a name of letters, digits, - and _, got {name!r}")
        if name in self._shared.flags:
            raise ValueError(f"flag {name!r} is already registered by {self._shared.flags[name].extension}")
        self._shared.flags[name] = ExtensionFlag(name, description, type, default, self.name)

    def get_flag(self, name: str) -> bool | str | None:
        """The flag's value from the command line, else its default (pi's ``getFlag``)."""
        flag = self._shared.flags.get(name)
        if flag is None:
            raise KeyError(f"no flag {name!r} is registered")
        return self._shared.flag_values.get(name, flag.default)

    def append_entry(self, custom_type: str, data: Any) -> str | None:
        """Store ``data`` in the session as a custom entry (pi's ``appendEntry``: extension state,
        never sent to the model); ``custom_type`` is namespaced (``myext.state``). Its id, or
        ``None`` when the session is not stored."""
        return self._running("append_entry").append_entry(custom_type, data)

    def get_session_name(self) -> str | None:
        stored = self._running("get_session_name").session
        return stored.title if stored is not None else None

    def set_session_name(self, name: str) -> None:
        self._running("set_session_name").rename(name)

    def get_all_tools(self) -> list[str]:
        """Every tool's name, active or not."""
        agent = self._running("get_all_tools").agent
        return [t.name for t in agent.tools] + [
            n for n in self._inactive(agent) if n not in {t.name for t in agent.tools}
        ]

    def get_active_tools(self) -> list[str]:
        return [t.name for t in self._running("get_active_tools").agent.tools]

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Offer the model only these tools (pi's ``setActiveTools``); the others stay known and
        come back when named again. An unknown name raises ``ValueError``."""
        agent = self._running("set_active_tools").agent
        known = {t.name: t for t in agent.tools} | self._inactive(agent)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"set_active_tools: no tool {', '.join(unknown)} (known: {', '.join(known)})")
        wanted = set(names)
        self._inactive(agent).update({n: t for n, t in known.items() if n not in wanted})
        for name in wanted:
            self._inactive(agent).pop(name, None)
        agent.tools = [t for n, t in known.items() if n in wanted]

    @staticmethod
    def _inactive(agent: Any) -> dict[str, Any]:
        """The tools switched off, kept on the agent so every extension sees the same set."""
        found = getattr(agent, "_extension_inactive_tools", None)
        if found is None:
            found = {}
            agent._extension_inactive_tools = found
        return cast(dict[str, Any], found)

    def set_model(self, spec: str) -> ModelInfo:
        """Switch the model (``provider/id``, as ``--model`` takes it); pi's ``setModel``."""
        return self._running("set_model").set_model(spec)

    def get_thinking_level(self) -> str:
        return self._running("get_thinking_level").thinking_level

    def set_thinking_level(self, level: str) -> str:
        """Set the thinking level (clamped to the model); the level set."""
        return self._running("set_thinking_level").set_thinking(level)

    @property
    def events(self) -> ExtensionEvents:
        """The bus shared by the session's extensions (pi's ``pi.events``): ``events.on(channel,
        listener)`` (returns the unsubscribe) and ``events.emit(channel, data)``."""
        return ExtensionEvents(self._shared.events, self.name)

    @property
    def ui(self) -> Dialogs:
        """The front end's way of asking the user and showing state (resolved on use: each front
        end installs its own), with dialog timeouts."""
        return Dialogs(self._ui(), self._shared.asking)

    def register_tool(self, tool: AgentTool) -> AgentTool:
        """Give the model a tool (build it with ``tether.agent.tool``); returns it, so it can be
        used as a decorator below ``@tool``)."""
        from tether.agent.tool import AgentTool as ToolClass

        if not isinstance(tool, ToolClass):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"register_tool takes an AgentTool (make one with tether.agent.tool), not {type(tool).__name__}"
            )
        self.registered.tools.append(tool)
        return tool

    def register_command(self, name: str, handler: CommandHandler, *, description: str = "") -> None:
        """``/name args`` runs ``handler(args, ctx)``; its text result is shown to the user."""
        if not name.lstrip("/") or any(c.isspace() for c in name) or not callable(handler):
            raise ValueError(f"register_command needs a name without spaces and a handler, got {name!r}")
        self.registered.commands.append(ExtensionCommand(name.lstrip("/"), description, handler, self.name))

    def command(self, name: str, *, description: str = "") -> Callable[[CommandHandler], CommandHandler]:
        """Decorator form of ``register_command``."""

        def register(handler: CommandHandler) -> CommandHandler:
            self.register_command(name, handler, description=description)
            return handler

        return register

    def register_provider(self, name: str, models: Sequence[ModelInfo], stream_fn: StreamFn) -> None:
        """Serve ``models`` (their ``provider`` should be ``name``) through ``stream_fn``, the
        agent loop's model call (it never raises: failures end the stream as ``error``)."""
        given = cast(Sequence[object], models)  # what an extension passes is not type-checked
        well_formed = all(
            isinstance(m, dict) and isinstance(cast(dict[str, object], m).get("id"), str) for m in given
        )
        if not well_formed or not callable(stream_fn):
            raise TypeError(
                f"register_provider({name!r}): models must be ModelInfo dicts and stream_fn a function"
            )
        self.registered.providers.append(ExtensionProvider(name, tuple(models), stream_fn, self.name))

    def on(self, event: EventName) -> Callable[[_Hook], _Hook]:
        """Decorator: subscribe the function to ``event`` (see the module docstring)."""
        if event not in INTERCEPTING_EVENTS and event not in LIFECYCLE_EVENTS:
            raise ValueError(
                f"unknown extension event {event!r} ({', '.join((*INTERCEPTING_EVENTS, *LIFECYCLE_EVENTS))})"
            )

        def subscribe(hook: _Hook) -> _Hook:
            self.registered.hooks.setdefault(event, []).append(hook)
            return hook

        return subscribe
