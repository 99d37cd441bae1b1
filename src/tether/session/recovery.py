"""Recovering a failed reply inside the run: compact and retry once when the context overflowed,
back off and retry when it failed for a transient reason (overload, rate limit, network).

A part of ``AgentSession`` (see ``tether.session.core_state``). The provider retries a request
that failed before anything streamed; this part retries the rest, and both spend one budget per
reply (``_retry_attempt``). Each failed reply stays on an abandoned branch of the session, and
the listeners hear ``auto_retry_start``/``auto_retry_end`` as pi's do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tether.ai.abort import AbortController
from tether.ai.retry import backoff
from tether.session.budget import is_context_overflow
from tether.session.core_state import CoreState
from tether.session.events import SessionEvent, compaction_end, newest_compaction_end
from tether.session.retry import is_transient_error
from tether.session.settings import Retry as RetrySettings
from tether.wire import AssistantMessage

if TYPE_CHECKING:
    from tether.ai.types import Retry as ProviderRetry


class Recovery(CoreState):
    """Overflow recovery and automatic retries of ``AgentSession``."""

    auto_retry: bool
    _retry_abort: AbortController | None
    _retry_attempt: int
    _caller_on_retry: Callable[[ProviderRetry], None] | None
    _retry_relay: RetryRelay
    _run_retry: RetrySettings
    _recovering_overflow: bool

    def abort_retry(self) -> None:
        """Cancel the wait before an automatic retry (the failed reply then stands)."""
        if self._retry_abort is not None:
            self._retry_abort.abort()
            self._retry_abort = None

    async def _recover(self) -> None:
        """After a failed reply: compact and retry once on an overflow, back off and retry on a
        transient error."""
        await self._retry_overflow()
        await self._retry_transient()

    async def _retry_overflow(self) -> None:
        """Compact, then continue once; the failed reply stays on an abandoned branch. The
        compaction is one ``abort()`` and ``close()`` reach, as a ``compact()`` is: a summariser
        that stalled held the run, and ``close()`` with it, for ever."""
        session, last = self._session, self.last_assistant()
        compaction = self.compaction
        if session is None or last is None or not compaction.enabled or not is_context_overflow(last):
            return
        from tether.session.wiring import recover_from_overflow

        under_way, _ = self._compaction_begun(None)
        try:
            await self._emit({"type": "compaction_start", "reason": "overflow"})
            work = under_way.work = asyncio.ensure_future(
                recover_from_overflow(
                    session,
                    [last],
                    model=self.model,
                    stream_fn=self._stream_fn(reason="overflow"),
                    compaction=compaction,
                    signal=under_way.controller.signal,
                )
            )
            try:
                recovered = await work
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # the run itself was cancelled
                recovered = False  # ``close()`` gave up on a summariser deaf to the abort
            if recovered:
                self.compactions += 1
                await self._emit(newest_compaction_end("overflow", session, True))
            elif under_way.controller.signal.aborted:
                aborted = "summarising failed: the compaction was aborted"
                await self._emit(compaction_end("overflow", None, aborted=True, error=aborted))
            else:
                await self._emit(newest_compaction_end("overflow", None, False))
        finally:
            self._compaction_over(under_way, None)
        if recovered:
            self._reload()
            self._recovering_overflow = True
            try:
                await self.agent.continue_()
            finally:
                self._recovering_overflow = False

    def _retries_allowed(self) -> int:
        """Retries the current run's policy allows a reply (0 with ``auto_retry`` off)."""
        return self._run_retry.retries if self.auto_retry else 0

    def _retry_options(self) -> None:
        """Give the agent's requests the run's retry policy with what is left of the reply's budget.

        The provider retries a request that failed before anything streamed (it alone sees the
        status and ``Retry-After``); this core retries the rest (a reply cut off midway, a stream
        function's transient error). Both spend one budget, ``_retry_attempt``, so a reply makes
        at most ``max_retries + 1`` requests whoever retries."""
        policy = self._run_retry
        options = self.agent.options
        options.max_retries = max(self._retries_allowed() - self._retry_attempt, 0)
        options.retry_base_delay = policy.base_delay_ms / 1000
        options.max_retry_delay = policy.max_delay_ms / 1000
        if options.on_retry is not self._retry_relay:
            self._caller_on_retry = options.on_retry
        options.on_retry = self._retry_relay
        self._retry_abort = AbortController()
        options.retry_signal = self._retry_abort.signal

    def _provider_retried(self, retry: ProviderRetry) -> None:
        """The provider is about to repeat a failed request: announce it as ours (``auto_retry_start``)."""
        if self._caller_on_retry is not None:
            self._caller_on_retry(retry)
        self._retry_attempt += 1
        self._emit_now(
            {
                "type": "auto_retry_start",
                "attempt": self._retry_attempt,
                "maxAttempts": self._retries_allowed(),
                "delayMs": round(retry.delay * 1000),
                "errorMessage": retry.reason,
            }
        )

    def _retryable(self, message: AssistantMessage) -> bool:
        """A failed reply this core should repeat: transient, and not an HTTP failure the
        provider already judged (retried to the budget, or refused to: ``Retry-After`` past
        ``max_delay_ms``, a quota error)."""
        return "errorStatus" not in message and is_transient_error(message)

    async def _retry_transient(self) -> None:
        """Wait, then continue; each failed reply stays on an abandoned branch of the session.

        ``auto_retry_start`` before each wait, one ``auto_retry_end`` when retrying is over: as pi
        does, right after the first reply that works (before its ``turn_end``), else at the end."""
        while True:
            last = self.last_assistant()
            attempt = self._retry_attempt
            if last is None or not self._retryable(last) or attempt >= self._retries_allowed():
                self._retry_attempt = 0
                if attempt:  # the reply that worked said so already (_retry_worked)
                    ok = last is not None and last["stopReason"] not in ("error", "aborted")
                    if ok:
                        await self._emit({"type": "auto_retry_end", "success": True, "attempt": attempt})
                    else:
                        final = (last or {}).get("errorMessage") or "the retry failed"
                        await self._emit(
                            {
                                "type": "auto_retry_end",
                                "success": False,
                                "attempt": attempt,
                                "finalError": final,
                            }
                        )
                return
            attempt += 1
            self._retry_attempt = attempt
            delay = round(backoff(attempt - 1, self.agent.options) * 1000)
            await self._emit(
                {
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": self._retries_allowed(),
                    "delayMs": delay,
                    "errorMessage": last.get("errorMessage") or "",
                }
            )
            if not await self._retry_wait(delay):
                self._retry_attempt = 0
                await self._emit(
                    {
                        "type": "auto_retry_end",
                        "success": False,
                        "attempt": attempt,
                        "finalError": "Retry cancelled",
                    }
                )
                return
            self._abandon(last)
            self._retry_options()
            await self.agent.continue_()

    async def _retry_wait(self, delay_ms: int) -> bool:
        """Sleep before a retry; ``False`` when ``abort``/``abort_retry`` cancelled it."""
        controller = AbortController()
        self._retry_abort = controller
        try:
            await asyncio.wait_for(controller.signal.wait(), delay_ms / 1000)
        except TimeoutError:
            return True
        finally:
            self._retry_abort = None
        return False

    def _abandon(self, failed: AssistantMessage) -> None:
        """Take a failed reply out of the context (the session keeps it on a side branch)."""
        session = self._session
        entry_id = session.message_id(failed) if session is not None else None
        if session is not None and entry_id is not None:
            session.branch(session.entry(entry_id)["parentId"])
            self._reload()
        else:
            self.agent.messages = [m for m in self.agent.messages if m is not failed]

    def _will_retry(self) -> bool:
        """Whether ``_recover`` will retry the pass that just ended (``agent_end.willRetry``)."""
        last = self.last_assistant()
        if last is None or last["stopReason"] != "error":
            return False
        if is_context_overflow(last):
            return self._session is not None and self.compaction.enabled and not self._recovering_overflow
        return self._retryable(last) and self._retry_attempt < self._retries_allowed()

    async def _retry_worked(self, event: SessionEvent) -> None:
        """Pass on the reply a retry got, then say at once that the retry worked, as pi does."""
        with self._session_failure_kept():
            await self._emit(event)
            attempt, self._retry_attempt = self._retry_attempt, 0
            await self._emit({"type": "auto_retry_end", "success": True, "attempt": attempt})


class RetryRelay:
    """Tells a core of the provider's retries until the core closes."""

    __slots__ = ("core",)

    def __init__(self, core: Recovery) -> None:
        self.core: Recovery | None = core

    def __call__(self, retry: ProviderRetry) -> None:
        if self.core is not None:
            self.core._provider_retried(retry)  # pyright: ignore[reportPrivateUsage]
