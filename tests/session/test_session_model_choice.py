"""``--model`` patterns (pi's matching rules), ``:LEVEL`` suffixes, ``--provider``, ``--models``,
and the cycling order the core gives every front end (``cycle_model``, ``cycle_thinking_level``).

Two providers of the user's ``models.json`` offering the same id make ambiguity reproducible
without depending on which shipped providers happen to share an id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai.models import list_models
from tether.ai.thinking import supported_thinking_levels
from tether.errors import ModelError
from tether.session.factory import SessionChoice, SetupError, create_agent_session
from tether.session.model_choice import (
    match_model,
    next_model,
    next_thinking_level,
    resolve_model,
    resolve_scope,
)
from tether.session.options import AgentOptions


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tether_home: Path) -> Path:
    for name in ("TETHER_SCRIPTED", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    config = tether_home / "config"
    config.mkdir(parents=True)
    twins = {
        name: {
            "baseUrl": f"https://{name}.invalid/v1",
            "api": "openai-completions",
            "apiKeyEnv": f"{name.upper()}_TEST_KEY",
            "models": [{"id": "twin-1"}, {"id": f"{name}-solo"}],
        }
        for name in ("alpha", "beta")
    }
    (config / "models.json").write_text(json.dumps({"providers": twins}))
    return config


def test_a_part_of_an_id_picks_the_newest_alias_preferring_providers_with_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    model = resolve_model("sonnet", None).model
    containing = [m for m in list_models("anthropic") if "sonnet" in m["id"]]
    aliases = [m["id"] for m in containing if not m["id"][-8:].isdigit()]
    assert model["provider"] == "anthropic"  # other providers match too, but have no key
    assert model["id"] == max(aliases) and len(containing) > len(aliases)  # no dated snapshot


def test_a_thinking_suffix_sets_the_level_and_an_id_with_a_colon_stays_whole() -> None:
    resolved = resolve_model("claude-sonnet-4-5:high", None)
    assert (resolved.model["provider"], resolved.model["id"], resolved.thinking) == (
        "anthropic",
        "claude-sonnet-4-5",
        "high",
    )
    with_colon = next(m for m in list_models("openrouter") if ":" in m["id"])
    whole = resolve_model(f"openrouter/{with_colon['id']}", None)
    assert whole.model["id"] == with_colon["id"] and whole.thinking is None
    with pytest.raises(ModelError, match="unknown model"):
        resolve_model("claude-sonnet-4-5:hgih", None)  # not a level: part of an unknown id


def test_an_id_on_two_providers_is_ambiguous_until_a_key_or_provider_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for spec in ("twin-1", "twin"):  # exact id, then a part of it
        with pytest.raises(ModelError) as info:
            resolve_model(spec, None)
        message = str(info.value)
        assert "ambiguous" in message and "alpha/twin-1, beta/twin-1" in message
        assert "\n" not in message and "--provider" in message
    assert resolve_model("twin-1", None, provider="beta").model["provider"] == "beta"
    assert resolve_model("solo", None, provider="alpha").model["id"] == "alpha-solo"
    monkeypatch.setenv("ALPHA_TEST_KEY", "k")
    assert resolve_model("twin-1", None).model["provider"] == "alpha"
    # --api-key: the key goes to whichever provider is chosen, so keys decide nothing
    with pytest.raises(ModelError, match="ambiguous"):
        resolve_model("twin-1", None, usable=lambda provider: False)


def test_provider_alone_unknown_provider_and_no_match() -> None:
    assert resolve_model(None, "openai/gpt-4o", provider="alpha").model["provider"] == "alpha"
    with pytest.raises(ModelError, match=r"unknown provider 'nope'.*alpha"):
        resolve_model("twin-1", None, provider="nope")
    with pytest.raises(ModelError, match="unknown model 'zzqx-nothing'"):
        match_model("zzqx-nothing")


def test_scope_patterns_globs_and_levels_in_order_without_duplicates() -> None:
    scope = resolve_scope(["beta/twin-1:low", "alpha/*", "alpha-solo"])
    assert [(s.model["provider"], s.model["id"], s.thinking) for s in scope] == [
        ("beta", "twin-1", "low"),
        ("alpha", "alpha-solo", None),
        ("alpha", "twin-1", None),
    ]
    with pytest.raises(ModelError, match=r"no model matches 'gamma/\*'"):
        resolve_scope(["alpha-solo", "gamma/*"])


def test_next_model_wraps_both_ways_and_starts_from_the_ends() -> None:
    a, b, c = (m for m in list_models("alpha") + list_models("beta")[:1])
    assert next_model([a, b, c], a, "forward") == 1
    assert next_model([a, b, c], c, "forward") == 0
    assert next_model([a, b, c], a, "backward") == 2
    outside = list_models("beta")[1]
    assert next_model([a, b], outside, "forward") == 0
    assert next_model([a, b], outside, "backward") == 1
    assert next_model([a], a, "forward") is None and next_model([], a, "forward") is None


def test_next_thinking_level_follows_the_models_levels() -> None:
    model = resolve_model("claude-sonnet-4-5", None).model
    levels = [str(level) for level in supported_thinking_levels(model)]
    seen = [levels[0]]
    while len(seen) <= len(levels):
        seen.append(next_thinking_level(model, seen[-1]) or "")
    assert seen == [*levels, levels[0]]
    plain = next(m for m in list_models("openai") if not m["reasoning"])
    assert next_thinking_level(plain, "off") is None


async def test_the_core_cycles_through_models_then_levels(tmp_path: Path) -> None:
    core = create_agent_session(
        AgentOptions(models=["alpha-solo", "claude-sonnet-4-5:high", "beta/twin-1:low"]),
        cwd=tmp_path,
        session=SessionChoice(persist=False),
    )
    try:
        assert core.model["id"] == "alpha-solo"  # no --model: the first of the scope
        names: list[tuple[str, str]] = []
        for _ in range(3):
            cycled = await core.cycle_model()
            assert cycled is not None and cycled.is_scoped and cycled.model == core.model
            names.append((core.model["id"], core.thinking_level))
        assert names[0] == ("claude-sonnet-4-5", "high")
        assert names[1][0] == "twin-1"
        assert names[2][0] == "alpha-solo"
        back = await core.cycle_model("backward")
        assert back is not None and back.model["id"] == "twin-1"
        core.set_model("claude-sonnet-4-5")
        core.set_thinking("off")
        levels = [str(level) for level in supported_thinking_levels(core.model)]
        assert [core.cycle_thinking_level() for _ in levels] == [*levels[1:], levels[0]]
        core.set_model("opus:max")  # /model with a suffix
        assert core.model["id"].startswith("claude-opus") and core.thinking_level == "max"
    finally:
        await core.close()


async def test_without_a_scope_and_without_keys_there_is_nothing_to_cycle(tmp_path: Path) -> None:
    core = create_agent_session(
        AgentOptions(model="alpha-solo"), cwd=tmp_path, session=SessionChoice(persist=False)
    )
    try:
        assert await core.cycle_model() is None
        assert core.cycle_thinking_level() is None  # models.json models have no reasoning
    finally:
        await core.close()


def test_api_key_needs_the_model_it_is_for(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="--api-key needs"):
        create_agent_session(AgentOptions(api_key="sk-x"), cwd=tmp_path, session=SessionChoice(persist=False))
