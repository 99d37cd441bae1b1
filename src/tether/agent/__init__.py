"""tether.agent: the agent loop, the stateful ``Agent`` and tool definitions (seed 001,
``reference/seeds/001-agent-loop.txt``)."""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports
from tether.agent.tool import (
    INJECTED_PARAMETERS as INJECTED_PARAMETERS,
    AgentTool as AgentTool,
    AgentToolResult as AgentToolResult,
    ToolExecute as ToolExecute,
    ToolExecutionMode as ToolExecutionMode,
    ToolUpdate as ToolUpdate,
    as_tool_result as as_tool_result,
    tool as tool,
    tool_schema as tool_schema,
)

if TYPE_CHECKING:
    from tether.agent.agent import (
        Agent as Agent,
        AgentBusyError as AgentBusyError,
        Listener as Listener,
        QueueMode as QueueMode,
    )
    from tether.agent.event_stream import AgentEventStream as AgentEventStream
    from tether.agent.hooks import (
        AfterToolCallContext as AfterToolCallContext,
        AfterToolCallResult as AfterToolCallResult,
        BeforeToolCallContext as BeforeToolCallContext,
        BeforeToolCallResult as BeforeToolCallResult,
        TurnContext as TurnContext,
    )
    from tether.agent.loop import (
        StepFailed as StepFailed,
        agent_loop as agent_loop,
        agent_loop_continue as agent_loop_continue,
        check_can_continue as check_can_continue,
        default_stream_fn as default_stream_fn,
        run_agent_loop as run_agent_loop,
        run_agent_loop_continue as run_agent_loop_continue,
    )
    from tether.agent.tool_execution import BLOCKED as BLOCKED
    from tether.agent.types import (
        AgentContext as AgentContext,
        AgentEndEvent as AgentEndEvent,
        AgentEvent as AgentEvent,
        AgentLoopConfig as AgentLoopConfig,
        AgentStartEvent as AgentStartEvent,
        Emit as Emit,
        MessageEndEvent as MessageEndEvent,
        MessagePoll as MessagePoll,
        MessageStartEvent as MessageStartEvent,
        MessageUpdateEvent as MessageUpdateEvent,
        ToolExecutionEndEvent as ToolExecutionEndEvent,
        ToolExecutionStartEvent as ToolExecutionStartEvent,
        ToolExecutionUpdateEvent as ToolExecutionUpdateEvent,
        TurnEndEvent as TurnEndEvent,
        TurnStartEvent as TurnStartEvent,
        default_convert_to_llm as default_convert_to_llm,
    )
    from tether.agent.validation import (
        ToolArgumentsError as ToolArgumentsError,
        validate_tool_arguments as validate_tool_arguments,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
