"""Built-in providers, one module per wire API; ``BUILTIN`` is what the registry loads."""

from __future__ import annotations

from tether.ai.api_provider import ApiProvider
from tether.ai.providers import anthropic, gemini, local, openai_completions, openai_responses

BUILTIN: tuple[ApiProvider, ...] = (
    openai_completions.PROVIDER,
    anthropic.PROVIDER,
    openai_responses.PROVIDER,
    gemini.PROVIDER,
    local.PROVIDER,
)
