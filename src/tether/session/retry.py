"""Which failed replies this core retries: the transient ones (``tether.ai.retry.is_transient_text``)
that are not a context overflow, which is compaction's business, not a retry's."""

from __future__ import annotations

from tether.ai.retry import is_transient_text
from tether.session.budget import is_context_overflow
from tether.wire import AssistantMessage


def is_transient_error(message: AssistantMessage) -> bool:
    """Did this reply fail for a reason a later attempt may not meet (load, limits, network)?"""
    if message["stopReason"] != "error" or is_context_overflow(message):
        return False
    return is_transient_text(message.get("errorMessage") or "")
