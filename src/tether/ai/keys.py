"""API keys: from the call's options, else the provider's conventional environment variable.

A missing key is not an exception: ``missing_key_message`` gives the text of the ``error``
message a provider ends its stream with, naming the variable to set. Local servers (Ollama,
llama.cpp, vLLM, LM Studio, anything on loopback) need no key, and neither does a provider of the
user's ``models.json`` that names no ``apiKeyEnv``; one that names it is read from that variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tether.ai.auth_file import stored_key, unused_key_reason
from tether.ai.key_names import env_vars_for
from tether.wire import ModelInfo

if TYPE_CHECKING:
    from tether.ai.models import ProviderInfo

KEYLESS_PROVIDERS = frozenset({"ollama", "llama.cpp", "llamacpp", "vllm", "lmstudio", "local"})
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


@dataclass(frozen=True, slots=True)
class ApiKey:
    value: str = field(repr=False)
    env_var: str | None
    """The variable it came from; ``None`` when passed explicitly."""


def _configured(model: ModelInfo) -> ProviderInfo | None:
    """The model's provider as the registry knows it (the user's ``models.json`` included).

    ``None`` when the registry has no such provider, or when ``models.json`` is broken: a key
    lookup never raises, and the broken file is reported by the model lookup itself.
    """
    from tether.ai.models import UnknownProviderError, get_provider_info
    from tether.ai.models_file import ModelsFileError

    try:
        return get_provider_info(model["provider"])
    except (UnknownProviderError, ModelsFileError):
        return None


def _key_vars(model: ModelInfo) -> tuple[str, ...]:
    """The variables to read for ``model``: its provider's ``apiKeyEnv`` first, then the conventional ones."""
    info = _configured(model)
    conventional = env_vars_for(model["provider"])
    if info is not None and info.api_key_env and info.api_key_env not in conventional:
        return (info.api_key_env, *conventional)
    return conventional


def resolve_api_key(model: ModelInfo, explicit: str | None = None) -> ApiKey | None:
    """The key to use for ``model``: ``explicit`` first, then the one ``/login`` saved
    (``tether.ai.auth_file``, as pi's ``auth.json`` comes before the environment), then the
    environment."""
    if explicit:
        return ApiKey(explicit, None)
    saved = stored_key(model["provider"])
    if saved is not None:
        return ApiKey(saved, None)
    for name in _key_vars(model):
        value = os.environ.get(name)
        if value:
            return ApiKey(value, name)
    return None


def is_keyless(model: ModelInfo) -> bool:
    """True for models served without authentication: local servers or ``compat.apiKey: false``."""
    compat = model.get("compat") or {}
    if compat.get("apiKey") is False or model["provider"] in KEYLESS_PROVIDERS:
        return True
    host = urlsplit(model["baseUrl"]).hostname or ""
    if host in _LOOPBACK_HOSTS:
        return True
    info = _configured(model)
    return info is not None and info.local and info.api_key_env is None


def missing_key_message(model: ModelInfo) -> str:
    """The error of a request without a key; when ``auth.json`` is damaged, why its key (or
    every key) was not used, since the user who ran ``/login`` believes one is saved."""
    names = " or ".join(_key_vars(model))
    message = f"No API key for provider {model['provider']!r}: set {names} in the environment."
    reason = unused_key_reason(model["provider"])
    return message if reason is None else f"{message} Not used: {reason}"
