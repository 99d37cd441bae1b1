"""Prompt hooks: edit one request's messages through a ``PromptEditor``; nothing is persisted.

Before each model call the runtime hands hooks an editor over that request's messages. The
editor never exposes a stored message: reading ``editor.messages[i]`` gives a private deep copy
(made on first access, then reused), edits build new messages, and parts passed in are copied
too. So whatever a hook mutates, in place or through nested dicts and lists, lives only in this
request. A hook that wants a durable message calls ``Session.append_synthetic``, which goes
through the store and gets a real id and timestamp.

Messages are addressed by the id of the entry they were loaded from (``Session.message_id``);
messages the editor itself inserted have no id.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Literal, cast, overload

from typing_extensions import TypedDict

from tether.ai.event_stream import empty_usage
from tether.errors import TetherError
from tether.wire import AgentMessage, ImageContent, ModelInfo, TextContent, ThinkingContent
from tether.wire.json_copy import copy_json

PromptPart = TextContent | ImageContent | ThinkingContent
"""User parts are text or images; assistant parts are text or thinking."""


class PromptInput(TypedDict):
    role: Literal["user", "assistant"]
    parts: list[PromptPart]


Target = Literal["last-user", "last-assistant"]

PromptHook = Callable[["PromptEditor"], Awaitable[None] | None]
"""A hook edits the request in place through the editor; it may be sync or async."""


class PromptEditError(TetherError, ValueError):
    """A hook asked for something the request cannot do (unknown id, bad part)."""


_USER_PARTS = frozenset({"text", "image"})
_ASSISTANT_PARTS = frozenset({"text", "thinking"})


def synthetic_message(
    prompt: PromptInput, *, model: ModelInfo | None, timestamp: int, synthetic: bool = True
) -> AgentMessage:
    """A user or assistant message built from ``{role, parts}`` (parts deep-copied)."""
    role = prompt.get("role")
    parts = _check_parts(role, prompt.get("parts"))
    if role == "user":
        message: dict[str, Any] = {"role": "user", "content": parts, "timestamp": timestamp}
    else:
        message = {
            "role": "assistant",
            "content": parts,
            "api": model["api"] if model else "synthetic",
            "provider": model["provider"] if model else "tether",
            "model": model["id"] if model else "synthetic",
            "usage": empty_usage(),
            "stopReason": "stop",
            "timestamp": timestamp,
        }
    if synthetic:
        message["synthetic"] = True
    return cast(AgentMessage, message)


def _check_parts(role: object, parts: object) -> list[Any]:
    if role not in ("user", "assistant"):
        raise PromptEditError(f"role must be 'user' or 'assistant', got {role!r}")
    if not isinstance(parts, list) or not parts:
        raise PromptEditError(f"{role} parts must be a non-empty list of content blocks")
    allowed = _USER_PARTS if role == "user" else _ASSISTANT_PARTS
    for i, part in enumerate(cast(list[Any], parts)):
        kind = cast(dict[str, Any], part).get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            raise PromptEditError(
                f"parts[{i}]: a {role} message takes {' or '.join(sorted(allowed))} parts, got {kind!r}"
            )
    return cast(list[Any], copy_json(parts))


class _Slot:
    __slots__ = ("entry_id", "owned", "value")

    def __init__(self, value: AgentMessage, entry_id: str | None, owned: bool) -> None:
        self.value = value
        self.entry_id = entry_id
        self.owned = owned
        """True once ``value`` is the editor's own deep copy (or a message it built)."""

    def own(self) -> AgentMessage:
        if not self.owned:
            self.value = cast(AgentMessage, copy_json(self.value))
            self.owned = True
        return self.value


class MessagesView(Sequence[AgentMessage]):
    """Read access to the request's messages; every item is the editor's private copy."""

    def __init__(self, slots: list[_Slot]) -> None:
        self._slots = slots

    @overload
    def __getitem__(self, index: int) -> AgentMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[AgentMessage]: ...
    def __getitem__(self, index: int | slice) -> AgentMessage | list[AgentMessage]:
        if isinstance(index, slice):
            return [slot.own() for slot in self._slots[index]]
        return self._slots[index].own()

    def __len__(self) -> int:
        return len(self._slots)

    def __iter__(self) -> Iterator[AgentMessage]:
        return (slot.own() for slot in self._slots)


class PromptEditor:
    """Option 2 of seed 002 (``reference/seeds/002-stored-messages.txt``): prompt mutators over a
    transient copy of one request."""

    def __init__(
        self,
        messages: Sequence[AgentMessage],
        message_ids: Sequence[str | None] | None = None,
        *,
        model: ModelInfo | None = None,
        now: int | None = None,
    ) -> None:
        ids = message_ids if message_ids is not None else [None] * len(messages)
        if len(ids) != len(messages):
            raise ValueError("message_ids must be parallel to messages")
        self._slots = [_Slot(m, i, owned=False) for m, i in zip(messages, ids, strict=True)]
        self._model = model
        self._now = int(time.time() * 1000) if now is None else now
        """Timestamp of messages built here: the request's time, never persisted."""

    @property
    def messages(self) -> MessagesView:
        return MessagesView(self._slots)

    def message_ids(self) -> list[str | None]:
        return [slot.entry_id for slot in self._slots]

    def append(self, prompt: PromptInput) -> None:
        self._slots.append(self._new(prompt))

    def prepend(self, prompt: PromptInput) -> None:
        self._slots.insert(0, self._new(prompt))

    def insert_after(self, message_id: str, prompt: PromptInput) -> None:
        self._slots.insert(self._index(message_id) + 1, self._new(prompt))

    def insert_before(self, message_id: str, prompt: PromptInput) -> None:
        self._slots.insert(self._index(message_id), self._new(prompt))

    def append_to(self, target: Target, parts: list[PromptPart]) -> None:
        """Add parts at the end of the last user (or assistant) message of the request."""
        role = {"last-user": "user", "last-assistant": "assistant"}.get(target)
        if role is None:
            raise PromptEditError(f"target must be 'last-user' or 'last-assistant', got {target!r}")
        new_parts = _check_parts(role, parts)
        for slot in reversed(self._slots):
            if slot.value.get("role") == role:
                message = cast(dict[str, Any], slot.own())
                content = message.get("content")
                if isinstance(content, str):
                    content = [{"type": "text", "text": content}] if content else []
                message["content"] = [*cast(list[Any], content or []), *new_parts]
                return
        raise PromptEditError(f"append_to({target!r}): this request has no {role} message")

    def result(self) -> list[AgentMessage]:
        """The edited request: untouched messages as they were, edited ones as the editor's copies."""
        return [slot.value for slot in self._slots]

    def _new(self, prompt: PromptInput) -> _Slot:
        return _Slot(synthetic_message(prompt, model=self._model, timestamp=self._now), None, owned=True)

    def _index(self, message_id: str) -> int:
        for i, slot in enumerate(self._slots):
            if slot.entry_id == message_id:
                return i
        raise PromptEditError(f"no message with id {message_id!r} in this request")


async def run_prompt_hooks(
    hooks: Sequence[PromptHook],
    messages: Sequence[AgentMessage],
    message_ids: Sequence[str | None] | None = None,
    *,
    model: ModelInfo | None = None,
) -> list[AgentMessage]:
    """Run ``hooks`` in order over one editor and return the edited request."""
    if not hooks:
        return list(messages)
    editor = PromptEditor(messages, message_ids, model=model)
    for hook in hooks:
        outcome = hook(editor)
        if outcome is not None:
            await outcome
    return editor.result()
