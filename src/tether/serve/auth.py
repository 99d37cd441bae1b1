"""Who may do what: bearer tokens (full or read-only) and the per-token rate of prompts.

Tokens are compared in constant time. With no token configured the server only listens on
127.0.0.1 (``tether serve`` refuses any other address without one), and every request is allowed:
the machine's own users are trusted as they are by the CLI.
"""

from __future__ import annotations

import hmac
import ipaddress
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


def browser_problem(host: str | None, origin: str | None, allowed_origins: tuple[str, ...]) -> str | None:
    """Why a request to a server *without a token* may come from a page of another site (``None``:
    it cannot). Such a server trusts whoever reaches it on loopback, and a browser does, for any
    site it has open: a page of another site can send a POST that needs no preflight (a
    ``text/plain`` body is still read as JSON), and a site whose name it makes resolve to 127.0.0.1
    (DNS rebinding) is the same origin as the server to the browser, so it reads the answers.
    Browsers always send the name they connect to as ``Host`` and a cross-site request's
    ``Origin``: the name must be a loopback address or ``localhost``, and an ``Origin`` must be
    the server itself or one given with ``--cors-origin``. A client that is no browser sends no
    ``Origin``; with a token none of this is needed (a browser never adds the token by itself)."""
    if host is not None and not _loopback_name(host):
        return f"Host {host}: a server without a token answers only to 127.0.0.1, [::1] or localhost"
    if origin is None or origin in allowed_origins or "*" in allowed_origins:
        return None
    scheme, _, rest = origin.partition("://")
    if scheme in ("http", "https") and host is not None and rest.lower() == host.lower():
        return None
    return f"Origin {origin}: pages of other sites may not call this server (allow one with --cors-origin)"


def _loopback_name(host: str) -> bool:
    """``host`` (a ``Host`` header: a name or address, and maybe a port) names this machine."""
    name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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
