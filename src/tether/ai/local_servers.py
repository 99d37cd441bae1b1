"""Which local model servers are running, and what models they serve.

Ollama, llama.cpp's server, vLLM and LM Studio all answer OpenAI's ``GET /v1/models`` on their
default loopback ports (``tether.ai.models.LOCAL_PROVIDERS``); so, presumably, do the providers
of ``models.json`` without a key (a server on this machine or the user's network). ``probe_local_servers`` asks all of them at once with a
short timeout, so ``tether models`` can list what is usable without waiting on servers that are
not there. A server that refuses the connection, times out, or answers something else is simply
absent from the result: probing never raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from tether.ai.models import (
    ProviderInfo,
    default_model,
    get_model,
    list_models,
    list_providers,
    providers_with_keys,
)
from tether.wire import ModelInfo

if TYPE_CHECKING:
    import httpx2

PROBE_TIMEOUT = 0.5
"""Seconds a local server gets to answer: loopback answers in milliseconds or not at all."""


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A local server that answered, with the ids of the models it serves."""

    provider: ProviderInfo
    model_ids: list[str]

    def models(self) -> list[ModelInfo]:
        """Its models as ``ModelInfo`` (the provider's defaults; ``models.json`` may say more)."""
        return [default_model(self.provider, model_id) for model_id in self.model_ids]


async def probe_local_servers(
    providers: Iterable[ProviderInfo] | None = None, timeout: float = PROBE_TIMEOUT
) -> list[LocalServer]:
    """The servers among ``providers`` (default: every local provider) that answer, in order."""
    candidates = [p for p in (list_providers() if providers is None else providers) if p.local]
    if not candidates:
        return []
    import httpx2  # here, not at module level: `import tether.ai` stays cheap for the CLI's start

    async with httpx2.AsyncClient(timeout=timeout, trust_env=False) as client:
        answers = await asyncio.gather(*(_probe(client, p) for p in candidates))
    return [server for server in answers if server is not None]


async def usable_models(timeout: float = PROBE_TIMEOUT) -> list[ModelInfo]:
    """The models a request can go to right now (what ``tether models`` lists).

    Those of providers whose API key is set, and those the local servers that answer are serving
    (described by ``models.json`` when it lists them, else with default limits).
    """
    models = [m for p in providers_with_keys() for m in list_models(p.name)]
    for server in await probe_local_servers(timeout=timeout):
        models.extend(get_model(server.provider.name, model_id) for model_id in server.model_ids)
    return models


async def _probe(client: httpx2.AsyncClient, provider: ProviderInfo) -> LocalServer | None:
    import httpx2

    url = provider.base_url.rstrip("/") + "/models"
    try:
        response = await client.get(url, headers=dict(provider.headers))
        if response.status_code != 200:
            return None
        body: object = response.json()
    except (httpx2.HTTPError, httpx2.InvalidURL, ValueError):
        return None
    return LocalServer(provider, _model_ids(body))


def _model_ids(body: object) -> list[str]:
    """Ids from an OpenAI-style list (``{"data": [{"id": ...}]}``); Ollama's native
    ``{"models": [{"name": ...}]}`` is understood too."""
    if not isinstance(body, dict):
        return []
    data = cast(dict[str, Any], body)
    items: object = data.get("data", data.get("models", []))
    if not isinstance(items, list):
        return []
    ids: list[str] = []
    for item in cast(list[object], items):
        if isinstance(item, dict):
            entry = cast(dict[str, Any], item)
            value = entry.get("id", entry.get("name"))
            if isinstance(value, str) and value not in ids:
                ids.append(value)
    return ids
