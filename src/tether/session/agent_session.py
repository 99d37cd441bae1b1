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


The class is one object to its users, built from parts that each read alone: this module runs
prompts (the run's life, the queues, the agent's hooks and events); ``user_input`` reads the
coding agent's input syntax (``submit``, ``execute_bash``); ``recovery`` retries failed replies;
``model_control`` switches model and thinking level; ``mcp_control`` gives the agent the MCP
servers' tools; ``operations`` holds the session operations; ``core_state`` the state they
share. Event shapes and their builders live in ``tether.session.events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import weakref
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

from tether.agent import Agent, AgentBusyError, AgentTool
from tether.agent.listener_grace import ListenerGrace
from tether.agent.types import default_convert_to_llm
from tether.ai.abort import AbortController, AbortSignal
from tether.session.convert import lower_after, lower_for
from tether.session.core_state import IN_RUN, PASSED_ON, Compaction
from tether.session.events import (
    AgentEndSessionEvent,
    QueuedInputDisposition,
    QueueSnapshot,
    Run,
    SessionEvent,
    message_text,
    newest_compaction_end,
)
from tether.session.mcp_control import McpControl
from tether.session.message_stamps import MessageClock
from tether.session.model_control import ModelControl
from tether.session.operations import MOVE_UNDER_A_RUN, SessionOperations
from tether.session.recovery import Recovery, RetryRelay
from tether.session.settings import Retry as RetrySettings, Settings
from tether.session.user_input import UserInput
from tether.store.errors import SessionError
from tether.tools.approval import ApprovalGate
from tether.wire import AgentMessage, AssistantMessage, ImageContent, WireError

if TYPE_CHECKING:  # the store and the summariser load only when a run has a session
    from pydantic import BaseModel

    from tether.mcp import McpServers
    from tether.session.manager import SessionManager
    from tether.session.prompt import PromptHook
    from tether.session.resources import Resources
    from tether.session.session import Session

M = TypeVar("M", bound="BaseModel")


