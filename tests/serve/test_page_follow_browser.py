"""The page following a session in Debian's chromium (Playwright, ``executable_path``): the
work it does for a long streamed answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_support import serving, text, write_script
from test_page_browser import TOKEN
from test_page_views_browser import TIMEOUT_MS, chromium

from tether.serve.auth import Tokens

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
