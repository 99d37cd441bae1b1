"""Streamed tool-call arguments: always an object, at linear total cost.

Models stream a tool call's JSON arguments a few characters at a time, and consumers (UIs, the
agent) want ``partial.arguments`` to be a usable object at every step. Re-parsing the whole buffer
on every delta costs O(n²) over a long argument (a file being written). ``PartialJson`` instead
re-parses with ``jiter``'s partial mode only at a geometric cadence: every delta while the text is
short, then whenever the text has grown by a fixed fraction since the last parse. The total parse
work is then a constant times the final size (see ``bench/p5_partial_json.py``), while the object
lags the text by at most that fraction. ``finish`` always parses the complete text.
"""

from __future__ import annotations

import json
from typing import Any, cast

import jiter

from tether.wire.json_line import replace_lone_surrogates

EAGER_LIMIT = 512
"""Below this many characters every delta is parsed (cheap, and keeps short arguments exact)."""
GROWTH = 16
"""Above it, parse again once the text has grown by 1/GROWTH of its length at the last parse."""


class PartialJson:
    """Accumulates argument text; ``value`` is the best object parse of it so far."""

    __slots__ = ("_next_parse", "_parts", "_size", "value")

    def __init__(self, initial: str = "") -> None:
        self._parts: list[str] = []
        self._size = 0
        self._next_parse = 0
        self.value: dict[str, Any] = {}
        if initial:
            self.add(initial)

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def add(self, delta: str) -> dict[str, Any]:
        """Append ``delta``; re-parse when due. Returns ``value``."""
        if not delta:
            return self.value
        self._parts.append(delta)
        self._size += len(delta)
        if self._size >= self._next_parse:
            self._parse(partial=True)
            self._next_parse = (
                self._size + 1 if self._size < EAGER_LIMIT else self._size + self._size // GROWTH
            )
        return self.value

    def finish(self) -> dict[str, Any]:
        """Parse the complete text (strictly if it is valid JSON, else as a prefix)."""
        self._parse(partial=False)
        return self.value

    def _parse(self, *, partial: bool) -> None:
        text = self.text
        if not text.strip():
            return
        try:
            data = text.encode()
        except UnicodeEncodeError:  # an event's escapes held half of a pair (an emoji cut between
            # two deltas), which json decodes into a lone surrogate: the halves meet again here
            data = replace_lone_surrogates(text).encode()
        try:
            parsed = jiter.from_json(data, partial_mode="trailing-strings" if partial else False)
        except ValueError:
            if partial:
                return
            try:  # JSON jiter refuses: an escape of half a surrogate pair ("\\udc80"), which
                # json takes as it takes one in an event (provider._lenient); else a prefix
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                try:
                    parsed = jiter.from_json(data, partial_mode="trailing-strings")
                except ValueError:
                    return
        if isinstance(parsed, dict):
            self.value = cast("dict[str, Any]", parsed)


def parse_arguments(text: str) -> dict[str, Any]:
    """One-shot form: the object in ``text``, ``{}`` when there is none."""
    return PartialJson(text).finish() if text else {}
