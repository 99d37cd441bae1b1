"""tether.ai."""

# --- model catalog, user models, paths, thinking levels (branch `catalog`) ---------------------
from tether.ai.local_servers import LocalServer, probe_local_servers
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
from tether.ai.paths import config_dir, data_dir, models_file
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

__all__ = [
    # catalog block
    "LEVELS",
    "LOCAL_PROVIDERS",
    "LocalServer",
    "ModelRegistry",
    "ModelsFileError",
    "ProviderInfo",
    "ThinkingBudget",
    "ThinkingMode",
    "UnknownModelError",
    "UnknownProviderError",
    "clamp_thinking_level",
    "config_dir",
    "data_dir",
    "default_model",
    "find_model",
    "get_model",
    "get_provider_info",
    "list_models",
    "list_providers",
    "models_file",
    "plan_thinking_budget",
    "probe_local_servers",
    "provider_has_key",
    "providers_with_keys",
    "register_model",
    "register_provider_info",
    "supported_thinking_levels",
    "thinking_budget",
    "thinking_config",
    "thinking_effort",
    # end of catalog block
]
