"""Providers registered by wire ``api`` name (``openai-completions``, ``anthropic-messages``, ...).

A model names its ``api``; ``stream`` looks the provider up here. The built-in providers are
registered on first lookup (``tether.ai.providers.BUILTIN``), so importing ``tether.ai`` stays
cheap; users add their own with ``register_provider`` (same contract: never raise, end failures
as an ``error`` event). The imports go one way: the registry loads the providers, which know
only ``api_provider.ApiProvider``, never the registry.
"""

from __future__ import annotations

import threading

from tether.ai.api_provider import ApiProvider

_providers: dict[str, ApiProvider] = {}
_builtins_loaded = False
_builtin: dict[str, ApiProvider] = {}
_loading = threading.Lock()


def register_provider(provider: ApiProvider) -> None:
    """Add or replace the provider for ``provider.api``."""
    _load_builtins()
    _providers[provider.api] = provider


def unregister_provider(api: str) -> None:
    _providers.pop(api, None)


def get_provider(api: str) -> ApiProvider | None:
    _load_builtins()
    return _providers.get(api)


def is_builtin(api: str) -> bool:
    """Whether ``api`` is served by the provider tether ships (not one a program or extension
    registered, nor a replacement of a built-in one)."""
    _load_builtins()
    provider = _providers.get(api)
    return provider is not None and provider is _builtin.get(api)


def registered_apis() -> list[str]:
    _load_builtins()
    return sorted(_providers)


def _load_builtins() -> None:
    """Register the built-in providers, once. The flag is set only when they are in, under a
    lock: set first, a second thread's first lookup (event loops in threads, ``run_sync`` from
    several) found the flag up and no provider yet, and its reply failed with "No provider is
    registered for api ..."."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _loading:
        if _builtins_loaded:
            return
        from tether.ai.providers import BUILTIN

        for provider in BUILTIN:
            _builtin[provider.api] = provider
            _providers.setdefault(provider.api, provider)
        _builtins_loaded = True
