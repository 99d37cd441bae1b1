"""Model lookup: the shipped catalog, the user's ``models.json``, and models registered at run time.

Three layers, later ones winning for the same ``provider/id``:

1. the catalog shipped in the package (``catalog.json``, written by ``scripts/gen_catalog.py``),
   plus the local servers tether knows (Ollama, llama.cpp server, vLLM, LM Studio: keyless,
   OpenAI-compatible, on loopback);
2. ``models.json`` in the config folder (``tether.ai.paths.models_file``; schema in
   ``docs/models.md``): new providers and models, and overrides of shipped ones. The file is
   re-read when it changes, so an edit (or a test's ``TETHER_HOME``) takes effect on the next call
   (a provider's ``streamIdleTimeoutMs`` and ``connectTimeoutMs``, which every request asks
   for, within a second);
3. ``register_model`` / ``register_provider_info`` calls of the running program.

A local server accepts any model id: ``get_model("ollama", "qwen3:8b")`` gives a model with default
limits even when no file lists it. Everything else is looked up exactly; a miss raises
``UnknownModelError`` naming the closest ids.
"""

from __future__ import annotations

import difflib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter

from tether.ai import paths
from tether.ai.auth_file import stored_key
from tether.ai.key_names import env_vars_for
from tether.ai.models_file import (
    ModelEntry,
    ModelsFile,
    ModelsFileError,
    ProviderEntry,
    cost_of,
    read_models_file,
)
from tether.errors import ModelError
from tether.wire import MODEL_INFO, ModelInfo, WireError
from tether.wire.model import MODEL_DESCRIPTION

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_TOKENS = 16_384
"""Limits of a user-defined or local model that does not state its own."""


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """Where a provider's models are served and how requests authenticate.

    ``api_key_env`` names the environment variable holding the key; ``None`` means the provider
    takes no key. ``headers`` and ``compat`` apply to all its models (a model's own values win).
    ``local`` marks a server the user runs (the known local servers, and any provider of
    ``models.json`` without a key): it serves whatever models it has, so it accepts any model id,
    and ``probe_local_servers`` asks it which.
    """

    name: str
    api: str
    base_url: str
    api_key_env: str | None
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    compat: Mapping[str, Any] = field(default_factory=lambda: {})
    local: bool = False
    idle_timeout: float | None = None
    """Seconds a reply may stall (``streamIdleTimeoutMs``; 0: no limit); ``None``: the setting's."""
    connect_timeout: float | None = None
    """Seconds to set up a connection (``connectTimeoutMs``; 0: no limit but the request's
    timeout); ``None``: the setting's."""


LOCAL_PROVIDERS: tuple[ProviderInfo, ...] = (
    ProviderInfo("ollama", "openai-completions", "http://127.0.0.1:11434/v1", None, local=True),
    ProviderInfo("llama.cpp", "openai-completions", "http://127.0.0.1:8080/v1", None, local=True),
    ProviderInfo("vllm", "openai-completions", "http://127.0.0.1:8000/v1", None, local=True),
    ProviderInfo("lmstudio", "openai-completions", "http://127.0.0.1:1234/v1", None, local=True),
)
"""OpenAI-compatible servers people run on their own machine, at their default ports."""


BASE_URL_ENV: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", ""),
    "anthropic": ("ANTHROPIC_BASE_URL", ""),
    "google": ("GOOGLE_GEMINI_BASE_URL", "/v1beta"),
}
"""Provider → the variable its official SDK reads for another endpoint (a proxy, a gateway, an
OpenAI-compatible server), and what tether's base URL adds to it: google-genai appends the API
version to ``GOOGLE_GEMINI_BASE_URL``, whereas the catalog's Gemini URL includes it. As in the
SDKs, an explicit URL (``models.json``, a model of your own) wins over the variable."""


