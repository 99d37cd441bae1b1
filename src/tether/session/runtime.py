"""Running the agent loop on a session: record, hook, lower, compact.

``SessionRuntime`` wires a ``Session`` into ``tether.agent``'s loop through the loop's own
extension points, so the loop itself knows nothing about storage:

- ``emit``: every ``message_end`` is appended to the session (the runtime assigns id and
  timestamp) before the loop goes on, then the event goes to the host's listener;
- ``transform_context``: before each model call, compacts when the context has reached
  ``context_window - reserve_tokens``, then hands the request (the session's context, compacted
  or not) to the prompt hooks through a ``PromptEditor``;
- ``convert_to_llm``: ``lower_for(model)`` (all 11 roles, developer mapping per model);
- options and system prompt come from the session's settings entries (thinking level, service
  tier, system prompt), and a model different from the session's is recorded as a
  ``model_change`` entry before the run.

A run that ends with a context-overflow error is retried once: the failed reply is left on an
abandoned branch (nothing is deleted), the session is compacted, and the loop continues.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from tether.agent import AgentContext, AgentEvent, AgentLoopConfig, AgentTool
from tether.agent.loop import run_agent_loop, run_agent_loop_continue
from tether.ai.abort import AbortSignal
from tether.ai.types import ServiceTier, SimpleStreamOptions, StreamFn, ThinkingLevel
from tether.session.budget import CompactionSettings
from tether.session.compaction import CompactionResult, compact, summarize_branch
from tether.session.convert import lower_for
from tether.session.prompt import PromptHook
from tether.session.session import Session, now_ms
from tether.session.wiring import record_message_end, record_settings, recover_from_overflow, request_view
from tether.wire import AgentMessage, ImageContent, ModelInfo, TextContent

Listener = Callable[[AgentEvent], Awaitable[None]]


@dataclass(slots=True)
class SessionRuntime:
    """Runs prompts on ``session`` with ``model`` through ``stream_fn``."""

    session: Session
    model: ModelInfo
    stream_fn: StreamFn
    tools: Sequence[AgentTool] = ()
    hooks: list[PromptHook] = field(default_factory=lambda: [])
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    listener: Listener | None = None
    options: SimpleStreamOptions = field(default_factory=SimpleStreamOptions)
    """Base stream options; the session's thinking level and service tier override them."""
    compactions: int = 0
    """How many compactions this runtime performed (threshold and overflow)."""

    async def prompt(
        self,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] = (),
        signal: AbortSignal | None = None,
    ) -> list[AgentMessage]:
        """Run the agent on a new prompt; returns the messages the run added."""
        self._record_model()
        prompts = _prompts(prompt, images)
        added = await run_agent_loop(
            prompts, self.agent_context(), self.loop_config(), self._emit, signal, self.stream_fn
        )
        return await self._retry_overflow(added, signal)

    async def continue_(self, signal: AbortSignal | None = None) -> list[AgentMessage]:
        """Continue from the session's context as it is (after tool results, or a retry)."""
        self._record_model()
        added = await run_agent_loop_continue(
            self.agent_context(), self.loop_config(), self._emit, signal, self.stream_fn
        )
        return await self._retry_overflow(added, signal)

    async def compact(
        self, instructions: str | None = None, signal: AbortSignal | None = None
    ) -> CompactionResult:
        """Manual compaction with the runtime's model (``CompactionError`` if nothing to do)."""
        done = await compact(
            self.session,
            self.model,
            self.stream_fn,
            instructions=instructions,
            settings=self.compaction,
            signal=signal,
        )
        self.compactions += 1
        return done

    async def branch(
        self, entry_id: str | None, *, summarize: bool = False, signal: AbortSignal | None = None
    ) -> str | None:
        """Move the leaf; with ``summarize``, leave a summary of the abandoned branch there."""
        if not summarize:
            return self.session.branch(entry_id)
        return await summarize_branch(self.session, entry_id, self.model, self.stream_fn, signal=signal)

    def agent_context(self) -> AgentContext:
        ctx = self.session.context
        return AgentContext(
            system_prompt=ctx.system_prompt or "", messages=list(ctx.messages), tools=self.tools
        )

    def loop_config(self) -> AgentLoopConfig:
        ctx = self.session.context
        options = dataclasses.replace(self.options, session_id=self.session.id)
        if ctx.thinking_level is not None and ctx.thinking_level != "inherit":
            options.reasoning = cast(ThinkingLevel, ctx.thinking_level)
        if ctx.service_tier is not None:
            options.service_tier = cast(ServiceTier, ctx.service_tier)
        return AgentLoopConfig(
            model=self.model,
            options=options,
            convert_to_llm=lower_for(self.model),
            transform_context=self.transform_context,
            get_system_prompt=lambda: self.session.context.system_prompt or "",
        )

    async def transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        """The request for one model call: the session's (compacted) context plus hooks' edits."""
        request, compacted = await request_view(
            self.session,
            messages,
            model=self.model,
            stream_fn=self.stream_fn,
            hooks=self.hooks,
            compaction=self.compaction,
            signal=signal,
        )
        self.compactions += compacted
        return request

    # -- internals -------------------------------------------------------------------------------

    async def _emit(self, event: AgentEvent) -> None:
        record_message_end(self.session, event)
        if self.listener is not None:
            await self.listener(event)

    def _record_model(self) -> None:
        record_settings(
            self.session,
            model=self.model,
            thinking_level=self.session.context.thinking_level,
            service_tier=self.session.context.service_tier,
            system_prompt=self.session.context.system_prompt,
        )

    async def _retry_overflow(
        self, added: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        recovered = await recover_from_overflow(
            self.session,
            added,
            model=self.model,
            stream_fn=self.stream_fn,
            compaction=self.compaction,
            signal=signal,
        )
        if not recovered:
            return added
        self.compactions += 1
        retried = await run_agent_loop_continue(
            self.agent_context(), self.loop_config(), self._emit, signal, self.stream_fn
        )
        return [*added, *retried]


def _prompts(
    prompt: str | AgentMessage | Sequence[AgentMessage], images: Sequence[ImageContent]
) -> list[AgentMessage]:
    if isinstance(prompt, str):
        content: list[TextContent | ImageContent] = [{"type": "text", "text": prompt}, *images]
        message = {
            "role": "user",
            "content": content if images else prompt,
            "timestamp": now_ms(),
        }
        return [cast(AgentMessage, message)]
    if isinstance(prompt, dict):
        return [prompt]
    return list(prompt)
