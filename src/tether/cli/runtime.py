"""The session runtime: one agent, one model, one durable session — no terminal in sight.

Every front end (interactive, print, JSON, and later RPC and ACP) drives a ``Runtime``. It builds
the ``Agent`` from settings, model, tools and session; persists every finished message through
the session store as it happens (a crash loses at most the message being streamed); compacts the
context when it nears the model's window or the provider reports an overflow; and owns the input
syntax of a prompt line (``!shell``, ``$python``, ``@file``). Front ends subscribe to its events:
the agent's own events plus ``queue_update`` (pending steering and follow-ups),
``compaction_start``/``compaction_end`` — the names pi's RPC protocol uses.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tether.agent import Agent, AgentTool, BeforeToolCallContext, BeforeToolCallResult
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.types import SimpleStreamOptions, StreamFn, ThinkingLevel
from tether.cli.model_choice import ResolvedModel, resolve_model
from tether.cli.options import RunOptions
from tether.cli.settings import Approval, Settings
from tether.cli.stats import Stats, conversation_stats
from tether.cli.system_prompt import build_system_prompt
from tether.session.budget import CompactionSettings, context_tokens, is_context_overflow, should_compact
from tether.session.convert import lower_for
from tether.tools import Workspace, create_coding_tools, describe_call
from tether.wire import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    ModelInfo,
    ToolCall,
    UserMessage,
)

if TYPE_CHECKING:  # the store and the summariser load when a run has a session (not with --no-session)
    from tether.session import Session, SessionManager
    from tether.session.compaction import CompactionResult

T = TypeVar("T")
RuntimeEvent = dict[str, Any]
Listener = Callable[[RuntimeEvent], Awaitable[None] | None]
AskApproval = Callable[[ToolCall, str], Awaitable[bool]]
"""``ask(tool_call, question) -> allowed``: how a front end asks the user."""


class SetupError(ValueError):
    """The run cannot start as asked (unknown tool name, ...); the message says why."""


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """Which session a run attaches to: a new one, the latest of the directory, or a given id."""

    persist: bool = True
    continue_latest: bool = False
    session_id: str | None = None


@dataclass(slots=True)
class Pending:
    steering: list[str] = field(default_factory=lambda: [])
    follow_up: list[str] = field(default_factory=lambda: [])


class Runtime:
    """See the module docstring. Create with ``Runtime.start(...)``; ``await close()`` when done."""

    def __init__(
        self,
        *,
        cwd: Path,
        settings: Settings,
        resolved: ResolvedModel,
        thinking: str,
        tools: list[AgentTool],
        system_prompt: str,
        approval: Approval,
        ask: AskApproval | None,
        sessions: SessionManager | None,
        session: Session | None,
    ) -> None:
        self.cwd = cwd
        self.settings = settings
        self.approval: Approval = approval
        self.always_ask: frozenset[str] = frozenset()
        """Tools that ask before every call, on top of the workspace policy (ACP's "ask before
        edits" mode puts ``edit`` and ``write`` here)."""
        self.pending = Pending()
        self._ask = ask
        self._resolved = resolved
        self._sessions = sessions
        self._session = session
        self._workspace = Workspace(cwd)
        self._listeners: list[Listener] = []
        self._run: asyncio.Task[None] | None = None
        self._input_abort: AbortController | None = None
        self.auto_retry = False
        """Retry transient model errors (``settings.retry``); front ends opt in (RPC does)."""
        self._retry_abort: AbortController | None = None
        self._bash_abort: AbortController | None = None
        self._deferred: list[AgentMessage] = []
        self.last_compaction: CompactionResult | None = None
        """The newest compaction of this run (what ``compact`` summarised, for RPC's answer)."""
        self.agent = Agent(
            model=resolved.model,
            system_prompt=system_prompt,
            thinking_level=cast(ThinkingLevel, thinking),
            tools=tools,
            messages=session.messages if session is not None else (),
            stream_fn=resolved.stream_fn,
            options=SimpleStreamOptions(session_id=session.id if session is not None else None),
            convert_to_llm=lower_for(lambda: self.agent.model),
            transform_context=self._transform_context,
            before_tool_call=self._before_tool_call,
        )
        self.agent.subscribe(self._on_agent_event)

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def for_options(
        cls,
        options: RunOptions,
        *,
        cwd: Path,
        settings: Settings,
        ask: AskApproval | None,
        session: SessionChoice,
    ) -> Runtime:
        """``start`` with the command line's choices, the same for every mode (``--yes``: approve all)."""
        return cls.start(
            cwd=cwd,
            settings=settings,
            model_spec=options.model,
            thinking=options.thinking,
            tool_names=options.tools,
            system_prompt=options.system_prompt,
            approval="yes" if options.yes else None,
            ask=ask,
            session=session,
        )

    @classmethod
    def start(
        cls,
        *,
        cwd: Path,
        settings: Settings,
        model_spec: str | None = None,
        thinking: str | None = None,
        tool_names: Sequence[str] | None = None,
        system_prompt: str | None = None,
        approval: Approval | None = None,
        ask: AskApproval | None = None,
        session: SessionChoice | None = None,
    ) -> Runtime:
        """Resolve model, tools, prompt and session; a user mistake raises a one-line error."""
        names = tool_names if tool_names is not None else settings.tools
        try:
            tools = create_coding_tools(Workspace(cwd), list(names) if names is not None else None)
        except ValueError as exc:
            raise SetupError(str(exc)) from None
        sessions, stored = _open_session(session or SessionChoice(), cwd)
        try:
            resolved = _choose_model(model_spec, settings, stored)
            level = thinking or _stored_thinking(stored) or settings.thinking or "medium"
            prompt = build_system_prompt(
                cwd,
                [(t.name, t.description) for t in tools],
                replace=system_prompt or settings.system_prompt,
                append=settings.append_system_prompt,
            )
            runtime = cls(
                cwd=cwd,
                settings=settings,
                resolved=resolved,
                thinking=_clamp_thinking(resolved.model, level),
                tools=tools,
                system_prompt=prompt,
                approval=approval or settings.approval,
                ask=ask,
                sessions=sessions,
                session=stored,
            )
        except BaseException:
            if stored is not None:
                stored.close()
            if sessions is not None:
                sessions.close()
            raise
        runtime._record_settings()
        return runtime

    # -- state -------------------------------------------------------------------------------------

    @property
    def model(self) -> ModelInfo:
        return cast(ModelInfo, self.agent.model)

    @property
    def thinking_level(self) -> str:
        return self.agent.thinking_level

    @property
    def notice(self) -> str | None:
        return self._resolved.notice

    @property
    def session(self) -> Session | None:
        return self._session

    @property
    def session_id(self) -> str | None:
        return self._session.id if self._session is not None else None

    @property
    def is_running(self) -> bool:
        return self._run is not None and not self._run.done()

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.messages

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.messages):
            if message["role"] == "assistant":
                return message
        return None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # -- running -----------------------------------------------------------------------------------

    async def prompt(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Run the agent on a user prompt to completion (``@path`` mentions attached first)."""
        from tether.tools.prompt_input import file_mentions_message

        messages: list[AgentMessage] = []
        mention = file_mentions_message(text, self.cwd)
        if mention is not None:
            messages.append(mention)
        messages.append(_user_message(text, images))
        await self._exclusive(self._prompt_run(messages))

    async def run_input(self, line: str) -> AgentMessage | None:
        """``!cmd``/``!!cmd`` (shell) or ``$code``/``$$code`` (Python): run it, record the result.

        The result joins the conversation (the model sees it with the next prompt) unless the
        marker is doubled, which records it for the user only. ``None``: not such a line.
        """
        from tether.tools.prompt_input import (
            ShellInput,
            parse_prompt_input,
            run_python_input,
            run_shell_input,
        )

        parsed = parse_prompt_input(line)
        if parsed is None:
            return None
        controller = AbortController()
        self._input_abort = controller

        async def body() -> AgentMessage:
            if isinstance(parsed, ShellInput):
                message: AgentMessage = await run_shell_input(
                    parsed.command,
                    cwd=self.cwd,
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                )
            else:
                message = await run_python_input(
                    parsed.code,
                    cwd=self.cwd,
                    exclude_from_context=parsed.exclude_from_context,
                    signal=controller.signal,
                )
            await self._emit({"type": "message_start", "message": message})
            self.agent.messages = [*self.agent.messages, message]
            if self._session is not None:
                self._session.append_message(message)
            await self._emit({"type": "message_end", "message": message})
            return message

        try:
            return await self._exclusive(body())
        finally:
            self._input_abort = None

    def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.pending.steering.append(text)
        self.agent.steer(_user_message(text, images))
        self._queue_changed()

    def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.pending.follow_up.append(text)
        self.agent.follow_up(_user_message(text, images))
        self._queue_changed()

    def abort(self) -> None:
        self.agent.abort()
        self.abort_retry()
        if self._input_abort is not None:
            self._input_abort.abort()

    def abort_retry(self) -> None:
        """Cancel the wait before an automatic retry (the failed reply then stands)."""
        if self._retry_abort is not None:
            self._retry_abort.abort()

    async def execute_bash(self, command: str) -> BashExecutionMessage:
        """Run a shell command for the user and record it for the model's next call.

        No events: the caller gets the message back. While the agent runs, the record joins the
        conversation when the run settles, so it never lands between a tool call and its result.
        """
        from tether.tools.prompt_input import run_shell_input

        controller = AbortController()
        self._bash_abort = controller
        try:
            message = await run_shell_input(command, cwd=self.cwd, signal=controller.signal)
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

    def _record(self, message: AgentMessage) -> None:
        self.agent.messages = [*self.agent.messages, message]
        if self._session is not None:
            self._session.append_message(message)

    async def _exclusive(self, work: Awaitable[T]) -> T:
        if self.is_running:
            if asyncio.iscoroutine(work):
                work.close()
            raise RuntimeError("the agent is already running: steer it or queue a follow-up instead")
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._run = cast("asyncio.Task[None]", task)
        return await task

    async def _prompt_run(self, messages: list[AgentMessage]) -> None:
        try:
            await self.agent.prompt(messages)
            await self._retry_overflow()
            await self._retry_transient()
            # Steering or a follow-up queued after the loop's last poll (typed as the run ended)
            # would otherwise wait for the next prompt: run it now, as part of this run.
            while self.agent.has_queued_messages() and self._continuable():
                await self.agent.continue_()
                await self._retry_overflow()
                await self._retry_transient()
        finally:
            deferred, self._deferred = self._deferred, []
            for message in deferred:
                self._record(message)

    async def _retry_transient(self) -> None:
        """A reply that failed for a transient reason: wait, then continue (``auto_retry``).

        Each failed reply stays on an abandoned branch of the session, as with an overflow. Events
        ``auto_retry_start`` before each wait and one ``auto_retry_end`` when retrying is over."""
        attempt = 0
        while True:
            last = self.last_assistant()
            retry = self.settings.retry
            transient = last is not None and is_transient_error(last)
            if last is None or not transient or not self.auto_retry or attempt >= retry.max_retries:
                if attempt:
                    ok = last is not None and last["stopReason"] not in ("error", "aborted")
                    end: RuntimeEvent = {"type": "auto_retry_end", "success": ok, "attempt": attempt}
                    if not ok:
                        end["finalError"] = (last or {}).get("errorMessage") or "the retry failed"
                    await self._emit(end)
                return
            attempt += 1
            delay = retry.base_delay_ms * 2 ** (attempt - 1)
            await self._emit(
                {
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": retry.max_retries,
                    "delayMs": delay,
                    "errorMessage": last.get("errorMessage") or "",
                }
            )
            if not await self._retry_wait(delay):
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
            self.agent.messages = session.messages
        else:
            self.agent.messages = [m for m in self.agent.messages if m is not failed]

    def _continuable(self) -> bool:
        last = self.last_assistant()
        return last is not None and last["stopReason"] not in ("error", "aborted")

    async def _retry_overflow(self) -> None:
        """A reply that failed because the context overflowed: compact, then continue once.

        The failed reply stays on an abandoned branch of the session (nothing is deleted)."""
        session, last = self._session, self.last_assistant()
        if session is None or last is None or not self._compaction.enabled or not is_context_overflow(last):
            return
        from tether.session.wiring import recover_from_overflow

        await self._emit({"type": "compaction_start", "reason": "overflow"})
        recovered = await recover_from_overflow(
            session,
            [last],
            model=self.model,
            stream_fn=self.stream_fn(),
            compaction=self._compaction,
            signal=None,
        )
        await self._emit(_compaction_end("overflow", session if recovered else None, will_retry=recovered))
        if recovered:
            self.agent.messages = session.messages
            await self.agent.continue_()

    async def _transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        """Before each model call: the session's context, compacted first at the threshold."""
        session = self._session
        if session is None:
            return messages
        from tether.session.wiring import request_view

        recorded = session.message_ids(messages)
        size = context_tokens(
            [*session.messages, *(m for m, i in zip(messages, recorded, strict=True) if i is None)]
        )
        due = should_compact(size, self.model.get("contextWindow"), self._compaction)
        if due:
            await self._emit({"type": "compaction_start", "reason": "threshold"})
        request, compacted = await request_view(
            session,
            messages,
            model=self.model,
            stream_fn=self.stream_fn(),
            hooks=(),
            compaction=self._compaction,
            signal=signal,
        )
        if due:
            end = _compaction_end("threshold", session if compacted else None, will_retry=False)
            await self._emit({**end, "compacted": compacted})
        return request

    # -- events and persistence --------------------------------------------------------------------

    async def _on_agent_event(self, event: Any, signal: AbortSignal | None = None) -> None:
        kind = event["type"]
        if kind == "message_start" and event["message"]["role"] == "user":
            self._delivered(event["message"])
        elif kind == "message_end" and self._session is not None:
            from tether.session.wiring import record_message_end

            record_message_end(self._session, event)
        await self._emit(event)

    async def _emit(self, event: RuntimeEvent) -> None:
        for listener in list(self._listeners):
            outcome = listener(event)
            if outcome is not None:
                await outcome

    def _queue_changed(self) -> None:
        event = {
            "type": "queue_update",
            "steering": list(self.pending.steering),
            "followUp": list(self.pending.follow_up),
        }
        for listener in list(self._listeners):
            outcome = listener(event)
            if asyncio.iscoroutine(outcome):
                outcome.close()
                raise TypeError("queue_update listeners must be synchronous")

    def _delivered(self, message: AgentMessage) -> None:
        content = message.get("content")
        for queue in (self.pending.steering, self.pending.follow_up):
            if isinstance(content, str) and content in queue:
                queue.remove(content)
                self._queue_changed()
                return

    def _record_settings(self) -> None:
        """Store model and thinking level (and the system prompt) when they differ from the session's."""
        if self._session is not None:
            from tether.session.wiring import record_settings

            record_settings(
                self._session,
                model=self.model,
                thinking_level=self.thinking_level,
                system_prompt=self.agent.system_prompt,
            )

    async def _before_tool_call(
        self, context: BeforeToolCallContext, signal: object = None
    ) -> BeforeToolCallResult | None:
        call = context.tool_call
        needs_approval = call["name"] in self.always_ask or self._workspace.needs_approval(call)
        if self.approval == "yes" or not needs_approval:
            return None
        question = describe_call(call)
        if self.approval == "deny":
            return BeforeToolCallResult(
                block=True, reason=f"Not allowed by the approval policy 'deny': {question}"
            )
        if self._ask is None:
            return BeforeToolCallResult(
                block=True,
                reason=f"This call needs the user's approval and nobody can give it here ({question}). "
                "The user can rerun with --yes to allow it.",
            )
        if await self._ask(call, question):
            return None
        return BeforeToolCallResult(
            block=True, reason=f"The user declined this {call['name']} call. Do not retry it as is."
        )

    # -- compaction --------------------------------------------------------------------------------

    @property
    def _compaction(self) -> CompactionSettings:
        """The settings, scaled down for a small window (e.g. a 4k local model): when reserve and
        recent part do not fit in the window, each gets a quarter of it."""
        c = self.settings.compaction
        window = self.model.get("contextWindow") or 0
        if window and c.reserve_tokens + c.keep_recent_tokens >= window:
            return CompactionSettings(c.enabled, window // 4, window // 4)
        return CompactionSettings(c.enabled, c.reserve_tokens, c.keep_recent_tokens)

    def stream_fn(self) -> StreamFn:
        """The model call in use (the registry's ``stream_simple`` for real providers)."""
        from tether.agent.loop import default_stream_fn

        return self.agent.stream_fn or default_stream_fn()

    async def compact(
        self, instructions: str | None, *, reason: str = "manual", signal: AbortSignal | None = None
    ) -> str:
        """Summarise the older part of the conversation into a compaction entry; returns the summary."""
        from tether.session.compaction import CompactionError, compact

        session = self._require_session()
        await self._emit({"type": "compaction_start", "reason": reason})
        try:
            result = await compact(
                session,
                self.model,
                self.stream_fn(),
                instructions=instructions,
                settings=self._compaction,
                signal=signal,
            )
        except CompactionError as exc:
            aborted = signal is not None and signal.aborted
            await self._emit(
                {
                    "type": "compaction_end",
                    "reason": reason,
                    "result": None,
                    "aborted": aborted,
                    "willRetry": False,
                    "errorMessage": str(exc),
                }
            )
            raise
        if not self.is_running or reason == "overflow":
            self.agent.messages = session.messages
        self.last_compaction = result
        await self._emit(
            {
                "type": "compaction_end",
                "reason": reason,
                "result": {
                    "summary": result.summary,
                    "firstKeptEntryId": result.first_kept_entry_id,
                    "tokensBefore": result.tokens_before,
                    "tokensAfter": result.tokens_after,
                },
                "aborted": False,
                "willRetry": reason == "overflow",
            }
        )
        return result.summary

    # -- settings and session operations (slash commands, RPC, ACP) ---------------------------------

    def set_model(self, spec: str) -> ModelInfo:
        resolved = resolve_model(spec, None)
        self._resolved = resolved
        self.agent.model = resolved.model
        self.agent.stream_fn = resolved.stream_fn
        self.agent.thinking_level = cast(
            ThinkingLevel, _clamp_thinking(resolved.model, self.agent.thinking_level)
        )
        if self._session is not None:
            self._session.set_model(resolved.model)
        return resolved.model

    def set_thinking(self, level: str) -> str:
        effective = _clamp_thinking(self.model, level)
        self.agent.thinking_level = cast(ThinkingLevel, effective)
        if self._session is not None:
            self._session.set_thinking_level(effective)
        return effective

    def new_session(self) -> str | None:
        """Start over in a fresh session (same model and settings)."""
        self._attach(self._sessions.create(self.cwd) if self._sessions is not None else None)
        self._record_settings()
        return self.session_id

    def switch_session(self, session_id: str) -> None:
        sessions = self._require_sessions()
        self._attach(sessions.open(session_id))

    def fork(self, entry_id: str | None) -> str:
        """Copy this session up to ``entry_id`` (default: now) into a new one and continue there."""
        forked = self._require_sessions().fork(self._require_session().id, entry_id)
        self._attach(forked)
        return forked.id

    async def branch(
        self,
        entry_id: str | None,
        *,
        summarize: bool,
        instructions: str | None = None,
        signal: AbortSignal | None = None,
    ) -> str | None:
        """Move to another point of this session's tree (``None``: before the first entry);
        optionally summarise the branch left, steered by ``instructions``."""
        session = self._require_session()
        if summarize:
            from tether.session.compaction import summarize_branch

            await summarize_branch(
                session, entry_id, self.model, self.stream_fn(), instructions=instructions, signal=signal
            )
        else:
            session.branch(entry_id)
        self.agent.messages = session.messages
        summary = session.messages[-1] if summarize and session.messages else None
        return summary.get("summary") if summary is not None and summary["role"] == "branchSummary" else None

    def tree_text(self) -> str:
        from tether.cli.tree import render_tree

        return render_tree(self._require_session())

    def rename(self, title: str) -> None:
        self._require_session().rename(title)

    def export(self, path: Path) -> Path:
        session = self._require_session()
        if path.suffix == ".html":
            from tether.cli.export_html import write_html

            return write_html(path, session)
        return self._require_sessions().export(session.id, path)

    def stats(self) -> Stats:
        session = self._session
        store_path = getattr(self._sessions.store, "path", None) if self._sessions is not None else None
        return conversation_stats(
            self.agent.messages,
            self.model,
            session_id=self.session_id,
            session_file=str(store_path) if store_path is not None else None,
            title=session.title if session is not None else None,
        )

    async def close(self) -> None:
        if self._run is not None and not self._run.done():
            self.abort()
            await asyncio.gather(self._run, return_exceptions=True)
        if self._session is not None:
            self._session.close()
        if self._sessions is not None:
            self._sessions.close()

    def _attach(self, session: Session | None) -> None:
        if self._session is not None:
            self._session.close()
        self._session = session
        self.agent.messages = session.messages if session is not None else []
        self.agent.options.session_id = session.id if session is not None else None

    def _require_sessions(self) -> SessionManager:
        if self._sessions is None:
            raise LookupError("sessions are off in this run (--no-session)")
        return self._sessions

    def _require_session(self) -> Session:
        if self._session is None:
            raise LookupError("this run has no session (--no-session)")
        return self._session


def _now() -> int:
    return int(time.time() * 1000)


def _compaction_end(reason: str, compacted: Session | None, *, will_retry: bool) -> RuntimeEvent:
    """pi's ``compaction_end``: the newest compaction of ``compacted``, or ``result: null``."""
    result: dict[str, Any] | None = None
    if compacted is not None:
        entry = next((e for e in reversed(compacted.path()) if e["type"] == "compaction"), None)
        if entry is not None:
            keys = ("summary", "firstKeptEntryId", "tokensBefore", "tokensAfter")
            result = {k: entry.get(k) for k in keys if k in entry}
    event: RuntimeEvent = {
        "type": "compaction_end",
        "reason": reason,
        "result": result,
        "aborted": False,
        "willRetry": will_retry,
    }
    if result is None:
        event["errorMessage"] = "nothing to compact: the context is already as small as it gets"
    return event


def _user_message(text: str, images: Sequence[ImageContent]) -> UserMessage:
    content: Any = text if not images else [{"type": "text", "text": text}, *images]
    return {"role": "user", "content": content, "timestamp": _now()}


_TRANSIENT = re.compile(
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|529)\b|service.?unavailable"
    r"|server.?error|internal.?error|network.?error|connection.?(?:error|refused|reset)"
    r"|fetch failed|socket hang up|timed? ?out|upstream",
    re.IGNORECASE,
)


def is_transient_error(message: AssistantMessage) -> bool:
    """Did this reply fail for a reason a later attempt may not meet (load, limits, network)?

    A context overflow is not transient: compaction handles it."""
    if message["stopReason"] != "error" or is_context_overflow(message):
        return False
    return _TRANSIENT.search(message.get("errorMessage") or "") is not None


def _clamp_thinking(model: ModelInfo, level: str) -> str:
    from tether.ai.thinking import clamp_thinking_level

    return clamp_thinking_level(model, cast(Any, level))


def _stored_thinking(session: Session | None) -> str | None:
    return session.context.thinking_level if session is not None else None


def _choose_model(spec: str | None, settings: Settings, session: Session | None) -> ResolvedModel:
    """``--model`` wins; a resumed session keeps its model (as stored, so a resume works even
    when the catalog no longer lists it); else settings and defaults."""
    stored = session.context.model if session is not None else None
    if spec is None and stored is not None and stored.provider != "scripted":
        if stored.info is not None:
            return ResolvedModel(stored.info, None)
        return resolve_model(f"{stored.provider}/{stored.model_id}", None)
    return resolve_model(spec, settings.model)


def _open_session(choice: SessionChoice, cwd: Path) -> tuple[SessionManager | None, Session | None]:
    if not choice.persist:
        return None, None
    from tether.session import SessionManager

    sessions = SessionManager()
    try:
        if choice.session_id is not None:
            return sessions, sessions.open(choice.session_id)
        if choice.continue_latest:
            latest = sessions.resume(cwd)
            if latest is not None:
                return sessions, latest
        return sessions, sessions.create(cwd)
    except BaseException:
        sessions.close()
        raise
