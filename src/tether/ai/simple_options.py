"""Shared pieces of the ``stream_simple`` mapping: defaults and the effective thinking effort.

``stream_simple`` takes one unified ``ThinkingLevel``; each provider maps the *effective* effort
(the requested level clamped to what the model supports: upward first, then downward) onto its
API. Models that list ``thinking.efforts`` in their descriptor are clamped to that list.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tether.ai.thinking import clamp_thinking_level
from tether.ai.types import SimpleStreamOptions, StreamOptions, ThinkingLevel
from tether.wire import ModelInfo

DEFAULT_MAX_TOKENS_CAP = 32_000
_STREAM_FIELDS = tuple(f.name for f in dataclasses.fields(StreamOptions))
"""Read once: ``dataclasses.fields`` walks the class's fields anew on every call (every request)."""


def effective_effort(model: ModelInfo, level: ThinkingLevel | None) -> ThinkingLevel | None:
    """The effort to request, or ``None`` for no reasoning.

    ``None`` when no level was asked for or the model does not reason. Otherwise the level is
    clamped by ``thinking.clamp_thinking_level`` (the model's own ``thinking`` config, else its
    family's, upward first), so every provider agrees with ``supported_thinking_levels``: ``off``
    stays ``None`` where thinking can be turned off and becomes the lowest effort where it cannot.
    """
    if level is None or not model["reasoning"]:
        return None
    effective = clamp_thinking_level(model, level)
    return None if effective == "off" else effective


def base_fields(model: ModelInfo, options: SimpleStreamOptions | None) -> dict[str, Any]:
    """The ``StreamOptions`` fields of ``options``, with ``max_tokens`` defaulted from the model."""
    fields: dict[str, Any] = {}
    if options is not None:
        fields = {name: getattr(options, name) for name in _STREAM_FIELDS}
    fields["max_tokens"] = default_max_tokens(model, options)
    return fields


def default_max_tokens(model: ModelInfo, options: StreamOptions | None) -> int | None:
    """The options' ``max_tokens``, else the model's limit capped at ``DEFAULT_MAX_TOKENS_CAP``."""
    asked = options.max_tokens if options is not None else None
    if asked is not None or not model["maxTokens"]:
        return asked
    return min(model["maxTokens"], DEFAULT_MAX_TOKENS_CAP)
