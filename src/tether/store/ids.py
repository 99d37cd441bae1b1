"""Time-sortable, monotonic entry and session ids (ULID layout, no dependency).

An id is 26 Crockford base32 characters: 48 bits of Unix milliseconds, then 80 bits that are
random for the first id of a millisecond and incremented for the next ones. Ids therefore sort
as text in creation order, which lets the store order, page and compare entries without a
separate sequence. The generator never goes backwards: when the clock does (NTP step) or when
a caller hands it a ``floor`` (the newest id already stored for a session, possibly written by
another process with a faster clock), it keeps counting up from the larger of the two.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_RANDOM_BITS = 80
_MAX_TIME = (1 << 48) - 1


_PAIRS = tuple(high + low for high in _ALPHABET for low in _ALPHABET)
"""The two characters of each 10-bit value, for ``encode``."""
_LOW_60 = (1 << 60) - 1


def encode(value: int) -> str:
    """The 26-character text of a 128-bit id value.

    Ten bits (two characters) a step, from a table, on two halves of at most 68 bits: every
    entry a session stores takes an id, and the obvious loop (26 shifts of a 128-bit integer)
    cost ~29k instructions an id, 6% of what storing a message cost (P6); this ~9k."""
    p, high, low = _PAIRS, value >> 60, value & _LOW_60
    return "".join(
        (
            p[high >> 60],
            p[(high >> 50) & 1023],
            p[(high >> 40) & 1023],
            p[(high >> 30) & 1023],
            p[(high >> 20) & 1023],
            p[(high >> 10) & 1023],
            p[high & 1023],
            p[low >> 50],
            p[(low >> 40) & 1023],
            p[(low >> 30) & 1023],
            p[(low >> 20) & 1023],
            p[(low >> 10) & 1023],
            p[low & 1023],
        )
    )


def decode(text: str) -> int:
    """The 128-bit value of an id; ``ValueError`` naming the id when it is not one."""
    if len(text) != 26:
        raise ValueError(f"not an id: {text!r} (want 26 base32 characters)")
    value = 0
    for char in text.upper():
        digit = _DECODE.get(char)
        if digit is None:
            raise ValueError(f"not an id: {text!r} (bad character {char!r})")
        value = (value << 5) | digit
    if value >> 128:
        raise ValueError(f"not an id: {text!r} (out of range)")
    return value


def timestamp_ms(text: str) -> int:
    """Creation time (Unix ms) encoded in an id."""
    return decode(text) >> _RANDOM_BITS


class IdGenerator:
    """Monotonic ULID source; thread-safe. One per process is enough (see ``new_id``)."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self._last = 0
        self._last_text = ""
        self._lock = threading.Lock()

    def new(self, floor: str | None = None, now_ms: int | None = None) -> str:
        """A fresh id, greater than every id this generator made and than ``floor``.

        A ``floor`` that is not an id of ours (imported from elsewhere) is ignored. ``now_ms``:
        the time the caller read for the entry the id is for (its ``timestamp``), so the id holds
        the same millisecond and the clock is read once; default: the clock now.
        """
        now = self._clock_ns() // 1_000_000 if now_ms is None else now_ms
        with self._lock:
            last = self._last
            # Ids sort as text, so a floor not above the last id cannot raise it: the usual case
            # (a session passes its newest id, made here) costs a comparison, not a decode.
            if floor is not None and floor > self._last_text:
                with contextlib.suppress(ValueError):
                    last = max(last, decode(floor))
            if now > (last >> _RANDOM_BITS):
                value = (min(now, _MAX_TIME) << _RANDOM_BITS) | _random_start()
                text = encode(value)
            else:
                value = last + 1
                tail = value & 1023
                # No carry out of the last 10 bits (and no floor): only the last two characters
                # change. Ids made in one millisecond are most of a busy service's (P6: ~2 in 3).
                text = self._last_text[:24] + _PAIRS[tail] if tail and last == self._last else encode(value)
            self._last = value
            self._last_text = text
        return text


def _random_start() -> int:
    """The random low bits of a millisecond's first id.

    From ``random`` (seeded from the OS at start-up, reseeded in a forked child), not
    ``os.urandom``: ids must be unique, not secret, and a system call per millisecond also let
    another thread take the interpreter lock. One bit below 80 leaves headroom, so a burst
    inside one millisecond never overflows into the time bits.
    """
    return random.getrandbits(_RANDOM_BITS - 1)


_GENERATOR = IdGenerator()


def new_id(floor: str | None = None, now_ms: int | None = None) -> str:
    """A fresh process-wide monotonic id (optionally greater than ``floor``; ``now_ms``: see
    ``IdGenerator.new``)."""
    return _GENERATOR.new(floor, now_ms)
