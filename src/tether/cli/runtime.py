"""The session runtime: one agent, one model, one durable session — no terminal in sight.

Every front end (interactive, print, JSON, and later RPC and ACP) drives a ``Runtime``: it builds
the ``Agent`` from settings, model, tools and session; persists every finished message through the
session store as it happens (a crash loses at most the message being streamed); compacts the
context when it nears the model's window or the provider reports an overflow; and owns the input
syntax of a prompt line (``/command``, ``!shell``, ``$python``, ``@file``). Front ends subscribe
to its events: the agent's own events plus ``queue_update`` (pending steering/follow-ups),
``compaction_start``/``compaction_end`` and ``notice`` — the same names pi's RPC protocol uses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tether.agent import Agent, AgentTool
from tether.cli.model_choice import ResolvedModel, resolve_model
from tether.cli.settings import Approval, Settings
from tether.cli.system_prompt import build_system_prompt
from tether.wire import AgentMessage, AssistantMessage, ImageContent, ModelInfo, UserMessage

RuntimeEvent = dict[str, Any]
Listener = Callable[[RuntimeEvent], Awaitable[None] | None]
AskApproval = Callable[[str, dict[str, Any], str], Awaitable[bool]]
"""``ask(tool_name, args, reason) -> allowed``: how a front end asks the user."""

DEFAULT_TOOLS = ("read", "write", "edit", "bash", "grep", "find", "ls")


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """Which session a run attaches to: a new one, the latest of the directory, or a given id."""

    persist: bool = True
    continue_latest: bool = False
    session_id: str | None = None
    create_if_missing: bool = False
    """``--session ID`` creates the session when it does not exist yet."""


@dataclass(slots=True)
class Stats:
    session_id: str | None
    session_file: str | None
    title: str | None
    messages: int
    user_messages: int
    assistant_messages: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    context_tokens: int
    context_window: int | None

    @property
    def context_percent(self) -> float | None:
        if not self.context_window:
            return None
        return 100.0 * self.context_tokens / self.context_window


@dataclass(slots=True)
class Pending:
    steering: list[str] = field(default_factory=lambda: [])
    follow_up: list[str] = field(default_factory=lambda: [])


class Runtime:
    """See the module docstring. Create with ``await Runtime.start(...)``; ``close()`` when done."""

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
        sessions: Any,
        session: Any,
    ) -> None:
        self.cwd = cwd
        self.settings = settings
        self.approval = approval
        self._ask = ask
        self._resolved = resolved
        self._sessions = sessions
        self._session = session
        self._listeners: list[Listener] = []
        self.pending = Pending()
        self._run: asyncio.Task[None] | None = None
        self.agent = Agent(
            model=resolved.model,
            system_prompt=system_prompt,
            thinking_level=thinking,
            tools=tools,
            stream_fn=resolved.stream_fn,
            convert_to_llm=_convert_to_llm,
            before_tool_call=self._before_tool_call,
            session_id=session.id if session is not None else None,
        )
        self.agent.subscribe(self._on_agent_event)

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    async def start(
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
        from tether.tools import Workspace, create_coding_tools

        choice = session or SessionChoice()
        sessions, stored = _open_session(choice, cwd)
        restored_model: ModelInfo | None = None
        if stored is not None and model_spec is None:
            restored_model = stored.model
        resolved = resolve_model(model_spec, settings.model) if restored_model is None else None
        if resolved is None:
            resolved = _restore_model(cast(ModelInfo, restored_model), settings)
        names = tuple(tool_names) if tool_names is not None else (settings.tools or DEFAULT_TOOLS)
        tools = create_coding_tools(Workspace(cwd), list(names))
        prompt = build_system_prompt(
            cwd,
            [(t.name, t.description) for t in tools],
            replace=system_prompt or settings.system_prompt,
            append=settings.append_system_prompt,
        )
        level = thinking or (stored.thinking_level if stored is not None else None) or settings.thinking
        runtime = cls(
            cwd=cwd,
            settings=settings,
            resolved=resolved,
            thinking=_clamp_thinking(resolved.model, level or "medium"),
            tools=tools,
            system_prompt=prompt,
            approval=approval or settings.approval,
            ask=ask,
            sessions=sessions,
            session=stored,
        )
        if stored is not None:
            runtime.agent.messages = stored.context_messages()
        return runtime

    # -- state -------------------------------------------------------------------------------------

    @property
    def model(self) -> ModelInfo:
        return self.agent.model

    @property
    def thinking_level(self) -> str:
        return self.agent.thinking_level

    @property
    def notice(self) -> str | None:
        return self._resolved.notice

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
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- running -----------------------------------------------------------------------------------

    async def prompt(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Run the agent on a user prompt to completion (``@path`` mentions attached first)."""
        from tether.tools import file_mentions

        messages: list[AgentMessage] = []
        mention = file_mentions(text, self.cwd)
        if mention is not None:
            messages.append(mention)
        content: Any = text if not images else [{"type": "text", "text": text}, *images]
        user: UserMessage = {"role": "user", "content": content, "timestamp": _now()}
        messages.append(user)
        await self._start(self.agent.prompt(messages))

    def start_prompt(self, text: str) -> asyncio.Task[None]:
        """``prompt`` as a background task (front ends stay responsive while it runs)."""
        task = asyncio.ensure_future(self.prompt(text))
        return task

    def steer(self, text: str) -> None:
        self.pending.steering.append(text)
        self.agent.steer({"role": "user", "content": text, "timestamp": _now()})
        self._emit_queue()

    def follow_up(self, text: str) -> None:
        self.pending.follow_up.append(text)
        self.agent.follow_up({"role": "user", "content": text, "timestamp": _now()})
        self._emit_queue()

    def abort(self) -> None:
        self.agent.abort()

    async def wait_idle(self) -> None:
        if self._run is not None:
            await asyncio.shield(self._run)

    async def _start(self, run: Awaitable[None]) -> None:
        if self.is_running:
            raise RuntimeError("the agent is already running: steer or queue a follow-up instead")

        async def body() -> None:
            await run
            await self._after_run()

        self._run = asyncio.ensure_future(body())
        await self._run

    # -- events and persistence --------------------------------------------------------------------

    async def _on_agent_event(self, event: Any, *_signal: object) -> None:
        kind = event["type"]
        if kind == "message_start" and event["message"]["role"] == "user":
            self._delivered(event["message"])
        if kind == "message_end":
            self._persist(event["message"])
        await self._emit(event)

    async def _emit(self, event: RuntimeEvent) -> None:
        for listener in list(self._listeners):
            outcome = listener(event)
            if outcome is not None:
                await outcome

    def _emit_soon(self, event: RuntimeEvent) -> None:
        for listener in list(self._listeners):
            outcome = listener(event)
            if outcome is not None:
                asyncio.ensure_future(outcome)

    def _emit_queue(self) -> None:
        self._emit_soon(
            {
                "type": "queue_update",
                "steering": list(self.pending.steering),
                "followUp": list(self.pending.follow_up),
            }
        )

    def _delivered(self, message: AgentMessage) -> None:
        content = message.get("content")
        text = content if isinstance(content, str) else None
        for queue in (self.pending.steering, self.pending.follow_up):
            if text in queue:
                queue.remove(cast(str, text))
                self._emit_queue()
                return

    def _persist(self, message: AgentMessage) -> None:
        if self._session is not None:
            self._session.append_message(message)

    async def _after_run(self) -> None:
        """Auto-compaction: after a run that overflowed or nears the context window."""
        last = self.last_assistant()
        if last is None or not self.settings.compaction.enabled:
            return
        from tether.session import is_context_overflow

        overflowed = last["stopReason"] == "error" and is_context_overflow(last.get("errorMessage", ""))
        window = self.model.get("contextWindow") or 0
        used = _context_tokens(last)
        if overflowed or (window and used > window - self.settings.compaction.reserve_tokens):
            await self.compact(None)

    async def _before_tool_call(self, context: Any, signal: object = None) -> Any:
        from tether.tools import needs_approval

        call = context.tool_call if hasattr(context, "tool_call") else context["toolCall"]
        reason = needs_approval(self.cwd, call["name"], call["arguments"])
        if reason is None or self.approval == "yes":
            return None
        if self.approval == "deny" or self._ask is None:
            why = "approval policy is 'deny'" if self.approval == "deny" else "nobody can approve it here"
            return {"block": True, "reason": f"{reason}: not allowed ({why}; rerun with --yes to allow)"}
        if await self._ask(call["name"], call["arguments"], reason):
            return None
        return {"block": True, "reason": f"{reason}: the user declined"}

    # -- session operations (used by slash commands, RPC and ACP) ----------------------------------

    async def compact(self, instructions: str | None) -> str:
        from tether.session import compact

        await self._emit({"type": "compaction_start", "reason": "manual" if instructions else "threshold"})
        result = await compact(
            self._session,
            self.agent.messages,
            model=self.model,
            stream_fn=self._resolved.stream_fn,
            instructions=instructions,
            keep_recent_tokens=self.settings.compaction.keep_recent_tokens,
        )
        self.agent.messages = result.messages
        await self._emit({"type": "compaction_end", "result": result.summary})
        return result.summary

    def set_model(self, spec: str) -> ModelInfo:
        resolved = resolve_model(spec, None)
        self._resolved = resolved
        self.agent.model = resolved.model
        self.agent.stream_fn = resolved.stream_fn
        self.agent.thinking_level = _clamp_thinking(resolved.model, self.agent.thinking_level)
        if self._session is not None:
            self._session.set_model(resolved.model)
        return resolved.model

    def set_thinking(self, level: str) -> str:
        effective = _clamp_thinking(self.model, level)
        self.agent.thinking_level = effective
        if self._session is not None:
            self._session.set_thinking_level(effective)
        return effective

    def stats(self) -> Stats:
        user = assistant = calls = 0
        tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost = 0.0
        for message in self.agent.messages:
            if message["role"] == "user":
                user += 1
            elif message["role"] == "assistant":
                assistant += 1
                calls += sum(1 for block in message["content"] if block["type"] == "toolCall")
                usage = message["usage"]
                for key in tokens:
                    tokens[key] += int(usage.get(key, 0))
                cost += float(usage["cost"]["total"])
        last = self.last_assistant()
        session = self._session
        return Stats(
            session_id=self.session_id,
            session_file=str(self._sessions.path) if self._sessions is not None else None,
            title=session.title if session is not None else None,
            messages=len(self.agent.messages),
            user_messages=user,
            assistant_messages=assistant,
            tool_calls=calls,
            input_tokens=tokens["input"],
            output_tokens=tokens["output"],
            cache_read_tokens=tokens["cacheRead"],
            cache_write_tokens=tokens["cacheWrite"],
            cost=cost,
            context_tokens=_context_tokens(last) if last is not None else 0,
            context_window=self.model.get("contextWindow"),
        )

    async def close(self) -> None:
        if self.is_running:
            self.abort()
            await asyncio.gather(cast(asyncio.Task[None], self._run), return_exceptions=True)
        if self._session is not None:
            self._session.close()
        if self._sessions is not None:
            self._sessions.close()


