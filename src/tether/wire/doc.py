"""The ``Doc`` marker: a description attached to a definition or a field with ``Annotated``.

It plays the role of ``doc(type, text)`` in ``reference/seeds/000-wire.txt``. Validation ignores it;
the JSON Schema bundle (``tether.wire.schema``) turns it into ``description``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Doc:
    text: str
