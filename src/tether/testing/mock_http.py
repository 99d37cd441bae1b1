"""A provider answered in process: an HTTP client whose transport plays prepared replies.

For testing code that builds on tether without a network or a server: the model-call path takes
its client from ``StreamOptions.http_client`` (per call, or per agent through
``Agent(options=...)``), so a real provider (its request builder, SSE parser and retries) runs
against replies you wrote or recorded. Each request gets the next ``Reply``; the last repeats.

    provider = MockProvider([Reply(sse_body)])
    async with provider.client() as client:
        message = await complete_simple(model, context, SimpleStreamOptions(http_client=client))
    provider.requests[0].url  # what was sent

tether's own provider tests use ``loopback.LoopbackServer`` instead: real sockets, and bodies
that can stall or break mid-stream.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2

from tether.testing.loopback import Reply


class MockProvider:
    """Replies to every request in process (an ``httpx2.MockTransport``) and keeps the requests.

    Of a ``Reply`` only ``body``, ``status`` and ``headers`` apply: how a body is cut or broken
    on the wire needs a socket (``LoopbackServer``)."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        if not replies:
            raise ValueError("MockProvider needs at least one Reply")
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []
        """Every request received, in order, with its body read."""
        self.transport = httpx2.MockTransport(self._answer)

    def client(self) -> httpx2.AsyncClient:
        """A new client on this transport; the caller closes it."""
        return httpx2.AsyncClient(transport=self.transport)

    async def _answer(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        reply = self.replies[min(len(self.requests), len(self.replies) - 1)]
        self.requests.append(request)
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.body)
