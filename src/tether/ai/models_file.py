"""The user's ``models.json``: extra providers and models, and overrides of shipped ones.

The schema is documented in ``docs/models.md``. This module only reads and checks the file; the
registry (``tether.ai.models``) merges the result over the shipped catalog. A mistake in the file
raises ``ModelsFileError`` whose message names the file, the entry and the field, e.g.::

    ~/.config/tether/models.json: providers.ollama.models[1] ("qwen3:8b").contextWindow: expected an integer (got "32k")

Unknown fields are errors too, so a typo (``baseURL``) is reported instead of silently ignored.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal, NotRequired, cast

from typing_extensions import TypedDict

from tether.errors import ModelError
from tether.own_files import RefusedFile, read_own_file
from tether.wire import Codec, ModelCost, ThinkingConfig, WireError
from tether.wire.records import STRICT, record

Number = int | float


@record(STRICT)
class CostEntry(TypedDict):
    """Per-million-token USD rates; a missing rate is 0."""

    input: NotRequired[Number]
    output: NotRequired[Number]
    cacheRead: NotRequired[Number]
    cacheWrite: NotRequired[Number]


@record(STRICT)
class ModelEntry(TypedDict):
    """One model of a provider. Only ``id`` is required; see ``docs/models.md`` for defaults."""

    id: str
    name: NotRequired[str]
    api: NotRequired[str]
    baseUrl: NotRequired[str]
    reasoning: NotRequired[bool]
    input: NotRequired[list[Literal["text", "image"]]]
    cost: NotRequired[CostEntry]
    contextWindow: NotRequired[int | None]
    maxTokens: NotRequired[int | None]
    headers: NotRequired[dict[str, str]]
    compat: NotRequired[dict[str, Any]]
    thinking: NotRequired[ThinkingConfig]


@record(STRICT)
class ProviderEntry(TypedDict):
    """A provider: new (``baseUrl`` and ``api`` required) or an override of a known one."""

    baseUrl: NotRequired[str]
    api: NotRequired[str]
    apiKeyEnv: NotRequired[str | None]
    headers: NotRequired[dict[str, str]]
    compat: NotRequired[dict[str, Any]]
    streamIdleTimeoutMs: NotRequired[int]
    connectTimeoutMs: NotRequired[int]
    models: NotRequired[list[ModelEntry]]


@record(STRICT)
class ModelsFile(TypedDict):
    providers: NotRequired[dict[str, ProviderEntry]]


_CODEC: Codec[ModelsFile] = Codec(ModelsFile, "")

MAX_MODELS_FILE_BYTES = 16 << 20
"""``models.json`` larger than this is refused unread: a hand-written list of every model of a
dozen providers is some 100 KB."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ModelsFileError(ModelError):
    """``models.json`` could not be used. The message names the file, the entry and the field."""

    def __init__(self, file: Path, path: str, reason: str) -> None:
        super().__init__(f"{file}: {path}: {reason}" if path else f"{file}: {reason}")
        self.file = file
        self.path = path
        self.reason = reason


def read_models_file(
    file: Path, known_providers: frozenset[str] = frozenset(), problems: list[str] | None = None
) -> ModelsFile:
    """Parse and check ``file``; a missing file is an empty one (a link to nothing is an error).

    ``known_providers`` are the providers tether already has (shipped and local servers): an entry
    for one of them may omit ``baseUrl`` and ``api`` (it overrides or extends that provider).
    ``problems``: see ``parse_models_file``.
    """
    try:
        # not ``read_bytes``: a FIFO in its place blocked every lookup for good, a link to
        # /dev/zero read until memory ran out (own_files' checks, no folder restriction)
        text = read_own_file(file, None, MAX_MODELS_FILE_BYTES)
    except FileNotFoundError as err:
        if not os.path.lexists(file):
            return {}
        # a link to nothing (its target moved, a loop) was read as no file: said, not passed over
        raise ModelsFileError(file, "", f"cannot read: {err.strerror or err}") from None
    except RefusedFile as err:
        raise ModelsFileError(file, "", f"cannot read: {err}") from None
    except OSError as err:
        raise ModelsFileError(file, "", f"cannot read: {err.strerror or err}") from None
    return parse_models_file(text, file, known_providers, problems)


