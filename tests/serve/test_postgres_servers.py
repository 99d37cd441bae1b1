"""Two ``tether serve`` processes on one real PostgreSQL (``tether.testing.postgres``), as behind
a load balancer: a prompt sent to one is followed live on the other (LISTEN/NOTIFY between them),
and the second refuses to write the session the first one writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from serve_support import WAIT_SECONDS, Event, sse_events, tether_serve, text, write_script

from store_fixtures import postgres_url

__all__ = ["postgres_url"]

pytestmark = pytest.mark.subprocess
ARGS = ("--yes", "--model")


def _assistant_saying(words: str) -> Callable[[Event], bool]:
    def found(event: Event) -> bool:
        entry: dict[str, Any] = json.loads(event[2]) if event[1] == "entry" else {}
        message: dict[str, Any] = entry.get("message") or {}
        return message.get("role") == "assistant" and words in json.dumps(message)

    return found


async def test_a_prompt_sent_to_one_server_is_followed_live_on_another(
    project: Path, tmp_path: Path, postgres_url: str
) -> None:
    script = write_script(tmp_path / "s.json", [text("first"), text("second ", "answer")])
    async with AsyncExitStack() as stack:
        one, two = await asyncio.gather(
            stack.enter_async_context(
                tether_serve(project, *ARGS, f"scripted:{script}", "--database", postgres_url)
            ),
            stack.enter_async_context(
                tether_serve(project, *ARGS, f"scripted:{script}", "--database", postgres_url)
            ),
        )
        writer = await stack.enter_async_context(httpx2.AsyncClient(base_url=one, timeout=WAIT_SECONDS))
        reader = await stack.enter_async_context(httpx2.AsyncClient(base_url=two, timeout=WAIT_SECONDS))
        session_id = (await writer.post("/api/sessions", json={"message": "hello"})).json()["sessionId"]
        history = await sse_events(
            reader, f"/api/sessions/{session_id}/events", until=_assistant_saying("first")
        )
        roles = [json.loads(d).get("message", {}).get("role") for _, kind, d in history if kind == "entry"]
        assert [role for role in roles if role] == ["user", "assistant"]

        opened = asyncio.Event()
        follower = asyncio.create_task(
            sse_events(
                reader,
                f"/api/sessions/{session_id}/events?history=false",
                until=_assistant_saying("second answer"),
                opened=opened,
            )
        )
        async with asyncio.timeout(WAIT_SECONDS):
            await opened.wait()
        answer = await writer.post(f"/api/sessions/{session_id}/prompt", json={"message": "again"})
        assert answer.status_code == 202, answer.text
        live = await follower
        entries = [json.loads(d) for _, kind, d in live if kind == "entry"]
        assert [e["message"]["role"] for e in entries if e["type"] == "message"] == ["user", "assistant"]
        assert entries[0]["id"] not in {i for i, _, _ in history}

        stored = (await reader.get(f"/api/sessions/{session_id}")).json()["entries"]
        assert [e["id"] for e in stored][-len(entries) :] == [e["id"] for e in entries]
        # one writer: the session is the first server's while it has it open
        refused = await reader.post(f"/api/sessions/{session_id}/prompt", json={"message": "mine?"})
        assert refused.status_code == 409
        assert "being written by another process" in refused.json()["error"]


async def test_a_leaf_moved_on_one_server_reaches_followers_on_both(
    project: Path, tmp_path: Path, postgres_url: str
) -> None:
    """``POST /branch`` on one server: its store's ``NOTIFY`` wakes the other server's feed too,
    so its followers get the ``leaf`` event (not only the followers of the server that moved it)."""
    script = write_script(tmp_path / "s.json", [text("first"), text("second")])
    async with AsyncExitStack() as stack:
        one, two = await asyncio.gather(
            *(
                stack.enter_async_context(
                    tether_serve(project, *ARGS, f"scripted:{script}", "--database", postgres_url)
                )
                for _ in range(2)
            )
        )
        writer = await stack.enter_async_context(httpx2.AsyncClient(base_url=one, timeout=WAIT_SECONDS))
        reader = await stack.enter_async_context(httpx2.AsyncClient(base_url=two, timeout=WAIT_SECONDS))
        session_id = (await writer.post("/api/sessions", json={"message": "hello"})).json()["sessionId"]
        await sse_events(writer, f"/api/sessions/{session_id}/events", until=_assistant_saying("first"))
        assert (
            await writer.post(f"/api/sessions/{session_id}/prompt", json={"message": "again"})
        ).status_code == 202
        await sse_events(writer, f"/api/sessions/{session_id}/events", until=_assistant_saying("second"))
        async with asyncio.timeout(WAIT_SECONDS):
            while (await writer.get(f"/api/sessions/{session_id}/state")).json()["running"]:
                await asyncio.sleep(0.05)
        entries = (await reader.get(f"/api/sessions/{session_id}")).json()["entries"]
        first_answer = next(e["id"] for e in entries if e["type"] == "message" and "first" in json.dumps(e))

        def leaf_event(event: Event) -> bool:
            return event[1] == "leaf"

        followers: list[asyncio.Task[list[Event]]] = []
        for client in (reader, writer):
            opened = asyncio.Event()
            path = f"/api/sessions/{session_id}/events?history=false"
            followers.append(asyncio.create_task(sse_events(client, path, until=leaf_event, opened=opened)))
            async with asyncio.timeout(WAIT_SECONDS):
                await opened.wait()
        moved = await writer.post(f"/api/sessions/{session_id}/branch", json={"entryId": first_answer})
        assert moved.json() == {"leafId": first_answer}
        on_two, on_one = await asyncio.gather(*followers)
        for events in (on_two, on_one):
            # the writer's own followers may get its run's closing status first
            assert [(kind, json.loads(data)) for _, kind, data in events if kind != "status"] == [
                ("leaf", {"type": "leaf", "leafId": first_answer})
            ]
        assert (await reader.get(f"/api/sessions/{session_id}/tree")).json()["leafId"] == first_answer
