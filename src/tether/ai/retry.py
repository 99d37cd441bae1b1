"""The one retry policy: which failures are worth another attempt, and how long to wait first.

Every retry tether makes of a model request follows this module, whoever drives it (a one-shot
``stream()``/``complete()``, an ``Agent``, an ``AgentSession``). The numbers come from
``StreamOptions`` (``max_retries``, ``retry_base_delay``, ``max_retry_delay``), which an
``AgentSession`` fills from its ``RetrySettings`` (``settings.retry``, or a prompt's own):

- **what**: HTTP 408/409/429/5xx (and 520/522/524/529), Anthropic's ``overloaded_error`` and
  connection failures (refused, reset, timed out, a stalled body) before any content arrived.
  Quota, billing and authentication failures are never retried: waiting does not fix them.
- **how many**: ``max_retries`` retries after the first attempt, so at most ``max_retries + 1``
  requests for one reply; ``0`` sends exactly one.
- **how long**: ``retry_base_delay`` × 2^n before retry n+1, capped at ``max_retry_delay``. A
  server-requested wait (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP date; ``0``
  means at once) replaces the backoff; one longer than ``max_retry_delay`` is not waited for: the
  request fails at once, saying what the server asked. So the waits of one reply add up to at
  most ``max_retries × max_retry_delay``.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.ai.types import StreamOptions

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
"""HTTP statuses a later attempt may not meet (timeouts, conflicts, limits, server trouble)."""
NEVER_RETRY_WORDS = ("insufficient_quota", "quota", "billing", "credit balance", "payment")
"""An error body naming one of these is final whatever its status: the account must change."""

_TRANSIENT = (
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|529)\b|service.?unavailable"
    r"|server.?error|internal.?error|network.?error|connection.?(?:error|reset|lost)"
    r"|fetch failed|socket hang up|timed? ?out|upstream|no data from"
)
"""Compiled on first use (``re``'s cache), not at import: only a failed reply needs it. A refused
connection is not here (unlike pi): nobody serves at that address, and retrying it only made a
``tether -p`` against a server that is not running wait ~42 s before saying so."""


def is_transient_text(error_message: str) -> bool:
    """Whether a reply's error text names a transient failure: how a failure that reached the
    reply without an HTTP status (a stream function's, a connection cut mid-reply) is judged."""
    return re.search(_TRANSIENT, error_message, re.IGNORECASE) is not None


@dataclass(slots=True)
class RequestFailed:
    """Why a request produced no stream; ``message`` is what the user reads."""

    message: str
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None
    """Seconds the server asked us to wait, when it said."""


def status_retryable(status: int, body: str) -> bool:
    """Whether an HTTP error with this status and body is worth another attempt."""
    if status in (401, 403):
        return False
    lowered = body.lower()
    return (status in RETRY_STATUSES or "overloaded" in lowered) and not any(
        word in lowered for word in NEVER_RETRY_WORDS
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a response asked for, in seconds: ``retry-after-ms``, else ``Retry-After`` (seconds
    or an HTTP date; a date in the past is 0). ``None`` when it asked for nothing readable: a
    ``nan`` is nothing readable (``asyncio.sleep(nan)`` never returns), an ``inf`` is read as
    asked, so it is refused as longer than ``max_retry_delay``."""
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _seconds(millis)
        if seconds is not None:
            return seconds / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _seconds(value: str) -> float | None:
    """A header's number, negative read as 0; ``None`` if it is none (or ``nan``)."""
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) else max(number, 0.0)


def backoff(attempt: int, options: StreamOptions) -> float:
    """The wait before retry ``attempt + 1`` when the server asked for none."""
    return min(options.retry_base_delay * 2**attempt, options.max_retry_delay)


def retry_delay(failure: RequestFailed, attempt: int, options: StreamOptions) -> float | RequestFailed:
    """Seconds to wait before retry number ``attempt + 1``, or the failure to report instead."""
    if not failure.retryable or attempt >= options.max_retries:
        return failure
    if failure.retry_after is not None:
        if failure.retry_after > options.max_retry_delay:
            return RequestFailed(
                f"{failure.message} (the server asked to retry after {failure.retry_after:g} s, "
                f"more than max_retry_delay {options.max_retry_delay:g} s)",
                failure.status,
            )
        return failure.retry_after
    return backoff(attempt, options)
