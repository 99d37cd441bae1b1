"""One ACP session: an ``AgentSession`` plus what the editor needs of it.

It turns the session's events into ``session/update``s as they happen (``tether.acp.updates`` builds
them), asks the editor before risky tool calls (``session/request_permission``: allow once,
always allow that tool for the rest of the session, or reject), keeps the session mode, and
offers mode, model and thinking level as session config options.

A session another process is running (its writer lock is held) is loaded read-only and
*followed*: each message its writer stores is sent as the updates a live turn would have sent,
and prompts are refused with an error naming the writer.

Modes choose the approval policy: ``ask`` (ask before edits: every ``edit``, ``write`` and
``bash``) and ``auto`` (edits inside the workspace go ahead; commands and writes outside it still
ask, or nothing asks under ``--yes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PermissionOption,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    ToolCallUpdate,
    UnstructuredCommandInput,
)

from tether.acp.tools import EditorAccess, ToolBridge, bridge_tools
from tether.acp.updates import (
    SessionUpdate,
    StopReason,
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
from tether.session.agent_session import AgentSession
from tether.session.commands import execute_remote
from tether.session.extensions.api import NotifyLevel
from tether.session.settings import THINKING_LEVELS
from tether.tools.approval import Approval, ApprovalGate
from tether.wire import ImageContent, ModelInfo, ToolCall

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


CANCEL_ANSWER_WAIT = 1.0
"""Seconds a cancelled prompt waits for its run to end before it answers ``cancelled`` anyway."""
CLOSE_WAIT = 5.0
"""Seconds closing a session waits for its core (a run stuck on a dead dependency is left)."""


def _consume(done: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of a run or a request left behind, so asyncio does not report it
    as never retrieved."""
    if not done.cancelled():
        done.exception()


