"""Built-in providers, one module per wire API; ``BUILTIN`` is what the registry loads."""

from __future__ import annotations

from tether.ai.providers import anthropic, local, openai_completions
from tether.ai.registry import ApiProvider

BUILTIN: tuple[ApiProvider, ...] = (openai_completions.PROVIDER, anthropic.PROVIDER, local.PROVIDER)
