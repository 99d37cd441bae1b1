"""tether.ai: one streaming API over real LLM providers.

``stream``/``complete`` (and ``stream_simple``/``complete_simple`` with a unified thinking level)
dispatch on the model's ``api`` to a registered provider. See ``provider`` for how a provider is
built and ``registry`` for adding one.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

# Imported first: the submodule ``models_file`` would otherwise replace the function of that
# name as a package attribute when something imports it later.
from tether.ai.models_file import ModelsFileError as ModelsFileError
from tether.ai.paths import config_dir as config_dir, data_dir as data_dir, models_file as models_file

if TYPE_CHECKING:
    from tether.ai.abort import AbortController as AbortController, AbortSignal as AbortSignal
    from tether.ai.api import (
        complete as complete,
        complete_simple as complete_simple,
        stream as stream,
        stream_simple as stream_simple,
    )
    from tether.ai.api_provider import ApiProvider as ApiProvider
    from tether.ai.connections import (
        DEFAULT_MAX_CONNECTIONS as DEFAULT_MAX_CONNECTIONS,
        connection_limit as connection_limit,
        set_connection_limit as set_connection_limit,
    )
    from tether.ai.event_stream import (
        AssistantMessageEventStream as AssistantMessageEventStream,
        empty_usage as empty_usage,
        error_event as error_event,
        new_assistant_message as new_assistant_message,
    )
    from tether.ai.handoff import (
        NO_RESULT_TEXT as NO_RESULT_TEXT,
        is_same_model as is_same_model,
        target_tool_call_id as target_tool_call_id,
        transform_messages as transform_messages,
    )
    from tether.ai.key_names import env_vars_for as env_vars_for
    from tether.ai.keys import ApiKey as ApiKey, resolve_api_key as resolve_api_key
    from tether.ai.local_servers import (
        LocalServer as LocalServer,
        probe_local_servers as probe_local_servers,
        usable_models as usable_models,
    )
    from tether.ai.models import (
        LOCAL_PROVIDERS as LOCAL_PROVIDERS,
        ModelRegistry as ModelRegistry,
        ProviderInfo as ProviderInfo,
        UnknownModelError as UnknownModelError,
        UnknownProviderError as UnknownProviderError,
        default_model as default_model,
        find_model as find_model,
        get_model as get_model,
        get_provider_info as get_provider_info,
        list_models as list_models,
        list_providers as list_providers,
        provider_has_key as provider_has_key,
        providers_with_keys as providers_with_keys,
        register_model as register_model,
        register_provider_info as register_provider_info,
    )
    from tether.ai.partial_json import PartialJson as PartialJson, parse_arguments as parse_arguments
    from tether.ai.provider import (
        StreamParser as StreamParser,
        failed_stream as failed_stream,
        stream_http as stream_http,
    )
    from tether.ai.registry import (
        get_provider as get_provider,
        register_provider as register_provider,
        registered_apis as registered_apis,
        unregister_provider as unregister_provider,
    )
    from tether.ai.retry import (
        RequestFailed as RequestFailed,
        retry_after as retry_after,
        retry_delay as retry_delay,
    )
    from tether.ai.sse import SSEDecoder as SSEDecoder, SSEEvent as SSEEvent
    from tether.ai.thinking import (
        LEVELS as LEVELS,
        ThinkingBudget as ThinkingBudget,
        ThinkingMode as ThinkingMode,
        clamp_thinking_level as clamp_thinking_level,
        plan_thinking_budget as plan_thinking_budget,
        supported_thinking_levels as supported_thinking_levels,
        thinking_budget as thinking_budget,
        thinking_config as thinking_config,
        thinking_effort as thinking_effort,
    )
    from tether.ai.transport import (
        EncodedRequest as EncodedRequest,
        HttpRequest as HttpRequest,
        encode_request as encode_request,
        send as send,
    )
    from tether.ai.types import (
        CacheRetention as CacheRetention,
        Context as Context,
        Retry as Retry,
        ServiceTier as ServiceTier,
        SimpleStreamOptions as SimpleStreamOptions,
        StreamFn as StreamFn,
        StreamOptions as StreamOptions,
        ThinkingLevel as ThinkingLevel,
        Tool as Tool,
    )
    from tether.ai.usage import calculate_cost as calculate_cost, set_usage as set_usage


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
