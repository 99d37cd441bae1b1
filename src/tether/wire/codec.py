"""Decoding and encoding of wire values.

Decoding validates with pydantic-core (from JSON text or from Python values) and returns the
plain dicts of ``tether.wire.messages``; encoding is the identity on those dicts plus JSON text.
A failure raises ``WireError`` whose message names the path of the offending value in the
caller's terms (``messages[3].content[1].type: unknown content type 'video'``) rather than
pydantic's internal union labels.
"""

from __future__ import annotations

import json
from typing import Any, Generic, TypeVar, cast

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from tether.wire.messages import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    Usage,
)
from tether.wire.model import ModelInfo

T = TypeVar("T")

_DISCRIMINATOR_KIND = {"role": "message role", "type": "type"}


class WireError(ValueError):
    """A wire value failed to decode. ``path`` names where, ``reason`` says what was wrong."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class Codec(Generic[T]):
    """Decoder for one wire type. ``label`` is the root of error paths (``message``, ``messages``)."""

    def __init__(self, tp: Any, label: str) -> None:
        self._adapter: TypeAdapter[T] = TypeAdapter(tp)
        self.label = label

    def decode(self, value: object, path: str | None = None) -> T:
        """Validate an already-parsed JSON value (dicts and lists)."""
        try:
            return self._adapter.validate_python(value)
        except ValidationError as err:
            raise _wire_error(err, value, self.label if path is None else path) from None

    def decode_json(self, data: str | bytes, path: str | None = None) -> T:
        """Parse and validate JSON text in one pass (the fast path for files and sockets)."""
        try:
            return self._adapter.validate_json(data)
        except ValidationError as err:
            try:
                value: object = json.loads(data)
            except ValueError as bad:
                raise WireError(self.label if path is None else path, f"invalid JSON: {bad}") from None
            raise _wire_error(err, value, self.label if path is None else path) from None


def dumps(value: object) -> str:
    """Compact JSON text of a wire value (keys in insertion order, non-ASCII kept)."""
    return pydantic_core.to_json(value).decode()


def dumpb(value: object) -> bytes:
    """Compact JSON bytes of a wire value."""
    return pydantic_core.to_json(value)


MESSAGE: Codec[AgentMessage] = Codec(AgentMessage, "message")
MESSAGES: Codec[list[AgentMessage]] = Codec(list[AgentMessage], "messages")
CONTENT_BLOCK: Codec[AssistantContent] = Codec(AssistantContent, "content")
ASSISTANT_MESSAGE: Codec[AssistantMessage] = Codec(AssistantMessage, "message")
ASSISTANT_EVENT: Codec[AssistantMessageEvent] = Codec(AssistantMessageEvent, "event")
USAGE: Codec[Usage] = Codec(Usage, "usage")
MODEL_INFO: Codec[ModelInfo] = Codec(ModelInfo, "model")


def decode_message(value: object, path: str = "message") -> AgentMessage:
    return MESSAGE.decode(value, path)


def decode_messages(value: object, path: str = "messages") -> list[AgentMessage]:
    return MESSAGES.decode(value, path)


def decode_model_info(value: object, path: str = "model") -> ModelInfo:
    return MODEL_INFO.decode(value, path)


# --- error translation --------------------------------------------------------------------------


def _wire_error(err: ValidationError, value: object, root: str) -> WireError:
    """Pick the most specific pydantic error and restate it along the input's own path.

    Unions make pydantic report one error per alternative; the one that got deepest into the
    input is the one the author of the input meant, so it wins.
    """
    details = err.errors(include_url=False)
    best = max(details, key=lambda d: len(_input_path(value, d["loc"])))
    path = _input_path(value, best["loc"])
    full = root + path
    kind = best["type"]
    ctx = best.get("ctx") or {}
    if kind == "union_tag_invalid":
        field = str(ctx.get("discriminator", "")).strip("'")
        what = _tag_kind(field, full)
        return WireError(f"{full}.{field}", f"unknown {what} {ctx.get('tag')!r}")
    if kind == "union_tag_not_found":
        field = str(ctx.get("discriminator", "")).strip("'")
        return WireError(f"{full}.{field}", "missing discriminator")
    if kind == "missing":
        return WireError(full, "required field is missing")
    return WireError(full, f"{best['msg']} (got {_short(best.get('input'))})")


def _tag_kind(field: str, path: str) -> str:
    if field == "role":
        return "message role"
    if (path.endswith("]") and ".content[" in path) or path.startswith("content"):
        return "content type"
    if path.startswith("event"):
        return "event type"
    return "type"


def _input_path(value: object, loc: tuple[int | str, ...]) -> str:
    """Follow pydantic's ``loc`` through the input, skipping union labels and tags.

    A loc entry is a real step when the current value has that key (or index); otherwise it is
    a union member label (``str``, ``list[...]``) or a discriminator tag, which the input does
    not contain. A tag equal to a key (``{"type": "text", "text": ...}``) is recognised by
    comparing it with the value's own discriminator first.
    """
    current: object = value
    parts: list[str] = []
    for i, step in enumerate(loc):
        if isinstance(current, dict):
            obj = cast(dict[str, object], current)
            is_tag = step in (obj.get("type"), obj.get("role")) and i + 1 < len(loc)
            if not is_tag and isinstance(step, str) and step in obj:
                current = obj[step]
                parts.append(f".{step}")
        elif isinstance(current, list) and isinstance(step, int):
            items = cast(list[object], current)
            if 0 <= step < len(items):
                current = items[step]
                parts.append(f"[{step}]")
    # A missing required key is reported at the key's own loc, which the input lacks.
    last = loc[-1] if loc else None
    if (
        isinstance(current, dict)
        and isinstance(last, str)
        and last not in _DISCRIMINATOR_KIND
        and last not in cast(dict[str, object], current)
    ):
        parts.append(f".{last}")
    return "".join(parts)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
