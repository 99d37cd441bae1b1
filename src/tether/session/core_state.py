"""The state every part of an ``AgentSession`` shares, and the few things they all do with it.

``AgentSession`` is one object to its users, but what it does falls into parts that read best
apart: running prompts (``agent_session``), recovering failed replies (``recovery``), switching
model and thinking level (``model_control``), the MCP servers' tools (``mcp_control``) and the
session operations (``operations``). Each is
a class of its own module over this one, so every part sees the same state under the same names
(the run, the queues, the session) without handing it around. What lives here is what more than
one part uses: the state's declarations (``AgentSession.__init__`` sets them, with why), delivering
events to the listeners, what may enter the transcript, and the transcript's one source (the
session when there is one, the agent otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_args

from tether.agent import Agent
from tether.agent.listener_grace import ListenerGrace, ListenerHungError, bounded
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.types import ServiceTier, SimpleStreamOptions, StreamFn
from tether.session.budget import CompactionSettings
from tether.session.events import (
    CompactionReason,
    Listener,
    NoticeEvent,
    QueueSnapshot,
    QueueUpdateEvent,
    SessionEvent,
    message_text,
)
from tether.session.settings import Settings
from tether.store.errors import SessionError
from tether.tools.approval import ApprovalGate
from tether.wire import AgentMessage, AssistantMessage, ImageContent, ModelInfo, WireError, decode_new_message

if TYPE_CHECKING:
    from tether.mcp import McpServers
    from tether.session.compaction import CompactionResult
    from tether.session.manager import SessionManager
    from tether.session.model_choice import ResolvedModel, ScopedModel
    from tether.session.prompt import PromptHook
    from tether.session.resources import Resources
    from tether.session.session import Session
    from tether.session.stats import Tally
    from tether.tools.sandbox import Sandbox
    from tether.wire.events import SummarizationRetryAttemptStartEvent

logger = logging.getLogger(__name__)

PASSED_ON: frozenset[str] = frozenset(
    ("turn_start", "turn_end", "message_update", "tool_execution_update", "tool_execution_end")
)
"""The agent events an ``AgentSession`` only passes on to its listeners: while it has none, its
agent does not call it with them (``_unheard``), most of a run's events (P6)."""
_TIERS: frozenset[str] = frozenset(get_args(ServiceTier))

IN_RUN: contextvars.ContextVar[asyncio.Future[Any] | None] = contextvars.ContextVar(
    "tether_core_run", default=None
)
"""The run (its task) this task is, or was made by (an event listener, a tool's task). The task,
not the core: a task a past run left behind (a listener's ``create_task``) still holds that run
in its context, and is not part of the run going on now (``CoreState._in_own_run``)."""


@dataclasses.dataclass(eq=False, slots=True)
class Compaction:
    """A compaction under way outside the loop's own (``compact()``, overflow recovery): one at a
    time, as a run is (``CoreState._refuse_compaction``)."""

    controller: AbortController
    """What aborts its summary: ``abort()``, ``close()``, the caller's signal."""
    settled: asyncio.Future[None]
    """Done once its ``compaction_end`` is said: what a prompt after ``abort()`` waits for."""
    work: asyncio.Future[Any] | None = None
    """The summary's task, once asked for: what ``close()`` cancels when the model is deaf to
    the abort."""


