"""Which failed replies are worth another attempt, and how long to wait before it.

A reply that failed because the provider was overloaded, rate-limited, or the network dropped
may well succeed a few seconds later; one that failed on a bad request or a refused key will
not, and a context overflow is compaction's business, not a retry's.
"""

from __future__ import annotations

import re

from tether.session.budget import is_context_overflow
from tether.wire import AssistantMessage

_TRANSIENT = (
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|529)\b|service.?unavailable"
    r"|server.?error|internal.?error|network.?error|connection.?(?:error|reset)"
    r"|fetch failed|socket hang up|timed? ?out|upstream|no data from"
)
"""Compiled on first use (``re``'s cache), not at import: only a failed reply needs it. A refused
connection is not here (unlike pi): nobody serves at that address, and retrying it only made a
``tether -p`` against a server that is not running wait ~42 s before saying so."""


def is_transient_error(message: AssistantMessage) -> bool:
    """Did this reply fail for a reason a later attempt may not meet (load, limits, network)?"""
    if message["stopReason"] != "error" or is_context_overflow(message):
        return False
    return re.search(_TRANSIENT, message.get("errorMessage") or "", re.IGNORECASE) is not None


def retry_delay_ms(base_delay_ms: int, attempt: int) -> int:
    """Exponential backoff: ``base`` before the first retry, doubling for each further one."""
    return base_delay_ms * 2 ** (attempt - 1)
