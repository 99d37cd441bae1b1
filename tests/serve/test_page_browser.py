"""The web page of ``tether serve`` in a real headless browser: Debian's chromium driven by
Playwright (``executable_path``; no browser is ever downloaded), against a real ``tether serve``
process on 127.0.0.1:0 whose sessions run a scripted model."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from serve_support import (
    WAIT_SECONDS,
    recorded_stream,
    stalled_after,
    tether_serve,
    text,
    use_provider,
    write_script,
)

from tether.testing.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.subprocess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "page-test-token"


@pytest.fixture
async def server(project: Path, tmp_path: Path) -> AsyncIterator[str]:
    """``tether serve --port 0 --token ...`` as a child process; its URL (with the trailing /)."""
    slow = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "sleep 30"}}]}
    script = write_script(
        tmp_path / "s.json", [text("Streamed ", "answer ", "<i>here</i>"), slow, text("late")]
    )
    async with tether_serve(project, "--token", TOKEN, "--yes", "--model", f"scripted:{script}") as url:
        yield url + "/"


async def test_the_page_sends_a_prompt_shows_the_answer_escaped_aborts_and_needs_the_token(
    server: str,
) -> None:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run installs it)")
    from playwright.async_api import async_playwright, expect

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(server + "#token=" + TOKEN)
            await expect(page.locator("#sessions")).to_be_attached()
            assert "token" not in page.url  # taken out of the address at once

            await page.fill("#prompt", "explain <script>window.pwned = 1</script> please")
            await page.click("#send")
            conversation = page.frame_locator("#conversation")
            # the scripted model's streamed answer, its markup shown as text
            await expect(conversation.get_by_text("Streamed answer <i>here</i>")).to_be_visible(
                timeout=20_000
            )
            await expect(
                conversation.locator("main p", has_text="explain <script>window.pwned = 1</script> please")
            ).to_be_visible()
            assert await conversation.locator("script, i").count() == 0
            assert await page.evaluate("window.pwned") is None
            await expect(page.locator("#sessions li")).to_have_count(1)
            await expect(page.locator("#sessions li").first).to_contain_text("explain <script>")

            # the prompt reached the model: the store holds the user's text and the reply
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx2.AsyncClient(base_url=server, headers=headers, timeout=WAIT_SECONDS) as client:
                listed = (await client.get("/api/sessions")).json()["sessions"]
                session_id = listed[0]["id"]
                entries = (await client.get(f"/api/sessions/{session_id}")).json()["entries"]
                roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
                assert roles == ["user", "assistant"]

                # a run that would take 30 s, aborted from the page
                await page.fill("#prompt", "now wait")
                await page.click("#send")
                await expect(page.locator("#status")).to_have_text("running", timeout=20_000)
                await page.click("#abort")
                await expect(page.locator("#status")).to_have_text("idle", timeout=20_000)
                state = (await client.get(f"/api/sessions/{session_id}/state")).json()
                assert state["running"] is False

            # without the token: the API refuses, and the page says what is missing
            refused = await page.request.get(server + "api/sessions")
            assert refused.status == 401
            assert await refused.json() == {"error": "a bearer token is required"}
            stranger = await browser.new_page()
            await stranger.goto(server)
            await expect(stranger.locator("#notice")).to_contain_text("a bearer token is required")
            await expect(stranger.locator("#sessions li")).to_have_count(0)
        finally:
            await browser.close()


async def test_a_streamed_answer_appears_on_the_page_while_it_streams(project: Path, tmp_path: Path) -> None:
    """The provider sends the first words of its answer and then nothing: the page that started
    the session, and one opened on it since, show those words (each once) while the session runs
    and nothing of the answer is stored yet; abort ends it; a whole answer is shown whole."""
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run installs it)")
    from playwright.async_api import async_playwright, expect

    body, deltas = recorded_stream()
    cut, partial = stalled_after(body, deltas, 3)  # the first words; the rest never comes
    assert partial.strip() and len(deltas) > 3
    replies = [Reply(body, stall_after=cut), Reply(body)]
    async with (
        LoopbackServer(replies) as provider,
        tether_serve(project, "--token", TOKEN, "--model", use_provider(provider.url)) as url,
        async_playwright() as playwright,
        httpx2.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=WAIT_SECONDS
        ) as client,
    ):
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(url + "/#token=" + TOKEN)
            # a new session: its first words were streamed before the page could follow it
            await page.fill("#prompt", "first")
            await page.click("#send")
            await expect(page.locator("#live")).to_have_text(partial, timeout=20_000)
            await expect(page.locator("#status")).to_have_text("running")
            session_id = (await client.get("/api/sessions")).json()["sessions"][0]["id"]
            entries = (await client.get(f"/api/sessions/{session_id}")).json()["entries"]
            roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
            assert roles == ["user"]  # the streamed words are not stored yet
            sent = [json.loads(r.body)["messages"][-1]["content"] for r in provider.requests]
            assert [str(content) for content in sent] == ["first"]  # the typed prompt reached the model

            # another page opened on the running session shows the words streamed before it came
            other = await browser.new_page()
            await other.goto(url + "/#token=" + TOKEN)
            await other.locator("#sessions li").first.click()
            await expect(other.locator("#live")).to_have_text(partial, timeout=20_000)
            await expect(other.locator("#status")).to_have_text("running")
            await other.close()

            # while it runs, the prompt box steers, and what is queued is shown (as pi's editor does)
            await page.fill("#prompt", "steer this")
            await page.click("#send")
            await expect(page.locator("#prompt")).to_have_value("")
            await expect(page.locator("#notice")).to_have_text("")
            await expect(page.locator("#queued")).to_have_text("Steering: steer this")
            # a page opened now is shown the queue too
            other = await browser.new_page()
            await other.goto(url + "/#token=" + TOKEN)
            await other.locator("#sessions li").first.click()
            await expect(other.locator("#queued")).to_have_text("Steering: steer this", timeout=20_000)
            await other.close()
            # the list searches as one types
            await page.fill("#search", "no such session")
            await expect(page.locator("#sessions li")).to_have_count(0)
            await page.fill("#search", "first")
            await expect(page.locator("#sessions li")).to_have_count(1)

            # Abort as pi's Esc: the steer still queued comes back into the prompt box, not to the model
            await page.fill("#prompt", "typed meanwhile")
            await page.click("#abort")
            await expect(page.locator("#status")).to_have_text("idle", timeout=20_000)
            await expect(page.locator("#live")).to_have_text("")
            await expect(page.locator("#prompt")).to_have_value("steer this\n\ntyped meanwhile")
            await expect(page.locator("#queued")).to_have_text("")
            state = (await client.get(f"/api/sessions/{session_id}/state")).json()
            assert state["queue"] == {"steering": [], "followUp": []}
            entries = (await client.get(f"/api/sessions/{session_id}")).json()["entries"]
            last = [e["message"] for e in entries if e["type"] == "message"][-1]
            assert last["role"] == "assistant" and last["stopReason"] == "aborted"

            # a whole answer, streamed then stored, is shown once stored
            await page.fill("#prompt", "second")
            await page.click("#send")
            conversation = page.frame_locator("#conversation")
            await expect(conversation.get_by_text("".join(deltas))).to_be_visible(timeout=20_000)
            await expect(page.locator("#status")).to_have_text("idle", timeout=20_000)
            await expect(page.locator("#live")).to_have_text("")
            asked = [str(m["content"]) for m in json.loads(provider.requests[-1].body)["messages"]]
            assert "second" in asked
            assert not any("steer this" in a for a in asked)  # taken back by the abort, not sent

            # An answer's entry committed late, while the next answer streams, leaves the next
            # answer's words: the page clears only the answer that entry stores (the events as
            # the server sends them, in the order the race gives).
            async def arrives(kind: str, data: dict[str, object]) -> None:
                await page.evaluate(
                    "([kind, data]) => source.dispatchEvent(new MessageEvent(kind, {data}))",
                    [kind, json.dumps(data)],
                )

            def answer(entry_id: str) -> dict[str, object]:
                return {"id": entry_id, "type": "message", "message": {"role": "assistant", "content": []}}

            await arrives("delta", {"key": 101, "kind": "text_delta", "delta": "first answer"})
            await arrives("ended", {"key": 101, "entry": "entry-a"})
            await arrives("delta", {"key": 102, "kind": "text_delta", "delta": "next answer"})
            await expect(page.locator("#live")).to_have_text("next answer")
            await arrives("entry", answer("entry-a"))  # committed late
            await expect(page.locator("#live")).to_have_text("next answer")
            await arrives("entry", answer("entry-b"))  # before its own `ended`
            await expect(page.locator("#live")).to_have_text("next answer")
            await arrives("ended", {"key": 102, "entry": "entry-b"})
            await expect(page.locator("#live")).to_have_text("")
        finally:
            await browser.close()
