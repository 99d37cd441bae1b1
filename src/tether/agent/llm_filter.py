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

A *private* filter skips the prefix check: its caller passes the same list every time and changes
it only past the end it had at the previous call (appends, and replacing what it appended since).
That is the loop's own transcript in a run whose hooks are never handed it (``loop``): comparing
the prefix cost 2% of P2's instructions, and a copy of it per call (the answer needs one anyway).
"""

from __future__ import annotations

from itertools import compress

from tether.agent.types import LLM_ROLES
from tether.wire import AgentMessage, Message


class LlmFilter:
    """Callable like ``default_convert_to_llm``; cheap when called again with the same list grown."""

    __slots__ = ("_dropped", "_keep", "_private", "_seen")

    def __init__(self, *, private: bool = False) -> None:
        self._private = private
        """The caller only ever grows the list it passes (see the module's docstring)."""
        self._seen: list[AgentMessage] = []
        """The messages of the last call (a copy: the caller's list keeps changing); unused when
        ``_private``."""
        self._keep: list[bool] = []
        """Whether each of them has a role every provider understands."""
        self._dropped = 0
        """How many ``False`` in ``_keep``: zero means the result is the transcript itself."""

    def __call__(self, messages: list[AgentMessage]) -> list[Message]:
        if self._private:
            known = len(self._keep)
            keep, dropped = self._keep, self._dropped
        else:
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
        self._keep, self._dropped = keep, dropped + tail.count(False)
        if not self._private:
            self._seen = seen
        if self._dropped == 0:  # the copy is the answer too: one copy of the transcript per call
            return seen  # pyright: ignore[reportReturnType]
        return list(compress(messages, keep))  # pyright: ignore[reportReturnType]
