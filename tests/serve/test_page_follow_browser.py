"""The page following a session in Debian's chromium (Playwright, ``executable_path``): the
work it does for a long streamed answer, and what it says when its server stops, comes back, or
cannot read its store any more."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import cast

import httpx2
import pytest
from serve_support import WAIT_SECONDS, serving, tether_serve, text, write_script
from test_page_browser import TOKEN
from test_page_views_browser import TIMEOUT_MS, chromium

from tether.serve.auth import Tokens
from tether.store.sqlite_store import SQLiteStore

pytestmark = pytest.mark.subprocess

DELTAS = 3000
DELTA = "0123456789abc\n"

COUNT_ADDED = """() => {
  window.added = 0;
  new MutationObserver((records) => {
    for (const record of records)
      for (const node of record.addedNodes) window.added += node.textContent.length;
  }).observe(document.getElementById("live"), {childList: true, subtree: true, characterData: true});
}"""
"""Counts the characters the page adds to its live words: each delta's own once, or the whole
answer so far again on each (``textContent +=`` replaces the text node)."""


async def test_a_long_streamed_answer_is_added_delta_by_delta_not_copied_again_on_each(
    project: Path, tmp_path: Path
) -> None:
    answer = DELTA * DELTAS  # 42,000 characters
    script = write_script(tmp_path / "s.json", [text("short"), text(*[DELTA] * DELTAS)])
    tokens = Tokens(full=TOKEN)
    async with (
        serving(project, script, tokens=tokens, follower_buffer=10 * DELTAS) as served,
        chromium() as browser,
    ):
        from playwright.async_api import expect

        page = await browser.new_page()
        await page.goto(served.url + "/#token=" + TOKEN)
        await page.fill("#prompt", "first")
        await page.click("#send")
        conversation = page.frame_locator("#conversation")
        await expect(conversation.get_by_text("short")).to_be_visible(timeout=TIMEOUT_MS)
        await expect(page.locator("#status")).to_have_text("idle", timeout=TIMEOUT_MS)
        await page.evaluate(COUNT_ADDED)
        await page.fill("#prompt", "second")
        await page.click("#send")  # the page follows the session: every delta reaches it
        await expect(conversation.get_by_text("0123456789abc").first).to_be_visible(timeout=TIMEOUT_MS)
        await expect(page.locator("#status")).to_have_text("idle", timeout=TIMEOUT_MS)
        await expect(page.locator("#live")).to_have_text("", timeout=TIMEOUT_MS)
        assert await page.evaluate("window.added") == len(answer)  # 63,021,000 when copied


async def test_the_page_says_when_its_server_stopped_and_follows_again_when_it_is_back(
    project: Path, tmp_path: Path
) -> None:
    first = write_script(tmp_path / "first.json", [text("answer one")])
    second = write_script(tmp_path / "second.json", [text("answer two")])  # each life reads its own
    with socket.socket() as probe:  # a port for both lives of the server
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    args = ("--token", TOKEN, "--port", port, "--model")
    async with chromium() as browser:
        from playwright.async_api import expect

        page = await browser.new_page()
        async with tether_serve(project, *args, f"scripted:{first}") as url:
            await page.goto(url + "/#token=" + TOKEN)
            await page.fill("#prompt", "first")
            await page.click("#send")
            conversation = page.frame_locator("#conversation")
            await expect(conversation.get_by_text("answer one")).to_be_visible(timeout=TIMEOUT_MS)
            await expect(page.locator("#notice")).to_have_text("")
        await expect(page.locator("#notice")).to_have_text(
            "the server stopped: this page follows the session again when it is back", timeout=TIMEOUT_MS
        )
        async with (
            tether_serve(project, *args, f"scripted:{second}") as url,
            httpx2.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=WAIT_SECONDS
            ) as client,
        ):
            await expect(page.locator("#notice")).to_have_text("", timeout=TIMEOUT_MS)
            # followed again: a prompt another client sends is shown, with its answer
            session_id = (await client.get("/api/sessions")).json()["sessions"][0]["id"]
            answer = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "again"})
            assert answer.status_code == 202
            await expect(conversation.get_by_text("answer two")).to_be_visible(timeout=TIMEOUT_MS)
            await expect(page.locator("#notice")).to_have_text("")


async def test_the_page_says_when_its_server_cannot_read_its_sessions_file_any_more(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("answer one")])
    async with serving(project, script, tokens=Tokens(full=TOKEN)) as served, chromium() as browser:
        from playwright.async_api import expect

        page = await browser.new_page()
        await page.goto(served.url + "/#token=" + TOKEN)
        await page.fill("#prompt", "first")
        await page.click("#send")
        await expect(page.frame_locator("#conversation").get_by_text("answer one")).to_be_visible(
            timeout=TIMEOUT_MS
        )
        database = Path(cast(SQLiteStore, served.config.store).path)
        database.unlink()
        await expect(page.locator("#notice")).to_have_text(
            f"the server cannot follow this session: {database}: the session database was deleted "
            "or replaced while tether had it open; what tether stored since then is lost with it "
            "(keep the file in place, or move it, while tether runs)",
            timeout=TIMEOUT_MS,
        )