class CoreState:
    """What the parts of ``AgentSession`` share; not built on its own (``AgentSession`` is)."""

    agent: Agent
    resources: Resources | None
    mcp: McpServers | None
    _mcp_read: bool
    """The conversation's ``search_mcp_tools`` results were read into ``mcp.found`` (once per
    session opened, resumed or moved to: ``_attach`` clears the flag and the pairs, which belong
    to the conversation left; ``McpControl._install_mcp_tools`` reads them)."""
    cwd: Path
    settings: Settings
    approval: ApprovalGate | None
    hooks: list[PromptHook]
    notice: str | None
    no_model_reason: str | None
    scoped_models: list[ScopedModel]
    chosen_model: ResolvedModel | None
    chosen_thinking: str | None
    compactions: int
    auto_retry: bool
    last_compaction: CompactionResult | None
    _tally: Tally | None
    _sessions: SessionManager | None
    _session: Session | None
    _listeners: tuple[Listener, ...]
    """Replaced, never changed in place: an event goes to the listeners subscribed when it came,
    without a copy per event (every agent event, while someone listens)."""
    _unheard: set[str]
    """The agent events the agent skips calling this core with (``Agent._record_to``'s ``skip``):
    ``PASSED_ON`` while nobody listens, none otherwise."""
    _run: asyncio.Future[list[AgentMessage]] | None
    _added: list[AgentMessage]
    _vouched: dict[int, AgentMessage]
    _queued: QueueSnapshot
    _session_failure: SessionError | None
    _compacting: int
    _background: dict[asyncio.Future[None], ListenerGrace]
    _owns: set[str]
    _closed: bool
    _closed_id: str | None
    _mcp_abort: AbortController | None
    _compactions: set[Compaction]
    _moves: set[AbortController]
    _aborted: bool
    _grace: ListenerGrace | None

    # -- state ---------------------------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        return self._session

    @property
    def session_id(self) -> str | None:
        """The session's id (``None`` without one); after ``close()``, still the id of the session
        it had, for the log line after an ``async with``: pi's ``sessionId`` outlives ``dispose()``,
        as a closed file keeps its ``name``."""
        session = self._session
        return session.id if session is not None else self._closed_id

    @property
    def sessions(self) -> SessionManager | None:
        return self._sessions

    @property
    def model(self) -> ModelInfo:
        """The current model (``require_model``)."""
        return self.require_model()

    def require_model(self) -> ModelInfo:
        """The current model; ``ModelError`` (one line, saying how to choose one) when the session
        started without any (``create_agent_session`` found none to use): what needs a model
        fails at that point, as a prompt does in pi, while the rest keeps working."""
        if self.agent.model is None:
            from tether.errors import ModelError
            from tether.session.model_choice import no_model_selected

            raise ModelError(no_model_selected(self.no_model_reason))
        return self.agent.model

    @property
    def thinking_level(self) -> str:
        return self.agent.thinking_level

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.messages

    @property
    def is_running(self) -> bool:
        return self._run is not None and not self._run.done()

    @property
    def is_compacting(self) -> bool:
        return self._compacting > 0

    def _in_own_run(self) -> bool:
        """Whether the caller is the running run's own task, or a task it made (a listener, a
        tool): there, waiting for the run would be waiting for itself, and compacting is a step
        of the run."""
        run = self._run
        return run is not None and not run.done() and IN_RUN.get() is run

    def _refuse_compaction(self) -> None:
        """``AgentBusyError`` for a compaction beside another one, or beside a run it is not
        part of: the summary and the run would each rebuild the context under the other (the
        run's next entries hanging off a summary it never saw)."""
        from tether.agent import AgentBusyError

        if self._compactions:
            raise AgentBusyError("a compaction is running: wait for it to end, or abort it")
        if self.is_running and not self._in_own_run():
            raise AgentBusyError("the agent is running: compact once it has settled, or abort it first")

    def _compaction_begun(self, signal: AbortSignal | None) -> tuple[Compaction, Callable[[], None] | None]:
        """Register a compaction (``abort()`` and ``close()`` reach it from here on, its
        ``compaction_start`` listeners included) and link the caller's ``signal`` to it; the
        second value unlinks that signal (``_compaction_over``)."""
        compaction = Compaction(AbortController(), asyncio.get_running_loop().create_future())
        self._compactions.add(compaction)
        unlink = signal.add_listener(compaction.controller.abort) if signal is not None else None
        return compaction, unlink

    def _compaction_over(self, compaction: Compaction, unlink: Callable[[], None] | None) -> None:
        self._compactions.discard(compaction)
        if unlink is not None:
            unlink()
        if not compaction.settled.done():
            compaction.settled.set_result(None)

    @property
    def compaction(self) -> CompactionSettings:
        """The compaction settings, scaled down for a small window (e.g. a 4k local model): when
        reserve and recent part do not fit in the window, each gets a quarter of it."""
        c = self.settings.compaction
        window = (self.agent.model or {}).get("contextWindow") or 0
        if window and c.reserve_tokens + c.keep_recent_tokens >= window:
            return CompactionSettings(c.enabled, window // 4, window // 4)
        return c

    def confinement(self) -> Sandbox | None:
        """The sandbox of the user's ``!cmd`` and ``$code``, and of an extension's ``api.exec``:
        the tools' own (``tether.tools.sandbox``)."""
        return self.approval.workspace.confinement() if self.approval is not None else None

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.messages):
            if message["role"] == "assistant":
                return message
        return None

    def queued(self) -> QueueSnapshot:
        """The texts of the steering and follow-up messages not delivered yet."""
        return QueueSnapshot(
            tuple(message_text(m) for m in self.agent.steering_queue),
            tuple(message_text(m) for m in self.agent.follow_up_queue),
        )

    @property
    def read_only(self) -> bool:
        """The session was opened read-only (another process may be running it)."""
        return self._session is not None and self._session.readonly

    def require_open(self) -> None:
        """Raise ``SessionError`` once this core is closed: a session it made or opened then
        would stay open (and locked for writing), as nothing closes a closed core again."""
        if self._closed:
            raise SessionError("this AgentSession is closed: start another one to go on")

    def require_writable(self) -> None:
        """Raise ``ReadOnlySessionError`` when this core may only watch its session, and
        ``SessionError`` once it is closed: a prompt then would call the model and record
        nothing, the reply silently lost."""
        self.require_open()
        if self._session is not None and self._session.readonly:
            from tether.session.session import ReadOnlySessionError

            raise ReadOnlySessionError(self._session.id)

    def record_settings(self) -> None:
        """Record model, thinking level, service tier and system prompt where they differ from
        the session's (also done when a run starts)."""
        if self._session is not None and not self._session.readonly:
            import tether.session.wiring as wiring  # not ``from … import``: AgentSession._transform_context

            agent = self.agent
            wiring.record_settings(
                self._session,
                model=agent.model,
                thinking_level=agent.thinking_level,
                service_tier=agent.service_tier,
                system_prompt=agent.system_prompt,
            )

    # -- events to the listeners ---------------------------------------------------------------------

    def subscribe(
        self, listener: Listener | Callable[[SessionEvent, AbortSignal | None], Any]
    ) -> Callable[[], None]:
        """Call ``listener(event)`` with every event, or ``listener(event, signal)`` (the current
        run's abort signal, ``None`` between runs) when it takes two parameters, as
        ``Agent.subscribe`` does; an awaitable it returns is awaited (any other value is
        ignored: ``lambda e: log.write(...)`` returns a count). Returns the unsubscribe function."""
        from tether.agent.agent import listener_wants_signal

        if listener_wants_signal(listener):
            two = cast(Callable[[SessionEvent, AbortSignal | None], Any], listener)

            def one(event: SessionEvent) -> Any:
                return two(event, self.agent.signal)

            functools.update_wrapper(one, two)  # a log line names the caller's listener

            entry: Listener = one
        else:
            entry = cast(Listener, listener)
        self._listeners = (*self._listeners, entry)
        self._unheard.clear()

        def unsubscribe() -> None:
            if entry in self._listeners:
                listeners = list(self._listeners)
                listeners.remove(entry)
                self._listeners = tuple(listeners)
                if not listeners:
                    self._unheard.update(PASSED_ON)

        return unsubscribe

    def notify(self, text: str, *, command: str | None = None, failure: bool = False) -> None:
        """Tell the listeners something the user should see (a ``notice`` event), at once;
        ``command``: the text is what that extension command answered; ``failure``: it reports
        an extension's failure, just sent as ``extension_error``."""
        event: NoticeEvent = {"type": "notice", "message": text}
        if command is not None:
            event["command"] = command
        if failure:
            event["failure"] = True
        self._emit_now(event)

    async def _emit(self, event: SessionEvent) -> None:
        if event["type"] == "compaction_start":
            # A listener failing on the start fails the compaction before it began (no
            # ``compaction_end`` follows): left counted, ``is_compacting`` stayed true for good,
            # and every command after it was refused as "while a compaction runs".
            self._compacting += 1
            try:
                await self._deliver_to_listeners(event)
            except BaseException:
                self._compacting -= 1
                raise
            return
        if event["type"] == "compaction_end":
            self._compacting -= 1
        await self._deliver_to_listeners(event)

    async def _deliver_to_listeners(self, event: SessionEvent) -> None:
        grace = self._grace
        for listener in self._listeners:
            if grace is not None and grace.hung and grace.skips(listener):
                continue
            outcome = listener(event)
            if outcome is not None and inspect.isawaitable(outcome):
                await bounded(grace, listener, outcome, event["type"])

    async def _emit_to_all(self, event: SessionEvent) -> None:
        """``_emit`` for a run's last event (``agent_settled``): every listener gets it, and one
        that raises has its failure logged, nothing more. The run is over and recorded, so a
        listener's bug changes nothing (as one at the loop's ``agent_end``): ``prompt()`` does
        not raise it, and the listeners after it still learn that the run ended."""
        grace = self._grace
        for listener in self._listeners:
            if grace is not None and grace.skips(listener):
                continue
            try:
                outcome = listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await bounded(grace, listener, outcome, event["type"])
            except ListenerHungError:
                pass  # said in one warning line when it was cut
            except Exception:
                logger.warning("an event listener failed on %s", event["type"], exc_info=True)

    def _emit_now(self, event: SessionEvent) -> None:
        """Deliver ``event`` from a method that is not async (``steer()``, ``set_thinking()``,
        ``rename()``): an async listener's awaitable is awaited in a task of its own, bounded
        by the run's grace (outside a run, by one that ``close()`` aborts)."""
        grace = self._grace
        for listener in self._listeners:
            if grace is not None and grace.hung and grace.skips(listener):
                continue
            outcome = listener(event)
            if outcome is not None and inspect.isawaitable(outcome):
                task_grace = grace if grace is not None else ListenerGrace()
                task = asyncio.ensure_future(_aside(task_grace, listener, outcome, event["type"]))
                self._background[task] = task_grace
                task.add_done_callback(self._background.pop)

    async def _end_background(self) -> None:
        """Bound what ``_emit_now`` started and wait for it (``close()``): a listener still
        running ``ABORT_GRACE`` from now is cut, so nothing of the core's outlives it."""
        for grace in tuple(self._background.values()):
            grace.abort()
        await asyncio.gather(*self._background, return_exceptions=True)

    def _deliver(self, event: SessionEvent) -> Awaitable[None] | None:
        """``_emit`` for an agent event (never a compaction one), without a coroutine while the
        listeners answer synchronously; from the first awaitable on, the rest (the same iterator)
        wait for it."""
        grace = self._grace
        listeners = iter(self._listeners)
        for listener in listeners:
            if grace is not None and grace.hung and grace.skips(listener):
                continue
            outcome = listener(event)
            if outcome is not None and inspect.isawaitable(outcome):
                return self._deliver_after(listener, outcome, event, listeners)
        return None

    async def _deliver_after(
        self, first: Listener, pending: Awaitable[None], event: SessionEvent, rest: Iterator[Listener]
    ) -> None:
        """The rest of ``_deliver``: await ``pending`` (what ``first`` returned), then each
        remaining listener in order (awaiting what it returns); bounded once the run is aborted
        (``ListenerGrace``)."""
        grace = self._grace
        with self._session_failure_kept():
            await bounded(grace, first, pending, event["type"])
            for listener in rest:
                if grace is not None and grace.hung and grace.skips(listener):
                    continue
                outcome = listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await bounded(grace, listener, outcome, event["type"])

    def _check_queue(self) -> None:
        """Emit ``queue_update`` when the queues changed since the last one, at once."""
        last = self._queued
        if not (last.steering or last.follow_up or self.agent.has_queued_messages()):
            return  # empty then and now, as at most calls (each prompt's message_start, its end)
        snapshot = self.queued()
        if snapshot == self._queued:
            return
        self._queued = snapshot
        event: QueueUpdateEvent = {
            "type": "queue_update",
            "steering": list(snapshot.steering),
            "followUp": list(snapshot.follow_up),
        }
        self._emit_now(event)

    @contextlib.contextmanager
    def _session_failure_kept(self) -> Generator[None]:
        """A session error (a full disk, a lost database), raised while recording an event or by
        a listener, ends the run as itself: the loop reports the failed event, and the run raises
        the error once settled (``_settled``), not as "event listener failed: ..."."""
        try:
            yield
        except SessionError as exc:
            self._session_failure = exc
            raise

    # -- what enters the transcript ------------------------------------------------------------------

    def _inputs(
        self, prompt: str | AgentMessage | Sequence[AgentMessage], images: Sequence[ImageContent]
    ) -> list[AgentMessage]:
        """The messages of a prompt, steer or follow-up. A text becomes a user message (plain
        string content unless there are images); images and messages from the caller are checked
        here, so a malformed one fails at the call that passed it (``WireError`` naming the path)."""
        if isinstance(prompt, str):
            if not images:
                message: AgentMessage = {
                    "role": "user",
                    "content": prompt,
                    "timestamp": int(time.time() * 1000),
                }
                return self._vouch([message])
            content: Any = [{"type": "text", "text": prompt}, *images]
            built: AgentMessage = {"role": "user", "content": content, "timestamp": int(time.time() * 1000)}
            return self._vouch([decode_new_message(built, "prompt")])
        if images:
            raise ValueError("images can only be given with a text prompt; put them in the message instead")
        if isinstance(prompt, dict):
            given: list[Any] = [prompt]
        elif isinstance(prompt, (list, tuple)):
            given = list(cast(Sequence[Any], prompt))
        else:  # None, a number, bytes: not "'NoneType' object is not iterable" from deep inside
            raise WireError(
                "prompt", f"expected a text, a message or a list of messages, got {type(prompt).__name__}"
            )
        return self._vouch([decode_new_message(m, f"messages[{i}]") for i, m in enumerate(given)])

    def _forget_unrecorded_inputs(self) -> None:
        """Drop what ``_vouch`` holds for inputs that will never be recorded (a prompt the run
        refused, a steer taken back by ``clear_queue``): only what still waits in a queue stays."""
        waiting = {id(m) for m in (*self.agent.steering_queue, *self.agent.follow_up_queue)}
        self._vouched = {key: m for key, m in self._vouched.items() if key in waiting}

    def _vouch(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        for message in messages:
            self._vouched[id(message)] = message
        return messages

    def _checked(self, message: AgentMessage) -> bool:
        """Whether a finished message is known to be valid, so the session stores it unchecked.

        Validation belongs where a message enters the runtime from code tether does not own:
        what this core built or checked on the way in (``_inputs``), and the replies of tether's
        own providers (the registry's built-in APIs, the scripted model), are valid by
        construction. Replies of other stream functions (a program's, an extension's) and tool
        results (a tool's content is its author's) are checked by the session as they are stored.
        Skipping the check on the common path keeps pydantic-core out of a short run's start.
        """
        if self._vouched.pop(id(message), None) is message:
            return True
        if message["role"] != "assistant":
            return False
        stream_fn = self.agent.stream_fn
        if stream_fn is not None:
            return getattr(stream_fn, "builtin", False) is True
        # The module, not ``from … import is_builtin``: that form asks the module for a
        # ``__path__`` it lacks (two AttributeErrors made and dropped), ~6k instructions a reply
        # stored, ~2.5k this way.
        import tether.ai.registry as registry

        model = self.agent.model
        return model is not None and registry.is_builtin(model["api"])

    # -- the transcript's one source -----------------------------------------------------------------

    def _record(self, message: AgentMessage) -> None:
        """Add a message that did not come through the loop (``!cmd``, ``$code``, user bash)."""
        if self._session is not None:
            self._session.append_message(message)
            self._reload()
        else:
            self.agent.messages = [*self.agent.messages, message]
        self._added.append(message)

    def _reload(self) -> None:
        """Give the agent the session's context after anything that moved or rewrote it."""
        if self._session is not None:
            self.agent.messages = self._session.messages

    def _attach(self, session: Session | None, *, load_settings: bool = False) -> None:
        if self._session is not None:
            self._session.close()
        self._session = session
        if session is not None:
            session.bound = True
        if self.mcp is not None:  # what the left conversation's searches found is its own
            self.mcp.found.clear()
        self._mcp_read = False
        agent = self.agent
        agent.options.session_id = session.id if session is not None else None
        if session is None:
            agent.messages = []
            return
        self._reload()
        if load_settings:
            ctx = session.context
            if ctx.thinking_level is not None:
                agent.thinking_level = ctx.thinking_level
            if ctx.service_tier in _TIERS:
                agent.service_tier = cast(ServiceTier, ctx.service_tier)
            if ctx.system_prompt is not None:
                agent.system_prompt = ctx.system_prompt
            if agent.model is None and ctx.model is not None and ctx.model.info is not None:
                from tether.ai.models import restored_model

                # A provider the registry knows: its configured endpoint, never the stored one (a
                # session file comes from anywhere). One it does not know is the embedder's own,
                # served by their stream function: the stored descriptor is all there is. (The
                # CLI refuses that case: tether.session.factory.)
                try:
                    agent.model = restored_model(ctx.model.provider, ctx.model.model_id, ctx.model.info)
                except LookupError:
                    agent.model = ctx.model.info

    def _extension_failed(self, origin: str, where: str, error: str, line: str | None) -> None:
        """An extension failed: ``extension_error`` every time (pi 1.6), the line once."""
        self._emit_now({"type": "extension_error", "extensionPath": origin, "event": where, "error": error})
        if line is not None:
            self.notify(line, failure=True)

    def _stream_fn(self, purpose: str = "compaction", reason: CompactionReason = "manual") -> StreamFn:
        """The model call of a summary (the registry's ``stream_simple`` for real providers),
        traced like the loop's calls when the agent is instrumented (``purpose`` labels its span),
        retried on ``settings.retry`` with ``summarization_retry_*`` events (``reason``: the
        compaction's)."""
        from tether.session.summary_retry import retrying_summaries

        start: SummarizationRetryAttemptStartEvent = (
            {"type": "summarization_retry_attempt_start", "source": "branchSummary"}
            if purpose == "branch_summary"
            else {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": reason}
        )
        policy = (
            self.settings.retry
            if self.auto_retry
            else dataclasses.replace(self.settings.retry, enabled=False)
        )
        return retrying_summaries(self._keyed_stream_fn(purpose), policy, self._emit, start)

    def _keyed_stream_fn(self, purpose: str) -> StreamFn:
        from tether.agent.loop import default_stream_fn
        from tether.telemetry import instrumentation_for

        instrumentation = instrumentation_for(self.agent.instrumentation)
        stream_fn = self.agent.stream_fn or default_stream_fn()
        if instrumentation is not None:
            stream_fn = instrumentation.traced(stream_fn, purpose)
        get_api_key = self.agent.get_api_key
        if get_api_key is None:
            return stream_fn

        async def keyed(model: ModelInfo, context: Any, options: Any = None) -> Any:
            """Summaries (compaction, branches) use the run's key (``--api-key``) as the loop does."""
            key = get_api_key(model["provider"])
            key = await key if inspect.isawaitable(key) else key
            if key:
                options = dataclasses.replace(options or SimpleStreamOptions(), api_key=key)
            stream = stream_fn(model, context, options)
            return await stream if inspect.isawaitable(stream) else stream

        return keyed

    def _require_sessions(self) -> SessionManager:
        self.require_open()  # a closed core has none either: say why, not "--no-session"
        if self._sessions is None:
            raise LookupError("sessions are off in this run (--no-session)")
        return self._sessions

    def _require_session(self) -> Session:
        self.require_open()
        if self._session is None:
            raise LookupError("this run has no session (--no-session)")
        return self._session


async def _aside(grace: ListenerGrace, listener: Listener, outcome: Awaitable[None], event_type: str) -> None:
    """One listener's outcome awaited in a task of its own (``CoreState._emit_now``): bounded by
    ``grace``; a failure is logged, as nobody awaits this task."""
    try:
        await grace.wait(listener, outcome, event_type)
    except ListenerHungError:
        pass  # said in one warning line when it was cut
    except Exception:
        logger.warning("an event listener failed on %s", event_type, exc_info=True)
