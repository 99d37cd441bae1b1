"""Which unified thinking levels a model accepts, how a request clamps to them, and token budgets.

Users pick one level (``off`` … ``max``) for every model; each model accepts only a subset, and
each API encodes it differently (an effort string, an adaptive effort, a Gemini level, or a token
budget). The answer for a model comes from, in order:

1. its ``thinking`` (``ThinkingConfig`` of ``reference/seeds/000-wire.txt``): shipped in the
   catalog or written by the user;
2. family rules for models we know by id (``family_thinking_config``), so a user-defined
   ``claude-opus-4-7`` or ``gemini-2.5-pro`` behaves like the catalog's;
3. the ``reasoning`` flag: a reasoning model without more data accepts ``off`` to ``high`` (what
   pi-ai assumes); a model without reasoning accepts only ``off``.

Levels are ordered ``off < minimal < low < medium < high < xhigh < max``. A level the model does
not accept clamps to the nearest accepted one, upward first: asking for more thinking than a
model offers gives its most, asking for a level between two offered ones gives the higher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from tether.ai.types import ThinkingLevel
from tether.wire import Effort, ModelInfo, ThinkingConfig

ThinkingMode = Literal["effort", "budget", "google-level", "anthropic-adaptive"]
"""How an API encodes a level (``ThinkingConfig.mode``).

- ``effort``: an effort string (OpenAI ``reasoning_effort``/``reasoning.effort``, OpenRouter
  ``reasoning.effort``, DeepSeek, Mistral), value from ``effortMap`` or the level's own name;
- ``anthropic-adaptive``: Anthropic ``thinking: {type: adaptive}`` + ``output_config.effort``;
- ``google-level``: Gemini 3 ``thinkingConfig.thinkingLevel`` (``effortMap`` gives the enum);
- ``budget``: a token budget per level (Anthropic ``budget_tokens``, Gemini 2.5 ``thinkingBudget``).
"""

LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""Every unified level, least to most thinking."""

_DEFAULT_EFFORTS: tuple[Effort, ...] = ("minimal", "low", "medium", "high")
"""What a reasoning model without more data accepts besides ``off`` (pi-ai's assumption)."""

ROUTER_PROVIDERS = frozenset({"openrouter"})
"""Providers that translate levels for the models they route to: family rules do not apply to
them, their catalog entries carry what the router accepts."""

MIN_ANSWER_TOKENS = 1024
"""Output tokens kept for the answer when a thinking budget would fill ``max_tokens``."""

