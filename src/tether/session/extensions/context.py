"""What a slash command's handler gets besides its arguments: pi's ``ExtensionCommandContext``.

Commands, unlike hooks, may move the session (a new one, a fork, another point of the tree):
a command runs as a run of its own, so nothing else is changing the session meanwhile, where a
hook that did so mid-run would pull the conversation from under the agent (pi's reason too).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from tether.session.extensions.ui import Dialogs

if TYPE_CHECKING:
    from tether.wire import ModelInfo


class SessionControl(Protocol):
    """What of the running ``AgentSession`` the extension API uses (it is one)."""

    @property
    def cwd(self) -> Path: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def thinking_level(self) -> str: ...
    @property
    def model(self) -> ModelInfo: ...
    @property
    def agent(self) -> Any: ...
    @property
    def session(self) -> Any: ...
    @property
    def resources(self) -> Any: ...
    @property
    def settings(self) -> Any: ...
    def confinement(self) -> Any: ...
    def add_mcp_server(self, config: Any) -> bool: ...
    def remove_mcp_server(self, name: str) -> bool: ...
    def prompt(self, prompt: Any) -> Any: ...
    def follow_up(self, text: Any) -> Any: ...
    def steer(self, text: Any) -> Any: ...
    def abort(self) -> None: ...
    def rename(self, title: str) -> None: ...
    def append_entry(self, custom_type: str, data: Any) -> str | None: ...
    def set_model(self, spec: str) -> ModelInfo: ...
    def set_thinking(self, level: str) -> str: ...
    def new_session(self, parent_session: str | None = None) -> str | None: ...
    def fork(self, entry_id: str | None = None) -> str: ...
    def switch_session(self, session: str) -> None: ...
    async def before_switch(self, reason: Literal["new", "resume"], target: str | None = None) -> None: ...
    async def before_fork(self, entry_id: str | None, position: Literal["before", "at"]) -> None: ...
    async def branch(
        self,
        entry_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        label: str | None = None,
    ) -> str | None: ...
    def stats(self) -> Any: ...
    async def wait_for_idle(self) -> None: ...
    async def compact(self, instructions: str | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """How full the model's context is (pi's ``ctx.getContextUsage()``): ``tokens`` the last
    reply's usage plus an estimate for the messages after it; ``percent`` of ``context_window``
    (``None`` when the model's window is not known)."""

    tokens: int
    context_window: int | None
    percent: float | None


def control(session: SessionControl | None, what: str) -> SessionControl:
    """The running session, or one clear error for a call made before there is one."""
    if session is None:
        raise RuntimeError(f"{what} needs a running session (not available during setup)")
    return session


@dataclass(slots=True)
class CommandContext:
    """What a slash command's handler gets besides its arguments (pi's command context)."""

    cwd: Path
    ui: Dialogs
    send: Callable[[str], Awaitable[None]]
    """Run the agent on a prompt (as if the user had typed it) and wait until it settles."""
    session: SessionControl | None = None

    @property
    def mode(self) -> str:
        """The front end: ``tui``, ``rpc``, ``acp``, ``print`` (print and JSON modes) or
        ``library`` (a program's own ``ExtensionUI``)."""
        return str(getattr(self.ui.front_end, "ui_mode", "library"))

    @property
    def has_ui(self) -> bool:
        """Whether someone can answer a dialog (pi's ``ctx.hasUI``): not in print or JSON mode."""
        return self.mode != "print"

    @property
    def model(self) -> ModelInfo:
        return control(self.session, "model").model

    def is_idle(self) -> bool:
        """No agent run in progress besides this command (pi's ``ctx.isIdle()``)."""
        return not control(self.session, "is_idle").agent.is_streaming

    def abort(self) -> None:
        """Abort what the agent is doing (pi's ``ctx.abort()``)."""
        control(self.session, "abort").agent.abort()

    def get_system_prompt(self) -> str:
        return str(control(self.session, "get_system_prompt").agent.system_prompt)

    def get_context_usage(self) -> ContextUsage:
        """How full the context is now (pi's ``ctx.getContextUsage()``)."""
        stats = control(self.session, "get_context_usage").stats()
        return ContextUsage(stats.context_tokens, stats.context_window, stats.context_percent)

    async def wait_for_idle(self) -> None:
        """Wait until the agent's run in progress, if any, has ended (pi's ``ctx.waitForIdle``;
        the command itself is not one)."""
        await control(self.session, "wait_for_idle").agent.wait_for_idle()

    async def new_session(self) -> str | None:
        """Start a new stored session (pi's ``ctx.newSession``); its id, ``None`` without storage.
        Like every switch, the extensions' ``session_before_switch`` hooks are asked first
        (``SessionChangeCancelled`` when one cancels)."""
        session = control(self.session, "new_session")
        await session.before_switch("new")
        return session.new_session()

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> str | None:
        """Continue in a new session copied from this one (pi's ``ctx.fork``): ``before`` the
        user message ``entry_id`` (its text goes back into the input box, as ``/fork`` does), or
        ``at`` any entry (a clone up to it). The new session's id (``None``: forked before the
        first message, which is a new empty session). ``session_before_fork`` is asked first."""
        session = control(self.session, "fork")
        stored = session.session
        if stored is None:
            raise RuntimeError("fork needs a stored session (this one runs with --no-session)")
        if position == "at":
            await session.before_fork(entry_id, "at")
            return session.fork(entry_id)
        entry = cast(dict[str, Any], stored.entry(entry_id))
        message = cast(dict[str, Any] | None, entry.get("message"))
        if entry["type"] != "message" or message is None or message["role"] != "user":
            raise ValueError(f"fork: entry {entry_id} is not a user message (position='at' takes any)")
        await session.before_fork(entry_id, "before")
        parent = entry["parentId"]
        forked = session.fork(parent) if parent is not None else session.new_session(parent_session=stored.id)
        content = message["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        self.ui.set_editor_text(text)
        return forked

    async def navigate_tree(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        label: str | None = None,
    ) -> str | None:
        """Move to another point of the session's tree (pi's ``ctx.navigateTree``; ``/tree``): with
        ``summarize``, a summary of the branch left behind is added (steered by ``instructions``)
        and returned; ``label`` labels the summary, or the entry moved to (pi's). The extensions'
        ``session_before_tree`` hooks may cancel it (``SessionChangeCancelled``)."""
        session = control(self.session, "navigate_tree")
        if session.agent.is_streaming:
            raise RuntimeError("navigate_tree: the agent is running; await ctx.wait_for_idle() first")
        return await session.branch(target_id, summarize=summarize, instructions=instructions, label=label)

    async def switch_session(self, session_id: str) -> None:
        """Continue another stored session, by id or ``session_file`` path (pi's
        ``ctx.switchSession``), once ``session_before_switch`` let it."""
        session = control(self.session, "switch_session")
        await session.before_switch("resume", session_id)
        session.switch_session(session_id)

    async def compact(self, instructions: str | None = None) -> Any:
        """Compact the conversation now (pi's ``ctx.compact``; awaited here, where pi takes
        callbacks)."""
        return await control(self.session, "compact").compact(instructions)
