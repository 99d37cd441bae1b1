"""Model and thinking descriptors of seed 000 (``modelDefs`` of ``reference/seeds/000-wire.txt``).

Unlike transcript messages these are *closed* records: unknown keys are dropped and required keys
are enforced, because a model descriptor is configuration we act on, not history we must keep.
"""

from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict

from tether.wire.doc import Doc
from tether.wire.messages import JsonObject, Number
from tether.wire.records import CLOSED, record

Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
ThinkingLevel = Annotated[
    Literal["inherit", "off", "minimal", "low", "medium", "high", "xhigh", "max"],
    Doc("Thinking selector; `inherit` defers to a higher-level selector."),
]
ConfiguredThinkingLevel = Annotated[
    Literal["auto", "inherit", "off", "minimal", "low", "medium", "high", "xhigh", "max"],
    Doc("User-configured thinking selector, including automatic selection."),
]


@record(CLOSED)
class ModelCost(TypedDict):
    """Per-million-token USD rates."""

    input: Number
    output: Number
    cacheRead: Number
    cacheWrite: Number


@record(CLOSED)
class ThinkingConfig(TypedDict):
    mode: str
    efforts: list[Effort]
    defaultLevel: NotRequired[Effort]
    effortMap: NotRequired[JsonObject]
    supportsDisplay: NotRequired[bool]
    prefixBinding: NotRequired[bool]
    effortRouting: NotRequired[JsonObject]
    effortBudgets: NotRequired[JsonObject]
    suppressWhenOff: NotRequired[bool]
    requiresEffort: NotRequired[bool]


@record(CLOSED)
class ModelInfo(TypedDict):
    """Model descriptor: the client-relevant subset of the server's model record."""

    id: str
    name: str
    api: str
    provider: str
    baseUrl: str
    reasoning: bool
    input: Annotated[list[str], Doc("Accepted input modalities, e.g. `text`, `image`.")]
    cost: ModelCost
    contextWindow: Annotated[int | None, Doc("Null when the provider does not report a limit.")]
    maxTokens: Annotated[int | None, Doc("Null when the provider does not report a limit.")]
    headers: NotRequired[JsonObject]
    premiumMultiplier: NotRequired[Number]
    preferWebsockets: NotRequired[bool]
    contextPromotionTarget: NotRequired[str]
    priority: NotRequired[int]
    thinking: NotRequired[ThinkingConfig]
    compat: NotRequired[JsonObject]


MODEL_DESCRIPTION = ("name", "reasoning", "input", "cost", "contextWindow", "maxTokens", "thinking")
"""The fields of a ``ModelInfo`` that say what the model is (limits, cost, input), not where
requests go: what a session's stored descriptor may contribute on resume
(``tether.ai.models.restored_model``), and what a change of is recorded although the id stays."""
