"""tether.agent: the agent loop, the stateful ``Agent`` and tool definitions (seed 001,
``reference/seeds/001-agent-loop.txt``)."""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. The TYPE_CHECKING imports give type checkers the names.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports
from tether.agent.tool import (
    INJECTED_PARAMETERS,
    AgentTool,
    AgentToolResult,
    ToolExecute,
    ToolExecutionMode,
    ToolUpdate,
    as_tool_result,
    tool,
    tool_schema,
)

if TYPE_CHECKING:
    from tether.agent.agent import Agent, AgentBusyError, Listener, QueueMode
    from tether.agent.event_stream import AgentEventStream
    from tether.agent.loop import (
        StepFailed,
        agent_loop,
        agent_loop_continue,
        check_can_continue,
        default_stream_fn,
        run_agent_loop,
        run_agent_loop_continue,
    )
    from tether.agent.tool_execution import BLOCKED, ToolBatch
    from tether.agent.types import (
        AfterToolCallContext,
        AfterToolCallResult,
        AgentContext,
        AgentEndEvent,
        AgentEvent,
        AgentLoopConfig,
        AgentStartEvent,
        BeforeToolCallContext,
        BeforeToolCallResult,
        Emit,
        MessageEndEvent,
        MessagePoll,
        MessageStartEvent,
        MessageUpdateEvent,
        ToolExecutionEndEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
        TurnContext,
        TurnEndEvent,
        TurnStartEvent,
        default_convert_to_llm,
    )
    from tether.agent.validation import ToolArgumentsError, validate_tool_arguments

_LAZY = {
    "Agent": "tether.agent.agent",
    "AgentBusyError": "tether.agent.agent",
    "Listener": "tether.agent.agent",
    "QueueMode": "tether.agent.agent",
    "AgentEventStream": "tether.agent.event_stream",
    "StepFailed": "tether.agent.loop",
    "agent_loop": "tether.agent.loop",
    "agent_loop_continue": "tether.agent.loop",
    "check_can_continue": "tether.agent.loop",
    "default_stream_fn": "tether.agent.loop",
    "run_agent_loop": "tether.agent.loop",
    "run_agent_loop_continue": "tether.agent.loop",
    "BLOCKED": "tether.agent.tool_execution",
    "ToolBatch": "tether.agent.tool_execution",
    "AfterToolCallContext": "tether.agent.types",
    "AfterToolCallResult": "tether.agent.types",
    "AgentContext": "tether.agent.types",
    "AgentEndEvent": "tether.agent.types",
    "AgentEvent": "tether.agent.types",
    "AgentLoopConfig": "tether.agent.types",
    "AgentStartEvent": "tether.agent.types",
    "BeforeToolCallContext": "tether.agent.types",
    "BeforeToolCallResult": "tether.agent.types",
    "Emit": "tether.agent.types",
    "MessageEndEvent": "tether.agent.types",
    "MessagePoll": "tether.agent.types",
    "MessageStartEvent": "tether.agent.types",
    "MessageUpdateEvent": "tether.agent.types",
    "ToolExecutionEndEvent": "tether.agent.types",
    "ToolExecutionStartEvent": "tether.agent.types",
    "ToolExecutionUpdateEvent": "tether.agent.types",
    "TurnContext": "tether.agent.types",
    "TurnEndEvent": "tether.agent.types",
    "TurnStartEvent": "tether.agent.types",
    "default_convert_to_llm": "tether.agent.types",
    "ToolArgumentsError": "tether.agent.validation",
    "validate_tool_arguments": "tether.agent.validation",
}
"""Where each lazily loaded public name lives."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "BLOCKED",
    "INJECTED_PARAMETERS",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentEventStream",
    "AgentLoopConfig",
    "AgentStartEvent",
    "AgentTool",
    "AgentToolResult",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "Emit",
    "Listener",
    "MessageEndEvent",
    "MessagePoll",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "QueueMode",
    "StepFailed",
    "ToolArgumentsError",
    "ToolBatch",
    "ToolExecute",
    "ToolExecutionEndEvent",
    "ToolExecutionMode",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolUpdate",
    "TurnContext",
    "TurnEndEvent",
    "TurnStartEvent",
    "agent_loop",
    "agent_loop_continue",
    "as_tool_result",
    "check_can_continue",
    "default_convert_to_llm",
    "default_stream_fn",
    "run_agent_loop",
    "run_agent_loop_continue",
    "tool",
    "tool_schema",
    "validate_tool_arguments",
]
