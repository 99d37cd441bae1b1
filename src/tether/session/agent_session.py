"""``AgentSession``: the one core every front end and every library user drives.

An ``Agent`` bound to a stored ``Session`` (or to none, for ``--no-session`` runs), with
everything a run *does* beyond the loop itself:

- every finished message is recorded as it ends (a crash loses at most the one being streamed);
  model, thinking level and system prompt changes are recorded as settings entries;
- before each model call the context is compacted when it nears the model's window, and the
  prompt hooks (``PromptEditor``) edit a transient copy of the request;
- a reply that failed because the context overflowed is compacted away and retried once; one
  that failed for a transient reason (overload, rate limit, network) is retried with backoff;
- risky tool calls go through one ``ApprovalGate``;
- steering and follow-up messages wait in the agent's own queues, the only source of truth;
  ``queue_update`` reports every change;
- a run ends with ``agent_settled`` once nothing more will run on its own (retries, overflow
  recovery and queued messages all happen inside the run); each ``agent_end`` says whether the
  session will retry that pass (``willRetry``);
- session operations: new, resume, branch (with or without a summary), fork, tree, compact,
  export, rename;
- ``submit()`` is the coding agent's input syntax (``!cmd``, ``$code``, ``@path``), opt-in:
  ``prompt()`` sends text as it is.

The transcript lives in one place: the session when there is one (the agent's copy is reloaded
from it after anything that moves the leaf), the agent otherwise. Build one from settings with
``create_agent_session()`` (``tether.session.factory``), or bind your own ``Agent``.

This file is longer than our usual ~600 lines on purpose: it is the one place that says what a run
does, and splitting the class across modules would scatter the state its parts share (the run,
the queues, the session); event shapes and their builders live in ``tether.session.events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args

from tether.agent import Agent, AgentBusyError
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.retry import backoff
from tether.ai.types import ServiceTier, SimpleStreamOptions, StreamFn, ThinkingLevel
from tether.session.budget import CompactionSettings, is_context_overflow
from tether.session.convert import lower_for
from tether.session.events import (
    AgentEndSessionEvent,
    CompactionReason,
    CompactionSummary,
    Listener,
    NoticeEvent,
    QueuedInputDisposition,
    QueueSnapshot,
    QueueUpdateEvent,
    Run,
    SessionEvent,
    compaction_end,
    message_text,
    newest_compaction_end,
)
from tether.session.retry import is_transient_error
from tether.session.settings import Retry as RetrySettings, Settings
from tether.store.errors import SessionError
from tether.tools.approval import ApprovalGate
from tether.wire import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    ModelInfo,
    WireError,
    decode_message,
)

if TYPE_CHECKING:  # the store and the summariser load only when a run has a session
    from pydantic import BaseModel

    from tether.ai.types import Retry as ProviderRetry
    from tether.mcp import McpServers
    from tether.session.compaction import CompactionResult
    from tether.session.extensions.api import ExtensionCommand
    from tether.session.manager import SessionManager
    from tether.session.model_choice import Direction, ModelCycle, ScopedModel
    from tether.session.prompt import PromptHook
    from tether.session.resources import Resources
    from tether.session.session import Session
    from tether.session.stats import Stats, Tally
    from tether.store.store import SessionRecord
    from tether.tools.sandbox import Sandbox

_THINKING: frozenset[str] = frozenset(get_args(ThinkingLevel))
M = TypeVar("M", bound="BaseModel")
_TIERS: frozenset[str] = frozenset(get_args(ServiceTier))


class AgentSession:
    """An ``Agent`` bound to a stored session; see the module docstring.

    Args:
        agent: The agent to drive. Binding replaces its ``convert_to_llm``,
            ``transform_context`` and ``before_tool_call`` hooks, and loads the session's
            transcript and stored settings (thinking level, service tier, system prompt; the model
            too when the agent has none) into it.
        session: The stored session; ``None`` keeps the transcript in memory only.
        cwd: The workspace: tools and ``@path`` mentions resolve against it. Default: the
            current directory.
        settings: Compaction, retry and approval settings (``tether.session.settings``).
        sessions: The session manager ``session`` came from; needed for ``new_session``,
            ``switch_session``, ``fork`` and JSONL export. It stays yours: ``close()`` leaves it
            open (unless ``owns`` says otherwise), so sibling sessions of one manager live on.
        approval: The gate risky tool calls go through (installed as the agent's
            ``before_tool_call``). ``None`` keeps the agent's own hook: a program that binds its own
            tools decides itself; ``create_agent_session`` always installs one.
        hooks: Prompt hooks run before every model call on a transient copy of the request.
        notice: Something the user should know about this setup (shown by front ends).
        mcp: MCP servers whose tools join the agent's. They start when the session does (or at
            the first prompt, without a running event loop then); each prompt waits for servers
            still starting, up to their start-up timeout; ``close()`` stops them.
        resources: Skills, prompt templates and extensions (``tether.session.resources``):
            ``submit()`` expands their slash commands, the extensions' hooks go in front of the
            approval gate and their reports become ``notice`` events.
        owns: What ``close()`` closes besides the session handle: ``"sessions"`` (the manager)
            and/or ``"mcp"`` (the servers). Default: neither, since what a caller passes in stays
            the caller's to close; ``create_agent_session`` names what it opened itself.

    The ``session`` handle itself is the core's once bound: ``close()`` (and switching to
    another session) releases it and its writer lock.
    """

    def __init__(
        self,
        agent: Agent,
        session: Session | None = None,
        *,
        cwd: Path | None = None,
        settings: Settings | None = None,
        sessions: SessionManager | None = None,
        approval: ApprovalGate | None = None,
        hooks: Sequence[PromptHook] = (),
        notice: str | None = None,
        mcp: McpServers | None = None,
        resources: Resources | None = None,
        owns: Collection[Literal["sessions", "mcp"]] = (),
    ) -> None:
        self.agent = agent
        self._owns = frozenset(owns)
        self.resources = resources
        self.mcp = mcp
        self._mcp_tools: list[Any] = []
        self._mcp_noted: set[str] = set()
        self.cwd = cwd if cwd is not None else Path.cwd()
        self.settings = settings if settings is not None else Settings()
        self.approval = approval
        self.hooks: list[PromptHook] = list(hooks)
        self.notice = notice
        self._tally: Tally | None = None
        """The conversation's totals, extended at each ``stats()`` (made on the first: print mode
        never asks, and ``tether.session.stats`` stays unloaded)."""
        self.scoped_models: list[ScopedModel] = []
        """``--models``: the models ``cycle_model`` goes through (empty: every usable model)."""
        self.auto_retry = self.settings.retry.enabled
        """Retry replies that failed for a transient reason (``settings.retry``)."""
        self.compactions = 0
        """How many compactions this object performed (threshold, overflow and manual)."""
        self.last_compaction: CompactionResult | None = None
        self._sessions = sessions
        self._session: Session | None = None
        self._listeners: list[Listener] = []
        self._run: asyncio.Future[list[AgentMessage]] | None = None
        self._added: list[AgentMessage] = []
        self._vouched: dict[int, AgentMessage] = {}
        """Messages this core built or checked on their way in, by identity: stored unchecked."""
        self._deferred: list[AgentMessage] = []
        self._queued = QueueSnapshot((), ())
        self._retry_abort: AbortController | None = None
        self._retry_attempt = 0
        """Retries of the current reply so far, by the provider or by this core: one budget."""
        self._caller_on_retry: Callable[[ProviderRetry], None] | None = None
        self._retry_relay = _RetryRelay(self)
        """The provider's ``on_retry``: copies of the options outlive a run (a scripted model keeps
        each request's), so they hold this relay, cut at ``close``, not the core itself."""
        self._run_retry = self.settings.retry
        """The retry policy of the current run: the settings', or the prompt's own."""
        self._recovering_overflow = False
        self._aborted = False
        """``abort()`` was called during the current run (``agent_settled.aborted``)."""
        self._raised_failure = False
        """A run raised a failure to store: ``close`` does not raise it a second time."""
        self._aborting: asyncio.Future[list[AgentMessage]] | None = None
        """The run ``abort()`` stopped, while it settles: a new prompt waits for it."""
        self._session_failure: SessionError | None = None
        """A session error an event listener raised in this run: the run raises it when settled."""
        self._input_abort: AbortController | None = None
        self._bash_abort: AbortController | None = None
        self._mcp_abort: AbortController | None = None
        self._compacting = 0
        self._background: set[asyncio.Future[None]] = set()
        """``queue_update`` deliveries to async listeners, kept alive until they finish."""
        self._agent_hooks = (agent.convert_to_llm, agent.transform_context, agent.before_tool_call)
        """The agent's own hooks, given back by ``close``."""
        agent.convert_to_llm = lower_for(lambda: agent.model)
        agent.transform_context = self._transform_context
        if approval is not None:
            agent.before_tool_call = approval
        host = resources.extensions if resources is not None else None
        if host is not None:
            host.install(agent)
            host.notice = self.notify
            host.attach(self, self.subscribe)
        self._unsubscribe = agent.subscribe(self._on_agent_event)
        if session is not None:
            self._attach(session, load_settings=True)
        if mcp:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass  # started by the first prompt
            else:
                mcp.start()

    # -- state -------------------------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        return self._session

    @property
    def session_id(self) -> str | None:
        return self._session.id if self._session is not None else None

    @property
    def sessions(self) -> SessionManager | None:
        return self._sessions

    @property
    def model(self) -> ModelInfo:
        if self.agent.model is None:
            raise ValueError("the agent has no model")
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

    @property
    def compaction(self) -> CompactionSettings:
        """The compaction settings, scaled down for a small window (e.g. a 4k local model): when
        reserve and recent part do not fit in the window, each gets a quarter of it."""
        c = self.settings.compaction
        window = (self.agent.model or {}).get("contextWindow") or 0
        if window and c.reserve_tokens + c.keep_recent_tokens >= window:
            return CompactionSettings(c.enabled, window // 4, window // 4)
        return c

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

    def subscribe(
        self, listener: Listener | Callable[[SessionEvent, AbortSignal | None], Any]
    ) -> Callable[[], None]:
        """Call ``listener(event)`` with every event, or ``listener(event, signal)`` (the current
        run's abort signal, ``None`` between runs) when it takes two parameters, as
        ``Agent.subscribe`` does; an awaitable it returns is awaited. Returns the unsubscribe
        function."""
        from tether.agent.agent import listener_wants_signal

        if listener_wants_signal(listener):
            two = cast(Callable[[SessionEvent, AbortSignal | None], Any], listener)

            def one(event: SessionEvent) -> Any:
                return two(event, self.agent.signal)

            entry: Listener = one
        else:
            entry = cast(Listener, listener)
        self._listeners.append(entry)

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)

        return unsubscribe

    # -- running -----------------------------------------------------------------------------------

    def prompt(
        self,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] = (),
        *,
        retry: RetrySettings | None = None,
    ) -> Run:
        """Run the agent on a prompt until it settles: ``await`` it, or ``async for`` its events.

        ``retry`` replaces ``settings.retry`` for this run only (``RetrySettings(enabled=False)``:
        one request per reply)."""
        messages = self._inputs(prompt, images)
        return self._new_run(lambda: self._prompt_run(messages), retry)

    async def run(
        self,
        prompt: str,
        *,
        output: type[M],
        max_reasks: int = 2,
        retry: RetrySettings | None = None,
    ) -> M:
        """Run a prompt and return the answer as a validated ``output`` instance (a pydantic model).

        The model answers through a ``final_answer`` tool whose schema is ``output``'s (on every
        API); an answer that does not validate, or a reply without one, is asked again at most
        ``max_reasks`` times. Raises ``OutputError`` (``reason``: ``failed``, ``aborted``,
        ``invalid``, ``missing``) when there is no valid answer; the transcript keeps the
        exchange either way (``tether.session.output``)."""
        from tether.session.output import run_for_output

        return await run_for_output(self, prompt, output, max_reasks, retry)

    def submit(self, line: str, images: Sequence[ImageContent] = (), *, shell: bool = True) -> Run:
        """The coding agent's input syntax, then a prompt.

        ``!cmd``/``!!cmd`` run a shell command and ``$code``/``$$code`` Python (with ``shell``);
        the result joins the conversation, or with a doubled marker is recorded for the user only.
        Otherwise ``@path`` mentions are attached as a file message before the prompt.
        """
        if self.resources is not None and line.startswith("/"):
            command = self.resources.extension_command(line)
            if command is not None:
                return self._new_run(lambda: self._command_run(*command))
            try:
                line = self.resources.expand(line) or line
            except ValueError as exc:  # a skill whose file went away since the start
                problem = str(exc)
                return self._new_run(lambda: self._notice_run(problem))
        messages: list[AgentMessage] = []
        # The syntax's module loads only for a line that may use it (a plain prompt would pay 1.4%
        # of a `tether -p` start-up for it): a `!` or `$` first, an `@` anywhere.
        if (shell and line.startswith(("!", "$"))) or "@" in line:
            from tether.tools.prompt_input import file_mentions_message, parse_prompt_input

            parsed = parse_prompt_input(line) if shell else None
            if parsed is not None:
                return self._new_run(lambda: self._input_run(parsed))
            workspace = self.approval.workspace if self.approval is not None else None
            mention = file_mentions_message(line, self.cwd, workspace)
            if mention is not None:
                messages.extend(self._vouch([mention]))
        messages.extend(self._inputs(line, images))
        return self._new_run(lambda: self._prompt_run(messages))

    def steer(self, text: str | AgentMessage, images: Sequence[ImageContent] = ()) -> QueuedInputDisposition:
        """Queue a text (as a user message) or a message for the next model call, after the
        running tool calls finish."""
        self.require_writable()
        self.agent.steer(self._inputs(text, images)[0])
        self._check_queue()
        return "queued"

    def follow_up(
        self, text: str | AgentMessage, images: Sequence[ImageContent] = ()
    ) -> QueuedInputDisposition:
        """Queue a text (as a user message) or a message for when the agent would otherwise stop."""
        self.require_writable()
        self.agent.follow_up(self._inputs(text, images)[0])
        self._check_queue()
        return "queued"

    def clear_queue(self) -> QueueSnapshot:
        """Take every queued steering and follow-up message back; returns their texts (a client
        puts them back in its editor before an abort, so the abort does not run them)."""
        taken = self.queued()
        self.agent.clear_all_queues()
        self._check_queue()
        return taken

    def abort(self) -> None:
        """Abort the run: the model call, tools, a retry wait and a ``!``/``$`` input."""
        if self.is_running:
            self._aborted = True
            self._aborting = self._run
        self.agent.abort()
        self.abort_retry()
        for controller in (self._input_abort, self._mcp_abort):
            if controller is not None:
                controller.abort()

    def abort_retry(self) -> None:
        """Cancel the wait before an automatic retry (the failed reply then stands)."""
        if self._retry_abort is not None:
            self._retry_abort.abort()
            self._retry_abort = None

    async def execute_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        on_output: Callable[[str], None] | None = None,
    ) -> BashExecutionMessage:
        """Run a shell command for the user and record it for the model's next call (unless
        ``exclude_from_context``: recorded, never sent). ``on_output`` gets the output as it comes.

        While the agent runs, the record joins the conversation when the run settles, so it never
        lands between a tool call and its result.
        """
        from tether.tools.prompt_input import run_shell_input

        controller = AbortController()
        self._bash_abort = controller
        try:
            message = await run_shell_input(
                command,
                cwd=self.cwd,
                sandbox=self._confinement(),
                exclude_from_context=exclude_from_context,
                signal=controller.signal,
                on_output=on_output,
                env_passthrough=self.settings.shell_env_passthrough,
            )
        finally:
            self._bash_abort = None
        if self.is_running:
            self._deferred.append(message)
        else:
            self._record(message)
        return message

    def abort_bash(self) -> None:
        if self._bash_abort is not None:
            self._bash_abort.abort()

    async def wait_for_idle(self) -> None:
        """Return once the current run, if any, has settled."""
        if self._run is not None:
            await asyncio.gather(self._run, return_exceptions=True)

    # -- settings ----------------------------------------------------------------------------------

    def set_model(self, spec: str | ModelInfo, stream_fn: StreamFn | None = None) -> ModelInfo:
        """Switch model (a ``provider/id`` spec, or a model with its stream function); the thinking
        level is clamped to what the new model accepts. Recorded in the session."""
        level = self.agent.thinking_level
        host = self.resources.extensions if self.resources is not None else None
        served = host.model(spec) if host is not None and isinstance(spec, str) else None
        if served is not None:
            model, stream_fn = served
        elif isinstance(spec, str):
            from tether.session.model_choice import resolve_model

            resolved = resolve_model(spec, None)
            model, stream_fn = resolved.model, resolved.stream_fn
            level = resolved.thinking or level  # `/model opus:high`
        else:
            model = spec
        before = self.agent.thinking_level
        self.agent.model = model
        self.agent.stream_fn = stream_fn
        self.agent.thinking_level = _clamp_thinking(model, level)
        self.record_settings()
        self._thinking_changed(before)
        return model

    async def cycle_model(self, direction: Direction = "forward") -> ModelCycle | None:
        """Switch to the next model (pi's Ctrl-P): of ``scoped_models`` (``--models``) with the
        level its pattern named, else of every usable model (``tether models``). ``None`` when
        there is nothing to switch to."""
        from tether.session.model_choice import ModelCycle, next_model

        scoped = self.scoped_models
        if scoped:
            models = [s.model for s in scoped]
        else:
            from tether.ai.local_servers import usable_models

            models = _distinct([*await usable_models(), *self.extension_models()])
        index = next_model(models, self.model, direction)
        if index is None:
            return None
        chosen = models[index]
        served = any(_same_model(chosen, m) for m in self.extension_models())
        self.set_model(f"{chosen['provider']}/{chosen['id']}" if served else chosen)
        level = scoped[index].thinking if scoped else None
        if level is not None:
            self.set_thinking(level)
        return ModelCycle(self.model, self.thinking_level, is_scoped=bool(scoped))

    def cycle_thinking_level(self) -> str | None:
        """Switch to the next thinking level the model accepts (pi's Shift-Tab), wrapping
        around; ``None`` for a model without reasoning."""
        from tether.session.model_choice import next_thinking_level

        level = next_thinking_level(self.model, self.thinking_level)
        return self.set_thinking(level) if level is not None else None

    def set_thinking(self, level: str) -> str:
        """Set the thinking level, clamped to the model; returns the level in effect."""
        before = self.agent.thinking_level
        self.agent.thinking_level = _clamp_thinking(self.model, level)
        self.record_settings()
        self._thinking_changed(before)
        return self.agent.thinking_level

    def _thinking_changed(self, before: str) -> None:
        level = self.agent.thinking_level
        if level != before:
            self._emit_now({"type": "thinking_level_changed", "level": level})

    def extension_models(self) -> list[ModelInfo]:
        """The models extensions serve (``register_provider``): usable whatever keys are set."""
        host = self.resources.extensions if self.resources is not None else None
        if host is None:
            return []
        return [model for provider in host.providers().values() for model in provider.models]

    async def available_models(self) -> list[ModelInfo]:
        """Every model a request can go to now, once each: the current one, those of providers
        with a key or of local servers that answer (``tether models``), those extensions serve."""
        from tether.ai.local_servers import usable_models

        return _distinct([self.model, *await usable_models(), *self.extension_models()])

    async def model_candidates(self) -> list[ModelInfo]:
        """What the model picker lists: ``scoped_models`` (``--models``), else every usable
        model; the current one always among them."""
        from tether.session.model_choice import model_candidates

        return await model_candidates([s.model for s in self.scoped_models], self.model)

    def record_settings(self) -> None:
        """Record model, thinking level, service tier and system prompt where they differ from
        the session's (also done when a run starts)."""
        if self._session is not None and not self._session.readonly:
            from tether.session.wiring import record_settings

            agent = self.agent
            record_settings(
                self._session,
                model=agent.model,
                thinking_level=agent.thinking_level,
                service_tier=agent.service_tier,
                system_prompt=agent.system_prompt,
            )

    # -- session operations ------------------------------------------------------------------------

    def new_session(self) -> str | None:
        """Start over in a fresh session (same model and settings)."""
        self._attach(self._sessions.create(self.cwd, deferred=True) if self._sessions is not None else None)
        self.record_settings()
        return self.session_id

    @property
    def read_only(self) -> bool:
        """The session was opened read-only (another process may be running it)."""
        return self._session is not None and self._session.readonly

    def require_writable(self) -> None:
        """Raise ``ReadOnlySessionError`` when this core may only watch its session."""
        if self._session is not None and self._session.readonly:
            from tether.session.session import ReadOnlySessionError

            raise ReadOnlySessionError(self._session.id)

    async def follow(self, stop: threading.Event | None = None) -> None:
        """Watch a read-only session grow: while another process (or host) runs it, take in each
        new entry (``Session.catch_up``: the cost of the entry, not of the session) and tell
        listeners of each new message (``message_start`` and ``message_end``). Returns when
        ``stop`` is set or the session is deleted."""
        from tether.store.follow import follow_changes_async
        from tether.store.store import SessionNotFoundError

        session, sessions = self._require_session(), self._require_sessions()
        if not session.readonly:
            raise ValueError("follow() watches a session opened read-only (SessionChoice(read_only=True))")
        after = session.last_entry_id
        try:
            async for change in follow_changes_async(
                sessions.store, session.id, after=after, stop=stop or threading.Event()
            ):
                if self._session is not session:
                    return  # the session was switched away from: nothing to follow any more
                nodes = session.catch_up(change.record, change.entries)
                self._reload()
                for node in nodes:
                    message = cast(AgentMessage | None, node.message)
                    if message is not None:
                        await self._emit({"type": "message_start", "message": message})
                        await self._emit({"type": "message_end", "message": message})
        except SessionNotFoundError:
            return

    def switch_session(self, session: str) -> None:
        """Continue another stored session (its settings entries apply): ``session`` is its id or
        the path ``session_file`` gives for it (what pi's clients hand back from ``get_state``).
        Switching to the session already open changes nothing, as in pi."""
        sessions = self._require_sessions()
        session_id = self._session_id_of(session)
        if self._session is not None and self._session.id == session_id:
            return
        self._attach(sessions.open(session_id), load_settings=True)

    def _session_id_of(self, session: str) -> str:
        """The id in a ``session_file`` path (``<store file>/<id>``), or ``session`` itself. A path
        into another store is refused by name: opening the id here would continue a different
        conversation than the one the caller means (or none)."""
        store_path = self.store_path
        if store_path is None or ("/" not in session and os.sep not in session):
            return session
        folder, _, session_id = session.replace(os.sep, "/").rpartition("/")
        if Path(folder).expanduser().resolve() != Path(store_path).resolve():
            raise SessionError(f"not a session of this store ({store_path}): {session}")
        return session_id

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        """This workspace's sessions with a message, newest first."""
        return self._require_sessions().list(cwd=str(self.cwd), limit=limit, empty=False)

    def rename_session(self, session_id: str, title: str) -> None:
        """Name any stored session (``rename`` names this one)."""
        if self._session is not None and session_id == self._session.id:
            self.rename(title)
            return
        with self._require_sessions().open(session_id) as session:
            session.rename(title)

    def delete_session(self, session_id: str) -> None:
        """Delete another stored session (``/resume``'s delete); the one in use is refused, and
        so is one another process is running (``SessionLockedError``)."""
        if session_id == self.session_id:
            raise ValueError("cannot delete the session in use; switch to another one first")
        self._require_sessions().delete(session_id)

    def fork(self, entry_id: str | None = None) -> str:
        """Copy this session up to ``entry_id`` (default: now) into a new one and continue there."""
        forked = self._require_sessions().fork(self._stored_session("fork").id, entry_id)
        self._attach(forked)
        return forked.id

    async def branch(
        self,
        entry_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        signal: AbortSignal | None = None,
    ) -> str | None:
        """Move to another point of the tree (``None``: before the first entry); with
        ``summarize``, leave a summary of the branch left there (steered by ``instructions``) and
        return it."""
        session = self._require_session()
        if not summarize:
            session.branch(entry_id)
            self._reload()
            return None
        from tether.session.compaction import summarize_branch

        leaf = await summarize_branch(
            session,
            entry_id,
            self.model,
            self._stream_fn("branch_summary"),
            instructions=instructions,
            signal=signal,
        )
        self._reload()
        return session.entry(leaf)["summary"] if leaf is not None else None

    async def compact(
        self,
        instructions: str | None = None,
        *,
        reason: CompactionReason = "manual",
        signal: AbortSignal | None = None,
    ) -> CompactionResult:
        """Summarise the older part of the conversation into a compaction entry.

        Raises ``NothingToCompactError`` (a ``CompactionError``) on a conversation still short
        enough to be kept whole (``settings.compaction.keep_recent_tokens``), with a message
        saying so; ``CompactionError`` when the summariser failed."""
        from tether.session.compaction import CompactionError, compact

        session = self._require_session()
        await self._emit({"type": "compaction_start", "reason": reason})
        try:
            result = await compact(
                session,
                self.model,
                self._stream_fn(),
                instructions=instructions,
                settings=self.compaction,
                signal=signal,
            )
        except CompactionError as exc:
            aborted = signal is not None and signal.aborted
            await self._emit(compaction_end(reason, None, aborted=aborted, error=str(exc)))
            raise
        self.compactions += 1
        self.last_compaction = result
        if not self.is_running:
            self._reload()
        summary: CompactionSummary = {
            "summary": result.summary,
            "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
            "tokensAfter": result.tokens_after,
            "estimatedTokensAfter": result.tokens_after,
        }
        if result.usage is not None:
            summary["usage"] = result.usage
        if result.details is not None:
            summary["details"] = result.details
        await self._emit(compaction_end(reason, summary))
        return result

    def tree_text(self) -> str:
        from tether.session.tree_view import render_tree

        return render_tree(self._require_session())

    def rename(self, title: str) -> None:
        self._require_session().rename(title)
        self._emit_now({"type": "session_info_changed", "name": title})

    def export(self, path: Path) -> Path:
        """Write the session to ``path``: HTML for ``.html``, else the JSONL interchange format."""
        session = self._require_session()
        if path.suffix == ".html":
            from tether.session.export_html import write_html

            return write_html(path, session)
        return self._require_sessions().export(self._stored_session("export").id, path)

    def _stored_session(self, operation: str) -> Session:
        """The session, for an operation that reads it back from the store: one without a
        message is not stored yet (``SessionManager.create(deferred=True)``), so say so."""
        session = self._require_session()
        if not session.stored:
            raise SessionError(f"nothing to {operation}: this session has no message yet")
        return session

    @property
    def store_path(self) -> str | None:
        """The store's file, when the sessions live in one (``None`` with ``--no-session`` or on
        PostgreSQL)."""
        store_path = getattr(self._sessions.store, "path", None) if self._sessions is not None else None
        return str(store_path) if store_path is not None else None

    @property
    def session_file(self) -> str | None:
        """A path naming this session: ``<store file>/<session id>``. pi keeps a file per session
        and its clients hand ``get_state``'s ``sessionFile`` back to ``switch_session``; tether
        keeps every session in one database, so a session's path is the database's with its id
        under it (``switch_session`` takes that, and a bare id). ``None`` without a session."""
        store_path = self.store_path
        if store_path is None or self._session is None:
            return None
        return f"{store_path}/{self._session.id}"

    def stats(self) -> Stats:
        from tether.session.stats import Tally, conversation_stats

        if self._tally is None:
            self._tally = Tally()

        session = self._session
        return conversation_stats(
            self.agent.messages,
            self.model,
            session_id=self.session_id,
            session_file=self.session_file,
            title=session.title if session is not None else None,
            tally=self._tally,
        )

    async def close(self) -> None:
        """Abort a run in progress, let it record what it has (within about a second:
        ``ABORT_GRACE``), and release the session; close what this core owns (``owns``), never
        what was passed in."""
        if self.is_running:
            self.abort()
        if self.mcp is not None and "mcp" in self._owns:
            await self.mcp.close()
        await self.wait_for_idle()
        host = self.resources.extensions if self.resources is not None else None
        if host is not None and host.session is self:
            host.detach()
        # The subscription and the hooks refer back to this object and to the agent: dropped and
        # given back, a closed core and its agent hold no reference cycle, so reference counting
        # frees them (and the conversation) when the caller lets go, not a full collection later.
        self._unsubscribe()
        self._unsubscribe = _already_unsubscribed
        if self.agent.transform_context == self._transform_context:  # not taken over by another core
            self.agent.convert_to_llm, self.agent.transform_context, self.agent.before_tool_call = (
                self._agent_hooks
            )
        self._retry_relay.core = None
        if self.agent.options.on_retry is self._retry_relay:
            self.agent.options.on_retry = self._caller_on_retry
            self.agent.options.retry_signal = None
        if self.approval is not None:  # the bash tool's spools live in the gate's workspace
            self.approval.workspace.spools.remove()
        if self._session is not None:
            session, self._session = self._session, None
            try:
                session.close()
            except Exception:
                if not self._raised_failure:  # a run raised this failure already: said once
                    raise
        if self._sessions is not None and "sessions" in self._owns:
            self._sessions.close()

    # -- runs --------------------------------------------------------------------------------------

    def _new_run(
        self, body: Callable[[], Awaitable[list[AgentMessage]]], retry: RetrySettings | None = None
    ) -> Run:
        def start() -> asyncio.Future[list[AgentMessage]]:
            self.require_writable()
            previous = self._run if self.is_running else None
            if previous is not None and previous is not self._aborting:
                raise AgentBusyError("the agent is already running: steer it or queue a follow-up instead")
            self._run = asyncio.ensure_future(self._run_after(previous, body, retry))
            return self._run

        return Run(start, self.subscribe, self.abort)

    async def _run_after(
        self,
        previous: asyncio.Future[list[AgentMessage]] | None,
        body: Callable[[], Awaitable[list[AgentMessage]]],
        retry: RetrySettings | None,
    ) -> list[AgentMessage]:
        """Start a run once an aborted one before it has settled (bounded: ``ABORT_GRACE``)."""
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        self._added = []
        self._aborted = False
        self._aborting = None
        self._retry_attempt = 0
        self._run_retry = retry if retry is not None else self.settings.retry
        self._retry_options()
        if self._session is not None:
            self._session.defer_writes()  # committed off the event loop; settled below
        return await self._settled(body(), self._session)

    async def _settled(
        self, body: Awaitable[list[AgentMessage]], session: Session | None
    ) -> list[AgentMessage]:
        """Run ``body``; then record what waited for the run, wait until everything the run
        recorded is on disk, and say ``agent_settled`` (also when the disk failed: the run then
        raises that failure after it). So is a session error that stopped the loop (an event
        could not be recorded): its message says what is wrong and what to do, where the reply
        the loop makes of it reads "event listener failed: SessionDatabaseError: ..."."""
        write_failure: Exception | None = None
        self._session_failure = None
        try:
            await body
        finally:
            deferred, self._deferred = self._deferred, []
            for message in deferred:
                self._record(message)
            self._check_queue()
            self._forget_unrecorded_inputs()
            if session is not None:
                try:
                    await session.settle_writes()
                except Exception as exc:  # raised below, once listeners know the run ended
                    write_failure = _store_failure(exc, session.id)
            last = self.last_assistant()
            aborted = self._aborted or (
                last is not None and last in self._added and last["stopReason"] == "aborted"
            )
            await self._emit({"type": "agent_settled", "aborted": aborted})
        failure = self._session_failure or write_failure
        if failure is not None:
            self._raised_failure = True
            raise failure
        return self._added

    async def _prompt_run(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        if not await self._install_mcp_tools():
            return self._added  # aborted while MCP servers were starting
        host = self.resources.extensions if self.resources is not None else None
        if host is not None:
            from tether.session.extensions.api import BeforeRunContext

            context = BeforeRunContext(message_text(messages[-1]) if messages else "", messages)
            blocked = await host.before_run(context)
            if blocked is not None:
                self.notify(f"run stopped: {blocked.reason}")
                return self._added
        await self.agent.prompt(messages)
        await self._recover()
        # Steering or a follow-up queued after the loop's last poll (typed as the run ended)
        # would otherwise wait for the next prompt: run it now, as part of this run.
        while self.agent.has_queued_messages() and self._continuable():
            await self.agent.continue_()
            await self._recover()
        return self._added

    async def _install_mcp_tools(self) -> bool:
        """Wait for MCP servers still starting, then give the agent the tools of every server that
        has them (a server that failed to start has none; ``mcp.statuses()`` says why).
        ``False``: the run was aborted while waiting."""
        if not self.mcp:
            return True
        controller = AbortController()
        self._mcp_abort = controller
        try:
            if not await self.mcp.ready(controller.signal):
                return False
        finally:
            self._mcp_abort = None
        tools = self.mcp.tools()
        installed = {id(t) for t in self._mcp_tools}
        self.agent.tools = [*(t for t in self.agent.tools if id(t) not in installed), *tools]
        self._mcp_tools = tools
        for line in self.mcp.renames:  # once each: the model sees a name the user did not write
            if line not in self._mcp_noted:
                self._mcp_noted.add(line)
                self.notify(line)
        return True

    async def _command_run(self, command: ExtensionCommand, args: str) -> list[AgentMessage]:
        """An extension's slash command, as a run: it may prompt the agent through ``ctx.send``."""
        from tether.session.extensions.api import CommandContext

        host = self.resources.extensions if self.resources is not None else None
        assert host is not None

        async def send(text: str) -> None:
            await self._prompt_run(self._inputs(text, ()))

        text = await host.run_command(command, args, CommandContext(self.cwd, host.ui, send, self))
        if text:
            self.notify(text, command=command.name)
        return self._added

    async def _notice_run(self, text: str) -> list[AgentMessage]:
        """A run that only tells the user something (a slash command that could not run)."""
        self.notify(text)
        return self._added

    def notify(self, text: str, *, command: str | None = None) -> None:
        """Tell the listeners something the user should see (a ``notice`` event), at once;
        ``command``: the text is what that extension command answered."""
        event: NoticeEvent = {"type": "notice", "message": text}
        if command is not None:
            event["command"] = command
        self._emit_now(event)

    async def _input_run(self, parsed: Any) -> list[AgentMessage]:
        from tether.tools.prompt_input import ShellInput, run_python_input, run_shell_input

        controller = AbortController()
        self._input_abort = controller
        try:
            if isinstance(parsed, ShellInput):
                message: AgentMessage = await run_shell_input(
                    parsed.command,
                    cwd=self.cwd,
                    sandbox=self._confinement(),
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                    env_passthrough=self.settings.shell_env_passthrough,
                )
            else:
                message = await run_python_input(
                    parsed.code,
                    cwd=self.cwd,
                    sandbox=self._confinement(),
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                    env_passthrough=self.settings.shell_env_passthrough,
                )
        finally:
            self._input_abort = None
        await self._emit({"type": "message_start", "message": message})
        self._record(message)
        await self._emit({"type": "message_end", "message": message})
        return self._added

    async def _recover(self) -> None:
        """After a failed reply: compact and retry once on an overflow, back off and retry on a
        transient error."""
        await self._retry_overflow()
        await self._retry_transient()

    async def _retry_overflow(self) -> None:
        """Compact, then continue once; the failed reply stays on an abandoned branch."""
        session, last = self._session, self.last_assistant()
        compaction = self.compaction
        if session is None or last is None or not compaction.enabled or not is_context_overflow(last):
            return
        from tether.session.wiring import recover_from_overflow

        await self._emit({"type": "compaction_start", "reason": "overflow"})
        recovered = await recover_from_overflow(
            session, [last], model=self.model, stream_fn=self._stream_fn(), compaction=compaction, signal=None
        )
        if recovered:
            self.compactions += 1
        await self._emit(newest_compaction_end("overflow", session if recovered else None, recovered))
        if recovered:
            self._reload()
            self._recovering_overflow = True
            try:
                await self.agent.continue_()
            finally:
                self._recovering_overflow = False

    def _retries_allowed(self) -> int:
        """Retries the current run's policy allows a reply (0 with ``auto_retry`` off)."""
        return self._run_retry.retries if self.auto_retry else 0

    def _retry_options(self) -> None:
        """Give the agent's requests the run's retry policy with what is left of the reply's budget.

        The provider retries a request that failed before anything streamed (it alone sees the
        status and ``Retry-After``); this core retries the rest (a reply cut off midway, a stream
        function's transient error). Both spend one budget, ``_retry_attempt``, so a reply makes
        at most ``max_retries + 1`` requests whoever retries."""
        policy = self._run_retry
        options = self.agent.options
        options.max_retries = max(self._retries_allowed() - self._retry_attempt, 0)
        options.retry_base_delay = policy.base_delay_ms / 1000
        options.max_retry_delay = policy.max_delay_ms / 1000
        if options.on_retry is not self._retry_relay:
            self._caller_on_retry = options.on_retry
        options.on_retry = self._retry_relay
        self._retry_abort = AbortController()
        options.retry_signal = self._retry_abort.signal

    def _provider_retried(self, retry: ProviderRetry) -> None:
        """The provider is about to repeat a failed request: announce it as ours (``auto_retry_start``)."""
        if self._caller_on_retry is not None:
            self._caller_on_retry(retry)
        self._retry_attempt += 1
        self._emit_now(
            {
                "type": "auto_retry_start",
                "attempt": self._retry_attempt,
                "maxAttempts": self._retries_allowed(),
                "delayMs": round(retry.delay * 1000),
                "errorMessage": retry.reason,
            }
        )

    def _retryable(self, message: AssistantMessage) -> bool:
        """A failed reply this core should repeat: transient, and not an HTTP failure the
        provider already judged (retried to the budget, or refused to: ``Retry-After`` past
        ``max_delay_ms``, a quota error)."""
        return "errorStatus" not in message and is_transient_error(message)

    async def _retry_transient(self) -> None:
        """Wait, then continue; each failed reply stays on an abandoned branch of the session.

        ``auto_retry_start`` before each wait, one ``auto_retry_end`` when retrying is over: as pi
        does, right after the first reply that works (before its ``turn_end``), else at the end."""
        while True:
            last = self.last_assistant()
            attempt = self._retry_attempt
            if last is None or not self._retryable(last) or attempt >= self._retries_allowed():
                self._retry_attempt = 0
                if attempt:  # the reply that worked said so already (_retry_worked)
                    ok = last is not None and last["stopReason"] not in ("error", "aborted")
                    if ok:
                        await self._emit({"type": "auto_retry_end", "success": True, "attempt": attempt})
                    else:
                        final = (last or {}).get("errorMessage") or "the retry failed"
                        await self._emit(
                            {
                                "type": "auto_retry_end",
                                "success": False,
                                "attempt": attempt,
                                "finalError": final,
                            }
                        )
                return
            attempt += 1
            self._retry_attempt = attempt
            delay = round(backoff(attempt - 1, self.agent.options) * 1000)
            await self._emit(
                {
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": self._retries_allowed(),
                    "delayMs": delay,
                    "errorMessage": last.get("errorMessage") or "",
                }
            )
            if not await self._retry_wait(delay):
                self._retry_attempt = 0
                await self._emit(
                    {
                        "type": "auto_retry_end",
                        "success": False,
                        "attempt": attempt,
                        "finalError": "Retry cancelled",
                    }
                )
                return
            self._abandon(last)
            self._retry_options()
            await self.agent.continue_()

    async def _retry_wait(self, delay_ms: int) -> bool:
        """Sleep before a retry; ``False`` when ``abort``/``abort_retry`` cancelled it."""
        controller = AbortController()
        self._retry_abort = controller
        try:
            await asyncio.wait_for(controller.signal.wait(), delay_ms / 1000)
        except TimeoutError:
            return True
        finally:
            self._retry_abort = None
        return False

    def _abandon(self, failed: AssistantMessage) -> None:
        """Take a failed reply out of the context (the session keeps it on a side branch)."""
        session = self._session
        entry_id = session.message_id(failed) if session is not None else None
        if session is not None and entry_id is not None:
            session.branch(session.entry(entry_id)["parentId"])
            self._reload()
        else:
            self.agent.messages = [m for m in self.agent.messages if m is not failed]

    def _will_retry(self) -> bool:
        """Whether ``_recover`` will retry the pass that just ended (``agent_end.willRetry``)."""
        last = self.last_assistant()
        if last is None or last["stopReason"] != "error":
            return False
        if is_context_overflow(last):
            return self._session is not None and self.compaction.enabled and not self._recovering_overflow
        return self._retryable(last) and self._retry_attempt < self._retries_allowed()

    def _continuable(self) -> bool:
        last = self.last_assistant()
        return last is not None and last["stopReason"] not in ("error", "aborted")

    # -- the agent's hooks and events --------------------------------------------------------------

    async def _transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        """Before each model call: the session's context, compacted first at the threshold, then
        edited by the prompt hooks."""
        session = self._session
        if session is None:
            if not self.hooks:
                return messages
            from tether.session.prompt import run_prompt_hooks

            return await run_prompt_hooks(self.hooks, messages, None, model=self.agent.model)
        from tether.session.wiring import request_view

        due = False

        async def on_due() -> None:
            nonlocal due
            due = True
            await self._emit({"type": "compaction_start", "reason": "threshold"})

        request, compacted = await request_view(
            session,
            messages,
            model=self.model,
            stream_fn=self._stream_fn(),
            hooks=self.hooks,
            compaction=self.compaction,
            signal=signal,
            on_due=on_due,
        )
        self.compactions += compacted
        if due:
            await self._emit(newest_compaction_end("threshold", session if compacted else None, False))
        return request

    def _on_agent_event(self, event: Any, signal: AbortSignal | None = None) -> Awaitable[None] | None:
        """Record what the event changes, then pass it on. An awaitable comes back only when
        there is something to wait for (``agent_end``'s writes, a listener's awaitable, a retry's
        success to report): most events are streamed deltas, and a coroutine for each cost more
        than the rest of their way from the agent to the listeners."""
        kind = event["type"]
        if kind == "agent_end":
            return self._on_agent_end(event)
        try:
            if kind == "agent_start":
                self.record_settings()
                if self._session is not None and not self._session.readonly:
                    self._session.defer_writes()  # this pass's entries: committed off the event loop
            elif kind == "message_start" and event["message"]["role"] == "user":
                self._check_queue()
            elif kind == "message_end":
                if self._session is not None:
                    self._store_message_end(event)
                self._added.append(event["message"])
                message = event["message"]
                if self._retry_attempt and message["role"] == "assistant" and not _failed(message):
                    return self._retry_worked(event)
            return self._deliver(event) if self._listeners else None
        except SessionError as exc:
            self._session_failure = exc
            raise

    def _store_message_end(self, event: Any) -> None:
        """Record a finished message; any failure to store it ends the run as a ``SessionError``
        that ``prompt()`` raises once settled, never as a reply that only listeners would see."""
        from tether.session.wiring import record_message_end

        assert self._session is not None
        try:
            record_message_end(self._session, event, checked=self._checked(event["message"]))
        except (SessionError, WireError):  # a malformed message ends the run as an error reply
            raise
        except Exception as exc:
            raise _store_failure(exc, self._session.id) from exc

    async def _on_agent_end(self, event: Any) -> None:
        with self._session_failure_kept():
            await self._end_pass(event)

    async def _end_pass(self, event: Any) -> None:
        if self._session is not None:
            # On disk before anyone hears the pass ended: a client that asks for the state on
            # agent_end must find the run over, not waiting for the writer thread. A failed
            # write is raised once the run settles (``_settled``).
            with contextlib.suppress(Exception):
                await self._session.settle_writes()
        ended: AgentEndSessionEvent = {
            "type": "agent_end",
            "messages": event["messages"],
            "willRetry": self._will_retry(),
        }
        await self._emit(ended)

    async def _retry_worked(self, event: SessionEvent) -> None:
        """Pass on the reply a retry got, then say at once that the retry worked, as pi does."""
        with self._session_failure_kept():
            await self._emit(event)
            attempt, self._retry_attempt = self._retry_attempt, 0
            await self._emit({"type": "auto_retry_end", "success": True, "attempt": attempt})

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

    def _deliver(self, event: SessionEvent) -> Awaitable[None] | None:
        """``_emit`` for an agent event (never a compaction one), without a coroutine while the
        listeners answer synchronously; from the first awaitable on, the rest wait for it."""
        listeners = tuple(self._listeners)
        for i, listener in enumerate(listeners):
            outcome = listener(event)
            if outcome is not None:
                return self._deliver_after(outcome, event, listeners[i + 1 :])
        return None

    async def _deliver_after(
        self, pending: Awaitable[None], event: SessionEvent, rest: Sequence[Listener]
    ) -> None:
        """The rest of ``_deliver``: await ``pending``, then each remaining listener in order
        (awaiting what it returns)."""
        with self._session_failure_kept():
            await pending
            for listener in rest:
                outcome = listener(event)
                if outcome is not None:
                    await outcome

    async def _emit(self, event: SessionEvent) -> None:
        if event["type"] == "compaction_start":
            self._compacting += 1
        elif event["type"] == "compaction_end":
            self._compacting -= 1
        for listener in tuple(self._listeners):
            outcome = listener(event)
            if outcome is not None:
                await outcome

    def _check_queue(self) -> None:
        """Emit ``queue_update`` when the queues changed since the last one, at once."""
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

    def _confinement(self) -> Sandbox | None:
        """The sandbox of the user's ``!cmd`` and ``$code``: the tools' own (``tether.tools.sandbox``)."""
        return self.approval.workspace.confinement() if self.approval is not None else None

    def _emit_now(self, event: SessionEvent) -> None:
        """Deliver ``event`` from a method that is not async (``steer()``, ``set_thinking()``,
        ``rename()``): an async listener's coroutine is scheduled, not awaited."""
        for listener in tuple(self._listeners):
            outcome = listener(event)
            if outcome is not None:
                task = asyncio.ensure_future(outcome)
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    # -- what enters the transcript ---------------------------------------------------------------

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
            return self._vouch([decode_message(built, "prompt")])
        if images:
            raise ValueError("images can only be given with a text prompt; put them in the message instead")
        given = [prompt] if isinstance(prompt, dict) else list(prompt)
        return self._vouch([decode_message(m, f"messages[{i}]") for i, m in enumerate(given)])

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
        from tether.ai.registry import is_builtin

        model = self.agent.model
        return model is not None and is_builtin(model["api"])

    # -- the transcript's one source ---------------------------------------------------------------

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
        agent = self.agent
        agent.options.session_id = session.id if session is not None else None
        if session is None:
            agent.messages = []
            return
        self._reload()
        if load_settings:
            ctx = session.context
            if ctx.thinking_level in _THINKING:
                agent.thinking_level = cast(ThinkingLevel, ctx.thinking_level)
            if ctx.service_tier in _TIERS:
                agent.service_tier = cast(ServiceTier, ctx.service_tier)
            if ctx.system_prompt is not None:
                agent.system_prompt = ctx.system_prompt
            if agent.model is None and ctx.model is not None and ctx.model.info is not None:
                agent.model = ctx.model.info

    def _stream_fn(self, purpose: str = "compaction") -> StreamFn:
        """The model call of a summary (the registry's ``stream_simple`` for real providers),
        traced like the loop's calls when the agent is instrumented (``purpose`` labels its span)."""
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
        if self._sessions is None:
            raise LookupError("sessions are off in this run (--no-session)")
        return self._sessions

    def _require_session(self) -> Session:
        if self._session is None:
            raise LookupError("this run has no session (--no-session)")
        return self._session


def _same_model(a: ModelInfo, b: ModelInfo) -> bool:
    return (a["provider"], a["id"]) == (b["provider"], b["id"])


def _distinct(models: Sequence[ModelInfo]) -> list[ModelInfo]:
    """``models`` without repeats (same provider and id), first occurrence kept."""
    kept: list[ModelInfo] = []
    for model in models:
        if not any(_same_model(model, k) for k in kept):
            kept.append(model)
    return kept


def _clamp_thinking(model: ModelInfo, level: str) -> ThinkingLevel:
    from tether.ai.thinking import clamp_thinking_level

    return clamp_thinking_level(model, cast(Any, level))


def _store_failure(exc: Exception, session_id: str) -> SessionError:
    """A failure to store (whatever the store raised) as the ``SessionError`` a run raises."""
    if isinstance(exc, SessionError):
        return exc
    from tether.store.errors import SessionDatabaseError

    failure = SessionDatabaseError(f"could not store session {session_id}: {type(exc).__name__}: {exc}")
    failure.__cause__ = exc
    return failure


class _RetryRelay:
    """Tells a core of the provider's retries until the core closes."""

    __slots__ = ("core",)

    def __init__(self, core: AgentSession) -> None:
        self.core: AgentSession | None = core

    def __call__(self, retry: ProviderRetry) -> None:
        if self.core is not None:
            self.core._provider_retried(retry)  # pyright: ignore[reportPrivateUsage]


def _already_unsubscribed() -> None:
    """``AgentSession._unsubscribe`` once ``close`` has unsubscribed."""


def _failed(message: AgentMessage) -> bool:
    return cast(AssistantMessage, message)["stopReason"] in ("error", "aborted")
