"""``default_convert_to_llm`` for one run, filtering only what was appended since its last call.

The loop converts the transcript before every model call, and the transcript only grows at its
end between calls, so re-reading every message each time makes a long run quadratic (most of a
200-turn run's time went there). ``LlmFilter`` remembers the messages it saw and which it kept;
when the transcript still starts with them, only the tail is read.

The answer is always the one ``default_convert_to_llm`` would give, with the same message objects:
the prefix check compares by identity first (equal messages have the same role, so the same keep
decision), anything else (a hook that rewrote, removed or reordered messages) starts over, and the
result is built from the transcript passed in, never from the remembered objects. The one
thing it cannot see is a message whose ``role`` is rewritten in place (the same dict turned from
one kind of message into another): nothing in tether does that, and a hook must not.
"""

from __future__ import annotations

from itertools import compress

from tether.agent.types import LLM_ROLES
from tether.wire import AgentMessage, Message


class LlmFilter:
    """Callable like ``default_convert_to_llm``; cheap when called again with the same list grown."""

    __slots__ = ("_dropped", "_keep", "_seen")

    def __init__(self) -> None:
        self._seen: list[AgentMessage] = []
        """The messages of the last call (a copy: the caller's list keeps changing)."""
        self._keep: list[bool] = []
        """Whether each of them has a role every provider understands."""
        self._dropped = 0
        """How many ``False`` in ``_keep``: zero means the result is the transcript itself."""

    def __call__(self, messages: list[AgentMessage]) -> list[Message]:
        known = len(self._seen)
        # ``_seen`` may be the list last returned (below), which a caller could have changed:
        # then its length or its members differ, and the filter starts over.
        if known <= len(messages) and known == len(self._keep) and messages[:known] == self._seen:
            keep, dropped = self._keep, self._dropped
        else:
            known, keep, dropped = 0, [], 0
        tail = [message["role"] in LLM_ROLES for message in messages[known:]]  # may raise: no state yet
        keep.extend(tail)
        seen = messages[:]
        self._keep, self._dropped, self._seen = keep, dropped + tail.count(False), seen
        if self._dropped == 0:  # the copy is the answer too: one copy of the transcript per call
            return seen  # pyright: ignore[reportReturnType]
        return list(compress(messages, keep))  # pyright: ignore[reportReturnType]