class AgentSession(Recovery, SessionOperations, ModelControl, McpControl, UserInput):
    """An ``Agent`` bound to a stored session; see the module docstring.

    Args:
        agent: The agent to drive. Binding loads the session's transcript and stored settings
            (thinking level, service tier, system prompt; the model too when the agent has none)
            into it and puts the session's hooks in: its ``transform_context`` (the session's
            view of the request: compacted, ``hooks`` applied) and ``convert_to_llm`` (its roles
            lowered) run with the agent's own, which are kept: the agent's ``transform_context``
            edits the session's view, its ``convert_to_llm`` lowers the agent's own message
            kinds first (the session lowers what it passes on). ``approval`` replaces
            ``before_tool_call``. ``close()`` gives the agent its hooks back.
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
    another session) releases it and its writer lock. Another core refuses it
    (``SessionBoundError``): the first one's ``close()`` would release it under the second.
    """

    def __init__(
        self,
        agent: Agent,
        session: Session | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        settings: Settings | None = None,
        sessions: SessionManager | None = None,
        approval: ApprovalGate | None = None,
        hooks: Sequence[PromptHook] = (),
        notice: str | None = None,
        mcp: McpServers | None = None,
        resources: Resources | None = None,
        owns: Collection[Literal["sessions", "mcp"]] = (),
    ) -> None:
        if session is not None and session.bound:  # before the agent is touched: refused whole
            from tether.session.session import SessionBoundError

            raise SessionBoundError(session.id)
        self.agent = agent
        self._owns = set(owns)
        self._closed = False
        self._closed_id = None
        self._close_after_run = False
        """``close()`` was called inside the run: the run closes the core as it settles."""
        self.resources = resources
        self.mcp = mcp
        if mcp is not None:
            mcp.notify = self.notify  # a server's sign-in address reaches the user as a notice
            mcp.on_found = self._offer_mcp_tools
        self._mcp_tools: list[Any] = []
        self._mcp_noted: set[object] = set()
        self._mcp_read = False
        self.cwd = workspace_path(cwd)
        self.settings = settings if settings is not None else Settings()
        self.approval = approval
        self.hooks = list(hooks)
        self.notice = notice
        self.no_model_reason = None
        """Why the session started without a model (``create_agent_session``): what a prompt's
        error names until one is chosen."""
        self._tally = None
        """The conversation's totals, extended at each ``stats()`` (made on the first: print mode
        never asks, and ``tether.session.stats`` stays unloaded)."""
        self.scoped_models = []
        """``--models``: the models ``cycle_model`` goes through (empty: every usable model)."""
        self.chosen_model = None
        """The model named at start (``--model``, ``AgentOptions.model``; ``create_agent_session``
        decides): every session this one moves to (``new_session``, ``switch_session``, ``fork``)
        goes on with it rather than with its stored model, as pi 1.6 makes each of them afresh
        from its command line. ``None``: a resumed conversation takes its own model back."""
        self.chosen_thinking = None
        """The thinking level named at start (``--thinking``, a ``:LEVEL`` suffix of the named
        model), taken into every session moved to as ``chosen_model`` is."""
        self.auto_retry = self.settings.retry.enabled
        """Retry replies that failed for a transient reason (``settings.retry``)."""
        self.compactions = 0
        """How many compactions this object performed (threshold, overflow and manual)."""
        self.last_compaction = None
        self._sessions = sessions
        self._session = None
        self._listeners = ()
        self._unheard = set(PASSED_ON)
        self._run = None
        self._added = []
        self._vouched = {}
        """Messages this core built or checked on their way in, by identity: stored unchecked."""
        self._deferred: list[AgentMessage] = []
        self._queued = QueueSnapshot((), ())
        self._retry_abort = None
        self._retry_attempt = 0
        """Retries of the current reply so far, by the provider or by this core: one budget."""
        self._caller_on_retry = None
        self._retry_relay = RetryRelay(self)
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
        self._made_runs: weakref.WeakSet[Run] = weakref.WeakSet()
        """Runs made (held weakly): an ``abort()`` with none running is for those not started yet
        (a started one never reads the mark; ``start`` does not drop it, which would make a
        cycle between a run and its closure). Not the agent's runs asked for (``Agent.abort``):
        a ``Run`` calls ``agent.prompt()`` only once started, after its hooks and inputs."""
        self._session_failure = None
        """A session error an event listener raised in this run: the run raises it when settled."""
        self._input_abort: AbortController | None = None
        self._bash_aborts = set()
        self._mcp_abort: AbortController | None = None
        self._compactions = set()
        """The compactions under way outside the loop (``compact()``, overflow recovery)."""
        self._moves = set()
        """What aborts the summary of each ``branch(summarize=True)`` under way: a run that
        starts, ``abort()`` and ``close()``."""
        self._grace = None
        """The current run's bound on its listeners once aborted (``ListenerGrace``)."""
        self._compacting = 0
        self._clock = MessageClock()
        self._background = {}
        """``queue_update`` deliveries to async listeners, kept alive until they finish."""
        self._agent_hooks = (agent.convert_to_llm, agent.transform_context, agent.before_tool_call)
        """The agent's hooks as they were, given back by ``close``."""
        taken_over = getattr(agent.transform_context, "__self__", None)
        if isinstance(taken_over, AgentSession) and taken_over.agent is agent:
            self._own_hooks = taken_over._own_hooks  # the program's hooks, not the other core's
        else:
            convert = agent.convert_to_llm
            self._own_hooks = (
                None if convert is default_convert_to_llm else convert,
                agent.transform_context,
            )
        """The program's own ``convert_to_llm`` and ``transform_context`` (``None``: none), run
        with the session's, not replaced: see the class docstring."""
        own_convert, own_transform = self._own_hooks
        current = lambda: agent.model  # noqa: E731
        agent.convert_to_llm = (
            lower_for(current) if own_convert is None else lower_after(own_convert, current)
        )
        agent.transform_context = self._transform_context if own_transform is None else self._then_own
        if approval is not None:
            agent.before_tool_call = approval
        host = resources.extensions if resources is not None else None
        if host is not None:
            host.install(agent)
            host.notice = self.notify
            # a session_start hook failing here has no front end listening yet: its one line
            # (an extension's failure is told once) joins the setup's notice, shown at the start
            told: list[str] = []
            host.failed = lambda _origin, _where, _error, line: told.extend([line] if line else [])
            host.attach(self, self.subscribe)
            host.failed = self._extension_failed
            if told:
                self.notice = "\n".join([self.notice, *told] if self.notice else told)
        self._stop_recording = agent._record_to(  # pyright: ignore[reportPrivateUsage]
            self._on_agent_event, self._unheard
        )
        if session is not None:
            self._attach(session, load_settings=True)
        if mcp:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass  # started by the first prompt
            else:
                mcp.start()

    # -- running -------------------------------------------------------------------------------------

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
        from tether.session.output import (
            FINAL_ANSWER,
            INSTRUCTION,
            REMINDER,
            AnswerSlot,
            OutputError,
            final_answer_tool,
        )

        slot = AnswerSlot(output)
        answer_tool = final_answer_tool(slot)

        def count_invalid(event: SessionEvent) -> None:
            if (
                event["type"] == "tool_execution_end"
                and event["toolName"] == FINAL_ANSWER
                and event["isError"]
            ):
                slot.invalid += 1
                slot.errors.append(message_text(cast(Any, {"content": event["result"].content})))
                if slot.invalid > max_reasks:
                    self.abort()

        unsubscribe = self.subscribe(count_invalid)
        agent = self.agent
        agent.tools = [*agent.tools, answer_tool]
        try:
            text = prompt + INSTRUCTION
            while True:
                await self.prompt(text, retry=retry)
                if slot.answer is not None:
                    return slot.answer
                last = self.last_assistant()
                if slot.invalid > max_reasks:
                    raise OutputError(
                        f"no valid {output.__name__} after {slot.invalid} answers; the last: {slot.errors[-1]}",
                        "invalid",
                    )
                if last is not None and last["stopReason"] == "aborted":
                    raise OutputError("the run was aborted before an answer", "aborted")
                if last is not None and last["stopReason"] == "error":
                    raise OutputError(
                        f"the model call failed: {last.get('errorMessage') or 'error'}", "failed"
                    )
                slot.invalid += 1  # a reply without the tool call counts as a re-ask too
                if slot.invalid > max_reasks:
                    raise OutputError(f"the model gave no {output.__name__} answer", "missing")
                text = REMINDER
        finally:
            unsubscribe()
            _remove_tool(agent, answer_tool)

    def steer(self, text: str | AgentMessage, images: Sequence[ImageContent] = ()) -> QueuedInputDisposition:
        """Queue a text (as a user message) or a message for the next model call, after the
        running tool calls finish."""
        self.require_writable()
        for message in self._inputs(text, images):  # a list given anyway: each, not only the first
            self.agent.steer(message)
        self._check_queue()
        return "queued"

    def follow_up(
        self, text: str | AgentMessage, images: Sequence[ImageContent] = ()
    ) -> QueuedInputDisposition:
        """Queue a text (as a user message) or a message for when the agent would otherwise stop."""
        self.require_writable()
        for message in self._inputs(text, images):  # a list given anyway: each, not only the first
            self.agent.follow_up(message)
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
        """Abort the run: the model call, tools, a retry wait, a ``!``/``$`` input and the
        summary of a ``compact()`` or of a ``branch()``. With none running, a run made but not
        started yet is the current one: as pi's ``prompt()`` starts its run on the spot,
        ``run = core.prompt(...); core.abort(); await run`` ends aborted."""
        if self.is_running:
            self._aborted = True
            self._aborting = self._run
        else:
            for run in self._made_runs:
                run.abort_at_start = True
        if self._grace is not None:
            self._grace.abort()  # a listener stuck in an await is cut after ABORT_GRACE
        self.agent.abort()
        self.abort_retry()
        compactions = (compaction.controller for compaction in self._compactions)
        for controller in (self._input_abort, self._mcp_abort, *compactions, *self._moves):
            if controller is not None:
                controller.abort()

    async def wait_for_idle(self) -> None:
        """Return once the current run, if any, has settled. A waiter that is cancelled (its own
        ``asyncio.timeout``) leaves the run alone: through ``gather`` it cancelled the run too.
        The run's own task (a listener of it) returns at once: the run cannot settle meanwhile."""
        run = self._run
        if (
            run is not None and not run.done() and run is not asyncio.current_task()
        ):  # done: maybe of a closed loop
            await asyncio.wait((run,))

    async def close(self) -> None:
        """Abort a run in progress, let it record what it has (within about a second:
        ``ABORT_GRACE``), and release the session; close what this core owns (``owns``), never
        what was passed in.

        Called inside the core's own run (an event listener, a tool), where waiting for the run
        would be waiting for itself, it aborts the run and returns; the run closes the core as it
        settles, before its ``prompt()`` returns."""
        self._closed = True
        if self._in_own_run():
            self._close_after_run = True
            self.abort()
            return
        await self._close()

    async def _close(self) -> None:
        if self.is_running:
            self.abort()
        for move in tuple(self._moves):  # not stored in a closed session
            move.abort()
        await self._end_compactions()
        if self.mcp is not None and "mcp" in self._owns:
            await self.mcp.close()
        await self.wait_for_idle()
        await self._end_background()
        host = self.resources.extensions if self.resources is not None else None
        if host is not None and host.session is self:
            host.detach()
        # The recorder and the hooks refer back to this object and to the agent: dropped and
        # given back, a closed core and its agent hold no reference cycle, so reference counting
        # frees them (and the conversation) when the caller lets go, not a full collection later.
        self._stop_recording()
        self._stop_recording = _already_stopped
        if self.agent.transform_context in (self._transform_context, self._then_own):  # not taken over
            hooks = self._agent_hooks  # a core's under it, if that one closed first: its own saved ones
            while isinstance(under := getattr(hooks[1], "__self__", None), AgentSession) and under._closed:
                hooks = under._agent_hooks
            self.agent.convert_to_llm, self.agent.transform_context, self.agent.before_tool_call = hooks
        self._retry_relay.core = None
        if self.agent.options.on_retry is self._retry_relay:
            self.agent.options.on_retry = self._caller_on_retry
            self.agent.options.retry_signal = None
        if self.approval is not None:  # the bash tool's spools live in the gate's workspace
            self.approval.workspace.spools.remove()
        if self._session is not None:
            session, self._session = self._session, None
            self._closed_id = session.id
            try:
                session.close()
            except Exception:
                if not self._raised_failure:  # a run raised this failure already: said once
                    raise
        if self._sessions is not None and "sessions" in self._owns:
            self._sessions.close()

    async def _end_compactions(self) -> None:
        """Abort each compaction under way and let it settle, within ``ABORT_GRACE`` (a model
        call ends at once when aborted; one deaf to its signal is cancelled then), so the session
        is not closed, nor a run started, under a summary about to be stored. One that ignores
        the cancellation too is left behind after a second ``ABORT_GRACE``, as a tool call is
        (``tether.agent.abort_grace``): ``close()`` returns in bounded time whatever the model
        does."""
        if not self._compactions:
            return
        from tether.agent.abort_grace import ABORT_GRACE  # loads with the first tool call otherwise

        under_way: tuple[Compaction, ...] = tuple(self._compactions)
        for compaction in under_way:
            compaction.controller.abort()
        _, deaf = await asyncio.wait([c.settled for c in under_way], timeout=ABORT_GRACE)
        for compaction in under_way:
            if compaction.settled in deaf and compaction.work is not None:
                compaction.work.cancel()
        if deaf:
            await asyncio.wait(deaf, timeout=ABORT_GRACE)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """``async with core:`` closes it on the way out, after an exception too (which then
        goes on up: an aborted run's reply is recorded first)."""
        await self.close()

    # -- runs ----------------------------------------------------------------------------------------

    def _new_run(
        self, body: Callable[[], Awaitable[list[AgentMessage]]], retry: RetrySettings | None = None
    ) -> Run:
        def start() -> asyncio.Future[list[AgentMessage]]:
            self.require_writable()
            previous = self._run if self.is_running else None
            if previous is not None and previous is not self._aborting:
                raise AgentBusyError("the agent is already running: steer it or queue a follow-up instead")
            compacting = any(not c.controller.signal.aborted for c in self._compactions)
            if compacting:
                raise AgentBusyError("a compaction is running: wait for it to end, or abort it")
            self._run = asyncio.ensure_future(self._run_after(previous, body, retry))
            for move in tuple(self._moves):  # moved under the run, its entries would hang off the summary
                move.abort(MOVE_UNDER_A_RUN)
            return self._run

        run = Run(start, self.subscribe, self.abort)
        self._made_runs.add(run)
        return run

    async def _run_after(
        self,
        previous: asyncio.Future[list[AgentMessage]] | None,
        body: Callable[[], Awaitable[list[AgentMessage]]],
        retry: RetrySettings | None,
    ) -> list[AgentMessage]:
        """Start a run once an aborted run or compaction before it has settled (bounded:
        ``ABORT_GRACE``)."""
        if previous is not None:
            await asyncio.wait((previous,))  # not gather: cancelled, this run would cancel that one
        await self._end_compactions()
        self._added = []
        # An abort of this run before its first step (``Run.start()``'s task not run yet, or
        # waiting for the previous run) holds: the agent's run is aborted as it starts.
        self._aborted = self._aborting is not None and self._aborting is asyncio.current_task()
        if not self._aborted:
            self._aborting = None
        grace = self._grace = ListenerGrace()
        if self._aborted:
            grace.abort()
        self._retry_attempt = 0
        self._run_retry = retry if retry is not None else self.settings.retry
        self._retry_options()
        if self._session is not None:
            self._session.defer_writes()  # committed off the event loop; settled below
        inside = IN_RUN.set(asyncio.current_task())  # this task's own context, and the tasks' it makes
        try:
            return await self._settled(body(), self._session)
        finally:
            if self._grace is grace:
                self._grace = None
            if self._close_after_run:
                self._close_after_run = False
                await self._close()
            IN_RUN.reset(inside)  # the finished task's context holds no reference to itself

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
                    if self._sessions is not None:  # once a run, off the per-message path
                        self._sessions.store.check_present()
                except Exception as exc:  # raised below, once listeners know the run ended
                    write_failure = _store_failure(exc, session.id)
            last = self.last_assistant()
            aborted = self._aborted or (
                last is not None and last in self._added and last["stopReason"] == "aborted"
            )
            await self._emit_to_all({"type": "agent_settled", "aborted": aborted})
        failure = self._session_failure or write_failure
        if failure is not None:
            self._raised_failure = True
            raise self._said_why(failure)
        return self._added

    def _said_why(self, failure: SessionError) -> SessionError:
        """A failure to store as the run raises it: when the session manager was closed under
        the run (the program left its ``with SessionManager()`` first), that is what it says,
        not what the closed store raised first ("the session store is closed" on SQLite, a
        session "read-only here" on PostgreSQL, whose lock went with the connection)."""
        if self._sessions is None or not self._sessions.closed:
            return failure
        named = SessionError(
            f"could not store session {self.session_id}: its SessionManager is closed: close the "
            "AgentSession first (or leave its `async with` before the manager's `with`)"
        )
        named.__cause__ = failure
        return named

    async def _prompt_run(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        self.require_model()  # no model chosen yet: one line saying how, before anything starts
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

    def _continuable(self) -> bool:
        last = self.last_assistant()
        return last is not None and last["stopReason"] not in ("error", "aborted")

    # -- the agent's hooks and events ----------------------------------------------------------------

    def _transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage] | Awaitable[list[AgentMessage]]:
        """Before each model call: the session's context, compacted first at the threshold, then
        edited by the prompt hooks. The list itself when it is ready at once (no hook, nothing
        due: nearly every call), so the loop awaits nothing: a coroutine, and the bound the loop
        puts on an awaited hook once the run is aborted, cost each model call more than this."""
        session = self._session
        if session is None:
            if not self.hooks:
                return messages
            from tether.session.prompt import run_prompt_hooks

            return run_prompt_hooks(self.hooks, messages, None, model=self.agent.model)
        # The module, not ``from … import request_view``: that form asks the module for a
        # ``__path__`` it lacks (two AttributeErrors made and dropped), ~4 µs a model call.
        import tether.session.wiring as wiring

        if not self.hooks:
            request = wiring.ready_request(session, messages, model=self.model, compaction=self.compaction)
            if request is not None:
                return request
        return self._request_view(session, messages, signal)

    def _then_own(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage] | Awaitable[list[AgentMessage]]:
        """``_transform_context``, then the program's own ``transform_context`` on its answer
        (installed only when there is one, so a model call without pays nothing for it)."""
        request = self._transform_context(messages, signal)
        own = self._own_hooks[1]
        assert own is not None
        if isinstance(request, list):
            return own(request, signal)
        return self._awaited_then_own(request, own, signal)

    async def _awaited_then_own(
        self,
        request: Awaitable[list[AgentMessage]],
        own: Callable[..., list[AgentMessage] | Awaitable[list[AgentMessage]]],
        signal: AbortSignal | None,
    ) -> list[AgentMessage]:
        edited = own(await request, signal)
        return await edited if inspect.isawaitable(edited) else edited

    async def _request_view(
        self, session: Session, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        """``_transform_context`` when a hook or a compaction is to be awaited."""
        import tether.session.wiring as wiring

        due = False

        async def on_due() -> None:
            nonlocal due
            due = True
            await self._emit({"type": "compaction_start", "reason": "threshold"})

        request, compacted = await wiring.request_view(
            session,
            messages,
            model=self.model,
            summarizer=lambda: self._stream_fn(reason="threshold"),
            hooks=self.hooks,
            compaction=self.compaction,
            signal=signal,
            on_due=on_due,
        )
        self.compactions += compacted
        if due:
            await self._emit(newest_compaction_end("threshold", session if compacted else None, False))
        return request

    def _on_agent_event(self, event: Any) -> Awaitable[None] | None:
        """Record what the event changes, then pass it on. An awaitable comes back only when
        there is something to wait for (``agent_end``'s writes, a listener's awaitable, a retry's
        success to report): most events are streamed deltas, and a coroutine for each cost more
        than the rest of their way from the agent to the listeners."""
        kind = event["type"]
        if kind == "agent_end":
            return self._on_agent_end(event)
        try:
            # The most frequent first: what is only passed on (heard while someone listens: most
            # events are), then each message's start and end.
            if kind in PASSED_ON:
                return self._deliver(event)
            if kind == "message_end":
                self._clock.stamp(event["message"], self.agent.thinking_level)  # pi 1.6's fields
                if self._session is not None:
                    self._store_message_end(event)
                self._added.append(event["message"])
                message = event["message"]
                if self._retry_attempt and message["role"] == "assistant" and not _failed(message):
                    return self._retry_worked(event)
            elif kind == "message_start":
                if event["message"]["role"] == "user":
                    self._check_queue()
                else:
                    self._clock.started(event["message"], self.agent.thinking_level)
            elif kind == "tool_execution_start":
                self._clock.tool_started(event["toolCallId"])
            elif kind == "agent_start":
                if self._aborted:  # aborted before the agent's run existed (a hook, its start)
                    self.agent.abort()
                self.record_settings()
                if self._session is not None and not self._session.readonly:
                    self._session.defer_writes()  # this pass's entries: committed off the event loop
            return self._deliver(event) if self._listeners else None
        except SessionError as exc:
            self._session_failure = exc
            raise

    def _store_message_end(self, event: Any) -> None:
        """Record a finished message, unless the session already holds it (a durable replay's);
        any failure to store it ends the run as a ``SessionError`` that ``prompt()`` raises once
        settled, never as a reply that only listeners would see. Written here, with no import of
        ``tether.session.wiring`` (which the session modules keep unloaded until a session is
        bound): an import statement naming a function of a module cost ~4 µs a call, every
        stored message (P6)."""
        session, message = self._session, event["message"]
        assert session is not None
        try:
            session.record_message(message, checked=self._checked(message))
        except (SessionError, WireError):  # a malformed message ends the run as an error reply
            raise
        except Exception as exc:
            raise _store_failure(exc, session.id) from exc

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


def workspace_path(cwd: str | os.PathLike[str] | None) -> Path:
    """The workspace a caller named, as a text or a path (relative: to the current directory), or
    the current directory: a ``str`` failed deep inside ("'str' object has no attribute 'parents'")."""
    if isinstance(cwd, Path) and cwd.is_absolute():
        return cwd  # as it is: made again from its parts, ~35k instructions of each set-up (P6)
    return Path(cwd).absolute() if cwd is not None else Path.cwd()


def _store_failure(exc: Exception, session_id: str) -> SessionError:
    """A failure to store (whatever the store raised) as the ``SessionError`` a run raises."""
    if isinstance(exc, SessionError):
        return exc
    from tether.store.errors import SessionDatabaseError

    failure = SessionDatabaseError(f"could not store session {session_id}: {type(exc).__name__}: {exc}")
    failure.__cause__ = exc
    return failure


def _already_stopped() -> None:
    """``AgentSession._unsubscribe`` once ``close`` has unsubscribed."""


def _failed(message: AgentMessage) -> bool:
    return cast(AssistantMessage, message)["stopReason"] in ("error", "aborted")


def _remove_tool(agent: Agent, tool: AgentTool) -> None:
    """Take ``tool`` back out of the agent's tools (a typed run's ``final_answer``)."""
    agent.tools = [t for t in agent.tools if t is not tool]
