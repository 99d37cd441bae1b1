"""The model server of ``p6_concurrency``: openai-completions over HTTP/1.1 on 127.0.0.1, in a
process of its own so its CPU is not the client's.

Each request gets a tool call (``echo``) unless its last message is a tool result, then a short
text answer; either way a chunk every ``TICK`` seconds. One timer drives every open stream (one
write per stream per tick), so 10,000 streams cost the server a loop pass per tick, not 10,000
timers. Connections are kept alive.

    python bench/_p6_server.py      # prints its port, serves until stdin closes
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from collections.abc import Iterator

TICK = 0.002
TEXT_PIECES = ["The ", "echo ", "tool ", "said ", "what ", "you ", "asked ", "it ", "to ", "say."]


def _sse(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _sse({"id": "r1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def _usage() -> bytes:
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    return _sse({"id": "r1", "object": "chat.completion.chunk", "model": "m", "choices": [], "usage": usage})


def tool_call_pieces(text: str) -> list[bytes]:
    arguments = json.dumps({"text": text})
    third = len(arguments) // 3
    parts = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "echo", "arguments": ""}}
    pieces = [_chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    pieces += [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in parts]
    return [*pieces, _chunk({}, "tool_calls"), _usage() + b"data: [DONE]\n\n"]


def text_pieces() -> list[bytes]:
    pieces = [_chunk({"role": "assistant", "content": ""})]
    pieces += [_chunk({"content": piece}) for piece in TEXT_PIECES]
    return [*pieces, _chunk({}, "stop"), _usage() + b"data: [DONE]\n\n"]


TOOL_ANSWER = tool_call_pieces("hello from the benchmark")
TEXT_ANSWER = text_pieces()


class Server:
    def __init__(self) -> None:
        self.streams: list[tuple[asyncio.StreamWriter, Iterator[bytes], asyncio.Future[None]]] = []
        self.wake = asyncio.Event()

    async def tick(self) -> None:
        while True:
            if not self.streams:
                self.wake.clear()
                await self.wake.wait()
            await asyncio.sleep(TICK)
            active: list[tuple[asyncio.StreamWriter, Iterator[bytes], asyncio.Future[None]]] = []
            for writer, pieces, done in self.streams:
                piece = next(pieces, None)
                if piece is None:
                    done.set_result(None)
                    continue
                writer.write(piece)
                active.append((writer, pieces, done))
            self.streams = active

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = json.loads(await reader.readexactly(length))
                last = body["messages"][-1]["role"]
                pieces = TEXT_ANSWER if last == "tool" else TOOL_ANSWER
                size = sum(len(p) for p in pieces)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    + f"content-length: {size}\r\n\r\n".encode()
                )
                done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self.streams.append((writer, iter(pieces), done))
                self.wake.set()
                await done
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the server is stopping
        finally:
            writer.close()


async def main() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = Server()
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, backlog=4096)
    ticker = asyncio.create_task(server.tick())
    print(listener.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    ticker.cancel()
    listener.close()


if __name__ == "__main__":
    asyncio.run(main())
