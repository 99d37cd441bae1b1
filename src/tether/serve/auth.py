"""Who may do what: bearer tokens (full or read-only) and the per-token rate of prompts.

Tokens are compared in constant time. With no token configured the server only listens on
127.0.0.1 (``tether serve`` refuses any other address without one), and every request is allowed:
the machine's own users are trusted as they are by the CLI.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass, field
from typing import Literal

Access = Literal["full", "read", "none"]


@dataclass(frozen=True, slots=True)
class Tokens:
    """The server's tokens; ``full`` may do everything, ``read_only`` only read and follow."""

    full: str | None = field(default=None, repr=False)
    read_only: str | None = field(default=None, repr=False)

    @property
    def required(self) -> bool:
        return self.full is not None or self.read_only is not None

    def access(self, presented: str | None) -> Access:
        """What ``presented`` (the bearer token of a request, if any) grants."""
        if not self.required:
            return "full"
        if presented is None:
            return "none"
        if self.full is not None and hmac.compare_digest(presented.encode(), self.full.encode()):
            return "full"
        if self.read_only is not None and hmac.compare_digest(presented.encode(), self.read_only.encode()):
            return "read"
        return "none"


class RateLimit:
    """A token bucket per client key: ``per_minute`` prompts a minute, bursts up to the same.

    A prompt is the costly request (it spends the model's tokens), so it is bounded per bearer
    token; reads are not. ``per_minute`` 0 means no limit.
    """

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        """key -> (tokens left, monotonic time of that count)."""

    def take(self, key: str) -> float | None:
        """Spend one prompt of ``key``; ``None`` if allowed, else the seconds until one is."""
        if self.per_minute <= 0:
            return None
        now = time.monotonic()
        rate = self.per_minute / 60.0
        left, then = self._buckets.get(key, (float(self.per_minute), now))
        left = min(float(self.per_minute), left + (now - then) * rate)
        if left < 1.0:
            self._buckets[key] = (left, now)
            return (1.0 - left) / rate
        self._buckets[key] = (left - 1.0, now)
        return None
