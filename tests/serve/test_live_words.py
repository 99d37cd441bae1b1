"""Snapshot + live: a follower that joins while a message streams sees each of its words once.

The provider is a real HTTP server sending a recorded stream's first words and then nothing, so
the message stays under way, its words streamed and none stored, until the test aborts it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from serve_support import (
    WAIT_SECONDS,
    Event,
    recorded_stream,
    serving,
    sse_events,
    stalled_after,
    text,
    use_provider,
    write_script,
)

from tether.testing.loopback import LoopbackServer, Reply


class Shown:
    """What a page shows of the message under way, from the events of its follow stream: a
    ``partial`` replaces it, a ``delta`` adds to it, the stored assistant entry ends it."""

    def __init__(self) -> None:
        self.live = ""
        self.events: list[Event] = []
        self.last_entry: str | None = None
        self.changed = asyncio.Event()

    def see(self, event: Event) -> bool:
        """Take one event; whether it is the assistant's stored message (the end)."""
        self.events.append(event)
        entry_id, kind, data = event
        payload = json.loads(data)
        if kind == "partial":
            self.live = payload["text"]
        elif kind == "delta" and payload["kind"] == "text_delta":
            self.live += payload["delta"]
        elif kind == "entry":
            self.last_entry = entry_id
            if payload.get("message", {}).get("role") == "assistant":
                return True
        self.changed.set()
        return False

    async def showing(self, text: str) -> None:
        async with asyncio.timeout(WAIT_SECONDS):
            while self.live != text:
                self.changed.clear()
                await self.changed.wait()


async def test_followers_joining_a_new_session_mid_message_see_each_word_once(
    project: Path, tmp_path: Path
) -> None:
    body, deltas = recorded_stream()
    cut, words = stalled_after(body, deltas, 3)
    assert words.strip() and len(deltas) > 3
    script = write_script(tmp_path / "unused.json", [])
    async with (
        LoopbackServer([Reply(body, stall_after=cut)]) as provider,
        serving(project, script, model=use_provider(provider.url)) as served,
        served.client() as client,
    ):
        # the prompt starts a session no follower could have joined before: its words stream
        session_id = (await client.post("/api/sessions", json={"message": "hi"})).json()["sessionId"]
        path = f"/api/sessions/{session_id}/events"
        first = Shown()
        following = asyncio.create_task(sse_events(client, path, until=first.see))
        await first.showing(words)  # joined after the run began: the words so far, then the rest

        # a page opening the session now, every word already streamed, resuming from what it read
        second = Shown()
        resume = {"Last-Event-ID": first.last_entry or ""}
        opening = asyncio.create_task(sse_events(client, path, headers=resume, until=second.see))
        await second.showing(words)

        assert (await client.post(f"/api/sessions/{session_id}/abort")).json() == {"aborted": True}
        async with asyncio.timeout(WAIT_SECONDS):
            await asyncio.gather(following, opening)
        stored = json.loads(second.events[-1][2])["message"]
        assert stored["stopReason"] == "aborted"
        assert "".join(b["text"] for b in stored["content"] if b["type"] == "text") == words
        for shown in (first, second):
            before_end = Shown()
            for event in shown.events[:-1]:
                before_end.see(event)
            assert before_end.live == words  # each word once: none lost, none twice
        # the one who came last got them in one piece, after its status
        kinds = [kind for _, kind, _ in second.events]
        assert kinds[:2] == ["status", "partial"] and "delta" not in kinds


async def test_each_answers_live_words_are_keyed_and_ended_by_the_entry_that_stores_them(
    project: Path, tmp_path: Path
) -> None:
    """Two answers in one run (a tool call between): every delta names its answer (``key``), and
    each answer's ``ended`` names the stored entry holding exactly those words, so a page clears
    an answer's live words on that entry only (an earlier answer's entry may be committed while
    the next answer streams)."""
    first: dict[str, Any] = {"content": [{"type": "text", "chunks": ["Let me ", "look."]}]}
    first["content"].append({"type": "toolCall", "name": "bash", "arguments": {"command": "true"}})
    script = write_script(tmp_path / "s.json", [text("hello"), first, text("All ", "done.")])
    async with serving(project, script, yes=True) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "hi"})).json()["sessionId"]
        path = f"/api/sessions/{session_id}/events?history=false"
        answers: list[str] = []

        def second_answer_stored(event: Event) -> bool:
            payload = json.loads(event[2])
            if event[1] == "entry" and payload.get("message", {}).get("role") == "assistant":
                answers.append(payload["id"])
            return len(answers) == 2

        async with asyncio.timeout(WAIT_SECONDS):
            while (await client.get(f"/api/sessions/{session_id}/state")).json()["running"]:
                await asyncio.sleep(0.05)
            opened = asyncio.Event()
            following = asyncio.create_task(
                sse_events(client, path, until=second_answer_stored, opened=opened)
            )
            await opened.wait()
            assert (
                await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "go"})
            ).status_code == 202
            events = await following
    words: dict[int, str] = {}
    ended: dict[str, int] = {}
    stored: dict[str, str] = {}
    for _, kind, data in events:
        payload = json.loads(data)
        if kind == "delta" and payload["kind"] == "text_delta":
            words[payload["key"]] = words.get(payload["key"], "") + payload["delta"]
        elif kind == "ended":
            ended[payload["entry"]] = payload["key"]
        elif kind == "entry" and payload.get("message", {}).get("role") == "assistant":
            content = payload["message"]["content"]
            stored[payload["id"]] = "".join(b["text"] for b in content if b["type"] == "text")
    assert sorted(words.values()) == ["All done.", "Let me look."]  # two keys, one per answer
    assert set(ended) == set(stored) == set(answers)
    for entry_id, key in ended.items():
        assert words[key] == stored[entry_id]