def _now() -> int:
    return int(time.time() * 1000)


def _context_tokens(message: AssistantMessage) -> int:
    usage = message["usage"]
    return int(usage.get("totalTokens") or 0) or (
        int(usage["input"]) + int(usage["output"]) + int(usage["cacheRead"]) + int(usage["cacheWrite"])
    )


def _clamp_thinking(model: ModelInfo, level: str) -> str:
    from tether.ai.thinking import clamp_thinking_level

    return clamp_thinking_level(model, cast(Any, level))


def _convert_to_llm(messages: list[AgentMessage]) -> Any:
    from tether.session import convert_to_llm

    return convert_to_llm(messages)


def _restore_model(model: ModelInfo, settings: Settings) -> ResolvedModel:
    return resolve_model(f"{model['provider']}/{model['id']}", settings.model)


def _open_session(choice: SessionChoice, cwd: Path) -> tuple[Any, Any]:
    if not choice.persist:
        return None, None
    from tether.session import SessionManager

    sessions = SessionManager.open_default()
    if choice.session_id is not None:
        if choice.create_if_missing and not sessions.exists(choice.session_id):
            return sessions, sessions.create(cwd=str(cwd), session_id=choice.session_id)
        return sessions, sessions.open(choice.session_id)
    if choice.continue_latest:
        latest = sessions.list(cwd=str(cwd), limit=1)
        if latest:
            return sessions, sessions.open(latest[0].id)
    return sessions, sessions.create(cwd=str(cwd))
