"""Model lookup over the catalog, the user's models.json, and run-time registrations."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from reference_paths import REPO_ROOT
from tether.ai import (
    ModelsFileError,
    ProviderInfo,
    UnknownModelError,
    UnknownProviderError,
    find_model,
    get_model,
    get_provider_info,
    list_models,
    list_providers,
    models as models_module,
    provider_has_key,
    register_model,
    register_provider_info,
)
from tether.ai.models import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    ModelRegistry,
    load_catalog,
    models_file_problems,
    stream_timeouts_of,
)
from tether.wire import MODEL_INFO, WireError


def write_models(config_dir: Path, data: Any) -> Path:
    path = config_dir / "models.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


# --- catalog lookups ---------------------------------------------------------------------------


def test_get_model_from_the_catalog() -> None:
    model = get_model("anthropic", "claude-sonnet-4-5")
    assert model["api"] == "anthropic-messages"
    assert model["baseUrl"] == "https://api.anthropic.com"
    assert MODEL_INFO.decode(model) == model


def test_unknown_model_names_close_ids() -> None:
    with pytest.raises(UnknownModelError) as info:
        get_model("openai", "gpt-5.3")
    assert str(info.value).startswith("unknown model 'gpt-5.3' for provider 'openai'; did you mean ")
    assert "openai/gpt-5.2" in info.value.candidates


def test_unknown_provider() -> None:
    with pytest.raises(
        UnknownModelError, match=r"unknown provider 'nope' \(model 'x'\); known providers: .*anthropic"
    ):
        get_model("nope", "x")
    with pytest.raises(UnknownProviderError, match="unknown provider 'nope'"):
        get_provider_info("nope")


def test_a_streams_idle_timeout_lookup_takes_a_miss_quietly() -> None:
    """Every stream looks its provider's idle timeout up, also for a model dict of a provider
    nobody registered: a miss is ``None``, not an error built and raised per request."""
    registry = ModelRegistry()
    assert registry.find_provider_info("nope") is None
    assert registry.find_provider_info("anthropic") is registry.get_provider_info("anthropic")
    assert stream_timeouts_of("nope") == (None, None)
    register_provider_info(
        ProviderInfo("slow", "openai-completions", "http://127.0.0.1:1/v1", None, idle_timeout=0)
    )
    assert stream_timeouts_of("slow") == (0, None)


def test_an_edited_idle_timeout_reaches_the_requests_after_the_recheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request asks for its provider's idle timeout, which is reused for up to
    ``TIMEOUTS_RECHECK`` seconds (docs/models.md): an edit of ``models.json``, or another file
    (a new ``TETHER_HOME``), is read once that has passed, or at once after a lookup (choosing a
    model) read the new file. The window is set here, not waited for."""
    first = tmp_path / "a" / "models.json"
    second = tmp_path / "b" / "models.json"
    for path, ms in ((first, 2000), (second, 0)):
        path.parent.mkdir()
        path.write_text(json.dumps({"providers": {"ollama": {"streamIdleTimeoutMs": ms}}}))
    current = [first]
    registry = ModelRegistry(models_path=lambda: current[0])
    monkeypatch.setattr(models_module, "TIMEOUTS_RECHECK", 3600.0)
    assert registry.stream_timeouts("ollama")[0] == 2.0
    first.write_text(
        json.dumps({"providers": {"ollama": {"streamIdleTimeoutMs": 500, "connectTimeoutMs": 30000}}})
    )
    assert registry.stream_timeouts("ollama")[0] == 2.0  # within the window
    current[0] = second
    assert registry.stream_timeouts("ollama")[0] == 2.0  # another file, within the window
    registry.get_provider_info("ollama")  # a lookup reads the other file
    assert registry.stream_timeouts("ollama")[0] == 0  # at once
    current[0] = first
    registry.get_model("ollama", "qwen3:8b")
    assert registry.stream_timeouts("ollama") == (0.5, 30.0)  # back, and its edit read with it
    first.write_text(json.dumps({"providers": {"ollama": {}}}))
    monkeypatch.setattr(models_module, "TIMEOUTS_RECHECK", 0.0)
    assert registry.stream_timeouts("ollama")[0] is None  # the window passed: the edit is read
    monkeypatch.setattr(models_module, "TIMEOUTS_RECHECK", 3600.0)
    registry.register_provider_info(
        ProviderInfo("ollama", "openai-completions", "http://127.0.0.1:1/v1", None, idle_timeout=9)
    )
    assert registry.stream_timeouts("ollama")[0] == 9  # a registration replaces the remembered value


