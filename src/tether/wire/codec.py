"""Decoding and encoding of wire values.

Decoding validates with pydantic-core (straight from JSON bytes, or from parsed values) and
returns the plain dicts of ``tether.wire.messages``; encoding is JSON text of those dicts.
A failure raises ``WireError`` naming the path of the offending value in the caller's terms
(``messages[3].content[1].type: unknown content type 'video'``), never a pydantic dump.

Open records (every object of seed 000's ``messageDefs``) are decoded the way the seed asks:
only the discriminator (``role``, ``type``) of a union member must be present; every other field
is checked only when present, and unknown keys are kept. So a message persisted before a field
became required still decodes. The ``TypedDict``s keep the seed's required keys for the type checker and the
JSON Schema bundle (what producers must write); ``Codec`` relaxes them in the validator it
builds (what consumers accept). Closed records (``ModelInfo`` and its parts) enforce required
keys and drop unknown ones.
"""

from functools import cached_property
from typing import Any, Generic, TypeVar, cast

import pydantic_core
from pydantic import TypeAdapter
from pydantic_core import SchemaValidator, ValidationError

from tether.wire.errors import WireError, wire_error
from tether.wire.messages import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    Usage,
    UserContent,
)
from tether.wire.model import ModelInfo

T = TypeVar("T")


class Codec(Generic[T]):
    """Decoder for one wire type. ``label`` is the root of error paths (``message``, ``messages``).

    The validator is built on first use, so importing ``tether.wire`` stays cheap.
    """

    def __init__(self, tp: Any, label: str) -> None:
        self._type: Any = tp
        self.label = label

    @cached_property
    def _validator(self) -> SchemaValidator:
        schema = cast(dict[str, object], TypeAdapter(self._type).core_schema)
        return SchemaValidator(cast(Any, relax_open_records(schema)))

    def decode(self, value: object, path: str | None = None) -> T:
        """Validate an already-parsed JSON value (dicts and lists); returns a fresh copy."""
        try:
            return cast(T, self._validator.validate_python(value))
        except ValidationError as err:
            raise wire_error(err, value, self.label if path is None else path) from None

    def decode_json(self, data: str | bytes | bytearray, path: str | None = None) -> T:
        """Parse and validate JSON text in one pass (the fast path for files and sockets)."""
        try:
            return cast(T, self._validator.validate_json(data))
        except ValidationError as err:
            root = self.label if path is None else path
            try:
                value: object = pydantic_core.from_json(data)
            except ValueError as bad:
                raise WireError(root, f"invalid JSON: {bad}") from None
            raise wire_error(err, value, root) from None


def relax_open_records(schema: object) -> object:
    """Copy of a pydantic core schema in which no field of an open record is required.

    An open record is a ``typed-dict`` schema that keeps extra keys (``extra_behavior: allow``).
    Its discriminator stays enforced where it discriminates: a tagged union needs the tag to
    pick the record at all (``missing discriminator``), and checks its value.
    """
    if isinstance(schema, list):
        return [relax_open_records(item) for item in cast(list[object], schema)]
    if not isinstance(schema, dict):
        return schema
    node = {key: relax_open_records(item) for key, item in cast(dict[str, object], schema).items()}
    if node.get("type") == "typed-dict" and node.get("extra_behavior") == "allow":
        fields = cast(dict[str, dict[str, object]], node["fields"])
        node["fields"] = {name: {**field, "required": False} for name, field in fields.items()}
    return node


def dumps(value: object) -> str:
    """Compact JSON text of a wire value (keys in insertion order, non-ASCII kept)."""
    return pydantic_core.to_json(value).decode()


def dumpb(value: object) -> bytes:
    """Compact JSON bytes (UTF-8) of a wire value."""
    return pydantic_core.to_json(value)


MESSAGE: Codec[AgentMessage] = Codec(AgentMessage, "message")
MESSAGES: Codec[list[AgentMessage]] = Codec(list[AgentMessage], "messages")
CONTENT_BLOCK: Codec[AssistantContent] = Codec(AssistantContent, "content")
USER_CONTENT: Codec[UserContent] = Codec(UserContent, "content")
ASSISTANT_MESSAGE: Codec[AssistantMessage] = Codec(AssistantMessage, "message")
ASSISTANT_EVENT: Codec[AssistantMessageEvent] = Codec(AssistantMessageEvent, "event")
USAGE: Codec[Usage] = Codec(Usage, "usage")
MODEL_INFO: Codec[ModelInfo] = Codec(ModelInfo, "model")


def decode_message(value: object, path: str = "message") -> AgentMessage:
    """One transcript message from parsed JSON."""
    return MESSAGE.decode(value, path)


def decode_messages(value: object, path: str = "messages") -> list[AgentMessage]:
    """A list of transcript messages from parsed JSON."""
    return MESSAGES.decode(value, path)


def decode_model_info(value: object, path: str = "model") -> ModelInfo:
    """A model descriptor (closed record: unknown keys dropped) from parsed JSON."""
    return MODEL_INFO.decode(value, path)
