"""Regenerate ``src/tether/ai/catalog.json``, the model catalog shipped with tether.

Source: the generated models file of pi-ai (``@mariozechner/pi-ai`` on npm, ``dist/models.generated.js``),
which pi-ai's maintainers rebuild from the vendors' model lists and models.dev. Steps:

1. ``npm pack @mariozechner/pi-ai@VERSION`` into a temporary folder and unpack it
   (or use an unpacked package given with ``--package-dir``, for offline runs);
2. read ``MODELS`` with Node (the file is an ES module; Node is needed anyway for npm);
3. keep the providers tether ships (``PROVIDERS``) and map each model to our ``ModelInfo``:
   pi-ai's ``mistral-conversations`` API becomes Mistral's OpenAI-compatible endpoint
   (``openai-completions`` at ``https://api.mistral.ai/v1`` with the compat settings it needs),
   ``thinkingLevelMap`` becomes a seed ``ThinkingConfig`` (``tether.ai.thinking`` family rules
   first, pi-ai's map for the rest), models of other APIs are dropped;
4. validate every entry with ``tether.wire.MODEL_INFO``, sort by provider then id, and write the
   catalog: a header, the provider table, then one model per line (diffs stay readable).

Usage (from the repository root, with the dev environment)::

    .venv/bin/python scripts/gen_catalog.py                  # latest pi-ai
    .venv/bin/python scripts/gen_catalog.py --version 0.73.1
    .venv/bin/python scripts/gen_catalog.py --package-dir /tmp/pi/package
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tether.ai.thinking import config_from_level_map, family_thinking_config
from tether.wire import MODEL_INFO, ModelInfo

PACKAGE = "@mariozechner/pi-ai"
OUTPUT = Path(__file__).resolve().parent.parent / "src" / "tether" / "ai" / "catalog.json"

PROVIDERS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
}
"""Shipped providers and the environment variable holding each one's API key."""

APIS = frozenset({"openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"})

MISTRAL_BASE_URL = "https://api.mistral.ai/v1"
MISTRAL_COMPAT: dict[str, Any] = {
    "supportsStore": False,
    "supportsDeveloperRole": False,
    "maxTokensField": "max_tokens",
    "requiresToolResultName": True,
    "requiresThinkingAsText": True,
    "requiresMistralToolIds": True,
}
"""What Mistral's chat-completions endpoint needs (pi-ai's settings from before it moved Mistral
to its own API): no ``store``/``developer`` role, ``max_tokens``, tool results with ``name``,
thinking replayed as text, tool-call ids of 9 alphanumerics."""

MODEL_KEYS = (
    "id",
    "name",
    "api",
    "provider",
    "baseUrl",
    "reasoning",
    "input",
    "cost",
    "contextWindow",
    "maxTokens",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", default="latest", help="pi-ai version on npm (default: latest)")
    parser.add_argument("--package-dir", type=Path, help="an unpacked pi-ai package (skips npm)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tether-catalog-") as tmp:
        package_dir = args.package_dir or download(args.version, Path(tmp))
        version = json.loads((package_dir / "package.json").read_text())["version"]
        raw = read_models(package_dir / "dist" / "models.generated.js")
    models, dropped = convert(raw)
    args.output.write_text(render(f"{PACKAGE}@{version}", providers_table(models), models))
    print(f"wrote {len(models)} models from {PACKAGE}@{version} to {args.output}")
    for provider in PROVIDERS:
        print(f"  {provider:<11} {sum(1 for m in models if m['provider'] == provider)}")
    if dropped:
        print(f"dropped (API not implemented): {', '.join(dropped)}")
    return 0


def download(version: str, into: Path) -> Path:
    """``npm pack`` the package into ``into`` and unpack it; returns the package folder."""
    spec = f"{PACKAGE}@{version}"
    out = run(["npm", "pack", spec, "--pack-destination", str(into)])
    tarball = into / out.strip().splitlines()[-1]
    run(["tar", "xzf", str(tarball), "-C", str(into)])
    return into / "package"


def read_models(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``MODELS`` of pi-ai's generated module, as JSON via Node."""
    script = f"import {{ MODELS }} from {json.dumps(path.resolve().as_uri())}; process.stdout.write(JSON.stringify(MODELS));"
    return json.loads(run(["node", "--input-type=module", "-e", script]))


def run(command: list[str]) -> str:
    """Run a tool and return its output; a failure stops the script with the tool's own message."""
    try:
        done = subprocess.run(command, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise SystemExit(f"{command[0]} is not installed (needed to fetch and read pi-ai)") from None
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{err.stderr.strip()}") from None
    return done.stdout


def convert(raw: dict[str, dict[str, dict[str, Any]]]) -> tuple[list[ModelInfo], list[str]]:
    """Our ``ModelInfo`` for every model of the shipped providers, sorted; and what was dropped."""
    models: list[ModelInfo] = []
    dropped: list[str] = []
    for provider in PROVIDERS:
        for model_id, source in raw.get(provider, {}).items():
            model = convert_model(source)
            if model is None:
                dropped.append(f"{provider}/{model_id} ({source['api']})")
            else:
                models.append(model)
    models.sort(key=lambda m: (m["provider"], m["id"]))
    return models, dropped


def convert_model(source: dict[str, Any]) -> ModelInfo | None:
    entry: dict[str, Any] = {key: source[key] for key in MODEL_KEYS}
    # OpenRouter prices its auto router at -1 (variable): unknown is 0 here, never a negative cost.
    entry["cost"] = {name: max(rate, 0) for name, rate in source["cost"].items()}
    compat = dict(source.get("compat") or {})
    if entry["api"] == "mistral-conversations":
        entry["api"] = "openai-completions"
        entry["baseUrl"] = MISTRAL_BASE_URL
        compat = {**MISTRAL_COMPAT, **compat}
    if entry["api"] not in APIS:
        return None
    if source.get("headers"):
        entry["headers"] = source["headers"]
    model = MODEL_INFO.decode(entry, f"{source['provider']}/{source['id']}")
    thinking = family_thinking_config(model)
    if thinking is None and model["reasoning"] and source.get("thinkingLevelMap"):
        thinking = config_from_level_map(source["thinkingLevelMap"])
    if thinking is not None:
        model["thinking"] = thinking
    if compat:
        model["compat"] = compat
    return MODEL_INFO.decode(model, f"{source['provider']}/{source['id']}")


def providers_table(models: list[ModelInfo]) -> dict[str, dict[str, str]]:
    """Per provider: its API, base URL (the one its models use) and API-key variable."""
    table: dict[str, dict[str, str]] = {}
    for provider, env in PROVIDERS.items():
        own = [m for m in models if m["provider"] == provider]
        if not own:
            continue
        apis = sorted({m["api"] for m in own})
        urls = sorted({m["baseUrl"] for m in own})
        if len(apis) != 1 or len(urls) != 1:
            raise SystemExit(f"{provider}: expected one API and base URL, got {apis} {urls}")
        table[provider] = {"api": apis[0], "baseUrl": urls[0], "apiKeyEnv": env}
    return table


def render(source: str, providers: dict[str, dict[str, str]], models: list[ModelInfo]) -> str:
    lines = [
        "{",
        f'"generatedBy": {json.dumps(f"scripts/gen_catalog.py from {source}")},',
        f'"providers": {json.dumps(providers)},',
        '"models": [',
        ",\n".join(json.dumps(model, ensure_ascii=False) for model in models),
        "]",
        "}",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
