"""scripts/gen_catalog.py: pi-ai's model records → our catalog (without npm: a small input)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from reference_paths import REPO_ROOT
from tether.ai.models import load_catalog

SCRIPT = REPO_ROOT / "scripts" / "gen_catalog.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_catalog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_script()


def pi_model(provider: str, model_id: str, api: str, base_url: str, **extra: Any) -> dict[str, Any]:
    """A record shaped like those of pi-ai's ``models.generated.js``."""
    return {
        "id": model_id,
        "name": model_id.upper(),
        "api": api,
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0},
        "contextWindow": 100000,
        "maxTokens": 8000,
        **extra,
    }


RAW = {
    "openrouter": {
        "z/model": pi_model("openrouter", "z/model", "openai-completions", "https://openrouter.ai/api/v1"),
        "openrouter/auto": pi_model(
            "openrouter",
            "openrouter/auto",
            "openai-completions",
            "https://openrouter.ai/api/v1",
            reasoning=True,
            cost={"input": -1000000, "output": -1000000, "cacheRead": 0, "cacheWrite": 0},
        ),
        "a/reasoner": pi_model(
            "openrouter",
            "a/reasoner",
            "openai-completions",
            "https://openrouter.ai/api/v1",
            reasoning=True,
            thinkingLevelMap={"minimal": None, "low": None, "medium": None, "high": "high", "xhigh": "max"},
            compat={"thinkingFormat": "deepseek"},
        ),
    },
    "mistral": {
        "codestral-latest": pi_model(
            "mistral", "codestral-latest", "mistral-conversations", "https://api.mistral.ai"
        ),
    },
    "anthropic": {
        "claude-opus-4-7": pi_model(
            "anthropic",
            "claude-opus-4-7",
            "anthropic-messages",
            "https://api.anthropic.com",
            reasoning=True,
            thinkingLevelMap={"xhigh": "xhigh"},
        ),
    },
    "amazon-bedrock": {"x": pi_model("amazon-bedrock", "x", "bedrock-converse-stream", "https://bedrock")},
    "google": {"g": pi_model("google", "g", "google-vertex", "https://vertex")},
}


def test_convert_keeps_shipped_providers_maps_apis_and_sorts() -> None:
    models, dropped = gen.convert(RAW)
    assert [(m["provider"], m["id"]) for m in models] == [
        ("anthropic", "claude-opus-4-7"),
        ("mistral", "codestral-latest"),
        ("openrouter", "a/reasoner"),
        ("openrouter", "openrouter/auto"),
        ("openrouter", "z/model"),
    ]
    assert dropped == ["google/g (google-vertex)"]  # bedrock is not a shipped provider at all
    by_id = {m["id"]: m for m in models}
    mistral = by_id["codestral-latest"]
    assert (mistral["api"], mistral["baseUrl"]) == ("openai-completions", "https://api.mistral.ai/v1")
    assert mistral["compat"]["requiresToolResultName"] is True
    assert by_id["openrouter/auto"]["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}


def test_thinking_from_family_rules_first_then_pi_level_map() -> None:
    models, _ = gen.convert(RAW)
    by_id = {m["id"]: m for m in models}
    # family rule: Opus 4.7 has adaptive effort up to max (pi-ai's scale stops at xhigh)
    assert by_id["claude-opus-4-7"]["thinking"] == {
        "mode": "anthropic-adaptive",
        "efforts": ["low", "medium", "high", "xhigh", "max"],
    }
    # router: pi-ai's map, where a level sent as "max" is our max level
    assert by_id["a/reasoner"]["thinking"] == {"mode": "effort", "efforts": ["high", "max"]}
    assert by_id["a/reasoner"]["compat"] == {"thinkingFormat": "deepseek"}
    assert "thinking" not in by_id["z/model"]


def test_rendered_catalog_loads_back(tmp_path: Path) -> None:
    models, _ = gen.convert(RAW)
    text = gen.render("@mariozechner/pi-ai@0.0.0", gen.providers_table(models), models)
    catalog = load_catalog(text)
    assert catalog.models[("mistral", "codestral-latest")] == next(
        m for m in models if m["id"] == "codestral-latest"
    )
    assert catalog.providers["openrouter"].api_key_env == "OPENROUTER_API_KEY"
    assert catalog.providers["ollama"].local  # local servers are added by the loader
    assert json.loads(text)["generatedBy"] == "scripts/gen_catalog.py from @mariozechner/pi-ai@0.0.0"
    # one model per line keeps diffs of a regeneration readable
    assert sum(1 for line in text.splitlines() if line.startswith('{"id": ')) == len(models)
