"""The unified entry points: ``stream``/``complete`` and their thinking-level ``_simple`` forms.

All four dispatch on ``model["api"]`` through the registry and keep the stream contract: they
never raise for request, network, provider or parsing failures; those end as an ``error`` event
(``stopReason`` ``error``/``aborted``) with a readable ``errorMessage``.
"""

from __future__ import annotations

from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.provider import failed_stream
from tether.ai.registry import get_provider
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.wire import AssistantMessage, ModelInfo


def stream(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one assistant message from ``model`` for ``context``."""
    provider = get_provider(model["api"])
    if provider is None:
        return failed_stream(model, _unknown_api(model))
    try:
        return provider.stream(model, context, options)
    except Exception as exc:  # the contract: a provider bug is an error message, not a raise
        return failed_stream(model, f"{type(exc).__name__}: {exc}")


async def complete(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """``stream`` and wait for the final message."""
    return await stream(model, context, options).result()


def stream_simple(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    """``stream`` with a unified thinking level (``options.reasoning``) mapped per provider."""
    provider = get_provider(model["api"])
    if provider is None:
        return failed_stream(model, _unknown_api(model))
    try:
        return provider.stream_simple(model, context, options)
    except Exception as exc:
        return failed_stream(model, f"{type(exc).__name__}: {exc}")


async def complete_simple(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessage:
    return await stream_simple(model, context, options).result()


def _unknown_api(model: ModelInfo) -> str:
    return f"No provider is registered for api {model['api']!r} (model {model['provider']}/{model['id']})."
