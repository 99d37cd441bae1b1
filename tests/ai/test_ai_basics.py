"""Keys, cost, surrogate stripping and the registry."""

from __future__ import annotations

import math
import sys
import threading
import time
import types
from typing import Any

import pytest

from tether.ai import (
    ApiProvider,
    complete,
    empty_usage,
    env_vars_for,
    providers as builtin_providers,
    register_provider,
    registered_apis,
    registry,
    resolve_api_key,
)
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.keys import ApiKey, is_keyless, missing_key_message
from tether.ai.registry import unregister_provider
from tether.ai.sanitize import strip_surrogates
from tether.ai.transport import HttpRequest, encode_request
from tether.ai.types import ProviderRequest, SimpleStreamOptions, StreamOptions
from tether.ai.usage import set_usage
from tether.wire import JsonObject, ModelInfo


def model(
    provider: str = "openai",
    url: str = "https://api.openai.com/v1",
    *,
    api: str = "openai-completions",
    compat: JsonObject | None = None,
) -> ModelInfo:
    spec: ModelInfo = {
        "id": "m",
        "name": "m",
        "api": api,
        "provider": provider,
        "baseUrl": url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 1000,
        "maxTokens": 100,
    }
    if compat is not None:
        spec["compat"] = compat
    return spec


def test_key_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    explicit = resolve_api_key(model(), "explicit")
    assert explicit is not None and explicit.value == "explicit"
    found = resolve_api_key(model())
    assert found is not None and (found.value, found.env_var) == ("from-env", "OPENAI_API_KEY")


def test_anthropic_oauth_token_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "key")
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "token")
    found = resolve_api_key(model("anthropic"))
    assert found is not None and found.env_var == "ANTHROPIC_OAUTH_TOKEN"


def test_no_repr_shows_a_key() -> None:
    """``StreamOptions(api_key=...)`` (what ``stream``/``complete`` take) showed the key in its
    repr, as did the resolved key and the request headers: what a log line or an error tracker's
    captured locals print (``AgentOptions`` already left it out)."""
    secret = "SECRET-KEY-77"
    request = HttpRequest("https://api.example.com/v1", {"authorization": f"Bearer {secret}"}, {})
    shown = [
        StreamOptions(api_key=secret, headers={"x-api-key": secret}),
        SimpleStreamOptions(api_key=secret),
        ApiKey(secret, "OPENAI_API_KEY"),
        request,
        encode_request(request),
        ProviderRequest(request.url, {"x-api-key": secret}, {}),
    ]
    assert [secret in repr(value) for value in shown] == [False] * len(shown)


def test_the_first_lookups_of_two_threads_both_find_the_builtin_providers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The registry marked its built-in providers loaded before loading them: a thread whose
    first lookup came while another's was loading them (event loops in threads, ``run_sync``
    from several) found none, and its reply failed with "No provider is registered" (35 of 40
    replies, 8 threads starting at once). Here the loading is slowed down to show it."""

    class Slow(types.ModuleType):
        @property
        def BUILTIN(self) -> tuple[ApiProvider, ...]:
            time.sleep(0.2)
            return builtin_providers.BUILTIN

    monkeypatch.setitem(sys.modules, "tether.ai.providers", Slow("tether.ai.providers"))
    monkeypatch.setattr(registry, "_builtins_loaded", False)
    monkeypatch.setattr(registry, "_providers", {})
    monkeypatch.setattr(registry, "_builtin", {})
    found: list[bool] = []

    def look_up() -> None:
        found.append(registry.get_provider("openai-completions") is not None)

    first = threading.Thread(target=look_up)
    first.start()
    time.sleep(0.05)  # the first thread is loading them
    look_up()
    first.join()
    assert found == [True, True]


def test_unknown_provider_variable_and_message() -> None:
    assert env_vars_for("my-host.ai") == ("MY_HOST_AI_API_KEY",)
    assert "GROQ_API_KEY" in missing_key_message(model("groq"))


def test_keyless_servers() -> None:
    assert is_keyless(model("ollama", "http://gpu-box:11434/v1"))
    assert is_keyless(model("custom", "http://127.0.0.1:8080/v1"))
    assert is_keyless(model("custom", "https://example.com/v1", compat={"apiKey": False}))
    assert not is_keyless(model("openai"))


def test_cost_follows_the_per_million_rates() -> None:
    usage: Any = empty_usage()
    set_usage(model(), usage, input=364, output=40, cache_read=1000, cache_write=10, reasoning=12)
    assert usage["totalTokens"] == 364 + 40 + 1000 + 10
    assert usage["reasoningTokens"] == 12
    cost = usage["cost"]
    assert math.isclose(cost["input"], 364 * 3 / 1e6) and math.isclose(cost["output"], 40 * 15 / 1e6)
    assert math.isclose(cost["cacheRead"], 1000 * 0.3 / 1e6) and math.isclose(
        cost["cacheWrite"], 10 * 3.75 / 1e6
    )
    assert math.isclose(
        cost["total"], cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    )


def test_strip_surrogates() -> None:
    assert strip_surrogates("a\ud83db\udc4b") == "ab"
    assert strip_surrogates("ok 👋") == "ok 👋"
    text = "plain"
    assert strip_surrogates(text) is text


async def test_a_provider_that_raises_becomes_an_error_message() -> None:
    def broken(*_: Any) -> AssistantMessageEventStream:
        raise RuntimeError("boom")

    register_provider(ApiProvider("broken-api", broken, broken))
    try:
        assert "broken-api" in registered_apis()
        message = await complete(model(api="broken-api"), {"messages": []})
    finally:
        unregister_provider("broken-api")
    assert message["stopReason"] == "error"
    assert message.get("errorMessage") == "RuntimeError: boom"


async def test_a_request_that_cannot_be_built_is_an_error_message() -> None:
    bad: Any = {"messages": [{"role": "user"}]}  # no content
    message = await complete(model(), bad, None)
    assert message["stopReason"] == "error"
    assert "OPENAI_API_KEY" in message.get("errorMessage", "")
    from tether.ai import StreamOptions

    message = await complete(model(), bad, StreamOptions(api_key="k"))
    assert message.get("errorMessage", "").startswith("Could not build the request")


@pytest.mark.parametrize("nan_first", [False, True])
async def test_a_circular_body_is_an_error_message_not_a_raise(nan_first: bool) -> None:
    """The body encoder skips the circular-reference check (``transport._BODY``): a cycle in a
    field a caller adds must still end the answer with the check's error (the stream function
    raised ``RecursionError`` without the fallback to the checking encoder). So with a ``NaN``
    met before the cycle: its ``null``-ing copy (``_finite``) recursed and raised out of the
    stream function, which no fallback caught."""
    from tether.ai import StreamOptions

    extra: dict[str, Any] = {"weight": math.nan} if nan_first else {}
    extra["metadata"] = {}
    extra["metadata"]["self"] = extra
    message = await complete(model(), {"messages": []}, StreamOptions(api_key="k", extra=extra))
    assert message["stopReason"] == "error"
    assert message.get("errorMessage") == "Could not build the request: Circular reference detected"
