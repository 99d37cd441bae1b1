"""Model-spec providers: ``NAME:...``/``NAME/...`` specs served before the catalog, by a program's
own (``register_model_spec``) or an installed one (the ``tether.model_specs`` entry points, as
tether's scripted model is: ``tether.testing.scripted_spec``, which the session layer never
imports)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.errors import ModelError
from tether.session import model_choice
from tether.session.model_choice import ResolvedModel, register_model_spec, resolve_model
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel
from tether.testing.scripted_spec import resolve as scripted_resolve


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch, tether_home: Path) -> Iterator[None]:
    """Each test lists the installed providers afresh and registers nothing for the next."""
    monkeypatch.delenv("TETHER_SCRIPTED", raising=False)
    monkeypatch.setattr(model_choice, "_spec_providers", {})
    monkeypatch.setattr(model_choice, "_installed", None)
    yield


def script(tmp_path: Path) -> Path:
    path = tmp_path / "hello.json"
    path.write_text(json.dumps([{"content": [{"type": "text", "text": "hi"}]}]))
    return path


def test_the_scripted_model_is_found_through_its_entry_point(tmp_path: Path) -> None:
    resolved = resolve_model(f"scripted:{script(tmp_path)}", None)
    assert (resolved.model["provider"], resolved.model["id"]) == ("scripted", "hello")
    assert isinstance(resolved.stream_fn, ScriptedModel)
    assert model_choice._spec_providers["scripted"] is scripted_resolve  # pyright: ignore[reportPrivateUsage]


def test_tether_scripted_makes_it_the_default_and_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelError, match=r"^model 'scripted/x' needs TETHER_SCRIPTED=path/to/script\.json$"):
        resolve_model("scripted/x", None)
    monkeypatch.setenv("TETHER_SCRIPTED", str(script(tmp_path)))
    assert resolve_model(None, "anthropic/claude-sonnet-4-5").model["provider"] == "scripted"
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ModelError, match=r"^scripted model: .*bad\.json is not valid JSON"):
        resolve_model(f"scripted:{bad}", None)  # named by the spec, not by TETHER_SCRIPTED
    monkeypatch.setenv("TETHER_SCRIPTED", str(bad))
    with pytest.raises(ModelError, match=r"^TETHER_SCRIPTED: .*bad\.json is not valid JSON"):
        resolve_model("scripted/x", None)


def test_a_programs_own_spec_provider_comes_before_the_catalog() -> None:
    seen: list[str] = []

    def mine(spec: str) -> ResolvedModel:
        seen.append(spec)
        return ResolvedModel({**SCRIPTED_MODEL, "provider": "mine", "id": spec}, None)

    register_model_spec("anthropic", mine)  # even a catalog provider's name: the program's wins
    assert resolve_model("anthropic/claude-sonnet-4-5", None).model["provider"] == "mine"
    assert seen == ["anthropic/claude-sonnet-4-5"]


def test_an_unknown_name_is_the_catalogs_error() -> None:
    with pytest.raises(ModelError, match=r"unknown model"):
        resolve_model("nosuchprovider:thing", None)
