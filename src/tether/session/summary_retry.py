"""Summarising calls retried on the session's retry policy, announced as pi 1.6 announces them.

A compaction (manual, at the threshold or after an overflow) and a branch summary each make one
model call for their summary. A transient failure of that call (a dropped stream, an overloaded
server) would otherwise fail the whole compaction; pi 1.6 retries it on ``settings.retry``'s
budget and backoff, and says so with ``summarization_retry_scheduled`` before each wait,
``summarization_retry_attempt_start`` when the call starts again and one
``summarization_retry_finished`` at the end. This module does the same by wrapping the summary's
stream function, so the summariser (``tether.session.compaction``) stays a single call.

The provider's own retry is turned off for these calls (``max_retries=0``): every retry of a
summary is then this module's, announced, and one budget holds, as in pi (whose providers leave
retrying to the session).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from tether.ai.abort import AbortSignal
from tether.ai.types import SimpleStreamOptions, StreamFn
from tether.session.retry import is_transient_error
from tether.session.settings import Retry
from tether.wire import ModelInfo
from tether.wire.events import (
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)

SummaryRetryEvent = (
    SummarizationRetryScheduledEvent | SummarizationRetryAttemptStartEvent | SummarizationRetryFinishedEvent
)


def retrying_summaries(
    stream_fn: StreamFn,
    policy: Retry,
    emit: Callable[[SummaryRetryEvent], Awaitable[None]],
    start: SummarizationRetryAttemptStartEvent,
) -> StreamFn:
    """``stream_fn`` whose failed calls are repeated while ``policy`` allows and the failure is
    transient; ``start`` is the ``summarization_retry_attempt_start`` event to send (it names the
    source). The stream returned is the last attempt's, already finished."""

    async def summary(model: ModelInfo, context: Any, options: SimpleStreamOptions | None = None) -> Any:
        options = dataclasses.replace(options or SimpleStreamOptions(), max_retries=0)
        attempt = 0
        while True:
            stream = stream_fn(model, context, options)
            stream = await stream if inspect.isawaitable(stream) else stream
            reply = await stream.result()
            failed = reply["stopReason"] == "error"
            if not failed or attempt >= policy.retries or not is_transient_error(reply):
                if attempt:
                    await emit({"type": "summarization_retry_finished"})
                return stream
            attempt += 1
            delay = min(policy.base_delay_ms * 2 ** (attempt - 1), policy.max_delay_ms)
            await emit(
                {
                    "type": "summarization_retry_scheduled",
                    "attempt": attempt,
                    "maxAttempts": policy.retries,
                    "delayMs": delay,
                    "errorMessage": reply.get("errorMessage") or "Unknown error",
                }
            )
            if not await _wait(delay, options.signal):
                await emit({"type": "summarization_retry_finished"})
                return stream  # the failed attempt stands: the compaction reports it (aborted)
            await emit(start)

    return summary


async def _wait(delay_ms: int, signal: AbortSignal | None) -> bool:
    """Sleep ``delay_ms``; ``False`` when ``signal`` aborted first."""
    if signal is None:
        await asyncio.sleep(delay_ms / 1000)
        return True
    try:
        await asyncio.wait_for(signal.wait(), delay_ms / 1000)
    except TimeoutError:
        return True
    return False
