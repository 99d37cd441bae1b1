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
works unchanged in an extension. ``api.ui`` asks the user; how depends on the front end (a
terminal dialog, an RPC ``extension_ui_request``, an ACP permission request), and where nobody can
answer (print mode) ``confirm`` is ``False`` and ``select``/``input`` are ``None``.
"""

from __future__ import annotations

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


@dataclass(slots=True)
class CommandContext:
    """What a slash command's handler gets besides its arguments."""

    cwd: Path
    ui: ExtensionUI
    send: Callable[[str], Awaitable[None]]
    """Run the agent on a prompt (as if the user had typed it) and wait until it settles."""


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

EventName = Literal["before_run", "tool_call", "tool_result", "prompt"]
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

    def __init__(self, name: str, cwd: Path, ui: Callable[[], ExtensionUI]) -> None:
        self.name = name
        self.cwd = cwd
        self._ui = ui
        self.registered = Registrations()

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
        if event not in ("before_run", "tool_call", "tool_result", "prompt"):
            raise ValueError(
                f"unknown extension event {event!r} (before_run, tool_call, tool_result, prompt)"
            )

        def subscribe(hook: _Hook) -> _Hook:
            self.registered.hooks.setdefault(event, []).append(hook)
            return hook

        return subscribe
