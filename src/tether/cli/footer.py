"""The interactive mode's status line: what it says, and what it drops when the terminal is narrow.

Tokens and cost are the session's total, every branch and every compacted message included, as
pi's footer counts them: moving in ``/tree`` or compacting changes the context, not what was
spent. They are counted once when a session is opened and then message by message (``Spent``),
so the status line costs the same at 40 and at 10,000 messages.

At 80 columns the line does not fit whole; the parts a user glances at while waiting (the
context's fill and the working indicator) stay, the rest shortens first.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from prompt_toolkit.formatted_text import StyleAndTextTuples

from tether.session.agent_session import AgentSession
from tether.session.stats import format_tokens


@dataclass(slots=True)
class Spent:
    """Tokens and cost of every assistant message of a session."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cost: float = 0.0

    @classmethod
    def of(cls, entries: Iterable[Mapping[str, Any]]) -> Spent:
        spent = cls()
        for entry in entries:
            message = entry.get("message")
            if entry.get("type") == "message" and isinstance(message, Mapping):
                spent.add(cast(Mapping[str, Any], message))
        return spent

    def add(self, message: Mapping[str, Any]) -> None:
        """Count ``message`` (an assistant message's usage; other roles cost nothing)."""
        usage = message.get("usage")
        if message.get("role") != "assistant" or not isinstance(usage, Mapping):
            return
        usage = cast(Mapping[str, Any], usage)
        self.input += _number(usage.get("input"))
        self.output += _number(usage.get("output"))
        self.cache_read += _number(usage.get("cacheRead"))
        cost = usage.get("cost")
        if isinstance(cost, Mapping):
            total = cast(Mapping[str, Any], cost).get("total")
            self.cost += float(total) if isinstance(total, int | float) else 0.0


class SessionSpend:
    """The ``Spent`` of the session a core is in, counted afresh only when it changes session."""

    def __init__(self) -> None:
        self._cache: tuple[str | None, Spent] | None = None

    def of(self, core: AgentSession) -> Spent:
        key = core.session_id
        if self._cache is None or self._cache[0] != key:
            session = core.session
            spent = Spent.of(session.entries() if session is not None else [])
            if session is None:  # --no-session: the conversation is all there is
                for message in core.messages:
                    spent.add(cast(Mapping[str, Any], message))
            self._cache = (key, spent)
        return self._cache[1]


def _number(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def status_text(
    *,
    model: str,
    thinking: str,
    shown: bool,
    spent: Spent,
    context_percent: float | None,
    activity: str | None,
    width: int,
) -> str:
    """`` provider/id · thinking LEVEL (shown) · ↑in ↓out · $cost · ctx N% · ● working``, shortened
    to ``width``: first the thinking display's state, then the tokens, then the model's name (cut
    with …, to no less than ``MODEL_MIN``), then the cost and the word "thinking"; ctx% and the
    activity always stay."""
    tokens = f"↑{format_tokens(spent.input + spent.cache_read)} ↓{format_tokens(spent.output)}"
    ctx = f"ctx {context_percent:.0f}%" if context_percent is not None else "ctx -"
    cost = f"${spent.cost:.3f}"
    tail = [p for p in (ctx, activity) if p]
    attempts = (
        [f"thinking {thinking} ({'shown' if shown else 'folded'})", tokens, cost],
        [f"thinking {thinking}", tokens, cost],
        [f"thinking {thinking}", cost],
        [f"thinking {thinking}"],
        [thinking],
    )
    for middle in attempts[:3]:
        text = " " + " · ".join([model, *middle, *tail]) + " "
        if len(text) <= width:
            return text
    for middle in attempts[2:]:
        rest = " · " + " · ".join([*middle, *tail]) + " "
        room = width - len(rest) - 1
        if len(model) <= room:
            return " " + model + rest
        if room >= MODEL_MIN:
            return " " + model[: room - 1] + "…" + rest
    return (" " + " · ".join(tail) + " ")[:width]


MODEL_MIN = 8
"""Columns the model's name keeps before the status line drops more than the tokens."""


QUIET_SHOWN_AFTER = 3.0
"""Seconds without an event before the status line counts the wait for the model."""


def activity(last_event: float, showing_something: bool) -> str:
    """ "working", or how long the model has been silent since ``last_event`` (monotonic time; a
    slow or stalled provider) once that is long enough to wonder; running tools and questions
    (``showing_something``) have their own display."""
    silent = time.monotonic() - last_event
    if showing_something or silent < QUIET_SHOWN_AFTER:
        return "● working"
    return f"● waiting for the model… {silent:.0f} s"


def chips(steering: Sequence[str], follow_ups: Sequence[str], images: Sequence[str]) -> StyleAndTextTuples:
    """The row above the input: queued steering and follow-ups, pasted images (their types)."""
    row: StyleAndTextTuples = []
    for text in steering:
        row += [("class:chip.steer", f" steer: {_short(text)} "), ("", " ")]
    for text in follow_ups:
        row += [("class:chip.follow", f" follow-up: {_short(text)} "), ("", " ")]
    for number, mime_type in enumerate(images, 1):
        row += [("class:chip.image", f" image {number}: {mime_type} "), ("", " ")]
    return row


def _short(text: str, limit: int = 30) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
