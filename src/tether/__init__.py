"""tether: a Python agent runtime.

The front door: what a program that builds on tether needs, in one namespace (``docs/library.md``).

    import tether

    core = tether.create_agent_session(model="anthropic/claude-sonnet-4-5")
    async for event in core.prompt("What does this project do?"):
        ...

- the agent: ``Agent``, ``tool`` (``@tool`` on a typed function), ``AgentTool``,
  ``AgentToolResult``;
- the session core: ``AgentSession``, ``create_agent_session``, ``SessionChoice``,
  ``SessionManager``, ``Settings``;
- models and one-shot calls: ``get_model``, ``find_model``, ``list_models``, ``stream``,
  ``complete``, ``stream_simple``, ``complete_simple``;
- events and messages: ``AgentEvent``, ``SessionEvent``, ``AgentMessage``, ``AssistantMessage``,
  ``message_text`` (the text of any message); ``AgentBusyError`` (a prompt while a run goes on);
- ``AbortController``; ``RpcClient`` (drive ``tether --mode rpc`` from another process);
- testing without a provider: ``ScriptedModel``, ``reply``, ``tool_call``.

Everything else lives in the subpackages, lowest first: ``wire`` (transcript types), ``ai``
(streaming LLM API), ``agent`` (the agent loop), ``session`` (durable sessions and the core),
``tools`` (coding tools), ``rpc`` and ``acp`` (protocol servers), ``cli`` (terminal front ends)
and ``testing``. Dependencies point downward only. Names load on first use, so ``import tether``
costs nothing until then (``tether --version`` reads only ``__version__``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: typing alone costs --version a third of its time
if TYPE_CHECKING:
    from tether.agent import Agent, AgentBusyError, AgentEvent, AgentTool, AgentToolResult, tool
    from tether.ai.abort import AbortController
    from tether.ai.api import complete, complete_simple, stream, stream_simple
    from tether.ai.models import find_model, get_model, list_models
    from tether.rpc.client import RpcClient
    from tether.session.agent_session import AgentSession
    from tether.session.events import SessionEvent, message_text
    from tether.session.factory import SessionChoice, create_agent_session
    from tether.session.manager import SessionManager
    from tether.session.settings import Settings
    from tether.testing.scripted import ScriptedModel, reply, tool_call
    from tether.wire import AgentMessage, AssistantMessage

# The one place the version is written: pyproject.toml reads it from here (hatch's dynamic version).
__version__ = "0.1.0"

_LAZY = {
    "Agent": "tether.agent",
    "AgentBusyError": "tether.agent",
    "AgentEvent": "tether.agent",
    "AgentTool": "tether.agent",
    "AgentToolResult": "tether.agent",
    "tool": "tether.agent",
    "AbortController": "tether.ai.abort",
    "complete": "tether.ai.api",
    "complete_simple": "tether.ai.api",
    "stream": "tether.ai.api",
    "stream_simple": "tether.ai.api",
    "find_model": "tether.ai.models",
    "get_model": "tether.ai.models",
    "list_models": "tether.ai.models",
    "RpcClient": "tether.rpc.client",
    "AgentSession": "tether.session.agent_session",
    "SessionEvent": "tether.session.events",
    "message_text": "tether.session.events",
    "SessionChoice": "tether.session.factory",
    "create_agent_session": "tether.session.factory",
    "SessionManager": "tether.session.manager",
    "Settings": "tether.session.settings",
    "ScriptedModel": "tether.testing.scripted",
    "reply": "tether.testing.scripted",
    "tool_call": "tether.testing.scripted",
    "AgentMessage": "tether.wire",
    "AssistantMessage": "tether.wire",
}
"""Where each public name lives."""


from tether._lazy import lazy_exports  # noqa: E402  (after __version__: --version needs nothing else)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "AbortController",
    "Agent",
    "AgentBusyError",
    "AgentEvent",
    "AgentMessage",
    "AgentSession",
    "AgentTool",
    "AgentToolResult",
    "AssistantMessage",
    "RpcClient",
    "ScriptedModel",
    "SessionChoice",
    "SessionEvent",
    "SessionManager",
    "Settings",
    "__version__",
    "complete",
    "complete_simple",
    "create_agent_session",
    "find_model",
    "get_model",
    "list_models",
    "message_text",
    "reply",
    "stream",
    "stream_simple",
    "tool",
    "tool_call",
]
