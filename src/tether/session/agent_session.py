"""``AgentSession``: an ``Agent`` whose transcript lives in a ``Session``.

Binding sets the agent up from the session (transcript, and the thinking level, service tier
and system prompt its settings entries hold) and plugs the session in through the agent's own
hooks: ``convert_to_llm`` lowers all 11 roles for the agent's current model,
``transform_context`` compacts at the threshold and runs the prompt hooks, and a listener
records every finished message. Settings changed on the agent are recorded as entries when the
next run starts. ``prompt()``/``continue_()`` add the one retry after a context overflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from tether.agent import Agent, AgentEvent
from tether.agent.loop import default_stream_fn
from tether.ai.abort import AbortSignal
from tether.ai.types import ServiceTier, StreamFn, ThinkingLevel
from tether.session.budget import CompactionSettings
from tether.session.compaction import CompactionResult, compact
from tether.session.convert import lower_for
from tether.session.prompt import PromptHook
from tether.session.session import Session
from tether.session.wiring import record_message_end, record_settings, recover_from_overflow, request_view
from tether.wire import AgentMessage, ImageContent, ModelInfo

_THINKING: frozenset[str] = frozenset({"off", "minimal", "low", "medium", "high", "xhigh", "max"})
_TIERS: frozenset[str] = frozenset({"auto", "default", "flex", "priority", "scale"})


class AgentSession:
    """Runs ``agent`` on ``session``. ``close()`` unbinds and releases the session."""

    def __init__(
        self,
        agent: Agent,
        session: Session,
        *,
        hooks: Sequence[PromptHook] = (),
        compaction: CompactionSettings | None = None,
    ) -> None:
        self.agent = agent
        self.session = session
        self.hooks = list(hooks)
        self.compaction = compaction or CompactionSettings()
        self.compactions = 0
        ctx = session.context
        agent.messages = session.messages
        if ctx.thinking_level in _THINKING:
            agent.thinking_level = cast(ThinkingLevel, ctx.thinking_level)
        if ctx.service_tier in _TIERS:
            agent.service_tier = cast(ServiceTier, ctx.service_tier)
        if ctx.system_prompt is not None:
            agent.system_prompt = ctx.system_prompt
        if agent.model is None and ctx.model is not None and ctx.model.info is not None:
            agent.model = ctx.model.info
        agent.convert_to_llm = lower_for(lambda: agent.model)
        agent.transform_context = self._transform
        self._unsubscribe = agent.subscribe(self._on_event)

    async def prompt(
        self,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> list[AgentMessage]:
        added = await self.agent.prompt(prompt, images)
        return await self._retry_overflow(added)

    async def continue_(self) -> list[AgentMessage]:
        added = await self.agent.continue_()
        return await self._retry_overflow(added)

    async def compact(self, instructions: str | None = None) -> CompactionResult:
        """Manual compaction with the agent's model; the agent continues from the new context."""
        done = await compact(
            self.session,
            self._model(),
            self._stream_fn(),
            instructions=instructions,
            settings=self.compaction,
        )
        self.compactions += 1
        self.agent.messages = self.session.messages
        return done

    def branch(self, entry_id: str | None) -> str | None:
        """Move the session's leaf and give the agent that context."""
        leaf = self.session.branch(entry_id)
        self.agent.messages = self.session.messages
        return leaf

    def close(self) -> None:
        self._unsubscribe()
        self.session.close()

    # -- internals -------------------------------------------------------------------------------

    def _model(self) -> ModelInfo:
        if self.agent.model is None:
            raise ValueError("the agent has no model")
        return self.agent.model

    def _stream_fn(self) -> StreamFn:
        return self.agent.stream_fn or default_stream_fn()

    async def _on_event(self, event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "agent_start":
            agent = self.agent
            record_settings(
                self.session,
                model=agent.model,
                thinking_level=agent.thinking_level,
                service_tier=agent.service_tier,
                system_prompt=agent.system_prompt,
            )
        record_message_end(self.session, event)

    async def _transform(
        self, messages: list[AgentMessage], signal: AbortSignal | None
    ) -> list[AgentMessage]:
        request, compacted = await request_view(
            self.session,
            messages,
            model=self._model(),
            stream_fn=self._stream_fn(),
            hooks=self.hooks,
            compaction=self.compaction,
            signal=signal,
        )
        self.compactions += compacted
        return request

    async def _retry_overflow(self, added: list[AgentMessage]) -> list[AgentMessage]:
        recovered = await recover_from_overflow(
            self.session,
            added,
            model=self._model(),
            stream_fn=self._stream_fn(),
            compaction=self.compaction,
            signal=None,
        )
        if not recovered:
            return added
        self.compactions += 1
        self.agent.messages = self.session.messages
        return [*added, *await self.agent.continue_()]
