"""Token accounting for compaction: how big a context is, and when it is too big.

Kept apart from ``tether.session.compaction`` (which summarises through a model and writes to
the session store) because every model request asks these questions, sessions or not, and
should not load the store to answer them.

Token counts are estimates (about four characters per token; images count as 1,200) corrected
by the provider's own count where an assistant message reports usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.wire.json_line import mended_json

if TYPE_CHECKING:
    from tether.wire import AgentMessage, AssistantMessage

DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_KEEP_RECENT_TOKENS = 20_000
IMAGE_TOKENS = 1_200


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """When to compact a session's context, and how much of it survives verbatim."""

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    """Compact when the context grows past ``contextWindow - reserve_tokens``."""
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    """Roughly how much of the newest conversation survives a compaction verbatim."""


def estimate_tokens(message: AgentMessage) -> int:
    """Rough token count of one message: characters / 4 rounded up, images at a flat rate."""
    texts = message_texts(message)
    return (sum(map(len, filter(None, texts))) + 3) // 4 + texts.count(None) * IMAGE_TOKENS


def context_tokens(messages: Sequence[AgentMessage], compacted: int = 0) -> int:
    """Tokens of ``messages`` as the provider counts them: the newest assistant usage plus
    estimates of what came after it (estimates only when no reply reported usage). The first
    ``compacted`` messages (a compaction's summary and what it kept: ``SessionContext``) are
    estimated whatever they report: a kept reply's usage measured the context before the
    compaction."""
    return TokenCount.of(messages, compacted).total


def reported_tokens(message: AgentMessage) -> int:
    """The context size a successful reply's usage reports (0: it reports none, or failed)."""
    m: Mapping[str, Any] = message
    if m.get("role") != "assistant" or m.get("stopReason") in ("error", "aborted"):
        return 0
    usage: Mapping[str, Any] = m.get("usage") or {}
    reported = usage.get("totalTokens") or sum(
        int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite")
    )
    return int(reported or 0)


@dataclass(slots=True)
class TokenCount:
    """``context_tokens`` of a context, kept as messages are added to it.

    A session's context grows a message at a time and is measured before every model call; kept
    here, each message is estimated once, when added. Counted afresh per call, a provider that
    reports no usage (a local server, the scripted model) had every earlier message estimated
    again before each request: the transcript re-walked per message.
    """

    reported: int = 0
    """The newest successful reply's reported usage (0: none reported one)."""
    estimated: int = 0
    """Estimates of the messages after that reply (of all of them, when none reported)."""

    @classmethod
    def of(cls, messages: Sequence[AgentMessage], compacted: int = 0) -> TokenCount:
        """The count of ``messages``, estimating only those after the newest reported usage, and
        the first ``compacted`` whatever they report (``context_tokens``)."""
        for i in range(len(messages) - 1, compacted - 1, -1):
            reported = reported_tokens(messages[i])
            if reported:
                return cls(reported, sum(estimate_tokens(x) for x in messages[i + 1 :]))
        return cls(0, sum(estimate_tokens(x) for x in messages))

    @property
    def total(self) -> int:
        return self.reported + self.estimated

    def add(self, message: AgentMessage) -> None:
        if message.get("role") == "assistant":  # only a reply reports usage: the rest is estimated
            reported = reported_tokens(message)
            if reported:
                self.reported, self.estimated = reported, 0
                return
        self.estimated += estimate_tokens(message)

    def plus(self, messages: Sequence[AgentMessage]) -> int:
        """The total once ``messages`` follow, leaving this count as it is."""
        if not messages:  # what a request nearly always adds: the session holds the whole run
            return self.reported + self.estimated
        count = TokenCount(self.reported, self.estimated)
        for message in messages:
            count.add(message)
        return count.total


def should_compact(tokens: int, context_window: int | None, settings: CompactionSettings) -> bool:
    if not settings.enabled or not context_window:
        return False
    return tokens > context_window - settings.reserve_tokens


_OVERFLOW = "|".join(
    [
        r"prompt is too long",
        r"maximum context length",
        r"context[_ ]length[_ ]exceeded",
        r"exceeds? the context window",
        r"context window (?:is )?exceeded",
        r"input is too long",
        r"too many tokens",
        r"reduce the length of the messages",
        r"input token count.*exceeds the maximum",
        r"request too large",
        r"exceeds the maximum number of tokens",
        r"string too long",
    ]
)
"""Compiled on first use (``re``'s cache): most runs never see an error, and compiling this at
import cost every start-up ~2% of its time."""


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Did this reply fail because the request was longer than the model accepts?

    Recognises the usual provider messages (Anthropic "prompt is too long", OpenAI "maximum
    context length" / ``context_length_exceeded``, Gemini "input token count … exceeds the
    maximum", "exceeds the context window", …) and silent overflows where a successful reply
    reports more input than the window.
    """
    if message.get("stopReason") == "error":
        return re.search(_OVERFLOW, message.get("errorMessage") or "", re.IGNORECASE) is not None
    if context_window and message.get("stopReason") == "stop":
        usage = message.get("usage")
        return usage["input"] + usage["cacheRead"] > context_window
    return False


_ARGUMENTS = json.JSONEncoder(allow_nan=False)
"""How ``message_texts`` writes a call's arguments (``json.dumps``'s settings), through
``mended_json``: arguments nested deeper than the encoder goes (a model's) raised
``RecursionError`` from storing the reply, and from each later measure of the context."""


def message_texts(m: Mapping[str, Any]) -> list[str | None]:
    """Text pieces of a message (``None`` for each image), whatever its role.

    Every message a session records is measured here (``TokenCount.add``): no ``cast`` (in 3.11
    a call, and ``cast(list[Any], ...)`` builds the alias each time too)."""
    out: list[str | None] = []
    get = m.get
    for key in ("command", "code", "output", "summary"):
        value = get(key)
        if isinstance(value, str):
            out.append(value)
    content = get("content")
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        blocks: list[Any] = content  # pyright: ignore[reportUnknownVariableType] (JSON)
        for block in blocks:
            if not isinstance(block, dict):
                continue
            b: dict[str, Any] = block  # pyright: ignore[reportUnknownVariableType] (a JSON object)
            kind = b.get("type")
            if kind == "text":
                out.append(str(b.get("text", "")))
            elif kind == "thinking":
                out.append(str(b.get("thinking", "")))
            elif kind == "toolCall":
                out.append(str(b.get("name", "")) + mended_json(b.get("arguments", {}), _ARGUMENTS)[0])
            elif kind == "image":
                out.append(None)
    files = get("files")
    if files:
        for f in files:
            if isinstance(f, dict):
                file: dict[str, Any] = f  # pyright: ignore[reportUnknownVariableType] (a JSON object)
                out.append(str(file.get("content", "")))
    return out
