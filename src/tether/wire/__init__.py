"""Transcript and protocol wire types (seed 000, ``reference/seeds/000-wire.txt``), their codecs and
their JSON Schema bundle.

Messages, content blocks and events are plain dicts typed as ``TypedDict``s; see
``tether.wire.messages`` for why. This package depends on nothing else in tether.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.wire.codec import (
        ASSISTANT_EVENT as ASSISTANT_EVENT,
        ASSISTANT_MESSAGE as ASSISTANT_MESSAGE,
        CONTENT_BLOCK as CONTENT_BLOCK,
        MESSAGE as MESSAGE,
        MESSAGES as MESSAGES,
        MODEL_INFO as MODEL_INFO,
        USAGE as USAGE,
        USER_CONTENT as USER_CONTENT,
        Codec as Codec,
        decode_message as decode_message,
        decode_messages as decode_messages,
        decode_model_info as decode_model_info,
        decode_new_message as decode_new_message,
        dumpb as dumpb,
        dumps as dumps,
    )
    from tether.wire.doc import Doc as Doc
    from tether.wire.errors import WireError as WireError
    from tether.wire.messages import (
        AgentMessage as AgentMessage,
        AnthropicServerToolContent as AnthropicServerToolContent,
        AssistantContent as AssistantContent,
        AssistantDoneEvent as AssistantDoneEvent,
        AssistantErrorEvent as AssistantErrorEvent,
        AssistantImageEndEvent as AssistantImageEndEvent,
        AssistantMessage as AssistantMessage,
        AssistantMessageEvent as AssistantMessageEvent,
        AssistantStartEvent as AssistantStartEvent,
        AssistantStreamingEvent as AssistantStreamingEvent,
        AssistantTextDeltaEvent as AssistantTextDeltaEvent,
        AssistantTextEndEvent as AssistantTextEndEvent,
        AssistantTextStartEvent as AssistantTextStartEvent,
        AssistantThinkingDeltaEvent as AssistantThinkingDeltaEvent,
        AssistantThinkingEndEvent as AssistantThinkingEndEvent,
        AssistantThinkingStartEvent as AssistantThinkingStartEvent,
        AssistantToolCallDeltaEvent as AssistantToolCallDeltaEvent,
        AssistantToolCallEndEvent as AssistantToolCallEndEvent,
        AssistantToolCallStartEvent as AssistantToolCallStartEvent,
        Attribution as Attribution,
        BashExecutionMessage as BashExecutionMessage,
        BranchSummaryMessage as BranchSummaryMessage,
        CompactionSummaryMessage as CompactionSummaryMessage,
        CustomMessage as CustomMessage,
        DeveloperMessage as DeveloperMessage,
        FallbackContent as FallbackContent,
        FileMentionItem as FileMentionItem,
        FileMentionMessage as FileMentionMessage,
        HookMessage as HookMessage,
        ImageContent as ImageContent,
        JsonObject as JsonObject,
        Message as Message,
        MessageContent as MessageContent,
        ParentIrc as ParentIrc,
        PythonExecutionMessage as PythonExecutionMessage,
        RedactedThinkingContent as RedactedThinkingContent,
        StopReason as StopReason,
        TextContent as TextContent,
        ThinkingContent as ThinkingContent,
        ToolCall as ToolCall,
        ToolResultMessage as ToolResultMessage,
        Usage as Usage,
        UsageCost as UsageCost,
        UserContent as UserContent,
        UserMessage as UserMessage,
    )
    from tether.wire.model import (
        ConfiguredThinkingLevel as ConfiguredThinkingLevel,
        Effort as Effort,
        ModelCost as ModelCost,
        ModelInfo as ModelInfo,
        ThinkingConfig as ThinkingConfig,
        ThinkingLevel as ThinkingLevel,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