ANTHROPIC_BUDGETS: dict[Effort, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Anthropic ``budget_tokens`` per level (pi-ai's defaults; the API's minimum is 1024)."""

GEMINI_25_PRO_BUDGETS: dict[Effort, int] = {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}
GEMINI_25_FLASH_BUDGETS: dict[Effort, int] = {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}
GEMINI_25_FLASH_LITE_BUDGETS: dict[Effort, int] = {
    "minimal": 512,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
}
"""Gemini 2.5 ``thinkingBudget`` per level, inside each model's accepted range (pi-ai's values)."""


# --- per-model answers --------------------------------------------------------------------------


def thinking_config(model: ModelInfo) -> ThinkingConfig | None:
    """The model's thinking configuration: its own, else the family rule's, else ``None``."""
    if not model["reasoning"]:
        return None
    own = model.get("thinking")
    if own is not None and own["efforts"]:  # an empty list says nothing: fall back
        return own
    return family_thinking_config(model)


def supported_thinking_levels(model: ModelInfo) -> list[ThinkingLevel]:
    """The unified levels this model accepts, least to most thinking.

    ``["off"]`` for a model without reasoning; no ``off`` for a model whose reasoning cannot be
    turned off (``requiresEffort``).
    """
    if not model["reasoning"]:
        return ["off"]
    config = thinking_config(model)
    if config is None:
        return ["off", *_DEFAULT_EFFORTS]
    accepted = set(config["efforts"])
    levels: list[ThinkingLevel] = [] if config.get("requiresEffort") else ["off"]
    levels.extend(level for level in LEVELS if level in accepted)
    return levels


def clamp_thinking_level(model: ModelInfo, level: ThinkingLevel) -> ThinkingLevel:
    """``level`` if the model accepts it, else the nearest accepted level, upward first.

    A model without reasoning always gives ``off``; ``off`` on a model that cannot stop thinking
    gives its lowest effort.
    """
    supported = supported_thinking_levels(model)
    if level in supported:
        return level
    index = LEVELS.index(level)
    for candidate in LEVELS[index + 1 :]:
        if candidate in supported:
            return candidate
    for candidate in reversed(LEVELS[:index]):
        if candidate in supported:
            return candidate
    return supported[0]


def thinking_effort(model: ModelInfo, level: ThinkingLevel) -> str | None:
    """The wire value for ``level`` after clamping: ``effortMap``'s value or the level's name.

    ``None`` when the clamped level is ``off`` (send no effort, or the API's way of disabling).
    """
    effective = clamp_thinking_level(model, level)
    if effective == "off":
        return None
    config = thinking_config(model)
    mapped = (config or {}).get("effortMap", {}).get(effective)
    return mapped if isinstance(mapped, str) else effective


def thinking_budgets(model: ModelInfo) -> dict[Effort, int]:
    """Token budget per level for budget-mode thinking: the model's ``effortBudgets`` over the
    defaults of its family (Gemini 2.5 sizes, else Anthropic's)."""
    config = thinking_config(model)
    budgets = dict(_family_budgets(_base_id(model["id"])) or ANTHROPIC_BUDGETS)
    for name, value in (config or {}).get("effortBudgets", {}).items():
        if name in LEVELS and isinstance(value, int):
            budgets[cast(Effort, name)] = value
    return budgets


def thinking_budget(model: ModelInfo, level: ThinkingLevel) -> int:
    """Token budget for ``level`` after clamping; ``0`` for ``off``.

    A clamped level above the budget table (``xhigh``/``max`` on a model whose efforts include
    them) gets the largest budget of the table.
    """
    effective = clamp_thinking_level(model, level)
    if effective == "off":
        return 0
    budgets = thinking_budgets(model)
    return budgets.get(effective, max(budgets.values()))


@dataclass(frozen=True, slots=True)
class ThinkingBudget:
    """A request's output limit and the part of it the model may spend thinking."""

    max_tokens: int
    budget_tokens: int


def plan_thinking_budget(model: ModelInfo, level: ThinkingLevel, max_tokens: int) -> ThinkingBudget:
    """Raise ``max_tokens`` by the level's thinking budget, within the model's output limit.

    Anthropic counts thinking inside ``max_tokens``: a budget equal to the limit leaves no room for
    the answer. So the budget is added on top of the answer's ``max_tokens``, capped at the
    model's ``maxTokens``; when the cap leaves the answer less than it asked for and less than
    ``MIN_ANSWER_TOKENS``, the budget shrinks to give the answer that much. A budget of ``0``
    means there is no room to think: send the request without thinking.
    """
    budget = thinking_budget(model, level)
    if budget == 0:
        return ThinkingBudget(max_tokens=max_tokens, budget_tokens=0)
    total = max_tokens + budget
    limit = model["maxTokens"]
    if limit is not None:
        total = min(total, limit)
    answer = min(max_tokens, MIN_ANSWER_TOKENS)
    if total - budget < answer:
        budget = max(0, total - answer)
    return ThinkingBudget(max_tokens=total, budget_tokens=budget)


# --- family rules -------------------------------------------------------------------------------


def family_thinking_config(model: ModelInfo) -> ThinkingConfig | None:
    """Thinking configuration known from the model's family (by API and id), else ``None``.

    Covers the vendors' own APIs: Anthropic (adaptive effort from Claude 4.6, budgets before),
    Gemini (levels from Gemini 3, budgets for 2.5), OpenAI (o-series, GPT-5 family, gpt-oss on
    any host) and Mistral's effort models. Routers (``ROUTER_PROVIDERS``) are left to their own data.
    """
    if not model["reasoning"] or model["provider"] in ROUTER_PROVIDERS:
        return None
    base = _base_id(model["id"])
    api = model["api"]
    if api == "anthropic-messages":
        return _anthropic_config(base)
    if api == "google-generative-ai":
        return _google_config(base)
    return _effort_family_config(base)


def _base_id(model_id: str) -> str:
    """The model's own name: lowercase, without a host's ``vendor/`` prefix, dots as dashes."""
    return model_id.rsplit("/", 1)[-1].lower().replace(".", "-")


_CLAUDE = r"claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-|$)"  # compiled on first use (re's cache)


def _anthropic_config(base: str) -> ThinkingConfig | None:
    match = re.search(_CLAUDE, base)
    if match is None:
        return _budget_config(ANTHROPIC_BUDGETS) if base.startswith("claude-3-7") else None
    family, major, minor = match.group(1), int(match.group(2)), int(match.group(3) or 0)
    if (major, minor) >= (4, 6) and family in ("opus", "sonnet"):
        # Adaptive thinking with an effort; `max` on all of them, `xhigh` from Opus 4.7.
        efforts: list[Effort] = ["low", "medium", "high", "max"]
        if family == "opus" and (major, minor) >= (4, 7):
            efforts = ["low", "medium", "high", "xhigh", "max"]
        return {"mode": "anthropic-adaptive", "efforts": efforts}
    return _budget_config(ANTHROPIC_BUDGETS)


def _google_config(base: str) -> ThinkingConfig | None:
    if re.match(r"gemini-3(-\d+)?-pro", base):
        return {
            "mode": "google-level",
            "efforts": ["low", "high"],
            "effortMap": {"low": "LOW", "high": "HIGH"},
            "requiresEffort": True,
        }
    if re.match(r"gemini-3(-\d+)?-flash", base):
        return {
            "mode": "google-level",
            "efforts": ["minimal", "low", "medium", "high"],
            "effortMap": {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"},
            "requiresEffort": True,
        }
    if base.startswith("gemma-4"):
        return {
            "mode": "google-level",
            "efforts": ["minimal", "high"],
            "effortMap": {"minimal": "MINIMAL", "high": "HIGH"},
            "requiresEffort": True,
        }
    budgets = _family_budgets(base)
    if budgets is None:
        return None
    config = _budget_config(budgets)
    if budgets is GEMINI_25_PRO_BUDGETS:
        config["requiresEffort"] = True  # 2.5 Pro cannot turn thinking off (minimum budget 128)
    return config


def _family_budgets(base: str) -> dict[Effort, int] | None:
    """Gemini 2.5 budget table for the id (also the ``-latest`` aliases), else ``None``."""
    if not (base.startswith("gemini-2-5-") or base in ("gemini-flash-latest", "gemini-flash-lite-latest")):
        return None
    if "flash-lite" in base:
        return GEMINI_25_FLASH_LITE_BUDGETS
    if "flash" in base:
        return GEMINI_25_FLASH_BUDGETS
    if "pro" in base:
        return GEMINI_25_PRO_BUDGETS
    return None


_MISTRAL_EFFORT_MODELS = frozenset({"mistral-small-2603", "mistral-small-latest", "mistral-medium-3-5"})
"""Mistral models that take ``reasoning_effort`` (``high``, or ``none`` for off)."""


def _effort_family_config(base: str) -> ThinkingConfig | None:
    if base in _MISTRAL_EFFORT_MODELS:
        return {"mode": "effort", "efforts": ["high"]}
    if "deep-research" in base:
        return {"mode": "effort", "efforts": ["medium"], "requiresEffort": True}
    if re.match(r"o\d", base):
        return {"mode": "effort", "efforts": ["low", "medium", "high"], "requiresEffort": True}
    if base.startswith("gpt-oss"):
        return {"mode": "effort", "efforts": ["low", "medium", "high"], "requiresEffort": True}
    match = re.match(r"gpt-5(?:-(\d+))?(?:-|$)", base)
    if match is None:
        return None
    if base == "gpt-5-pro":
        return {"mode": "effort", "efforts": ["high"], "requiresEffort": True}
    minor = int(match.group(1) or 0)
    efforts: list[Effort] = list(_DEFAULT_EFFORTS)
    if minor >= 2 or base == "gpt-5-1-codex-max":
        efforts.append("xhigh")
    return {"mode": "effort", "efforts": efforts, "requiresEffort": True}


def _budget_config(budgets: dict[Effort, int]) -> ThinkingConfig:
    effort_budgets: dict[str, Any] = {str(name): tokens for name, tokens in budgets.items()}
    return {"mode": "budget", "efforts": list(budgets), "effortBudgets": effort_budgets}


# --- pi-ai's per-model level maps (used by scripts/gen_catalog.py) -------------------------------


def config_from_level_map(level_map: dict[str, str | None]) -> ThinkingConfig | None:
    """Translate pi-ai's ``thinkingLevelMap`` into a ``ThinkingConfig`` (mode ``effort``).

    pi-ai lists levels ``off``…``xhigh`` with a wire value each: ``null`` marks a level as not
    accepted, a missing key means the level's own name, and ``xhigh`` is accepted only when
    mapped. A level whose wire value is ``max`` is our ``max`` level (pi-ai has none).
    """
    efforts: list[Effort] = []
    effort_map: dict[str, str] = {}
    for level in (*_DEFAULT_EFFORTS, "xhigh"):
        value = level_map.get(level, None if level == "xhigh" else level)
        if value is None:
            continue
        effort: Effort = "max" if value == "max" else level
        if effort not in efforts:
            efforts.append(effort)
        if value.lower() != effort:
            effort_map[effort] = value
    if not efforts:
        return None
    config: ThinkingConfig = {"mode": "effort", "efforts": efforts}
    if effort_map:
        config["effortMap"] = effort_map
    if "off" in level_map and level_map["off"] is None:
        config["requiresEffort"] = True
    return config
