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
``set_thinking_level``; a command's ``ctx`` has ``wait_for_idle``, ``new_session`` and
``compact``. ``api.ui`` asks the user; how depends on the front end (a
terminal dialog, an RPC ``extension_ui_request``, an ACP permission request), and where nobody can
answer (print mode) ``confirm`` is ``False`` and ``select``/``input`` are ``None``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast

from tether.agent.hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from tether.wire import AgentMessage

if TYPE_CHECKING:
    from tether.agent import AgentTool
    from tether.ai.types import StreamFn
    from tether.session.prompt import PromptEditor
    from tether.wire import ModelInfo

NotifyLevel = Literal["info", "warning", "error"]


class ExtensionUI(Protocol):
    """How an extension asks the user; every front end supplies one."""

    async def confirm(self, title: str, message: str = "") -> bool:
        """Yes or no; ``False`` when nobody answers or the question is dismissed."""
        ...

    async def select(self, title: str, options: Sequence[str]) -> str | None:
        """One of ``options``; ``None`` when dismissed."""
        ...

    async def input(self, title: str, placeholder: str = "") -> str | None:
        """A line of text; ``None`` when dismissed."""
        ...

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        """Tell the user something; nothing to answer."""
        ...


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


class SessionControl(Protocol):
    """What of the running ``AgentSession`` the extension API uses (it is one)."""

    @property
    def is_running(self) -> bool: ...
    @property
    def thinking_level(self) -> str: ...
    @property
    def agent(self) -> Any: ...
    @property
    def session(self) -> Any: ...
    def prompt(self, prompt: str) -> Any: ...
    def follow_up(self, text: str) -> Any: ...
    def steer(self, text: str) -> Any: ...
    def rename(self, title: str) -> None: ...
    def append_entry(self, custom_type: str, data: Any) -> str | None: ...
    def set_model(self, spec: str) -> ModelInfo: ...
    def set_thinking(self, level: str) -> str: ...
    def new_session(self) -> str | None: ...
    async def wait_for_idle(self) -> None: ...
    async def compact(self, instructions: str | None = None) -> Any: ...


@dataclass(slots=True)
class CommandContext:
    """What a slash command's handler gets besides its arguments."""

    cwd: Path
    ui: ExtensionUI
    send: Callable[[str], Awaitable[None]]
    """Run the agent on a prompt (as if the user had typed it) and wait until it settles."""
    session: SessionControl | None = None

    async def wait_for_idle(self) -> None:
        """Wait until the agent's run in progress, if any, has ended (pi's ``ctx.waitForIdle``;
        the command itself is not one)."""
        if self.session is not None:
            await self.session.agent.wait_for_idle()

    def new_session(self) -> str | None:
        """Start a new stored session (pi's ``ctx.newSession``); its id, ``None`` without storage."""
        return _control(self.session, "new_session").new_session()

    async def compact(self, instructions: str | None = None) -> Any:
        """Compact the conversation now (pi's ``ctx.compact``)."""
        return await _control(self.session, "compact").compact(instructions)


_SENDING: set[asyncio.Task[None]] = set()
"""``send_user_message`` runs waiting for the session (kept referenced until they end)."""


def _control(session: SessionControl | None, what: str) -> SessionControl:
    if session is None:
        raise RuntimeError(f"{what} needs a running session (not available during setup)")
    return session


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

INTERCEPTING_EVENTS = ("before_run", "tool_call", "tool_result", "prompt")
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
    "session_info_changed",
    "compaction_start",
    "compaction_end",
)
"""Observed, never intercepted: the session's events of these types (``session_start`` when the
session is set up, ``session_shutdown`` when it closes, ``thinking_level_select`` for the
session's ``thinking_level_changed``)."""
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


@dataclass(slots=True)
class Registrations:
    """Everything one extension registered (read by the host)."""

    tools: list[AgentTool] = field(default_factory=lambda: [])
    commands: list[ExtensionCommand] = field(default_factory=lambda: [])
    providers: list[ExtensionProvider] = field(default_factory=lambda: [])
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
    ) -> None:
        self.name = name
        self.cwd = cwd
        self._ui = ui
        self._session = session
        self.registered = Registrations()

    # -- controlling the session (pi's ExtensionAPI; not during setup) -----------------------------

    def _running(self, what: str) -> SessionControl:
        return _control(self._session(), what)

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

        async def when_idle() -> None:
            await session.wait_for_idle()
            await session.prompt(text)

        task = asyncio.get_running_loop().create_task(when_idle())
        _SENDING.add(task)
        task.add_done_callback(_SENDING.discard)

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
    def ui(self) -> ExtensionUI:
        """The front end's way of asking the user (resolved on use: RPC installs its own)."""
        return self._ui()

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