def base_urls_from_env(env: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """``(provider, base URL)`` for each ``BASE_URL_ENV`` variable that is set."""
    environ = os.environ if env is None else env
    moved: list[tuple[str, str]] = []
    for provider, (name, suffix) in BASE_URL_ENV.items():
        value = environ.get(name, "").strip()
        if value:
            moved.append((provider, value.rstrip("/") + suffix))
    return tuple(moved)


def _moved(catalog: Catalog, moved: tuple[tuple[str, str], ...]) -> Catalog:
    """``catalog`` with the providers of ``moved`` (and their models) at their new base URLs."""
    if not moved:
        return catalog
    urls = dict(moved)
    providers = {
        name: replace(info, base_url=urls[name]) if name in urls else info
        for name, info in catalog.providers.items()
    }
    models = {
        key: cast(ModelInfo, {**model, "baseUrl": urls[key[0]]}) if key[0] in urls else model
        for key, model in catalog.models.items()
    }
    return Catalog(providers, models)


class UnknownModelError(ModelError, LookupError):
    """No model (or several) answer a lookup. ``candidates`` are close ``provider/id`` names."""

    def __init__(self, message: str, candidates: list[str] | None = None) -> None:
        super().__init__(message)
        self.candidates = candidates or []


class UnknownProviderError(ModelError, LookupError):
    """No provider of that name."""


# --- the shipped catalog ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Catalog:
    providers: dict[str, ProviderInfo]
    models: dict[tuple[str, str], ModelInfo]


_CATALOG_MODELS: TypeAdapter[list[ModelInfo]] = TypeAdapter(list[ModelInfo])


def load_catalog(text: str | bytes | None = None) -> Catalog:
    """Parse the shipped catalog (or ``text`` in its format) and add the local servers."""
    if text is None:
        text = resources.files("tether.ai").joinpath("catalog.json").read_bytes()
    data = cast(dict[str, Any], json.loads(text))
    providers = {
        name: ProviderInfo(name, entry["api"], entry["baseUrl"], entry.get("apiKeyEnv"))
        for name, entry in cast(dict[str, dict[str, str]], data["providers"]).items()
    }
    providers.update((p.name, p) for p in LOCAL_PROVIDERS)
    models = _CATALOG_MODELS.validate_python(data["models"])
    return Catalog(providers, {(m["provider"], m["id"]): m for m in models})


TIMEOUTS_RECHECK = 1.0
"""Seconds a provider's timeouts are reused before ``models.json`` is looked at again for them."""


# --- the registry -------------------------------------------------------------------------------


@dataclass(slots=True)
class _UserLayer:
    stamp: tuple[Path, int, int] | None
    providers: dict[str, ProviderInfo]
    models: dict[tuple[str, str], ModelInfo]
    problems: tuple[str, ...] = ()
    """The entries of the file that were left out, one line each (``file_problems``)."""


class ModelRegistry:
    """The three layers and the lookups over them. Most code uses the module functions, which
    share one registry; tests and embedders may build their own."""

    def __init__(self, catalog: Catalog | None = None, models_path: Callable[[], Path] = paths.models_file):
        self._shipped = catalog
        self._catalog = catalog
        self._moved_by: tuple[tuple[str, str], ...] = ()
        self._models_path = models_path
        self._user = _UserLayer(None, {}, {})
        self._user_loaded = False
        self._providers: dict[str, ProviderInfo] = {}
        self._models: dict[tuple[str, str], ModelInfo] = {}
        self._timeouts: dict[str, tuple[float, tuple[float | None, float | None]]] = {}
        """Provider → (when it was looked up, its timeouts); emptied when ``models.json`` is read
        anew."""

    @property
    def catalog(self) -> Catalog:
        """The shipped catalog, with the providers whose base-URL variable is set moved there
        (``BASE_URL_ENV``; re-read on every lookup, as the key variables are)."""
        if self._shipped is None:
            self._shipped = load_catalog()
        moved = base_urls_from_env()
        if self._catalog is None or moved != self._moved_by:
            self._catalog, self._moved_by = _moved(self._shipped, moved), moved
            self._user_loaded = False  # built over the catalog: shipped models it overrides moved too
        return self._catalog

    # lookups

    def get_provider_info(self, name: str) -> ProviderInfo:
        """The provider ``name``; ``UnknownProviderError`` lists the known ones on a miss."""
        found = self.find_provider_info(name)
        if found is None:
            known = ", ".join(sorted(self.providers()))
            raise UnknownProviderError(f"unknown provider {name!r}; known providers: {known}")
        return found

    def find_provider_info(self, name: str) -> ProviderInfo | None:
        """The provider ``name``, or ``None``: for a caller to whom a miss is no error.

        Every stream asks (its idle timeout), also for a model of a provider nobody registered
        (a model dict of the caller's own): building and raising ``get_provider_info``'s error,
        with every known provider's name, cost that request more than the rest of its set-up.
        """
        # Looked up layer by layer, newest first, as ``providers`` merges them: merging every
        # provider into a new dict for one name cost as much again.
        user = self._user_layer()
        found = self._providers.get(name)
        if found is None:
            found = user.providers.get(name)
        if found is None:
            found = self.catalog.providers.get(name)
        return found

    def stream_timeouts(self, provider: str) -> tuple[float | None, float | None]:
        """The provider's own idle and connect timeouts in seconds (0: none), each ``None`` when
        it sets none.

        Every request asks, and a full lookup re-reads the base-URL variables, finds the path of
        ``models.json`` in the environment (four variables read) and stats it, so the answer is
        reused for up to ``TIMEOUTS_RECHECK`` seconds: an edit of ``streamIdleTimeoutMs``, or
        another ``models.json`` (another ``TETHER_HOME``), reaches the requests that start a
        second later at most, and the next request at once when a lookup in between (choosing a
        model, as a front end does when it starts) read the new file. Also ``None`` for an
        unknown provider or a broken ``models.json``: the stream is not the place to report those
        (choosing the model already did).
        """
        now = time.monotonic()
        cached = self._timeouts.get(provider)
        if cached is not None and now - cached[0] < TIMEOUTS_RECHECK:
            return cached[1]
        try:
            found = self.find_provider_info(provider)
        except ModelsFileError:
            found = None
        timeouts = (found.idle_timeout, found.connect_timeout) if found is not None else (None, None)
        self._timeouts[provider] = (now, timeouts)
        return timeouts

    def file_problems(self) -> list[str]:
        """The entries of the user's ``models.json`` left out for a mistake, one line each naming
        the file, the entry and the field (front ends show them as notes); none when the file
        itself cannot be read (every lookup raises that)."""
        try:
            return list(self._user_layer().problems)
        except ModelsFileError:
            return []

    def providers(self) -> dict[str, ProviderInfo]:
        """Every provider by name: shipped, local servers, the user's, registered ones."""
        user = self._user_layer()
        return {**self.catalog.providers, **user.providers, **self._providers}

    def get_model(self, provider: str, model_id: str) -> ModelInfo:
        """The model ``model_id`` of ``provider``.

        A local server's provider accepts any id (a model with default limits). A miss raises
        ``UnknownModelError`` with the closest ids of that provider.
        """
        model = self._lookup(provider, model_id)
        if model is not None:
            return model
        providers = self.providers()
        if provider not in providers:
            raise UnknownModelError(
                f"unknown provider {provider!r} (model {model_id!r}); known providers: "
                + ", ".join(sorted(providers))
            )
        info = providers[provider]
        if info.local:
            return default_model(info, model_id)
        ids = [m["id"] for m in self.list_models(provider)]
        close = difflib.get_close_matches(model_id, ids, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; {len(ids)} models are known for it"
        raise UnknownModelError(
            f"unknown model {model_id!r} for provider {provider!r}{hint}", [f"{provider}/{c}" for c in close]
        )

    def find_model(self, ref: str) -> ModelInfo:
        """Resolve ``provider/id`` or a bare model id.

        ``provider/id`` splits at the first ``/`` (ids may contain more, as OpenRouter's do). A
        string whose first part is not a provider, or whose id that provider lacks, is also tried
        as a bare id: it must name exactly one model among all providers.
        """
        ref = ref.strip()
        provider, sep, rest = ref.partition("/")
        exact = self._lookup(provider, rest) if sep else None
        if exact is not None:
            return exact
        providers = self.providers()
        if sep and provider in providers and rest:
            model = self._lookup_spelling(provider, rest)
            if model is not None:
                return model
            if providers[provider].local:
                return default_model(providers[provider], rest)
        matches = [m for m in self._all_models().values() if m["id"] == ref]
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = ", ".join(sorted(f"{m['provider']}/{m['id']}" for m in matches))
            raise UnknownModelError(
                f"model {ref!r} is offered by several providers: {names}; name one as provider/id",
                sorted(f"{m['provider']}/{m['id']}" for m in matches),
            )
        if sep and provider in providers and rest:
            return self.get_model(provider, rest)  # raises with that provider's closest ids
        keys = list(self._all_models())
        names = [f"{p}/{i}" for p, i in keys]
        close = difflib.get_close_matches(ref, names, n=5, cutoff=0.6)
        close_ids = set(difflib.get_close_matches(ref, [i for _, i in keys], n=5, cutoff=0.6))
        close += [n for (_, i), n in zip(keys, names, strict=True) if i in close_ids and n not in close]
        close = close[:8]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownModelError(f"unknown model {ref!r}{hint}", close)

    def list_models(self, provider: str | None = None) -> list[ModelInfo]:
        """Every known model (of ``provider``), sorted by provider then id.

        Models a local server offers are not listed until something names them: ask the server
        (``tether.ai.local_servers.probe_local_servers``).
        """
        models = self._all_models()
        keys = sorted(k for k in models if provider is None or k[0] == provider)
        return [models[k] for k in keys]

    # registration

    def register_model(self, model: Mapping[str, Any]) -> ModelInfo:
        """Add (or replace) a model for the rest of the program; returns the validated record.

        Raises ``WireError`` naming the field when ``model`` is not a complete ``ModelInfo``.
        """
        info = MODEL_INFO.decode(dict(model), f"model {model.get('provider')}/{model.get('id')}")
        self._models[(info["provider"], info["id"])] = info
        return info

    def register_provider_info(self, provider: ProviderInfo) -> ProviderInfo:
        """Add (or replace) a provider for the rest of the program."""
        self._providers[provider.name] = provider
        self._timeouts.pop(provider.name, None)
        return provider

    # internals

    def _lookup(self, provider: str, model_id: str) -> ModelInfo | None:
        key = (provider, model_id)
        return self._models.get(key) or self._user_layer().models.get(key) or self.catalog.models.get(key)

    def _lookup_spelling(self, provider: str, model_id: str) -> ModelInfo | None:
        """The provider's one model whose id differs from ``model_id`` only in case or in ``.``
        versus ``-`` (``claude-opus-4.7`` for ``claude-opus-4-7``), else ``None``."""
        wanted = _spelling(model_id)
        found = [m for (p, i), m in self._all_models().items() if p == provider and _spelling(i) == wanted]
        return found[0] if len(found) == 1 else None

    def _all_models(self) -> dict[tuple[str, str], ModelInfo]:
        return {**self.catalog.models, **self._user_layer().models, **self._models}

    def _user_layer(self) -> _UserLayer:
        catalog = self.catalog  # first: a change of the base-URL variables rebuilds this layer too
        path = self._models_path()
        stamp = _stamp(path)
        if not self._user_loaded or stamp != self._user.stamp:
            layer = _UserLayer(stamp, {}, {})
            if stamp is not None:
                # A file that cannot be read as one raises here and stays unloaded: every lookup
                # reports it until fixed. A bad entry is left out (``file_problems``).
                known = frozenset(catalog.providers)
                problems: list[str] = []
                data = read_models_file(path, known, problems)
                layer = _build_user_layer(path, stamp, data, catalog, problems)
            self._user, self._user_loaded = layer, True
            self._timeouts.clear()  # the timeouts remembered were the previous file's
        return self._user


def _spelling(model_id: str) -> str:
    return model_id.lower().replace(".", "-")


def _stamp(path: Path) -> tuple[Path, int, int] | None:
    """The file's modification time and size, ``None`` when there is none; a link to nothing
    (its target moved, a loop) has its own, so it is read and reported, not taken for no file."""
    try:
        st = path.stat()
    except OSError:
        try:
            st = path.lstat()
        except OSError:
            return None
    return (path, st.st_mtime_ns, st.st_size)


def _build_user_layer(
    path: Path, stamp: tuple[Path, int, int], data: ModelsFile, catalog: Catalog, problems: list[str]
) -> _UserLayer:
    providers: dict[str, ProviderInfo] = {}
    models: dict[tuple[str, str], ModelInfo] = {}
    for name, entry in data.get("providers", {}).items():
        base = catalog.providers.get(name)
        provider = _provider_from_entry(name, entry, base)
        providers[name] = provider
        if base is not None and any(k in entry for k in ("baseUrl", "headers", "compat")):
            # A shipped provider moved (a proxy) or given headers: its catalog models follow.
            for key, model in catalog.models.items():
                if key[0] == name:
                    models[key] = _apply_provider(model, provider, entry)
        for index, model_entry in enumerate(entry.get("models", [])):
            where = f"providers.{name}.models[{index}] ({model_entry['id']!r})"
            shipped = models.get((name, model_entry["id"])) or catalog.models.get((name, model_entry["id"]))
            model = _model_from_entry(model_entry, provider, shipped)
            try:
                info = MODEL_INFO.decode(model)
            except WireError as err:  # a field the entry left to a default that cannot hold
                error = ModelsFileError(path, f"{where}{err.path.removeprefix('model')}", err.reason)
                problems.append(f"{error} (model left out)")
                continue
            models[(name, info["id"])] = info
    return _UserLayer(stamp, providers, models, tuple(problems))


def _provider_from_entry(name: str, entry: ProviderEntry, base: ProviderInfo | None) -> ProviderInfo:
    base_url = entry.get("baseUrl") or (base.base_url if base else "")
    api_key_env = entry.get("apiKeyEnv", base.api_key_env if base else None)
    return ProviderInfo(
        name=name,
        api=entry.get("api") or (base.api if base else ""),
        base_url=base_url,
        api_key_env=api_key_env,
        headers={**(base.headers if base else {}), **entry.get("headers", {})},
        compat={**(base.compat if base else {}), **entry.get("compat", {})},
        local=api_key_env is None,
        idle_timeout=entry["streamIdleTimeoutMs"] / 1000 if "streamIdleTimeoutMs" in entry else None,
        connect_timeout=entry["connectTimeoutMs"] / 1000 if "connectTimeoutMs" in entry else None,
    )


def _apply_provider(model: ModelInfo, provider: ProviderInfo, entry: ProviderEntry) -> ModelInfo:
    changed: dict[str, Any] = dict(model)
    if "baseUrl" in entry:
        changed["baseUrl"] = provider.base_url
    if entry.get("headers"):
        changed["headers"] = {**model.get("headers", {}), **entry.get("headers", {})}
    if entry.get("compat"):
        changed["compat"] = {**model.get("compat", {}), **entry.get("compat", {})}
    return cast(ModelInfo, changed)


def _model_from_entry(entry: ModelEntry, provider: ProviderInfo, shipped: ModelInfo | None) -> dict[str, Any]:
    """The entry over the shipped model of the same id, or over the defaults of a new one."""
    base: dict[str, Any] = (
        dict(shipped) if shipped is not None else dict(default_model(provider, entry["id"]))
    )
    fields: dict[str, Any] = dict(entry)
    if "cost" in entry:
        fields["cost"] = {**base["cost"], **entry["cost"]} if shipped is not None else cost_of(entry["cost"])
    if "headers" in entry:
        fields["headers"] = {**base.get("headers", {}), **entry["headers"]}
    if "compat" in entry:
        fields["compat"] = {**base.get("compat", {}), **entry["compat"]}
    if shipped is None and "name" not in entry:
        fields["name"] = entry["id"]
    return {**base, **fields}


def default_model(provider: ProviderInfo, model_id: str) -> ModelInfo:
    """A model of ``provider`` nobody described: text only, no reasoning, zero cost, default limits."""
    model: ModelInfo = {
        "id": model_id,
        "name": model_id,
        "api": provider.api,
        "provider": provider.name,
        "baseUrl": provider.base_url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": DEFAULT_CONTEXT_WINDOW,
        "maxTokens": DEFAULT_MAX_TOKENS,
    }
    if provider.headers:
        model["headers"] = dict(provider.headers)
    if provider.compat:
        model["compat"] = dict(provider.compat)
    return model


# --- module-level API over one shared registry --------------------------------------------------

_registry: ModelRegistry | None = None


def default_registry() -> ModelRegistry:
    """The registry the module functions use (created on first use)."""
    global _registry
    if _registry is None:
        _registry = ModelRegistry()
    return _registry


def get_model(provider: str, model_id: str) -> ModelInfo:
    """The model ``model_id`` of ``provider`` (see ``ModelRegistry.get_model``)."""
    return default_registry().get_model(provider, model_id)


def find_model(ref: str) -> ModelInfo:
    """The model named ``provider/id`` or by a bare id (see ``ModelRegistry.find_model``)."""
    return default_registry().find_model(ref)


def list_models(provider: str | None = None) -> list[ModelInfo]:
    """Every known model (of ``provider``), sorted by provider then id."""
    return default_registry().list_models(provider)


def get_provider_info(name: str) -> ProviderInfo:
    """The provider ``name`` (shipped, local server, the user's or registered)."""
    return default_registry().get_provider_info(name)


def stream_timeouts_of(provider: str) -> tuple[float | None, float | None]:
    """The provider's own idle and connect timeouts in seconds (``ModelRegistry.stream_timeouts``)."""
    return default_registry().stream_timeouts(provider)


def models_file_problems() -> list[str]:
    """The entries of the user's ``models.json`` left out for a mistake (``ModelRegistry.file_problems``)."""
    return default_registry().file_problems()


def list_providers() -> list[ProviderInfo]:
    """Every known provider, sorted by name."""
    providers = default_registry().providers()
    return [providers[name] for name in sorted(providers)]


def register_model(model: Mapping[str, Any]) -> ModelInfo:
    """Add (or replace) a model for the rest of the program."""
    return default_registry().register_model(model)


def register_provider_info(provider: ProviderInfo) -> ProviderInfo:
    """Add (or replace) a provider for the rest of the program."""
    return default_registry().register_provider_info(provider)


def restored_model(provider: str, model_id: str, stored: Mapping[str, Any] | None) -> ModelInfo:
    """The model a stored session is set to, for its next request.

    The registry's, as the user configures it now; for an id it no longer lists, ``stored``'s
    description (limits, cost, input) on the provider's current endpoint. Where requests go and
    what they carry (``baseUrl``, ``api``, ``headers``, ``compat``) never come from ``stored``:
    a session can be imported from anywhere, and one naming ``openai`` at another host got the
    user's OpenAI key sent there. A provider the registry does not know raises
    ``UnknownModelError`` (its ``<NAME>_API_KEY`` would otherwise go to the stored host).

    A local server's provider (one a program registered, ``local=True``) accepts any id, but
    the defaults it gives one it does not list are not what the session ran with: ``stored``'s
    description wins there too (a resumed 4k model was taken for a 128k one)."""
    registry = default_registry()
    listed = registry._lookup(provider, model_id)  # pyright: ignore[reportPrivateUsage]
    if listed is not None:
        return listed
    info = registry.find_provider_info(provider)
    if info is None or stored is None:
        return registry.get_model(provider, model_id)  # a local server's defaults, or why not
    model: dict[str, Any] = dict(default_model(info, model_id))
    model.update((key, stored[key]) for key in MODEL_DESCRIPTION if key in stored)
    try:
        return MODEL_INFO.decode(model)
    except WireError:  # a damaged description: the provider's defaults
        return default_model(info, model_id)


def provider_has_key(provider: ProviderInfo, env: Mapping[str, str] | None = None) -> bool:
    """Whether requests to ``provider`` can authenticate: keyless, or a key variable is set.

    The variables are its ``api_key_env`` and those ``tether.ai.keys`` reads for the provider's
    name (e.g. ``ANTHROPIC_OAUTH_TOKEN`` beside ``ANTHROPIC_API_KEY``).
    """
    if provider.api_key_env is None:
        return True
    if env is None and stored_key(provider.name) is not None:  # saved with /login
        return True
    environ = os.environ if env is None else env
    return any(environ.get(name) for name in (provider.api_key_env, *env_vars_for(provider.name)))


def providers_with_keys(env: Mapping[str, str] | None = None) -> list[ProviderInfo]:
    """Known providers with a key, whose key is present in the environment."""
    return [p for p in list_providers() if not p.local and provider_has_key(p, env)]


__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_TOKENS",
    "LOCAL_PROVIDERS",
    "Catalog",
    "ModelRegistry",
    "ProviderInfo",
    "UnknownModelError",
    "UnknownProviderError",
    "base_urls_from_env",
    "default_model",
    "default_registry",
    "find_model",
    "get_model",
    "get_provider_info",
    "list_models",
    "list_providers",
    "load_catalog",
    "provider_has_key",
    "providers_with_keys",
    "register_model",
    "register_provider_info",
]
