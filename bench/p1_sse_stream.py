"""P1: consume a 20,000-event streamed answer from loopback, tether vs the floor vs the SDKs.

The body is built by repeating the chunk pattern of a recorded stream
(``reference/fixtures/streams/openai-completions/deepseek-reasoning-content``: reasoning deltas,
then text deltas) until it holds 20,000 content events. A separate process serves it over HTTP
on 127.0.0.1, so the server does not share the measured process's CPU or event loop.

Rows:
- ``floor``: a bare httpx2 loop reading lines and decoding each ``data:`` line with ``jiter``
  (the fastest JSON decoder at hand): the least work any client must do to get the chunks,
  and the reference of the ratios;
- ``httpx2 lines + json.loads`` and ``httpx2 lines only (no JSON)``: the same loop with the
  stdlib decoder and with no decoding at all, for scale;
- ``tether``: ``tether.ai.stream`` with the openai-completions provider, every event consumed;
- ``openai SDK``: the official ``openai`` package (``pip install -e '.[bench]'``) streaming the same body.

The other three APIs get a stream of the same size the same way (issue 7), each from a recorded
stream with reasoning then text: Responses (``openai-reasoning-summary``: summary deltas, then
``output_text`` deltas), Anthropic (``thinking-signed``: ``thinking_delta`` then ``text_delta``)
and Gemini (``thinking-signed``: thought parts, then text parts). Each gets its own floor; the
official SDK row is added where the SDK is installed (``openai`` for Responses, ``anthropic``).
All rows print in one table.
Goal (issue 4): tether <= 1.3x the floor, and >= 1.5x faster than the SDK.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jiter

from _summary import record_paired
from tether.ai import StreamOptions, stream
from tether.wire import ModelInfo

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "reference" / "fixtures" / "streams"
EVENTS = 20_000
RUNS = 11
SDK_RUNS = 3

SERVER = """
import asyncio, sys
from tether.testing.loopback import LoopbackServer, Reply
body = open(sys.argv[1], "rb").read()
async def main():
    async with LoopbackServer([Reply(body, chunks=range(16384, len(body), 16384))]) as server:
        print(server.url, flush=True)
        await asyncio.Event().wait()
