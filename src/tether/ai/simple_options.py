"""Shared pieces of the ``stream_simple`` mapping: defaults and the effective thinking effort.

``stream_simple`` takes one unified ``ThinkingLevel``; each provider maps the *effective* effort
(the requested level clamped to what the model supports: upward first, then downward) onto its
API. Models that list ``thinking.efforts`` in their descriptor are clamped to that list.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tether.ai.types import SimpleStreamOptions, StreamOptions, ThinkingLevel
from tether.wire import ModelInfo

EFFORTS: tuple[ThinkingLevel, ...] = ("minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_MAX_TOKENS_CAP = 32_000


def effective_effort(model: ModelInfo, level: ThinkingLevel | None) -> ThinkingLevel | None:
    """The effort to request, or ``None`` for no reasoning (level off/absent, or a non-reasoning model)."""
    if level is None or level == "off" or not model["reasoning"]:
        return None
    thinking = model.get("thinking")
    supported: list[str] = (
        list(thinking["efforts"]) if thinking and thinking.get("efforts") else list(EFFORTS)
    )
    if level in supported:
        return level
    index = EFFORTS.index(level)
    for candidate in (*EFFORTS[index + 1 :], *reversed(EFFORTS[:index])):
        if candidate in supported:
            return candidate
    return None


def base_fields(model: ModelInfo, options: SimpleStreamOptions | None) -> dict[str, Any]:
    """The ``StreamOptions`` fields of ``options``, with ``max_tokens`` defaulted from the model."""
    fields: dict[str, Any] = {}
    if options is not None:
        fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(StreamOptions)}
    if fields.get("max_tokens") is None and model["maxTokens"]:
        fields["max_tokens"] = min(model["maxTokens"], DEFAULT_MAX_TOKENS_CAP)
    return fields
