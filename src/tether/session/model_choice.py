"""Which model a run uses, and the stream function that talks to it.

Resolution order: ``--model`` (or ``TETHER_SCRIPTED`` for tests and RPC clients), the settings'
``model``, the default model of the first provider whose API key is in the environment, and
finally the embedded default: SmolLM2 running in-process through the ``local`` provider, so
``tether`` answers offline with nothing configured.

Model specs:
- ``provider/id`` — a catalog or ``models.json`` model;
- ``local:/path/to/model.gguf`` — any GGUF file through llama-cpp-python;
- ``scripted:/path/to/script.json`` or ``scripted/NAME`` (the script comes from
  ``TETHER_SCRIPTED``) — the scripted model of ``tether.testing.scripted``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tether.ai.types import StreamFn
    from tether.wire import ModelInfo

SCRIPTED_ENV = "TETHER_SCRIPTED"

PREFERRED_MODELS = (
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-pro"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("xai", "grok-4"),
    ("groq", "openai/gpt-oss-120b"),
    ("deepseek", "deepseek-chat"),
    ("mistral", "mistral-large-latest"),
    ("cerebras", "gpt-oss-120b"),
)
"""Provider and preferred model, in order: the first provider with a key wins."""


class ModelError(ValueError):
    """The requested model cannot be used; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    model: ModelInfo
    stream_fn: StreamFn | None
    """``None``: the registry's ``stream_simple`` (every real provider)."""
    notice: str | None = None
    """Something the user should know (e.g. the embedded smoke-test model was chosen)."""


def resolve_model(spec: str | None, settings_model: str | None) -> ResolvedModel:
    scripted = os.environ.get(SCRIPTED_ENV)
    if spec is None and scripted:
        return _scripted(Path(scripted))
    chosen = spec or settings_model
    if chosen is None:
        return _default_model()
    if chosen.startswith("scripted:"):
        return _scripted(Path(chosen.removeprefix("scripted:")))
    if chosen == "scripted" or chosen.startswith("scripted/"):
        if not scripted:
            raise ModelError(f"model {chosen!r} needs {SCRIPTED_ENV}=path/to/script.json")
        return _scripted(Path(scripted))
    if chosen == "local" or chosen.startswith(("local:", "local/")):
        return _local(chosen)
    return ResolvedModel(_catalog_model(chosen), None)


def _catalog_model(spec: str) -> ModelInfo:
    from tether.ai.models import find_model
    from tether.ai.models_file import ModelsFileError

    try:
        return find_model(spec)
    except ModelsFileError:
        raise  # names the file and the field; `tether models` would only repeat it
    except (LookupError, ValueError) as exc:
        raise ModelError(f"{exc} (see `tether models`)") from None


def _default_model() -> ResolvedModel:
    from tether.ai.models import get_model, get_provider_info, list_models, provider_has_key

    for provider, model_id in PREFERRED_MODELS:
        if not provider_has_key(get_provider_info(provider)):
            continue
        try:
            return ResolvedModel(get_model(provider, model_id), None)
        except LookupError:
            offered = list_models(provider)
            if offered:
                return ResolvedModel(offered[0], None)
    resolved = _local("local:")
    notice = (
        "No API key and no model configured: using the embedded SmolLM2-135M, a smoke-test model "
        "(it answers, but it is too small to choose tools on its own). Set an API key or --model."
    )
    return ResolvedModel(resolved.model, resolved.stream_fn, notice)


def _local(spec: str) -> ResolvedModel:
    from tether.ai.providers.local import INSTALL_HINT, is_available, local_model, parse_local_model_ref

    try:
        path = parse_local_model_ref(spec)
        model = local_model(path)
    except OSError as exc:
        raise ModelError(str(exc)) from None
    if not is_available():
        raise ModelError(f"{INSTALL_HINT} (`make demo` does it for you)")
    return ResolvedModel(model, None)


def _scripted(path: Path) -> ResolvedModel:
    """The scripted model playing the responses of a JSON script file.

    The file is a list of responses in the conformance scenario format, or an object with a
    ``responses`` list (a whole scenario file works too).
    """
    from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, ScriptedResponse

    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"{SCRIPTED_ENV}: cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{SCRIPTED_ENV}: {path} is not valid JSON: {exc}") from None
    responses: object = cast(dict[str, object], data).get("responses") if isinstance(data, dict) else data
    if not isinstance(responses, list):
        raise ModelError(f"{SCRIPTED_ENV}: {path}: expected a list of responses or {{'responses': [...]}}")
    try:
        script = [ScriptedResponse.from_json(r) for r in cast(list[dict[str, Any]], responses)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ModelError(f"{SCRIPTED_ENV}: {path}: bad response: {exc}") from None
    info: ModelInfo = {**SCRIPTED_MODEL, "id": path.stem, "name": f"scripted ({path.name})"}
    return ResolvedModel(info, ScriptedModel(script, model=info))


async def model_candidates(specs: Sequence[str], current: ModelInfo) -> list[ModelInfo]:
    """The models Ctrl-P cycles through and the picker lists: ``specs`` (``--models``) resolved,
    or, when none are given, every usable model (a key is set, or a local server serves it).
    The current model is always among them, so cycling starts from where the user is."""
    if specs:
        models = [resolve_model(spec, None).model for spec in specs]
    else:
        from tether.ai.local_servers import usable_models

        models = await usable_models()
    if not any(_same(m, current) for m in models):
        models.insert(0, current)
    return models


def next_model(models: Sequence[ModelInfo], current: ModelInfo, *, backward: bool = False) -> ModelInfo:
    """The model after ``current`` in ``models`` (before it with ``backward``), wrapping around."""
    index = next((i for i, m in enumerate(models) if _same(m, current)), -1)
    return models[(index + (-1 if backward else 1)) % len(models)]


def next_thinking_level(model: ModelInfo, level: str) -> str:
    """The next level ``model`` accepts after ``level`` (Shift-Tab), wrapping to the lowest."""
    from tether.ai.thinking import supported_thinking_levels

    supported = list(supported_thinking_levels(model))
    index = supported.index(level) if level in supported else -1
    return supported[(index + 1) % len(supported)]


def _same(a: ModelInfo, b: ModelInfo) -> bool:
    return a["provider"] == b["provider"] and a["id"] == b["id"]
