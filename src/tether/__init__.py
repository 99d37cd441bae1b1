"""tether: a Python agent runtime.

The front door: what a program that builds on tether needs, in one namespace (``docs/library.md``).

    import tether

    core = tether.create_agent_session(tether.AgentOptions(model="anthropic/claude-sonnet-4-5"))
    async for event in core.prompt("What does this project do?"):
        ...

- the agent: ``Agent``, ``tool`` (``@tool`` on a typed function), ``AgentTool``,
  ``AgentToolResult``;
- the session core: ``AgentSession``, ``create_agent_session`` and its ``AgentOptions``,
  ``SessionChoice``, ``SessionManager``, ``Settings``;
- models and one-shot calls: ``get_model``, ``find_model``, ``list_models``, ``stream``,
  ``complete``, ``stream_simple``, ``complete_simple``;
- events and messages: ``AgentEvent``, ``SessionEvent``, ``AgentMessage``, ``AssistantMessage``,
  ``message_text`` (the text of any message); ``AgentBusyError`` (a prompt while a run goes on);
- errors: ``TetherError``, the root of every exception tether raises on purpose, and its
  families ``UserError``, ``ModelError``, ``TransportError``, ``ToolError``, ``SessionError``
  (``tether.errors``);
- ``AbortController``; ``RpcClient`` (drive ``tether --mode rpc`` from another process);
- ``tune_gc``: Python's garbage collector set for many sessions, for a program to call at its
  own start-up (the front ends do; the library never changes it on its own);
- testing without a provider: ``ScriptedModel``, ``reply``, ``tool_call``.

Everything else lives in the subpackages, lowest first: ``wire`` (transcript types), ``ai``
(streaming LLM API), ``telemetry`` (OpenTelemetry spans and metrics of runs), ``agent``
(the agent loop), ``tools`` (coding tools), ``mcp`` (MCP servers' tools), ``store`` (where
sessions are kept: SQLite, PostgreSQL), ``session`` (durable sessions and the core), ``durable``
(runs that survive a crash, on DBOS workers; the ``durable`` extra), ``rpc`` and ``acp``
(protocol servers), ``cli`` (terminal front ends) and ``testing``. Under them all lie leaf
modules: ``_version``, ``errors`` (the ``TetherError`` family), ``_lazy``, ``_event_loop`` and
``gc_tuning``. Dependencies point downward only. Names load on first use, so ``import tether``
costs nothing until then (``tether --version`` reads only ``tether._version``).
"""

from __future__ import annotations

from tether._lazy import lazy_exports
from tether._version import __version__ as __version__

TYPE_CHECKING = False  # not `from typing import ...`: typing alone costs --version a third of its time
if TYPE_CHECKING:
    from tether.agent import (
        Agent as Agent,
        AgentBusyError as AgentBusyError,
        AgentEvent as AgentEvent,
        AgentTool as AgentTool,
        AgentToolResult as AgentToolResult,
        tool as tool,
    )
    from tether.ai.abort import AbortController as AbortController, AbortSignal as AbortSignal
    from tether.ai.api import (
        complete as complete,
        complete_simple as complete_simple,
        stream as stream,
        stream_simple as stream_simple,
    )
    from tether.ai.models import find_model as find_model, get_model as get_model, list_models as list_models
    from tether.errors import (
        ModelError as ModelError,
        TetherError as TetherError,
        ToolError as ToolError,
        TransportError as TransportError,
        UserError as UserError,
    )
    from tether.gc_tuning import tune_gc as tune_gc
    from tether.rpc.client import RpcClient as RpcClient
    from tether.session.agent_session import AgentSession as AgentSession
    from tether.session.compaction import (
        CompactionError as CompactionError,
        NothingToCompactError as NothingToCompactError,
    )
    from tether.session.events import SessionEvent as SessionEvent, message_text as message_text
    from tether.session.factory import (
        SessionChoice as SessionChoice,
        SetupError as SetupError,
        create_agent_session as create_agent_session,
    )
    from tether.session.manager import SessionManager as SessionManager
    from tether.session.options import AgentOptions as AgentOptions
    from tether.session.output import OutputError as OutputError
    from tether.session.settings import (
        RetrySettings as RetrySettings,
        Settings as Settings,
        SettingsError as SettingsError,
    )
    from tether.session.sync import run_sync as run_sync
    from tether.store.errors import SessionError as SessionError
    from tether.testing.scripted import ScriptedModel as ScriptedModel, reply as reply, tool_call as tool_call
    from tether.tools.coding import (
        CODING_TOOLS as CODING_TOOLS,
        READ_ONLY_TOOLS as READ_ONLY_TOOLS,
        coding_tools as coding_tools,
    )
    from tether.wire import (
        AgentMessage as AgentMessage,
        AssistantMessage as AssistantMessage,
        ToolCall as ToolCall,
        WireError as WireError,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
