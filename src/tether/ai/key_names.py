"""Which environment variables hold each provider's API key: a leaf, since the model catalog
(``tether.ai.models``: which providers have a key) and the key lookup (``tether.ai.keys``, which
asks the catalog for a provider's ``apiKeyEnv``) both need it."""

from __future__ import annotations

ENV_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "minimax": ("MINIMAX_API_KEY",),
    "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
}
"""Environment variables per provider, first match wins (an Anthropic OAuth token beats a key)."""


def env_vars_for(provider: str) -> tuple[str, ...]:
    """The variables consulted for ``provider`` (``<PROVIDER>_API_KEY`` for unknown ones)."""
    known = ENV_VARS.get(provider)
    if known is not None:
        return known
    return (provider.upper().replace("-", "_").replace(".", "_") + "_API_KEY",)
