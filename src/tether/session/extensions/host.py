"""The loaded extensions of one session, as the hooks the core installs.

Every call into extension code goes through here, so one rule holds everywhere: an exception in an
extension is reported once, with the extension's name, and the session goes on. A failing
``tool_call`` hook blocks that call (a guard that crashed must not wave a command through); any
other failing hook is skipped for that event. ``exit()`` (``SystemExit``) and other exceptions
outside ``Exception`` count as failures too (``ExtensionExit``): an extension's hook, tool or
command must not end the process, and with it every session an RPC or ACP server holds. Only
the user's Ctrl-C (``KeyboardInterrupt``) and a real cancellation pass through.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ValidationError

from tether.agent.hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from tether.errors import TetherError
from tether.session.extensions.api import (
    EVENT_ALIASES,
    LIFECYCLE_EVENTS,
    BeforeRunContext,
    BeforeRunResult,
    CommandContext,
    ExtensionCommand,
    ExtensionFlag,
    ExtensionProvider,
    ExtensionShortcut,
    InputEvent,
    InputResult,
    ProviderResponse,
    Registrations,
    SessionBeforeResult,
    SessionControl,
    Shared,
)
from tether.session.extensions.ui import Dialogs, ExtensionUI, HeadlessUI
from tether.store.errors import SessionError

if TYPE_CHECKING:
    from tether.agent import Agent, AgentTool, AgentToolResult, ToolUpdate
    from tether.ai.abort import AbortSignal
    from tether.ai.types import ProviderRequest, StreamFn
    from tether.mcp.config import McpServerConfig
    from tether.session.prompt import PromptEditor, PromptHook
    from tether.wire import ModelInfo


HOOK_TIME_LIMIT = 10.0
"""Seconds a hook may take, not counting the time its dialogs wait for the user: the switch,
fork or move a ``session_before_*`` hook holds up goes ahead without it after that, and a hook
of a run (``input``, ``before_run``, ``prompt``, the provider and tool hooks) counts as failed
(reported; a ``tool_call`` guard's call is blocked). A hook of a run awaiting something that
never came held the run, and ``tether -p``, for good. Commands are not limited: a command may
run the agent."""


class SessionChangeCancelled(SessionError):
    """An extension's ``session_before_*`` hook cancelled a switch, fork or move in the tree; the
    message names the extension and its reason (front ends show it; RPC answers ``cancelled``)."""


@dataclass(frozen=True, slots=True)
class LoadedExtension:
    name: str
    origin: str
    """Where it came from: a file path, or ``entry point NAME (module)``."""
    registered: Registrations


class ExtensionHost:
    """The session's extensions: their tools, commands and providers, and the hooks that call
    them. ``ui`` is the front end's (``HeadlessUI`` until one installs its own); ``notice`` is
    where reports go (the core turns them into ``notice`` events)."""

    def __init__(
        self,
        extensions: Sequence[LoadedExtension],
        problems: Sequence[str] = (),
        shared: Shared | None = None,
    ) -> None:
        self.extensions = list(extensions)
        self.problems = list(problems)
        """Extensions that could not be loaded, one line each (shown at start-up)."""
        self.notice: Callable[[str], None] = lambda _text: None
        self.failed: Callable[[str, str, str, str | None], None] = self._show_failure
        """Told of every failure: the extension's origin, what it was handling, the error, and
        the line to show the user (the first failure of each extension only, else ``None``). The
        core makes each an ``extension_error`` event and shows the line as a ``notice``."""
        self.ui: ExtensionUI = HeadlessUI(lambda text: self.notice(text))
        self.session: SessionControl | None = None
        """The running session (``attach``): what ``api.send_user_message`` and the like control."""
        self._reported: set[str] = set()
        self._observing: set[asyncio.Task[None]] = set()
        self._shared = shared if shared is not None else Shared()
        """What every ``api`` shares with the host (held messages, flags, open dialogs)."""
        self.hook_time_limit = HOOK_TIME_LIMIT
        self._shared.events.report = lambda name, channel, exc: self.report(name, f"events {channel}", exc)
        self._shared.observe = self.observe

    @property
    def dialogs(self) -> Dialogs:
        """The front end's ``ui`` as extensions call it (with dialog timeouts)."""
        return Dialogs(self.ui, self._shared.asking)

    # -- the session's lifecycle -------------------------------------------------------------------

    def attach(
        self, session: SessionControl, subscribe: Callable[[Callable[[Any], None]], Callable[[], None]]
    ) -> None:
        """Give the extensions the running session, pass its events to the lifecycle hooks, and
        tell them ``session_start`` (pi's ``reason``: ``startup``)."""
        self.session = session
        if any(e.registered.hooks.get(name) for e in self.extensions for name in LIFECYCLE_EVENTS):
            self._unsubscribe = subscribe(self.observe)
        self.observe({"type": "session_start", "reason": "startup"})

    def detach(self) -> None:
        """``session_shutdown`` (``reason``: ``quit``), then no more events."""
        self.observe({"type": "session_shutdown", "reason": "quit"})
        unsubscribe = getattr(self, "_unsubscribe", None)
        if unsubscribe is not None:
            unsubscribe()
        self.session = None

    def observe(self, event: Any) -> None:
        """Call the hooks of ``event``'s type (a copy each: an observer cannot change what the
        front ends see); an async hook runs as a task, a failing one is reported once."""
        kind = str(event["type"])
        kind = EVENT_ALIASES.get(kind, kind)
        for name, hook in self._hooks(kind):
            try:
                outcome = hook(dict(event, type=kind))
            except Exception as exc:
                self.report(name, kind, exc)
                continue
            if inspect.isawaitable(outcome):
                try:
                    task = asyncio.get_running_loop().create_task(self._observed(name, kind, outcome))
                except RuntimeError:  # no loop yet (a session built outside one): a sync hook only
                    getattr(outcome, "close", lambda: None)()
                    self.report(name, kind, RuntimeError("an async hook needs a running event loop here"))
                    continue
                self._observing.add(task)
                task.add_done_callback(self._observing.discard)

    def replaced(self, reason: str, previous: str | None, target: str | None) -> None:
        """The session was replaced (``reason``: ``new``, ``resume`` or ``fork``): as in pi,
        ``session_shutdown`` for the one left, then ``session_start`` for the new one, each naming
        the other's ``session_file``. The extensions stay loaded (pi loads them again): state
        kept in memory is rebuilt in ``session_start``, as pi's docs ask."""
        self.observe({"type": "session_shutdown", "reason": reason, "targetSessionFile": target})
        self.observe({"type": "session_start", "reason": reason, "previousSessionFile": previous})

    async def before_session_change(self, event: dict[str, Any]) -> SessionBeforeResult:
        """The ``session_before_*`` hooks of ``event``, in order, each with a copy: the first that
        cancels wins (``SessionChangeCancelled`` with its reason); a tree move's overrides add up,
        later hooks over earlier ones. A hook that fails or outlasts ``hook_time_limit`` is
        reported and cancels nothing: a broken extension must not trap the user in a session."""
        kind = str(event["type"])
        decided = SessionBeforeResult()
        for name, hook in self._hooks(kind):
            try:
                result = await self._bounded(_call(hook, dict(event)))
            except Exception as exc:
                self.report(name, kind, exc)
                continue
            if self._wrong(name, kind, result, SessionBeforeResult) or result is None:
                continue
            if result.cancel:
                because = f": {result.reason}" if result.reason else ""
                raise SessionChangeCancelled(f"cancelled by extension {name}{because}")
            for key in ("summary", "instructions", "label"):
                if getattr(result, key) is not None:
                    setattr(decided, key, getattr(result, key))
        return decided

    async def _bounded(self, outcome: Awaitable[Any]) -> Any:
        """``outcome``, or ``HookTimeout`` once it ran ``hook_time_limit`` seconds with no dialog
        open (while one waits for the user, the limit starts again)."""
        task = asyncio.ensure_future(outcome)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.hook_time_limit)
                if done:
                    return task.result()
                if not self._shared.asking.count:
                    task.cancel()
                    raise HookTimeout(f"no answer within {self.hook_time_limit:g} s")
        except asyncio.CancelledError:
            task.cancel()
            raise

    async def _observed(self, name: str, kind: str, outcome: Awaitable[Any]) -> None:
        try:
            await outcome
        except Exception as exc:
            self.report(name, kind, exc)

    # -- what they registered ----------------------------------------------------------------------

    def tools(self) -> list[AgentTool]:
        """The extensions' tools, each run through ``_call`` (a tool that calls ``exit()`` fails
        its call instead of ending the process)."""
        return [replace(t, execute=_guarded(t)) for e in self.extensions for t in e.registered.tools]

    def commands(self) -> dict[str, ExtensionCommand]:
        found: dict[str, ExtensionCommand] = {}
        for extension in self.extensions:
            for command in extension.registered.commands:
                found.setdefault(command.name, command)
        return found

    def set_flags(self, given: Sequence[str]) -> list[str]:
        """Take ``--flag NAME[=VALUE]`` from the command line (before ``session_start``, so hooks
        there see them, as in pi). A flag no extension registered, or a value of the wrong kind,
        is one problem line and left out: the lines returned."""
        problems: list[str] = []
        for text in given:
            name, has_value, value = text.partition("=")
            flag = self._shared.flags.get(name)
            if flag is None:
                known = ", ".join(sorted(self._shared.flags)) or "none registered"
                problems.append(f"--flag {name}: no extension registered that flag ({known})")
            elif flag.type == "boolean" and has_value and value not in ("true", "false"):
                problems.append(f"--flag {text}: {name} is a yes/no flag (give it as --flag {name})")
            elif flag.type == "boolean":
                self._shared.flag_values[name] = value != "false"
            elif not has_value:
                problems.append(f"--flag {name}: {name} takes a value (--flag {name}=VALUE)")
            else:
                self._shared.flag_values[name] = value
        return problems

    def mcp_servers(self) -> list[McpServerConfig]:
        """The MCP servers the extensions registered during ``setup`` (they start with the
        session's own, which win by name)."""
        return [config for _, config in self._shared.mcp_servers.values()]

    def flags(self) -> list[ExtensionFlag]:
        return list(self._shared.flags.values())

    def render_message(self, message: Mapping[str, Any], expanded: bool) -> str | None:
        """The text the first renderer of the message's ``customType`` makes of it (``None``:
        none, or it declined, or it failed: reported, and the message is shown the default way)."""
        custom_type = message.get("customType")
        for extension in self.extensions:
            for renderer in extension.registered.renderers:
                if renderer.custom_type != custom_type:
                    continue
                try:
                    lines = renderer.render(dict(message), expanded)
                    if inspect.isawaitable(lines):
                        getattr(lines, "close", lambda: None)()
                        raise TypeError("a message renderer must be a plain function, not async")
                except (KeyboardInterrupt, asyncio.CancelledError):
                    raise
                except BaseException as exc:  # exit() too: a renderer must not end the terminal
                    self.report(renderer.extension, f"rendering {custom_type}", exc)
                    return None
                if lines is None or isinstance(lines, str):
                    return lines
                return "\n".join(str(line) for line in lines)
        return None

    def shortcuts(self) -> list[ExtensionShortcut]:
        """Every extension's keys, first registration of a key first."""
        return [s for e in self.extensions for s in e.registered.shortcuts]

    def command_context(
        self, session: SessionControl, send: Callable[[str], Awaitable[None]]
    ) -> CommandContext:
        """What a command's (or a shortcut's) handler gets."""
        return CommandContext(session.cwd, self.dialogs, send, session)

    async def run_shortcut(self, shortcut: ExtensionShortcut, context: CommandContext) -> None:
        try:
            await _call(shortcut.handler, context)
        except Exception as exc:
            self.report(shortcut.extension, shortcut.key, exc)

    def providers(self) -> dict[str, ExtensionProvider]:
        found: dict[str, ExtensionProvider] = {}
        for extension in self.extensions:
            for provider in extension.registered.providers:
                found.setdefault(provider.name, provider)
        return found

    def _hooks(self, event: str) -> list[tuple[str, Callable[..., Any]]]:
        return [(e.name, h) for e in self.extensions for h in e.registered.hooks.get(event, [])]

    def model(self, spec: str) -> tuple[ModelInfo, StreamFn] | None:
        """The model ``PROVIDER/ID`` of an extension's provider (``None``: not one of theirs)."""
        provider_name, _, model_id = spec.partition("/")
        provider = self.providers().get(provider_name)
        if provider is None:
            return None
        for model in provider.models:
            if model["id"] == model_id or not model_id:
                return model, provider.stream_fn
        known = ", ".join(f"{provider_name}/{m['id']}" for m in provider.models)
        raise LookupError(
            f"the extension provider {provider_name} has no model {model_id!r} (it has: {known})"
        )

    def install(self, agent: Agent) -> None:
        """Put the ``tool_call`` and ``tool_result`` hooks in front of the agent's own: an
        extension sees (and may block or change) a call before the approval gate asks. The
        provider hooks go into the agent's stream options (every model call of the agent)."""
        if any(self._hooks(e) for e in ("before_provider_headers", "before_provider_request")):
            agent.options = replace(agent.options, on_request=self.provider_request)
        if self._hooks("after_provider_response"):
            agent.options = replace(agent.options, on_response=self.provider_response)
        if self._hooks("tool_call"):
            gate = agent.before_tool_call

            async def before(
                context: BeforeToolCallContext, signal: AbortSignal | None = None
            ) -> BeforeToolCallResult | None:
                blocked = await self.before_tool_call(context, signal)
                if blocked is not None or gate is None:
                    return blocked
                return await gate(context, signal)

            agent.before_tool_call = before
        if self._hooks("tool_result"):
            agent.after_tool_call = self.after_tool_call

    # -- calling into them -------------------------------------------------------------------------

    def _show_failure(self, _origin: str, _where: str, _error: str, line: str | None) -> None:
        if line is not None:
            self.notice(line)

    def report(self, name: str, where: str, exc: BaseException) -> None:
        """Report every failure to ``failed``; tell the user (``notice``) once per extension,
        later failures stay quiet there."""
        origin = next((e.origin for e in self.extensions if e.name == name), name)
        error = f"{type(exc).__name__}: {exc}"
        line = None
        if name not in self._reported:
            self._reported.add(name)
            line = f"extension {name} failed in {where}: {error} (reported once)"
        self.failed(origin, where, error, line)

    def _wrong(self, name: str, where: str, result: object, kind: type) -> bool:
        """Whether a hook returned something other than ``kind`` or ``None``; then it is
        reported as a failure (returning ``42``, or pi's ``{"block": true}``, was ignored without
        a word, so an extension's guard or block did nothing and nobody knew)."""
        if result is None or isinstance(result, kind):
            return False
        shown = _cut(repr(result))
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        self.report(name, where, TypeError(f"returned {shown}, not {article} {kind.__name__} or None"))
        return True

    async def input(self, text: str, source: str) -> str | None:
        """The ``input`` hooks on a line the user sent: the text to go on with (transformed, or
        as it was), ``None`` when a hook handled it. A failing hook is skipped."""
        for name, hook in self._hooks("input"):
            try:
                result = await self._bounded(_call(hook, InputEvent(text, source)))
            except Exception as exc:
                self.report(name, "input", exc)
                continue
            if self._wrong(name, "input", result, InputResult):
                continue
            if isinstance(result, InputResult) and result.action == "handled":
                return None
            if isinstance(result, InputResult) and result.action == "transform" and result.text is not None:
                text = result.text
        return text

    def has_input_hooks(self) -> bool:
        return bool(self._hooks("input"))

    async def before_run(self, context: BeforeRunContext) -> BeforeRunResult | None:
        """The ``before_run`` hooks; first, what ``send_message`` held for this prompt goes in
        front of it."""
        held, self._shared.next_turn[:] = list(self._shared.next_turn), []
        context.messages[:0] = held
        for name, hook in self._hooks("before_run"):
            try:
                result = await self._bounded(_call(hook, context))
            except Exception as exc:
                self.report(name, "before_run", exc)
                continue
            if self._wrong(name, "before_run", result, BeforeRunResult):
                continue
            if isinstance(result, BeforeRunResult) and result.block:
                return BeforeRunResult(True, result.reason or f"stopped by extension {name}")
        return None

    async def provider_request(self, request: ProviderRequest) -> None:
        """``before_provider_headers`` hooks, then ``before_provider_request`` ones (a value
        returned replaces the payload for the next hooks and the request); a failing hook is
        reported and skipped."""
        for name, hook in self._hooks("before_provider_headers"):
            try:
                await self._bounded(_call(hook, request))
            except Exception as exc:
                self.report(name, "before_provider_headers", exc)
        for name, hook in self._hooks("before_provider_request"):
            try:
                replaced = await self._bounded(_call(hook, request))
            except Exception as exc:
                self.report(name, "before_provider_request", exc)
                continue
            if replaced is not None:
                request.payload = self._payload(name, replaced)

    def _payload(self, name: str, payload: object) -> object:
        """A ``before_provider_request`` hook's replacement payload, if it is a JSON object; else
        the run ends (``TypeError``, the model call's error) naming the extension and what it
        returned. A string or a list went to the provider, refused there far from its cause, and
        a set in the dict failed the run as a bare "Object of type set is not JSON
        serializable"; skipping the hook instead would send what it meant to change (a field it
        removes, a redaction)."""
        if not isinstance(payload, dict):
            problem = f"{_cut(repr(payload))}, not a JSON object (a dict) or None"
        else:
            try:
                json.dumps(payload)
                return cast(dict[str, object], payload)
            except (TypeError, ValueError, RecursionError) as exc:
                problem = f"a payload that is not JSON ({exc})"
        error = TypeError(f"extension {name}'s before_provider_request hook returned {problem}")
        origin = next((e.origin for e in self.extensions if e.name == name), name)
        self.failed(origin, "before_provider_request", f"TypeError: {error}", None)
        raise error

    async def provider_response(self, status: int, headers: Mapping[str, str]) -> None:
        for name, hook in self._hooks("after_provider_response"):
            try:
                await self._bounded(_call(hook, ProviderResponse(status, dict(headers))))
            except Exception as exc:
                self.report(name, "after_provider_response", exc)

    async def before_tool_call(
        self, context: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        """Each hook sees ``context.args`` as a dict, whatever the tool (a ``@tool`` function's
        are a pydantic model to the tool): one guard works for every tool, as in pi. What the
        hooks change in that dict is validated and put back into the model the tool gets."""
        original = context.args
        model = original if isinstance(original, BaseModel) else None
        if model is not None:
            context.args = model.model_dump(mode="python")
        try:
            for name, hook in self._hooks("tool_call"):
                try:
                    result = await self._bounded(_call(hook, context))
                except Exception as exc:
                    self.report(name, "tool_call", exc)
                    return BeforeToolCallResult(
                        True, f"Blocked: the extension {name} failed while checking this call."
                    )
                if self._wrong(name, "tool_call", result, BeforeToolCallResult):  # pi's {"block": ...}?
                    return BeforeToolCallResult(
                        True, f"Blocked: the extension {name} gave no answer tether reads for this call."
                    )
                if isinstance(result, BeforeToolCallResult) and result.block:
                    return result
            if model is not None and context.args != model.model_dump(mode="python"):
                try:
                    changed = type(model).model_validate(context.args)
                except ValidationError as exc:
                    return BeforeToolCallResult(
                        True, f"Blocked: an extension changed the arguments into invalid ones: {exc}"
                    )
                vars(model).update(vars(changed))  # the loop holds this very object
            return None
        finally:
            context.args = original

    async def after_tool_call(
        self, context: AfterToolCallContext, signal: AbortSignal | None = None
    ) -> AfterToolCallResult | None:
        """Each hook sees the result as the hooks before it left it; the overrides add up.
        ``context.args`` is a dict here too."""
        if isinstance(context.args, BaseModel):
            context.args = context.args.model_dump(mode="python")
        merged: AfterToolCallResult | None = None
        for name, hook in self._hooks("tool_result"):
            try:
                result = await self._bounded(_call(hook, context))
            except Exception as exc:
                self.report(name, "tool_result", exc)
                continue
            if self._wrong(name, "tool_result", result, AfterToolCallResult) or result is None:
                continue
            merged = merged or AfterToolCallResult()
            if result.content is not None:
                merged.content = context.result.content = result.content
            if result.details is not None:
                merged.details = context.result.details = result.details
            if result.is_error is not None:
                merged.is_error = context.is_error = result.is_error
            if result.terminate is not None:
                merged.terminate = context.result.terminate = result.terminate
        return merged

    def prompt_hooks(self) -> list[PromptHook]:
        """The ``prompt`` subscribers as prompt hooks, each guarded."""
        return [self._guarded_prompt_hook(name, hook) for name, hook in self._hooks("prompt")]

    def _guarded_prompt_hook(self, name: str, hook: Callable[..., Any]) -> PromptHook:
        async def guarded(editor: PromptEditor) -> None:
            try:
                await self._bounded(_call(hook, editor))
            except Exception as exc:
                self.report(name, "prompt", exc)

        return guarded

    async def run_command(self, command: ExtensionCommand, args: str, context: CommandContext) -> str | None:
        try:
            result = await _call(command.handler, args, context)
        except Exception as exc:
            self.report(command.extension, f"/{command.name}", exc)
            return f"/{command.name} failed: {type(exc).__name__}: {exc}"
        return result if isinstance(result, str) else None


class HookTimeout(TetherError):
    """A hook that holds up the user's action ran past its time limit; it is reported."""


class ExtensionExit(TetherError):
    """Extension code raised ``SystemExit`` (called ``exit()``) or another exception outside
    ``Exception``; it is reported like any failure of that extension."""


def _cut(shown: str) -> str:
    """A value's ``repr`` as a report names it: its first 57 characters when it is longer."""
    return shown if len(shown) <= 60 else f"{shown[:57]}..."


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    """Call extension code (plain or async); see the module docstring for what it may raise."""
    try:
        result = function(*args)
        if inspect.isawaitable(result):
            result = await result
    except (Exception, KeyboardInterrupt, asyncio.CancelledError):
        raise
    except SystemExit as exc:
        raise ExtensionExit(f"called exit({exc.code if exc.code is not None else ''})") from None
    except BaseException as exc:
        raise ExtensionExit(f"raised {type(exc).__name__}: {exc}") from None
    return result


def _guarded(tool: AgentTool) -> Callable[..., Any]:
    execute = tool.execute

    async def guarded(
        call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        return await _call(execute, call_id, params, signal, on_update)

    return guarded