def test_list_models_sorted_and_filtered() -> None:
    everything = list_models()
    assert len(everything) == len(load_catalog().models)
    assert [(m["provider"], m["id"]) for m in everything] == sorted(
        (m["provider"], m["id"]) for m in everything
    )
    groq = list_models("groq")
    assert groq and {m["provider"] for m in groq} == {"groq"}
    assert list_models("ollama") == []  # a local server's models come from probing it


@pytest.mark.parametrize(
    ("ref", "provider", "model_id"),
    [
        ("anthropic/claude-opus-4-7", "anthropic", "claude-opus-4-7"),
        ("claude-opus-4-7", "anthropic", "claude-opus-4-7"),  # bare id, one provider has it
        ("anthropic/claude-opus-4.7", "anthropic", "claude-opus-4-7"),  # dots for dashes
        ("openrouter/anthropic/claude-opus-4.7", "openrouter", "anthropic/claude-opus-4.7"),
        ("groq/openai/gpt-oss-120b", "groq", "openai/gpt-oss-120b"),
        ("  openai/gpt-5  ", "openai", "gpt-5"),
        ("ollama/qwen3:8b", "ollama", "qwen3:8b"),  # local servers take any id
        ("llama.cpp/whatever.gguf", "llama.cpp", "whatever.gguf"),
    ],
)
def test_find_model(ref: str, provider: str, model_id: str) -> None:
    model = find_model(ref)
    assert (model["provider"], model["id"]) == (provider, model_id)


def test_find_model_ambiguous_and_unknown() -> None:
    with pytest.raises(UnknownModelError, match="offered by several providers") as info:
        find_model("openai/gpt-oss-120b")  # `openai` lacks it; groq and openrouter both have it
    assert info.value.candidates == ["groq/openai/gpt-oss-120b", "openrouter/openai/gpt-oss-120b"]
    with pytest.raises(UnknownModelError, match=r"unknown model 'gpt-5\.3'; did you mean .*openai/gpt-5\.2"):
        find_model("gpt-5.3")
    with pytest.raises(UnknownModelError, match="for provider 'anthropic'"):
        find_model("anthropic/claude-opus-9")


def test_local_model_defaults() -> None:
    model = get_model("ollama", "llama3.2")
    assert model == {
        "id": "llama3.2",
        "name": "llama3.2",
        "api": "openai-completions",
        "provider": "ollama",
        "baseUrl": "http://127.0.0.1:11434/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": DEFAULT_CONTEXT_WINDOW,
        "maxTokens": DEFAULT_MAX_TOKENS,
    }
    assert get_provider_info("ollama").api_key_env is None


def test_providers_and_keys() -> None:
    names = [p.name for p in list_providers()]
    assert names == sorted(names)
    assert {"openai", "anthropic", "google", "ollama", "llama.cpp", "vllm", "lmstudio"} <= set(names)
    anthropic = get_provider_info("anthropic")
    assert anthropic.api_key_env == "ANTHROPIC_API_KEY"
    assert not provider_has_key(anthropic, {})
    assert provider_has_key(anthropic, {"ANTHROPIC_API_KEY": "sk-x"})
    assert not provider_has_key(anthropic, {"ANTHROPIC_API_KEY": ""})
    assert provider_has_key(anthropic, {"ANTHROPIC_OAUTH_TOKEN": "sk-ant-oat-x"})  # as tether.ai.keys reads
    assert provider_has_key(get_provider_info("vllm"), {})


# --- run-time registration ---------------------------------------------------------------------


def test_register_model_validates_and_wins() -> None:
    model = {**get_model("openai", "gpt-4o"), "name": "Mine", "maxTokens": 1000}
    assert register_model(model)["name"] == "Mine"
    assert get_model("openai", "gpt-4o")["name"] == "Mine"
    with pytest.raises(WireError, match=r"^model openai/bad\.contextWindow: "):
        register_model({**model, "id": "bad", "contextWindow": "lots"})
    with pytest.raises(WireError, match=r"^model openai/bad2\.cost: required field is missing"):
        register_model({k: v for k, v in model.items() if k != "cost"} | {"id": "bad2"})


