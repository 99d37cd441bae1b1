"""Token usage and its price.

``calculate_cost`` runs on every usage update, so a partial message always carries the cost of
what has been used so far. Rates are USD per million tokens (``ModelInfo.cost``).
"""

from __future__ import annotations

from tether.wire import ModelInfo, Usage, UsageCost


def calculate_cost(model: ModelInfo, usage: Usage) -> UsageCost:
    """Set ``usage["cost"]`` from the model's per-million rates and return it."""
    rates = model["cost"]
    cost = usage["cost"]
    cost["input"] = rates["input"] / 1_000_000 * usage["input"]
    cost["output"] = rates["output"] / 1_000_000 * usage["output"]
    cost["cacheRead"] = rates["cacheRead"] / 1_000_000 * usage["cacheRead"]
    cost["cacheWrite"] = rates["cacheWrite"] / 1_000_000 * usage["cacheWrite"]
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    return cost


def set_usage(
    model: ModelInfo,
    usage: Usage,
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    total: int | None = None,
    reasoning: int | None = None,
) -> None:
    """Replace the token counts of ``usage`` and re-price it.

    ``total`` defaults to the sum of the four counts (what Chat Completions and Anthropic report);
    APIs that state their own total (Responses, Gemini) pass it.
    """
    usage["input"] = input
    usage["output"] = output
    usage["cacheRead"] = cache_read
    usage["cacheWrite"] = cache_write
    usage["totalTokens"] = input + output + cache_read + cache_write if total is None else total
    if reasoning:
        usage["reasoningTokens"] = reasoning
    calculate_cost(model, usage)
