"""What a provider is: one wire API's two stream functions, as ``ApiProvider``.

Its own module, below both the providers that make one and the registry that looks them up, so
a provider never imports the registry (``registry`` loads the built-in providers; they import
only this).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.wire import ModelInfo

StreamFunction = Callable[[ModelInfo, Context, StreamOptions | None], AssistantMessageEventStream]
SimpleStreamFunction = Callable[[ModelInfo, Context, SimpleStreamOptions | None], AssistantMessageEventStream]


@dataclass(frozen=True, slots=True)
class ApiProvider:
    """One wire API: ``stream`` takes the provider's own options (a ``StreamOptions`` subclass),
    ``stream_simple`` maps the unified thinking level of ``SimpleStreamOptions`` onto them."""

    api: str
    stream: StreamFunction
    stream_simple: SimpleStreamFunction
    max_tools: int | None = None
    """The most tools one request may declare, as the API documents it (``None``: it documents
    no limit); MCP servers' tools are budgeted to fit (``tether.mcp.tool_budget``)."""