def test_register_provider() -> None:
    register_provider_info(ProviderInfo("corp", "openai-responses", "https://llm.corp/v1", "CORP_KEY"))
    assert get_provider_info("corp").base_url == "https://llm.corp/v1"
    register_model({**get_model("openai", "gpt-5"), "provider": "corp", "baseUrl": "https://llm.corp/v1"})
    assert find_model("corp/gpt-5")["baseUrl"] == "https://llm.corp/v1"


# --- models.json -------------------------------------------------------------------------------


def test_user_provider_with_defaults_filled_in(config_dir: Path) -> None:
    write_models(
        config_dir,
        {
            "providers": {
                "box": {
                    "baseUrl": "http://127.0.0.1:8081/v1",
                    "api": "openai-completions",
                    "headers": {"X-Team": "a"},
                    "compat": {"supportsDeveloperRole": False},
                    "models": [
                        {"id": "qwen3-coder"},
                        {
                            "id": "r1",
                            "name": "R1 distill",
                            "reasoning": True,
                            "input": ["text", "image"],
                            "cost": {"input": 0.5},
                            "contextWindow": 32768,
                            "maxTokens": None,
                            "headers": {"X-Model": "r1"},
                            "compat": {"thinkingFormat": "qwen"},
                            "thinking": {"mode": "effort", "efforts": ["low", "high"]},
                        },
                    ],
                }
            }
        },
    )
    box = get_provider_info("box")
    assert (box.api_key_env, box.local) == (None, True)
    plain = get_model("box", "qwen3-coder")
    assert plain == {
        "id": "qwen3-coder",
        "name": "qwen3-coder",
        "api": "openai-completions",
        "provider": "box",
        "baseUrl": "http://127.0.0.1:8081/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": DEFAULT_CONTEXT_WINDOW,
        "maxTokens": DEFAULT_MAX_TOKENS,
        "headers": {"X-Team": "a"},
        "compat": {"supportsDeveloperRole": False},
    }
    r1 = get_model("box", "r1")
    assert r1["cost"] == {"input": 0.5, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    assert (r1["contextWindow"], r1["maxTokens"]) == (32768, None)
    assert r1.get("headers") == {"X-Team": "a", "X-Model": "r1"}
    assert r1.get("compat") == {"supportsDeveloperRole": False, "thinkingFormat": "qwen"}
    assert r1.get("thinking") == {"mode": "effort", "efforts": ["low", "high"]}
    assert [m["id"] for m in list_models("box")] == ["qwen3-coder", "r1"]
    # a keyless loopback provider accepts ids nobody listed, like the known local servers
    assert get_model("box", "other")["baseUrl"] == "http://127.0.0.1:8081/v1"


def test_remote_user_provider_needs_listed_models_and_names_its_key(config_dir: Path) -> None:
    write_models(
        config_dir,
        {
            "providers": {
                "together": {
                    "baseUrl": "https://api.together.xyz/v1",
                    "api": "openai-completions",
                    "apiKeyEnv": "TOGETHER_API_KEY",
                    "models": [{"id": "meta-llama/Llama-3.3-70B-Instruct-Turbo", "contextWindow": 131072}],
                }
            }
        },
    )
    together = get_provider_info("together")
    assert (together.api_key_env, together.local) == ("TOGETHER_API_KEY", False)
    assert find_model("together/meta-llama/Llama-3.3-70B-Instruct-Turbo")["contextWindow"] == 131072
    with pytest.raises(UnknownModelError, match="for provider 'together'"):
        get_model("together", "unlisted")


def test_override_a_shipped_provider_and_model(config_dir: Path) -> None:
    write_models(
        config_dir,
        {
            "providers": {
                "anthropic": {
                    "baseUrl": "https://proxy.example/anthropic",
                    "headers": {"X-Proxy": "1"},
                    "models": [
                        {"id": "claude-sonnet-4-5", "name": "Sonnet via proxy", "cost": {"input": 1}},
                        {"id": "claude-next", "reasoning": True},
                    ],
                },
                "ollama": {"models": [{"id": "gpt-oss:20b", "reasoning": True, "contextWindow": 131072}]},
            }
        },
    )
    catalog = load_catalog()
    opus = get_model("anthropic", "claude-opus-4-7")  # not listed: follows the provider's override
    assert opus["baseUrl"] == "https://proxy.example/anthropic"
    assert opus.get("headers") == {"X-Proxy": "1"}
    assert opus["cost"] == catalog.models[("anthropic", "claude-opus-4-7")]["cost"]
    sonnet = get_model("anthropic", "claude-sonnet-4-5")  # listed: only the given fields change
    shipped = catalog.models[("anthropic", "claude-sonnet-4-5")]
    assert sonnet["name"] == "Sonnet via proxy"
    assert sonnet["cost"] == {**shipped["cost"], "input": 1}
    assert sonnet["contextWindow"] == shipped["contextWindow"]
    assert sonnet.get("thinking") == shipped.get("thinking")
    assert sonnet["baseUrl"] == "https://proxy.example/anthropic"
    new = get_model("anthropic", "claude-next")
    assert (new["api"], new["reasoning"], new["baseUrl"]) == (
        "anthropic-messages",
        True,
        "https://proxy.example/anthropic",
    )
    assert get_provider_info("anthropic").api_key_env == "ANTHROPIC_API_KEY"  # kept from the catalog
    oss = get_model("ollama", "gpt-oss:20b")
    assert (oss["reasoning"], oss["contextWindow"], oss["baseUrl"]) == (
        True,
        131072,
        "http://127.0.0.1:11434/v1",
    )


def test_file_changes_are_picked_up(config_dir: Path) -> None:
    path = write_models(
        config_dir, {"providers": {"ollama": {"models": [{"id": "a", "contextWindow": 1000}]}}}
    )
    assert get_model("ollama", "a")["contextWindow"] == 1000
    path.write_text(json.dumps({"providers": {"ollama": {"models": [{"id": "a", "contextWindow": 123456}]}}}))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # coarse clocks
    assert get_model("ollama", "a")["contextWindow"] == 123456
    path.unlink()
    assert get_model("ollama", "a")["contextWindow"] == DEFAULT_CONTEXT_WINDOW


def test_a_file_elsewhere(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps({"providers": {"vllm": {"models": [{"id": "m", "maxTokens": 77}]}}}))
    registry = ModelRegistry(models_path=lambda: other)
    assert registry.get_model("vllm", "m")["maxTokens"] == 77
    assert get_model("vllm", "m")["maxTokens"] == DEFAULT_MAX_TOKENS  # the shared registry reads its own


BAD_FILES: list[tuple[Any, str]] = [
    ("{not json", r"invalid JSON: .*line 1 column 2"),
    ([], r"expected an object \(got \[\]\)"),
    ({"providers": []}, r"providers: expected an object"),
]
"""Files that cannot be read as a set of providers at all."""

BAD_ENTRIES: list[tuple[Any, str]] = [
    (
        {"providers": {"x": {"baseURL": "http://h", "api": "openai-completions"}}},
        r"providers\.x\.baseURL: unknown field",
    ),
    (
        {"providers": {"x": {"api": "openai-completions"}}},
        r"providers\.x\.baseUrl: required field is missing",
    ),
    ({"providers": {"x": {"baseUrl": "http://h"}}}, r"providers\.x\.api: required field is missing"),
    (
        {"providers": {"ollama": {"models": [{"id": "a"}, {"id": "b", "contextWindow": "32k"}]}}},
        r"providers\.ollama\.models\[1\] \('b'\)\.contextWindow: expected an integer \(got \"32k\"\)",
    ),
    (
        {"providers": {"ollama": {"models": [{"name": "no id"}]}}},
        r"providers\.ollama\.models\[0\]\.id: required field is missing",
    ),
    (
        {"providers": {"ollama": {"models": [{"id": "a"}, {"id": "a"}]}}},
        r"providers\.ollama\.models\[1\] \('a'\)\.id: duplicate",
    ),
    (
        {"providers": {"ollama": {"models": [{"id": "a", "reasoning": "yes"}]}}},
        r"models\[0\] \('a'\)\.reasoning: expected a boolean \(got \"yes\"\)",
    ),
    (
        {
            "providers": {
                "ollama": {"models": [{"id": "a", "thinking": {"mode": "effort", "efforts": ["huge"]}}]}
            }
        },
        r"models\[0\] \('a'\)\.thinking\.efforts\[0\]: expected 'minimal', 'low'.* \(got \"huge\"\)",
    ),
    (
        {"providers": {"ollama": {"models": [{"id": "a", "cost": {"input": "1.5"}}]}}},
        r"models\[0\] \('a'\)\.cost\.input: expected a number \(got \"1\.5\"\)",
    ),
    (
        {"providers": {"ollama": {"models": [{"id": "a", "input": ["text", "images"]}]}}},
        r"models\[0\] \('a'\)\.input\[1\]: expected 'text' or 'image' \(got \"images\"\)",
    ),
    (
        {"providers": {"ollama": {"apiKeyEnv": "not a name"}}},
        r"providers\.ollama\.apiKeyEnv: expected the name of an environment variable",
    ),
    (
        {"providers": {"ollama": {"streamIdleTimeoutMs": -1}}},
        r"providers\.ollama\.streamIdleTimeoutMs: expected milliseconds >= 0 \(0: no limit\), got -1",
    ),
    (
        {"providers": {"ollama": {"connectTimeoutMs": -1}}},
        r"providers\.ollama\.connectTimeoutMs: expected milliseconds >= 0 \(0: no limit\), got -1",
    ),
    (
        {"providers": {"a/b": {"baseUrl": "http://h", "api": "x"}}},
        r"providers\.a/b: a provider name must .* no '/'",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD_FILES)
def test_bad_files_name_file_entry_and_field(config_dir: Path, data: Any, message: str) -> None:
    path = write_models(config_dir, data)
    with pytest.raises(ModelsFileError) as info:
        list_models()
    assert str(info.value).startswith(f"{path}: ")
    assert info.value.file == path
    assert re.search(message, str(info.value)), str(info.value)
    # the mistake is reported again on the next lookup, not forgotten after the first
    with pytest.raises(ModelsFileError):
        get_model("openai", "gpt-5")


GOOD = {"baseUrl": "http://h/v1", "api": "openai-completions", "models": [{"id": "m", "maxTokens": 77}]}


@pytest.mark.parametrize(("data", "message"), BAD_ENTRIES)
def test_a_bad_entry_is_left_out_and_named_the_rest_works(config_dir: Path, data: Any, message: str) -> None:
    """A mistake in one provider's entry raised on every lookup, so a typo in a provider tried
    once stopped every run, with any model; now that provider is left out, the line naming the
    file, the entry and the field is kept for the front ends' notes, and the others work."""
    path = write_models(config_dir, {"providers": {"good": GOOD, **data["providers"]}})
    [line] = models_file_problems()
    assert line.startswith(f"{path}: ") and re.search(message, line), line
    assert get_model("good", "m")["maxTokens"] == 77
    assert get_model("openai", "gpt-5")["provider"] == "openai"
    [bad] = set(data["providers"])
    if bad == "ollama":  # a shipped provider's entry left out: the provider is as shipped
        assert get_model("ollama", "a")["contextWindow"] == DEFAULT_CONTEXT_WINDOW
    else:
        with pytest.raises(UnknownProviderError):
            get_provider_info(bad)


def test_an_unreadable_file_is_an_error_too(config_dir: Path) -> None:
    (config_dir / "models.json").mkdir()
    with pytest.raises(ModelsFileError, match=r"models\.json: cannot read"):
        list_models()


@pytest.mark.parametrize("target", ["moved-away.json", "models.json"])
def test_a_link_to_nothing_is_an_error_not_an_empty_file(config_dir: Path, target: str) -> None:
    """A ``models.json`` linking to a file moved away (or to itself: a loop) was taken for no
    file: every provider and model the user added vanished without a word."""
    path = config_dir / "models.json"
    path.symlink_to(config_dir / target)
    with pytest.raises(ModelsFileError, match=r"models\.json: cannot read: ") as info:
        list_models()
    assert info.value.file == path


def test_the_documented_example_works(config_dir: Path) -> None:
    doc = (REPO_ROOT / "docs" / "models.md").read_text()
    example = re.search(r"## `models.json`\n\n```json\n(.*?)\n```", doc, re.S)
    assert example is not None
    (config_dir / "models.json").write_text(example.group(1))
    assert find_model("ollama/qwen3:8b")["contextWindow"] == 40960
    assert get_model("ollama", "gemma3:12b")["input"] == ["text", "image"]
    assert get_provider_info("workstation").local  # keyless: a server the user runs
    assert get_model("workstation", "qwen3-coder-30b")["maxTokens"] == 32768
    assert get_model("workstation", "unlisted")["maxTokens"] == DEFAULT_MAX_TOKENS
    kimi = find_model("together/moonshotai/Kimi-K2-Instruct")
    assert (kimi["name"], kimi["cost"]["output"]) == ("Kimi K2", 3)
    assert get_provider_info("together").api_key_env == "TOGETHER_API_KEY"
    assert get_model("anthropic", "claude-opus-4-7").get("headers") == {"X-Team": "platform"}
