"""Probing local servers: real HTTP servers on 127.0.0.1, started by the tests."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tether.ai import ProviderInfo, find_model, list_models, list_providers, probe_local_servers
from tether.ai.key_names import env_vars_for
from tether.ai.local_servers import _model_ids, usable_models  # pyright: ignore[reportPrivateUsage]
from tether.ai.models import DEFAULT_MAX_TOKENS, LOCAL_PROVIDERS

Handler = Callable[[bytes], bytes | None]
"""Request head → raw HTTP response, or ``None`` to never answer."""


def http(status: int, body: str, content_type: str = "application/json") -> bytes:
    data = body.encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    return head.encode() + data


@asynccontextmanager
async def server(handler: Handler) -> AsyncGenerator[tuple[str, list[bytes]]]:
    """A loopback HTTP server; yields its base URL (``…/v1``) and the request heads it saw."""
    seen: list[bytes] = []
    hang = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        response = handler(head)
        if response is None:
            await hang.wait()
        else:
            writer.write(response)
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        hang.set()
        srv.close()
        await srv.wait_closed()


def local(name: str, base_url: str) -> ProviderInfo:
    return ProviderInfo(name, "openai-completions", base_url, None, local=True)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_only_servers_that_answer_are_listed() -> None:
    models = json.dumps(
        {"object": "list", "data": [{"id": "qwen3:8b", "object": "model"}, {"id": "llama3.2"}]}
    )
    async with (
        server(lambda head: http(200, models)) as (good, seen),
        server(lambda head: http(500, '{"error": "boom"}')) as (failing, _),
        server(lambda head: http(200, "<html>not a model server</html>", "text/html")) as (other, _),
        server(lambda head: None) as (silent, _),
    ):
        dead = f"http://127.0.0.1:{closed_port()}/v1"
        providers = [
            local("a", good),
            local("b", failing),
            local("c", other),
            local("d", silent),
            local("e", dead),
        ]
        found = await probe_local_servers(providers, timeout=2.0)
    assert [(s.provider.name, s.model_ids) for s in found] == [("a", ["qwen3:8b", "llama3.2"])]
    assert seen[0].startswith(b"GET /v1/models HTTP/1.1\r\n")
    assert [m["id"] for m in found[0].models()] == ["qwen3:8b", "llama3.2"]
    assert found[0].models()[0]["baseUrl"] == good


async def test_providers_that_are_not_local_are_not_probed() -> None:
    async with server(lambda head: http(200, '{"data": []}')) as (url, seen):
        remote = ProviderInfo("remote", "openai-completions", url, "SOME_KEY")
        assert await probe_local_servers([remote]) == []
    assert seen == []


async def test_user_defined_loopback_providers_are_probed_by_default(config_dir: Path) -> None:
    async with server(lambda head: http(200, '{"data": [{"id": "coder"}]}')) as (url, _):
        (config_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "mybox": {"baseUrl": url, "api": "openai-completions", "headers": {"X-K": "v"}}
                    }
                }
            )
        )
        found = {s.provider.name: s for s in await probe_local_servers(timeout=5.0)}
    assert found["mybox"].model_ids == ["coder"]
    assert find_model("mybox/coder")["baseUrl"] == url


async def test_provider_headers_are_sent() -> None:
    async with server(lambda head: http(200, '{"data": [{"id": "m"}]}')) as (url, seen):
        provider = ProviderInfo("h", "openai-completions", url, None, headers={"X-Token": "abc"}, local=True)
        await probe_local_servers([provider], timeout=5.0)
    assert b"x-token: abc" in seen[0].lower()


def test_model_id_shapes() -> None:
    assert _model_ids({"data": [{"id": "a"}, {"id": "a"}, {"id": 3}, "junk"]}) == ["a"]
    assert _model_ids({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]}) == [
        "llama3.2:latest"
    ]
    assert _model_ids([1, 2]) == []
    assert _model_ids({"data": "nope"}) == []


async def test_usable_models(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in list_providers():
        for name in (provider.api_key_env, *env_vars_for(provider.name)):
            if name:
                monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-x")
    async with server(lambda head: http(200, '{"data": [{"id": "listed"}, {"id": "pulled"}]}')) as (url, _):
        (config_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "mybox": {
                            "baseUrl": url,
                            "api": "openai-completions",
                            "models": [{"id": "listed", "maxTokens": 99}],
                        },
                        "gone": {
                            "baseUrl": f"http://127.0.0.1:{closed_port()}/v1",
                            "api": "openai-completions",
                            "models": [{"id": "x"}],
                        },
                    }
                }
            )
        )
        models = await usable_models(timeout=5.0)
    names = {f"{m['provider']}/{m['id']}": m for m in models}
    # the keyed provider's whole catalog, the answering server's models; (a developer's own
    # Ollama on this machine may add its models: the known local servers are probed too)
    local = {p.name for p in LOCAL_PROVIDERS}
    assert {n.split("/")[0] for n in names} - local == {"deepseek", "mybox"}
    assert {n for n in names if n.startswith("deepseek/")} == {
        f"deepseek/{m['id']}" for m in list_models("deepseek")
    }
    assert names["mybox/listed"]["maxTokens"] == 99  # models.json's description
    assert names["mybox/pulled"]["maxTokens"] == DEFAULT_MAX_TOKENS  # served but not described
    assert not any(n.startswith("gone/") for n in names)  # not answering: not usable now
