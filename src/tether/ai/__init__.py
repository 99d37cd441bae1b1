"""tether.ai: one streaming API over real LLM providers.

``stream``/``complete`` (and ``stream_simple``/``complete_simple`` with a unified thinking level)
dispatch on the model's ``api`` to a registered provider. See ``provider`` for how a provider is
built and ``registry`` for adding one.
"""

from tether.ai.abort import AbortController, AbortSignal
from tether.ai.api import complete, complete_simple, stream, stream_simple
from tether.ai.event_stream import (
    AssistantMessageEventStream,
    empty_usage,
    error_event,
    new_assistant_message,
)
from tether.ai.keys import ApiKey, env_vars_for, resolve_api_key
from tether.ai.partial_json import PartialJson, parse_arguments
from tether.ai.provider import StreamParser, failed_stream, stream_http
from tether.ai.registry import (
    ApiProvider,
    get_provider,
    register_provider,
    registered_apis,
    unregister_provider,
)
from tether.ai.sse import SSEDecoder, SSEEvent
from tether.ai.transport import HttpRequest, RequestFailed, open_stream, retry_delay, send, shared_client
from tether.ai.types import (
    CacheRetention,
    Context,
    ServiceTier,
    SimpleStreamOptions,
    StreamFn,
    StreamOptions,
    ThinkingLevel,
    Tool,
)
from tether.ai.usage import calculate_cost, set_usage

__all__ = [
    "AbortController",
    "AbortSignal",
    "ApiKey",
    "ApiProvider",
    "AssistantMessageEventStream",
    "CacheRetention",
    "Context",
    "HttpRequest",
    "PartialJson",
    "RequestFailed",
    "SSEDecoder",
    "SSEEvent",
    "ServiceTier",
    "SimpleStreamOptions",
    "StreamFn",
    "StreamOptions",
    "StreamParser",
    "ThinkingLevel",
    "Tool",
    "calculate_cost",
    "complete",
    "complete_simple",
    "empty_usage",
    "env_vars_for",
    "error_event",
    "failed_stream",
    "get_provider",
    "new_assistant_message",
    "open_stream",
    "parse_arguments",
    "register_provider",
    "registered_apis",
    "resolve_api_key",
    "retry_delay",
    "send",
    "set_usage",
    "shared_client",
    "stream",
    "stream_http",
    "stream_simple",
    "unregister_provider",
]