@dataclass(slots=True)
class AcpSession:
    """One ACP session: its core, its mode, and what it streams to the client."""

    client: Client
    access: EditorAccess
    mode: ModeId = "ask"
    always_allowed: set[str] = field(default_factory=lambda: set[str]())
    """Tools the user allowed for the rest of the session ("always allow")."""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    _core: AgentSession | None = field(default=None, init=False)
    _bridge: ToolBridge | None = field(default=None, init=False)
    _announced: set[str] = field(default_factory=lambda: set[str](), init=False)
    """Tool calls the client has already been told about (``tool_call`` sent) in this turn."""
    _base_approval: Approval = field(default="ask", init=False)
    """The approval policy of settings and ``--yes``, which ``auto`` mode uses."""
    _dialogs: int = field(default=0, init=False)
    """Extension dialogs asked so far (numbers their permission requests)."""
    _titles: set[asyncio.Task[None]] = field(default_factory=lambda: set[asyncio.Task[None]](), init=False)
    """Extensions' ``set_title`` updates being sent."""
    ui_mode: ClassVar[str] = "acp"
    """What extensions see as ``ctx.mode``."""
    holder: str | None = None
    """Who was writing the session when it was loaded (``pid 123 on host``), when another
    process was: then this connection follows it read-only. ``None``: this connection writes it."""
    _stop_following: threading.Event | None = field(default=None, init=False)
    _following: asyncio.Task[None] | None = field(default=None, init=False)

    @property
    def core(self) -> AgentSession:
        if self._core is None:
            raise RuntimeError("session not started")
        return self._core

    @property
    def id(self) -> str:
        session_id = self.core.session_id
        if session_id is None:
            raise RuntimeError("ACP sessions are always stored")
        return session_id

    @property
    def gate(self) -> ApprovalGate:
        gate = self.core.approval
        if gate is None:
            raise RuntimeError("ACP sessions always have an approval gate")
        return gate

    def attach(self, core: AgentSession) -> None:
        """Start serving ``core``: tools bridged to the editor, mode from the approval policy."""
        self._core = core
        self._base_approval = self.gate.policy
        self._bridge = ToolBridge(self.client, self.id, self.gate.workspace, self.access, self.send)
        core.agent.tools = bridge_tools(core.agent.tools, self._bridge)
        self.set_mode("auto" if self._base_approval == "yes" else "ask")
        if core.resources is not None and core.resources.extensions is not None:
            core.resources.extensions.ui = self  # extension dialogs become permission requests

    def commands_update(self) -> AvailableCommandsUpdate | None:
        """The user's slash commands (templates, skills, extension commands) for the editor's
        menu; ``None`` when there are none."""
        resources = self.core.resources
        commands = resources.commands() if resources is not None else []
        if not commands:
            return None
        return AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=[
                AvailableCommand(
                    name=c.name,
                    description=c.description or c.name,
                    input=AvailableCommandInput(root=UnstructuredCommandInput(hint="arguments")),
                )
                for c in commands
            ],
        )

    async def close(self) -> None:
        """Stop following (if this session does), then close the core."""
        await self.stop_following()
        closing = asyncio.ensure_future(self.core.close())
        done, _ = await asyncio.wait([closing], timeout=CLOSE_WAIT)
        if done:
            closing.result()
        else:
            logger.warning("session %s did not close within %g s; left behind", self.id, CLOSE_WAIT)

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
        gate = self.gate
        if self.mode == "ask":
            gate.always_ask = ASK_BEFORE_EDITS
            gate.policy = "deny" if self._base_approval == "deny" else "ask"
        else:
            gate.always_ask = frozenset()
            gate.policy = self._base_approval

    def config_options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        """Mode, model and (for reasoning models) thinking level as session config options."""
        core = self.core
        current = f"{core.model['provider']}/{core.model['id']}"
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
                    SessionConfigSelectOption(value=spec, name=name)
                    for spec, name in model_choices(current, core.extension_models())
                ],
            ),
        ]
        levels = _thinking_levels(core)
        if len(levels) > 1:
            options.append(
                SessionConfigOptionSelect(
                    type="select",
                    id="thinking",
                    name="Thinking",
                    category="thought_level",
                    current_value=core.thinking_level,
                    options=[SessionConfigSelectOption(value=level, name=level) for level in levels],
                )
            )
        return options

    def set_option(self, config_id: str, value: str) -> None:
        from tether.errors import ModelError

        core = self.core
        if config_id == "mode":
            self.set_mode(value)
        elif self.holder is not None and config_id in ("model", "thinking"):
            raise self.read_only_refusal()  # the writer's model and thinking level are its own
        elif config_id == "model":
            current = f"{core.model['provider']}/{core.model['id']}"
            if value != current:
                try:
                    core.set_model(value)
                except ModelError as exc:
                    raise RequestError.invalid_params({"details": str(exc)}) from None
        elif config_id == "thinking":
            if value not in _thinking_levels(core):
                raise RequestError.invalid_params(
                    {"details": f"{value!r} is not a thinking level of this model"}
                )
            core.set_thinking(value)
        else:
            raise RequestError.invalid_params({"details": f"unknown config option {config_id!r}"})

    # -- following a session another process runs ----------------------------------------------

    def start_following(self) -> None:
        """Send each message the writer stores from now on, as the updates the client would have
        seen live (user turns included: this client did not send them), until ``cancel``,
        ``close`` or the session's deletion."""
        stop = self._stop_following = threading.Event()
        self._following = asyncio.ensure_future(self._follow(stop))

    async def stop_following(self) -> None:
        """Stop sending the writer's messages; returns once the watch is closed (within a second)."""
        if self._stop_following is not None:
            self._stop_following.set()
        if self._following is not None:
            await asyncio.gather(self._following, return_exceptions=True)

    async def _follow(self, stop: threading.Event) -> None:
        core = self.core

        async def on_event(event: Mapping[str, Any]) -> None:
            if event["type"] == "message_end" and not stop.is_set():
                for update in history_updates([event["message"]], core.cwd):
                    await self.send(update)

        unsubscribe = core.subscribe(on_event)
        try:
            await core.follow(stop)
        except Exception as exc:  # the database failed: say so where the user looks, and stop
            logger.warning("following session %s stopped: %s", self.id, exc)
            await self.send(text_chunk(f"\n[following this session stopped: {exc}]\n"))
            return
        finally:
            unsubscribe()
        if not stop.is_set():  # ``follow`` ended by itself: the session was deleted
            await self.send(text_chunk("\n[this session was deleted; there is nothing more to follow]\n"))

    def read_only_refusal(self) -> RequestError:
        """The answer to a prompt (or a model change) while following: one line naming the
        writer, as the error's message (what an editor shows)."""
        line = (
            f"session {self.id} is read-only here: {self.holder} was running it when it was loaded, "
            "so this connection follows it (its new messages appear as they are stored) and cannot "
            "prompt it; prompt it there, or load it again once it is closed there"
        )
        return RequestError(-32600, line, {"details": line, "writer": self.holder})

    # -- a turn --------------------------------------------------------------------------------

    async def run_turn(self, text: str, images: list[ImageContent]) -> StopReason:
        """Run one prompt to its end; the stop reason the client gets."""
        core = self.core
        if self.holder is not None:
            raise self.read_only_refusal()
        if core.is_running:
            raise RequestError.invalid_request({"details": "this session is already running a prompt"})
        command = await execute_remote(core, text, "acp")
        if command is not None:  # `/tree`, `/model x`, ...: the core answers, the model never sees it
            await self.send(text_chunk(command.text))
            await self.send(
                ConfigOptionUpdate(
                    session_update="config_option_update", config_options=self.config_options()
                )
            )
            return "end_turn"
        self.cancelled.clear()
        self._announced.clear()
        unsubscribe = core.subscribe(self._on_event)
        submitted = asyncio.ensure_future(core.submit(text, images, shell=False))
        if not await self._ended_or_cancelled(submitted):
            # Stuck past the cancellation (a hung hook, a dead database): the client gets its
            # answer now; the run still ends, and is recorded, when what holds it lets go.
            submitted.add_done_callback(lambda done: (unsubscribe(), _consume(done)))
            return "cancelled"
        unsubscribe()
        submitted.result()
        try:
            return stop_reason(core.last_assistant(), self.cancelled.is_set())
        except TurnFailed as exc:
            raise RequestError(-32603, f"The model request failed: {exc}", {"details": str(exc)}) from None

    async def _ended_or_cancelled(self, submitted: asyncio.Future[Any]) -> bool:
        """Wait for the run, or for a cancellation and then ``CANCEL_ANSWER_WAIT`` more;
        whether the run has ended. A cancelled request cancels the run, as before."""
        cancelled = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({submitted, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not submitted.done():
                await asyncio.wait({submitted}, timeout=CANCEL_ANSWER_WAIT)
        except asyncio.CancelledError:
            submitted.cancel()
            raise
        finally:
            cancelled.cancel()
        return submitted.done()

    def cancel(self) -> None:
        """Cancel the turn; while following, stop following (nothing more is sent)."""
        if self._stop_following is not None:
            self._stop_following.set()
            return
        self.cancelled.set()
        self.core.abort()

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
        picked = await self._request_permission(
            permission_subject(call, self.core.cwd, preview),
            options,
            "permission request failed, taking it as a refusal",
        )
        if picked == ALLOW_ALWAYS:
            self.always_allowed.add(call["name"])
            return True
        return picked == ALLOW_ONCE

    # -- extension dialogs (this session is the extensions' ``ExtensionUI``) ---------------------

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        """A permission request with allow and reject; anything but allow is a no. ACP has no
        time limit on a request: the extension API cancels it when ``timeout`` runs out."""
        options = [
            PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        return await self._choose(f"{title} {message}".strip(), options) == ALLOW_ONCE

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        """A permission request whose options are the choices."""
        choices = [
            PermissionOption(option_id=str(i), name=o, kind="allow_once") for i, o in enumerate(options)
        ]
        picked = await self._choose(title, choices)
        # only an id offered picks (isdigit() also takes "²", which int() refuses, and "٣")
        return next((options[i] for i, c in enumerate(choices) if c.option_id == picked), None)

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        """ACP has no text prompt for an agent to send: dismissed, and said so."""
        self.notify(f"{title}: an editor cannot be asked for text; no input")
        return None

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        """No text prompt either (see ``input``)."""
        self.notify(f"{title}: an editor cannot be asked for text; nothing entered")
        return None

    def set_title(self, title: str) -> None:
        """The only title ACP has: the session's, as the editor lists it (``session_info_update``).
        ACP has no status line, widget or input box an agent may set: ``set_status``,
        ``set_widget`` and ``set_editor_text`` are not offered here, so they are dropped."""
        task = asyncio.get_running_loop().create_task(
            self.send(SessionInfoUpdate(session_update="session_info_update", title=title))
        )
        self._titles.add(task)
        task.add_done_callback(self._titles.discard)

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self.core.notify(message if level == "info" else f"{level}: {message}")

    async def _choose(self, title: str, options: list[PermissionOption]) -> str | None:
        """The option the user picked in a permission request about ``title``; ``None`` when the
        request was cancelled, failed, or the turn was."""
        self._dialogs += 1
        subject = ToolCallUpdate(
            tool_call_id=f"extension-{self._dialogs}", title=title, kind="other", status="pending"
        )
        return await self._request_permission(
            subject, options, "extension dialog failed, taking it as dismissed"
        )

    async def _request_permission(
        self, subject: ToolCallUpdate, options: list[PermissionOption], failed: str
    ) -> str | None:
        """Send ``session/request_permission`` and wait for it or for the turn's cancellation: the
        id of the option the user picked; ``None`` when the turn or the client cancelled it, or it
        failed (an error answer, a lost client, a malformed reply: logged with ``failed``)."""
        request = asyncio.ensure_future(
            self.client.request_permission(session_id=self.id, tool_call=subject, options=options)
        )
        cancelled = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({request, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not request.done():
                request.cancel()  # the client's call may swallow it and fail later: nobody waits
                request.add_done_callback(_consume)
        if not request.done() or request.cancelled():  # a cancelled task is done only later
            return None
        try:
            outcome = request.result().outcome
        except Exception as exc:
            logger.warning("%s: %s", failed, exc)
            return None
        return outcome.option_id if isinstance(outcome, AllowedOutcome) else None

    async def _on_event(self, event: Mapping[str, Any]) -> None:
        for update in self._updates(event):
            await self.send(update)

    def _updates(self, event: Mapping[str, Any]) -> list[SessionUpdate]:
        kind = event["type"]
        cwd = self.core.cwd
        if kind == "notice":  # an extension's message or its command's answer
            return [text_chunk(f"{event['message']}\n")]
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


def model_choices(current: str, served: Sequence[ModelInfo]) -> list[tuple[str, str]]:
    """The current model, every model of a provider with a key in the environment, then the
    models extensions serve (``served``)."""
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
    for model in served:
        spec = f"{model['provider']}/{model['id']}"
        if all(spec != known for known, _ in choices):
            choices.append((spec, f"{model.get('name') or model['id']} ({model['provider']})"))
    return choices


def _thinking_levels(core: AgentSession) -> list[str]:
    from tether.ai.thinking import clamp_thinking_level

    levels: list[str] = []
    for level in THINKING_LEVELS:
        clamped = clamp_thinking_level(core.model, cast(Any, level))
        if clamped not in levels:
            levels.append(clamped)
    return levels