asyncio.run(main())
"""


def openai_chat_body(events: int = EVENTS) -> bytes:
    """A Chat Completions stream with ``events`` content deltas, cycling a recorded pattern."""
    fixture = json.loads((FIXTURES / "openai-completions" / "deepseek-reasoning-content.json").read_text())
    blocks = [b for b in fixture["response"]["body"].split("\n\n") if b.startswith("data: {")]
    chunks = [json.loads(b[6:]) for b in blocks]

    def has_delta(c: dict[str, Any]) -> bool:
        delta = c["choices"][0]["delta"] if c.get("choices") else {}
        return bool(delta.get("content") or delta.get("reasoning_content"))

    content = [c for c in chunks if has_delta(c)]
    reasoning = [c for c in content if c["choices"][0]["delta"].get("reasoning_content")]
    text = [c for c in content if c["choices"][0]["delta"].get("content")]
    first = chunks[0]
    tail = [c for c in chunks if c.get("choices") and c["choices"][0].get("finish_reason")] or chunks[-1:]
    half = events // 2
    pattern = [reasoning[i % len(reasoning)] for i in range(half)] + [
        text[i % len(text)] for i in range(events - half)
    ]
    lines = [first, *pattern, *tail]
    return (
        "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in lines).encode()
        + b"data: [DONE]\n\n"
    )


def sse_blocks(api: str, name: str) -> list[str]:
    """The recorded body of ``api/name`` as SSE event blocks (``event:`` lines kept)."""
    fixture = json.loads((FIXTURES / api / f"{name}.json").read_text())
    body = fixture["response"]["body"].replace("\r\n", "\n")
    return [block for block in body.split("\n\n") if "data: {" in block]


def block_data(block: str) -> dict[str, Any]:
    return json.loads(block.split("data: ", 1)[1])


def repeated_body(blocks: list[str], kind: Callable[[str], str | None], events: int = EVENTS) -> bytes:
    """Head, ``events // 2`` reasoning deltas, the blocks between, text deltas, tail.

    ``kind`` says which blocks are reasoning or text deltas; they are cycled to the wanted count.
    Non-delta blocks inside a run (summary part boundaries) are left out: one part each.
    """
    kinds = [kind(b) for b in blocks]
    first_r, last_r = kinds.index("reasoning"), len(kinds) - 1 - kinds[::-1].index("reasoning")
    first_t, last_t = kinds.index("text"), len(kinds) - 1 - kinds[::-1].index("text")
    reasoning = [b for b, k in zip(blocks, kinds, strict=True) if k == "reasoning"]
    text = [b for b, k in zip(blocks, kinds, strict=True) if k == "text"]
    half = events // 2
    middle = [b for b in blocks[last_r + 1 : first_t] if kind(b) is None]
    out = [
        *blocks[:first_r],
        *(reasoning[i % len(reasoning)] for i in range(half)),
        *middle,
        *(text[i % len(text)] for i in range(events - half)),
        *blocks[last_t + 1 :],
    ]
    return "".join(block + "\n\n" for block in out).encode()


def responses_body() -> bytes:
    deltas = {"response.reasoning_summary_text.delta": "reasoning", "response.output_text.delta": "text"}
    blocks = sse_blocks("openai-responses", "openai-reasoning-summary")
    return repeated_body(blocks, lambda b: deltas.get(block_data(b).get("type", "")))


def anthropic_body() -> bytes:
    deltas = {"thinking_delta": "reasoning", "text_delta": "text"}
    blocks = sse_blocks("anthropic-messages", "thinking-signed")
    return repeated_body(blocks, lambda b: deltas.get(block_data(b).get("delta", {}).get("type", "")))


def gemini_body() -> bytes:
    """Gemini's last text chunk carries ``finishReason``: cycled chunks drop it, a final one adds it."""
    blocks = sse_blocks("google-generative-ai", "thinking-signed")
    chunks = [block_data(b) for b in blocks]
    final = chunks[-1]
    for chunk in chunks:
        chunk["candidates"][0].pop("finishReason", None)
    final_chunk = {
        **final,
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
        ],
    }

    def kind(block: str) -> str | None:
        parts = block_data(block)["candidates"][0]["content"]["parts"]
        return "reasoning" if parts[0].get("thought") else "text"

    plain = [f"data: {json.dumps(c, separators=(',', ':'))}" for c in chunks]
    return repeated_body(plain, kind) + f"data: {json.dumps(final_chunk, separators=(',', ':'))}\n\n".encode()


@dataclass
class Stream:
    api: str
    path: str
    body: bytes
    model_id: str
    provider: str = "deepseek"


def streams() -> list[Stream]:
    return [
        Stream("openai-completions", "/v1", openai_chat_body(), "deepseek-reasoner"),
        Stream("openai-responses", "/v1", responses_body(), "o3-mini", "openai"),
        Stream("anthropic-messages", "", anthropic_body(), "claude-sonnet-4-6", "anthropic"),
        Stream("google-generative-ai", "/v1beta", gemini_body(), "gemini-2.5-pro", "google"),
    ]


STREAMS = streams


def model_for(stream_spec: Stream, url: str) -> ModelInfo:
    return {
        "id": stream_spec.model_id,
        "name": stream_spec.model_id,
        "api": stream_spec.api,
        "provider": stream_spec.provider,
        "baseUrl": url + stream_spec.path,
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000,
        "maxTokens": 8000,
    }


async def floor_lines(url: str, decode: Callable[[str], object] | None) -> int:
    count = 0
    async with (
        httpx2.AsyncClient(timeout=60) as client,
        client.stream("POST", url + "/v1/chat/completions", json={"stream": True}) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                if decode is not None:
                    decode(line[6:])
                count += 1
    return count


def jiter_loads(text: str) -> object:
    return jiter.from_json(text.encode())


async def tether_run(stream_spec: Stream, url: str) -> int:
    count = 0
    events = stream(model_for(stream_spec, url), {"messages": []}, StreamOptions(api_key="k", max_retries=0))
    async for _ in events:
        count += 1
    message = await events.result()
    assert message["stopReason"] != "error", message.get("errorMessage")
    return count


async def sdk_run(url: str) -> int:
    import openai

    count = 0
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        response = await client.chat.completions.create(model="deepseek-reasoner", messages=[], stream=True)
        async for _ in response:
            count += 1
    return count


async def sdk_responses_run(url: str) -> int:
    import openai

    count = 0
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        response = await client.responses.create(model="o3-mini", input="hi", stream=True)
        async for _ in response:
            count += 1
    return count


async def sdk_anthropic_run(url: str) -> int:
    import anthropic

    count = 0
    async with anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0) as client:
        response = await client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        async for _ in response:
            count += 1
    return count


