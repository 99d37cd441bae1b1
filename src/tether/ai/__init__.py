"""tether.ai: one streaming API over real LLM providers.

``stream``/``complete`` (and ``stream_simple``/``complete_simple`` with a unified thinking level)
dispatch on the model's ``api`` to a registered provider. See ``provider`` for how a provider is
built and ``registry`` for adding one.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. The TYPE_CHECKING imports give type checkers the names.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

# Imported first: the submodule ``models_file`` would otherwise replace the function of that
# name as a package attribute when something imports it later.
from tether.ai.models_file import ModelsFileError
from tether.ai.paths import config_dir, data_dir, models_file

if TYPE_CHECKING:
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
        Retry,
        ServiceTier,
        SimpleStreamOptions,
        StreamFn,
        StreamOptions,
        ThinkingLevel,
        Tool,
    )
    from tether.ai.usage import calculate_cost, set_usage

_LAZY = {
    "AbortController": "tether.ai.abort",
    "AbortSignal": "tether.ai.abort",
    "complete": "tether.ai.api",
    "complete_simple": "tether.ai.api",
    "stream": "tether.ai.api",
    "stream_simple": "tether.ai.api",
    "AssistantMessageEventStream": "tether.ai.event_stream",
    "empty_usage": "tether.ai.event_stream",
    "error_event": "tether.ai.event_stream",
    "new_assistant_message": "tether.ai.event_stream",
    "NO_RESULT_TEXT": "tether.ai.handoff",
    "is_same_model": "tether.ai.handoff",
    "target_tool_call_id": "tether.ai.handoff",
    "transform_messages": "tether.ai.handoff",
    "ApiKey": "tether.ai.keys",
    "env_vars_for": "tether.ai.keys",
    "resolve_api_key": "tether.ai.keys",
    "LocalServer": "tether.ai.local_servers",
    "probe_local_servers": "tether.ai.local_servers",
    "usable_models": "tether.ai.local_servers",
    "LOCAL_PROVIDERS": "tether.ai.models",
    "ModelRegistry": "tether.ai.models",
    "ProviderInfo": "tether.ai.models",
    "UnknownModelError": "tether.ai.models",
    "UnknownProviderError": "tether.ai.models",
    "default_model": "tether.ai.models",
    "find_model": "tether.ai.models",
    "get_model": "tether.ai.models",
    "get_provider_info": "tether.ai.models",
    "list_models": "tether.ai.models",
    "list_providers": "tether.ai.models",
    "provider_has_key": "tether.ai.models",
    "providers_with_keys": "tether.ai.models",
    "register_model": "tether.ai.models",
    "register_provider_info": "tether.ai.models",
    "PartialJson": "tether.ai.partial_json",
    "parse_arguments": "tether.ai.partial_json",
    "StreamParser": "tether.ai.provider",
    "failed_stream": "tether.ai.provider",
    "stream_http": "tether.ai.provider",
    "ApiProvider": "tether.ai.registry",
    "get_provider": "tether.ai.registry",
    "register_provider": "tether.ai.registry",
    "registered_apis": "tether.ai.registry",
    "unregister_provider": "tether.ai.registry",
    "SSEDecoder": "tether.ai.sse",
    "SSEEvent": "tether.ai.sse",
    "LEVELS": "tether.ai.thinking",
    "ThinkingBudget": "tether.ai.thinking",
    "ThinkingMode": "tether.ai.thinking",
    "clamp_thinking_level": "tether.ai.thinking",
    "plan_thinking_budget": "tether.ai.thinking",
    "supported_thinking_levels": "tether.ai.thinking",
    "thinking_budget": "tether.ai.thinking",
    "thinking_config": "tether.ai.thinking",
    "thinking_effort": "tether.ai.thinking",
    "HttpRequest": "tether.ai.transport",
    "RequestFailed": "tether.ai.transport",
    "open_stream": "tether.ai.transport",
    "retry_delay": "tether.ai.transport",
    "send": "tether.ai.transport",
    "shared_client": "tether.ai.transport",
    "CacheRetention": "tether.ai.types",
    "Context": "tether.ai.types",
    "Retry": "tether.ai.types",
    "ServiceTier": "tether.ai.types",
    "SimpleStreamOptions": "tether.ai.types",
    "StreamFn": "tether.ai.types",
    "StreamOptions": "tether.ai.types",
    "ThinkingLevel": "tether.ai.types",
    "Tool": "tether.ai.types",
    "calculate_cost": "tether.ai.usage",
    "set_usage": "tether.ai.usage",
}
"""Where each lazily loaded public name lives."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


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
    "Retry",
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
