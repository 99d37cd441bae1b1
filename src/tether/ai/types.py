"""Request-side types of the unified streaming API: tools, context, options, stream functions."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeVar

from typing_extensions import TypedDict

from tether.wire import Message, ModelInfo

if TYPE_CHECKING:
    import httpx2

    from tether.ai.abort import AbortSignal
    from tether.ai.event_stream import AssistantMessageEventStream

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
"""Unified reasoning level; each provider maps it to what its API expects."""

ServiceTier = Literal["auto", "default", "flex", "priority", "scale"]
CacheRetention = Literal["none", "short", "long"]


class Tool(TypedDict):
    """A function tool as the model sees it: name, description and a JSON Schema for arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Context(TypedDict):
    """What one model request sends: system prompt, transcript and tools."""

    systemPrompt: NotRequired[str]
    volatileContext: NotRequired[str]
    """Content kept after the last prompt-cache breakpoint (never part of a cached prefix)."""
    messages: list[Message]
    tools: NotRequired[list[Tool]]


@dataclass(frozen=True, slots=True)
class Retry:
    """A failed attempt that is about to be repeated: what ``StreamOptions.on_retry`` is told."""

    attempt: int
    """The retry about to start: 1 for the first."""
    delay: float
    """Seconds waited before it."""
    reason: str
    """Why the previous attempt failed, as the user would read it."""
    status: int | None = None
    """The HTTP status of the failed attempt, when it got one."""


DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds without a byte of a streaming reply before it counts as stalled. Generous on purpose:
a reasoning model with hidden thinking (OpenAI's) can send nothing for minutes and still answer."""


DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to set up a connection (TCP and TLS): a provider does it in well under one; a server
that is down or behind a black hole should not keep a run silent for half a minute per attempt."""


@dataclass(slots=True)
class ProviderRequest:
    """A request about to go to a provider, as ``StreamOptions.on_request`` sees it."""

    url: str
    headers: dict[str, str | None] = field(repr=False)  # the API key's: no repr shows it
    payload: Any


@dataclass(slots=True)
class StreamOptions:
    """Options every provider understands. ``None`` means: the provider's or model's default."""

    temperature: float | None = None
    max_tokens: int | None = None
    signal: AbortSignal | None = None
    api_key: str | None = field(default=None, repr=False)
    """Left out of ``repr``, with ``headers`` (which may carry one): options are what a log line
    or an error tracker's captured locals show of a model call."""
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    session_id: str | None = None
    """Stable id of the conversation; providers use it as a prompt-cache key."""
    cache_retention: CacheRetention = "short"
    service_tier: ServiceTier | None = None
    max_retries: int = 3
    """Retries of a failed request (``tether.ai.retry`` says which failures): at most
    ``max_retries + 1`` requests for one reply; 0 sends one."""
    retry_base_delay: float = 1.0
    """Seconds before the first retry; doubled for each further one, up to ``max_retry_delay``."""
    max_retry_delay: float = 60.0
    """The longest wait before a retry (seconds); a server asking for longer fails at once."""
    retry_signal: AbortSignal | None = None
    """Aborting it cancels a wait before a retry (the failed attempt then stands) without
    aborting the run: ``AgentSession.abort_retry``."""
    timeout: float | None = 600.0
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    """Seconds a started response body may go without a byte before the request ends as a
    retryable error (``None``: wait as long as ``timeout``). A stalled server otherwise keeps the
    user waiting with no sign; a provider's ``streamIdleTimeoutMs`` in ``models.json`` wins."""
    connect_timeout: float | None = DEFAULT_CONNECT_TIMEOUT
    """Seconds a request may take to set up its connection (``None`` or 0: as long as ``timeout``).
    Longer under a burst of connects to a distant server (1,000 sessions starting at once wait
    over a second each), shorter to fail over sooner; a provider's ``connectTimeoutMs`` in
    ``models.json`` wins."""
    tool_choice: str | dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=lambda: {})
    """Provider-specific request fields merged into the body last."""
    on_retry: Callable[[Retry], None] | None = None
    """Told before each retry of a failed attempt (telemetry, progress); must not raise."""
    on_request: Callable[[ProviderRequest], Awaitable[None]] | None = None
    """Called with each HTTP request to the provider right before it is sent (every attempt):
    it may change ``headers`` (``None`` removes one) and replace ``payload`` (pi's
    ``before_provider_headers``/``before_provider_request``, for extensions). Only when set is
    the body decoded again for it."""
    on_response: Callable[[int, Mapping[str, str]], Awaitable[None]] | None = None
    """Called with the status and headers of each provider response, before its body is read
    (pi's ``after_provider_response``)."""
    http_client: httpx2.AsyncClient | None = None
    """The HTTP client the request goes through, used as it is (``None``: the provider's pool,
    with its connection limit). Give one built on your own transport (a proxy, recording, a
    ``tether.testing.MockProvider``) for one call here, or for every call of an agent in
    ``Agent(options=...)``; the caller closes it."""


@dataclass(slots=True)
class SimpleStreamOptions(StreamOptions):
    """``StreamOptions`` plus a unified thinking level, mapped per provider."""

    reasoning: ThinkingLevel | None = None


_Options = TypeVar("_Options", bound=StreamOptions)
_FIELD_VALUES: dict[type, Callable[[Any], tuple[Any, ...]] | None] = {}
"""Per options class: what reads all its fields in ``__init__``'s order, or ``None`` when its
``__init__`` does not take them all by position (a keyword-only or ``init=False`` field)."""


def with_signal(options: _Options, signal: AbortSignal | None) -> _Options:
    """``dataclasses.replace(options, signal=signal)``, the same copy at about a third of the cost:
    the agent loop copies its options for every run (a prompt), and ``replace`` walks the 25
    fields one by one in Python and calls ``__init__`` with them as keywords; here one C call
    reads them and ``__init__`` takes them by position."""
    cls = type(options)
    if cls not in _FIELD_VALUES:
        fields = dataclasses.fields(options)
        by_position = all(f.init and not f.kw_only for f in fields)
        _FIELD_VALUES[cls] = operator.attrgetter(*(f.name for f in fields)) if by_position else None
    read = _FIELD_VALUES[cls]
    if read is None:
        return dataclasses.replace(options, signal=signal)
    copy = cls(*read(options))
    copy.signal = signal
    return copy


StreamFn = Callable[
    [ModelInfo, Context, SimpleStreamOptions | None],
    "AssistantMessageEventStream | Awaitable[AssistantMessageEventStream]",
]
"""The agent loop's model call. Contract: never raises; failures end the stream as ``error``."""