SDKS: dict[str, tuple[str, str, Callable[[str], Awaitable[int]]]] = {
    "openai-completions": ("openai", "openai SDK", sdk_run),
    "openai-responses": ("openai", "openai SDK", sdk_responses_run),
    "anthropic-messages": ("anthropic", "anthropic SDK", sdk_anthropic_run),
}
"""Per API: (module, row name, client) of the official SDK measured next to tether."""


def clients_for(spec: Stream, url: str) -> dict[str, Callable[[], Awaitable[int]]]:
    clients: dict[str, Callable[[], Awaitable[int]]] = {
        "floor: httpx2 lines + jiter": lambda: floor_lines(url, jiter_loads),
        "httpx2 lines + json.loads": lambda: floor_lines(url, json.loads),
        "httpx2 lines only (no JSON)": lambda: floor_lines(url, None),
        "tether": lambda: tether_run(spec, url),
    }
    sdk = SDKS.get(spec.api)
    if sdk is not None and importlib.util.find_spec(sdk[0]) is not None:
        clients[sdk[1]] = lambda: sdk[2](url)
    return clients


def measure(clients: dict[str, Callable[[], Awaitable[int]]]) -> dict[str, tuple[list[float], list[float]]]:
    """Per client: the wall seconds and the CPU seconds of this process of each round, rounds
    interleaved (an SDK only in the first ``SDK_RUNS``).

    The machine is shared, so wall time is noisy; CPU time of the client process (the server
    runs in another process) is what a client costs and is far steadier. Ratios use CPU time.
    """

    async def timed() -> dict[str, tuple[list[float], list[float]]]:
        runs: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in clients}
        for run in clients.values():
            await run()  # warm-up: connection pool, imports
        for round_number in range(RUNS):
            for name, run in clients.items():
                if name.endswith(" SDK") and round_number >= SDK_RUNS:
                    continue  # 20x slower: a few runs suffice
                wall, cpu = time.perf_counter(), time.process_time()
                await run()
                runs[name][0].append(time.perf_counter() - wall)
                runs[name][1].append(time.process_time() - cpu)
        return runs

    return asyncio.run(timed())


def main() -> None:
    print(
        f"P1: {EVENTS} streamed events from loopback, medians of {RUNS} interleaved runs ({SDK_RUNS} for "
        "the SDK); ratios: the median of the per-run ratios (range)"
    )
    rows: list[tuple[str, str, float, float, float]] = []
    for spec in STREAMS():
        body_file = ROOT / ".bench-body.tmp"
        body_file.write_bytes(spec.body)
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(body_file)], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            clients = clients_for(spec, url)
            results = measure(clients)
            floors = results["floor: httpx2 lines + jiter"][1]
            floor = statistics.median(floors)
            rows += [
                (
                    spec.api,
                    name,
                    statistics.median(walls),
                    statistics.median(cpus),
                    statistics.median(cpus) / floor,
                )
                for name, (walls, cpus) in results.items()
            ]
            ours = results["tether"][1]
            paired = record_paired(f"{spec.api} stream CPU", ours, floors, "httpx2 lines + jiter", "<= 1.3")
            print(f"{spec.api}: tether / floor = {_median_range(paired)} CPU (goal <= 1.3x)")
            sdk_rows = [name for name in results if name.endswith(" SDK")]
            for name in sdk_rows:
                sdk = results[name][1]
                paired = record_paired(f"{spec.api} stream CPU", ours[: len(sdk)], sdk, name, "<= 0.67")
                print(f"{spec.api}: tether / the {name} = {_median_range(paired)} CPU (goal <= 0.67x)")
            if spec.api in SDKS and not sdk_rows:
                print(f"{spec.api}: {SDKS[spec.api][1]} not installed: pip install -e '.[bench]'")
        finally:
            server.terminate()
            server.wait()
            body_file.unlink(missing_ok=True)
    print()
    print(f"{'api':<20} {'client':<30} {'wall s':>8} {'CPU s':>8} {'CPU µs/event':>13} {'x floor':>8}")
    for api, name, wall, cpu, ratio in rows:
        print(f"{api:<20} {name:<30} {wall:>8.4f} {cpu:>8.4f} {cpu / EVENTS * 1e6:>13.2f} {ratio:>8.2f}")


def _median_range(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


if __name__ == "__main__":
    main()
