"""Built-in providers, one module per wire API; ``BUILTIN`` is what the registry loads."""

from __future__ import annotations

from tether.ai.providers import anthropic, gemini, local, openai_completions, openai_responses
from tether.ai.registry import ApiProvider

BUILTIN: tuple[ApiProvider, ...] = (
    openai_completions.PROVIDER,
    anthropic.PROVIDER,
    openai_responses.PROVIDER,
    gemini.PROVIDER,
    local.PROVIDER,
)
