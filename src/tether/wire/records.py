"""How a wire ``TypedDict`` states its validation rules without importing pydantic.

The types are plain ``TypedDict``s that pydantic validates when a codec is built. Declaring the
rules with pydantic's own ``with_config`` and ``Discriminator`` would import pydantic (about a
third of ``tether -p``'s start-up) wherever a message type is named, although most runs never
decode anything. So the rules are stated here in the two forms pydantic reads on its own:

- ``record(config)`` sets ``__pydantic_config__`` on the class, exactly what ``with_config`` does;
- ``Tag(key)`` marks a union as discriminated by ``key``; pydantic calls its
  ``__get_pydantic_core_schema__`` hook, which hands over to ``pydantic.Discriminator`` then.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, get_args

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

T = TypeVar("T")


class RecordConfig(TypedDict):
    """The subset of pydantic's ``ConfigDict`` that wire records use."""

    extra: Literal["allow", "ignore", "forbid"]
    strict: bool


OPEN = RecordConfig(extra="allow", strict=True)
"""Open records (transcript messages): keep unknown keys, coerce nothing."""

CLOSED = RecordConfig(extra="ignore", strict=True)
"""Closed records (configuration we act on): drop unknown keys, coerce nothing."""

STRICT = RecordConfig(extra="forbid", strict=True)
"""Records whose unknown keys are mistakes worth reporting (user-written files)."""


def record(config: RecordConfig) -> Callable[[T], T]:
    """Attach ``config`` to a ``TypedDict`` class as pydantic's ``__pydantic_config__``."""

    def attach(cls: T) -> T:
        target: Any = cls  # a TypedDict class: its type declares no such attribute
        target.__pydantic_config__ = dict(config)
        return cls

    return attach


@dataclass(frozen=True, slots=True)
class Tag:
    """``Annotated[A | B, Tag("type")]``: a union told apart by the value of ``key``."""

    key: str

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic import Discriminator

        return Discriminator(self.key).__get_pydantic_core_schema__(source, handler)


def type_tags(union: object) -> tuple[str, ...]:
    """The ``type`` values of a union of ``TypedDict``s (or of one), in the union's order: the
    vocabulary a union of events declares. Works on postponed annotations too (``Literal["x"]``
    as text, or in a ``ForwardRef``)."""
    tags: list[str] = []
    for member in get_args(union) or (union,):  # one TypedDict: its own tag
        annotation: object = member.__annotations__["type"]
        text = getattr(annotation, "__forward_arg__", annotation)  # a ForwardRef's source text
        if isinstance(text, str):
            tags.extend(_LITERAL_VALUE.findall(text))
        else:
            tags.extend(get_args(annotation))
    return tuple(dict.fromkeys(tags))


_LITERAL_VALUE = re.compile(r"""["']([^"']+)["']""")