def parse_models_file(
    text: str | bytes,
    file: Path,
    known_providers: frozenset[str] = frozenset(),
    problems: list[str] | None = None,
) -> ModelsFile:
    """Check the JSON text of a models file (``file`` only names it in errors).

    Without ``problems`` the first mistake raises ``ModelsFileError``. With it, a provider whose
    entry has one is left out and the error's line added there, so one bad entry does not cost
    every other model (a typo in a provider you tried once stopped every run); a file that is
    not a JSON object of providers still raises."""
    while True:
        try:
            data = _CODEC.decode_json(text)
            break
        except WireError as err:
            error = ModelsFileError(file, _name_entries(text, err.path), _reason(err.path, err.reason))
            text = _without_provider(text, err.path, error, problems)
    providers = data.get("providers", {})
    for name, provider in list(providers.items()):
        try:
            _check_provider(file, name, provider, known_providers)
        except ModelsFileError as error:
            if problems is None:
                raise
            problems.append(f"{error} (provider {name!r} left out)")
            del providers[name]
    return data


def _without_provider(
    text: str | bytes, path: str, error: ModelsFileError, problems: list[str] | None
) -> str:
    """``text`` without the provider the error at ``path`` is in, its line added to ``problems``;
    raises ``error`` when there is no such provider to leave out (or no ``problems``)."""
    match = re.match(r"providers\.([^.\[]+)", path.lstrip("."))
    if problems is None or match is None:
        raise error
    try:
        data = cast(dict[str, Any], json.loads(text))
        del cast(dict[str, Any], data["providers"])[match.group(1)]
    except (ValueError, KeyError, TypeError):  # a name with a dot in it: the error stands
        raise error from None
    problems.append(f"{error} (provider {match.group(1)!r} left out)")
    return json.dumps(data)


def cost_of(entry: CostEntry | None) -> ModelCost:
    """A complete cost record: the entry's rates, 0 for the missing ones."""
    entry = entry or {}
    return {
        "input": entry.get("input", 0),
        "output": entry.get("output", 0),
        "cacheRead": entry.get("cacheRead", 0),
        "cacheWrite": entry.get("cacheWrite", 0),
    }


def _check_provider(file: Path, name: str, provider: ProviderEntry, known: frozenset[str]) -> None:
    where = f"providers.{name}"
    if not name or "/" in name:
        raise ModelsFileError(file, where, "a provider name must be non-empty and contain no '/'")
    if name not in known:
        for field in ("baseUrl", "api"):
            if field not in provider:
                raise ModelsFileError(
                    file,
                    f"{where}.{field}",
                    "required field is missing (for a provider tether does not know)",
                )
    env = provider.get("apiKeyEnv")
    if env is not None and not _ENV_NAME.fullmatch(env):
        raise ModelsFileError(
            file, f"{where}.apiKeyEnv", f"expected the name of an environment variable, got {env!r}"
        )
    for field in ("streamIdleTimeoutMs", "connectTimeoutMs"):
        ms = provider.get(field)
        if ms is not None and ms < 0:
            raise ModelsFileError(
                file, f"{where}.{field}", f"expected milliseconds >= 0 (0: no limit), got {ms}"
            )
    seen: set[str] = set()
    for index, model in enumerate(provider.get("models", [])):
        entry = f"{where}.models[{index}] ({model['id']!r})"
        if not model["id"].strip():
            raise ModelsFileError(file, f"{where}.models[{index}].id", "must not be empty")
        if model["id"] in seen:
            raise ModelsFileError(file, f"{entry}.id", "duplicate model id in this provider")
        seen.add(model["id"])
        thinking = model.get("thinking")
        if thinking is not None and not thinking["efforts"]:
            raise ModelsFileError(file, f"{entry}.thinking.efforts", "must list at least one effort")


def _reason(path: str, reason: str) -> str:
    """pydantic's wording where it fits the file's terms, ours where it does not."""
    if reason.startswith("Extra inputs are not permitted"):
        return "unknown field"
    if ".cost." in path and reason.startswith("Input should be a valid integer"):
        # a rate is int | float; pydantic reports the first alternative only
        return "Input should be a number" + reason.removeprefix("Input should be a valid integer")
    return reason


def _name_entries(text: str | bytes, path: str) -> str:
    """Add each model's id to a ``models[i]`` step of an error path, so the entry is recognisable."""
    match = re.match(r"(providers\.([^.\[]+)\.models\[(\d+)\])(.*)", path.lstrip("."))
    if match is None:
        return path.lstrip(".")
    try:
        data: object = json.loads(text)
        models = cast(dict[str, Any], data)["providers"][match.group(2)]["models"]
        model_id = cast(dict[str, Any], models[int(match.group(3))]).get("id")
    except (ValueError, KeyError, IndexError, TypeError):
        model_id = None
    if not isinstance(model_id, str):
        return path.lstrip(".")
    return f"{match.group(1)} ({model_id!r}){match.group(4)}"
