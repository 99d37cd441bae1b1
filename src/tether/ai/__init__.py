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
from tether.ai.handoff import NO_RESULT_TEXT, is_same_model, target_tool_call_id, transform_messages
from tether.ai.keys import ApiKey, env_vars_for, resolve_api_key
from tether.ai.local_servers import LocalServer, probe_local_servers, usable_models
from tether.ai.models import (
    LOCAL_PROVIDERS,
    ModelRegistry,
    ProviderInfo,
    UnknownModelError,
    UnknownProviderError,
    default_model,
    find_model,
    get_model,
    get_provider_info,
    list_models,
    list_providers,
    provider_has_key,
    providers_with_keys,
    register_model,
    register_provider_info,
)
from tether.ai.models_file import ModelsFileError
from tether.ai.partial_json import PartialJson, parse_arguments
from tether.ai.paths import config_dir, data_dir, models_file
from tether.ai.provider import StreamParser, failed_stream, stream_http
from tether.ai.registry import (
    ApiProvider,
    get_provider,
    register_provider,
    registered_apis,
    unregister_provider,
)
from tether.ai.sse import SSEDecoder, SSEEvent
from tether.ai.thinking import (
    LEVELS,
    ThinkingBudget,
    ThinkingMode,
    clamp_thinking_level,
    plan_thinking_budget,
    supported_thinking_levels,
    thinking_budget,
    thinking_config,
    thinking_effort,
)
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
    "LEVELS",
    "LOCAL_PROVIDERS",
    "NO_RESULT_TEXT",
    "AbortController",
    "AbortSignal",
    "ApiKey",
    "ApiProvider",
    "AssistantMessageEventStream",
    "CacheRetention",
    "Context",
    "HttpRequest",
    "LocalServer",
    "ModelRegistry",
    "ModelsFileError",
    "PartialJson",
    "ProviderInfo",
    "RequestFailed",
    "SSEDecoder",
    "SSEEvent",
    "ServiceTier",
    "SimpleStreamOptions",
    "StreamFn",
    "StreamOptions",
    "StreamParser",
    "ThinkingBudget",
    "ThinkingLevel",
    "ThinkingMode",
    "Tool",
    "UnknownModelError",
    "UnknownProviderError",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "config_dir",
    "data_dir",
    "default_model",
    "empty_usage",
    "env_vars_for",
    "error_event",
    "failed_stream",
    "find_model",
    "get_model",
    "get_provider",
    "get_provider_info",
    "is_same_model",
    "list_models",
    "list_providers",
    "models_file",
    "new_assistant_message",
    "open_stream",
    "parse_arguments",
    "plan_thinking_budget",
    "probe_local_servers",
    "provider_has_key",
    "providers_with_keys",
    "register_model",
    "register_provider",
    "register_provider_info",
    "registered_apis",
    "resolve_api_key",
    "retry_delay",
    "send",
    "set_usage",
    "shared_client",
    "stream",
    "stream_http",
    "stream_simple",
    "supported_thinking_levels",
    "target_tool_call_id",
    "thinking_budget",
    "thinking_config",
    "thinking_effort",
    "transform_messages",
    "unregister_provider",
    "usable_models",
]
