"""What the interactive mode printed, kept to be drawn again at a new width (``scrollback``): the
real drawing in a terminal is the tmux test's (``test_cli_tui_pi``); here, what is kept and what
a redraw holds."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.agent import Agent
from tether.cli import render
from tether.cli.interactive import InteractiveApp
from tether.cli.interactive_views import history
from tether.cli.keybindings import DEFAULTS
from tether.cli.render import Painter
from tether.cli.scrollback import CLEAR, EARLIER, Scrollback
from tether.cli.transcript import branch_messages, render_transcript
from tether.session import AgentSession, SessionManager
from tether.testing.scripted import ScriptedModel

WIDE, NARROW = Painter(100, False), Painter(40, False)
ANSWER = " ".join(f"word{n}" for n in range(30))


def answer(painter: Painter) -> str:
    return painter.markdown(ANSWER)


def test_a_width_change_clears_and_draws_every_item_again_at_the_new_width() -> None:
    kept = Scrollback()
    printed = [kept.add(render.note("tether · header", "muted"), WIDE), kept.add(answer, WIDE)]
    assert printed[1] == WIDE.markdown(ANSWER)
    assert kept.redraw(WIDE) is None  # same width: nothing to do
    redrawn = kept.redraw(NARROW)
    assert redrawn is not None and redrawn.startswith(CLEAR)
    assert redrawn == CLEAR + "tether · header\n" + NARROW.markdown(ANSWER)
    assert all(len(line) <= 40 for line in redrawn.splitlines())
    assert redrawn.count("\n") > CLEAR.count("\n") + "\n".join(printed).count("\n")  # rewrapped: more rows
    assert kept.redraw(NARROW) is None


def test_an_empty_item_is_neither_printed_nor_kept() -> None:
    kept = Scrollback()
    assert kept.add(render.note("", ""), WIDE) == ""
    assert kept.width is None  # nothing on screen yet
    kept.add(render.note("shown", ""), WIDE)
    assert kept.redraw(NARROW) == CLEAR + "shown"


def test_a_long_session_keeps_and_redraws_only_its_newest_rows() -> None:
    """Only the newest items filling the row limit are kept: a redraw's cost does not grow with
    the session, and a line at the top says where the rest is."""
    kept = Scrollback(rows=100)
    for n in range(1_000):
        kept.add(render.note(f"line {n}\nsecond row", ""), WIDE)
    redrawn = kept.redraw(Painter(90, False))
    assert redrawn is not None
    lines = redrawn.removeprefix(CLEAR).splitlines()
    assert EARLIER[:30] in lines[0] and lines[-2:] == ["line 999", "second row"]
    assert 100 <= len(lines) - 1 <= 102  # whole items, the newest first, up to the limit
    assert lines[1] == f"line {1_000 - (len(lines) - 1) // 2}"


def test_an_item_failing_at_the_new_width_is_shown_as_a_display_error() -> None:
    def fussy(painter: Painter) -> str:
        if painter.width < 80:
            raise ValueError("narrow")
        return "wide enough"

    kept = Scrollback()
    kept.add(fussy, WIDE)
    kept.add(render.note("after it", ""), WIDE)
    assert kept.redraw(NARROW) == CLEAR + "(display error: ValueError: narrow)\nafter it"


def session_events(results: int) -> Iterator[dict[str, Any]]:
    """What the interactive mode is shown of a session with large results: per turn an answer
    whose tool call writes 50 KB, the tool's 50 KB result with an image, a shell run's output
    and an ``@`` attaching a file with its picture, after a pasted 100 KB prompt (each made
    fresh, as a run makes them)."""
    for n in range(results):
        big = "".join(f"line {n}.{k} " + "x" * 90 + "\n" for k in range(500))  # 50 KB
        prompt = {"role": "user", "content": [{"type": "text", "text": f"question {n}\n" + big + big}]}
        yield {"type": "message_start", "message": prompt}
        image = {"type": "image", "data": "A" * 40_000 + str(n), "mimeType": "image/png"}
        call = {
            "type": "toolCall",
            "id": f"c{n}",
            "name": "write",
            "arguments": {"path": "f", "content": big[1:]},
        }
        answer = {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}, call]}
        yield {"type": "message_end", "message": answer}
        yield {
            "type": "tool_execution_start",
            "toolCallId": f"c{n}",
            "toolName": "read",
            "args": {"path": "f"},
        }
        result = {"content": [{"type": "text", "text": big}, image], "details": {"bytes": big[2:]}}
        yield {"type": "tool_execution_end", "toolCallId": f"c{n}", "toolName": "read", "result": result}
        shell = {"role": "bashExecution", "command": "cat f", "output": big[3:], "exitCode": 0}
        yield {"type": "message_end", "message": shell}
        mention = {"role": "fileMention", "files": [{"path": "f", "content": big[4:], "image": {**image}}]}
        yield {"type": "message_end", "message": mention}


def test_the_scrollback_keeps_what_it_shows_of_a_result_not_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redraw at a new width needs what was shown, folded: a tool's line and a result's first
    lines, an answer's text, the name of a file attached, a prompt's beginning. The whole result
    (50 KB and an image), the tool call's arguments, an attached file's content, a whole pasted
    prompt were kept for up to 2,000 rows, long
    after the conversation dropped them (a compaction, /new)."""
    monkeypatch.setenv("NO_COLOR", "1")
    ui = InteractiveApp(cwd=tmp_path, bindings=DEFAULTS)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for event in session_events(40):
            ui._on_event(event)  # pyright: ignore[reportPrivateUsage]
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    printed = capsys.readouterr().out
    assert "✓ read path=f\n  │ line 39.0 " in printed and "… 496 more lines" in printed
    assert "@ attached f" in printed and "answer 39" in printed and "! cat f" in printed
    assert "› question 39" in printed and "more lines not shown]" in printed
    assert kept < 2_000_000, kept  # 0.7 MB (rich's caches among it); 12.5 MB when results were kept


def test_a_result_kept_folded_is_drawn_again_as_its_whole_would_be() -> None:
    """What is kept of a folded result or diff draws at any width what the whole one draws: its
    first lines each cut to the width's rows, the count of the rest; wider than ``KEPT_WIDTH``, cut
    at its rows, ``…`` and all (a kept line ended bare, a combining mark torn from its letter)."""
    for long in ("word " * 20_000, "e\u0301" * 8_000):
        result = {"content": [{"type": "text", "text": f"{long}\nsecond\n" + "more\n" * 10}]}
        diff = "--- a\n+++ b\n@@ -1 +1 @@\n-" + long + "\n+" + long + "x\n" + " same\n" * 30
        edit = {"content": [{"type": "text", "text": "Edited f."}], "details": {"diff": diff}}
        for shown in (result, edit):
            kept = render.tool_end("read", {"path": "f"}, {"result": shown})
            for width in (30, 100, render.KEPT_WIDTH, 1_000, 2_100):
                painter = Painter(width, False)
                drawn = kept(painter)
                assert drawn == render.finished_tool(painter, "read", {"path": "f"}, shown, expanded=False)
                assert any(line.endswith("…") for line in drawn.splitlines())  # the long line, cut


def stored_session(manager: SessionManager, cwd: Path, turns: int) -> str:
    """A stored conversation of large messages: per turn a 50 KB prompt, an answer thinking 50 KB
    whose call writes 50 KB, the 50 KB result, and a shell run printing 50 KB."""
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    with manager.create(str(cwd)) as session:
        for n in range(turns):
            big = "".join(f"line {n}.{k} " + "x" * 90 + "\n" for k in range(500))
            call = {
                "type": "toolCall",
                "id": f"c{n}",
                "name": "write",
                "arguments": {"path": "f", "content": big},
            }
            blocks = [{"type": "thinking", "thinking": big}, {"type": "text", "text": f"answer {n}"}, call]
            messages: list[Any] = [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"question {n}\n{big}"}],
                    "timestamp": 0,
                },
                {
                    "role": "assistant",
                    "content": blocks,
                    **{"api": "x", "provider": "x", "model": "x", "stopReason": "toolUse", "timestamp": 0},
                    "usage": {**usage, "cost": {**usage, "total": 0}},
                },
                {
                    "role": "toolResult",
                    **{"toolCallId": f"c{n}", "toolName": "write", "isError": False, "timestamp": 0},
                    "content": [{"type": "text", "text": big}],
                },
                {"role": "bashExecution", "command": "cat f", "output": big, "exitCode": 0, "timestamp": 0},
            ]
            for message in messages:
                session.append_message(message)
        return session.id


async def test_a_resumed_sessions_history_keeps_what_it_shows_not_the_messages(tmp_path: Path) -> None:
    """The history drawn on resume is drawn again at a new width from what it shows (a prompt's
    beginning, thinking's first line, a tool's header and first lines): it kept the messages read
    whole, for as long as the scrollback kept it, after /new or /resume dropped the session."""
    with SessionManager.at(tmp_path / "sessions.db") as manager:
        session_id = stored_session(manager, tmp_path, 12)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            scripted = ScriptedModel([])
            core = AgentSession(Agent(model=scripted.model, stream_fn=scripted), manager.open(session_id))
            shown = history(core, WIDE, 10_000)  # rows enough for the whole conversation
            await core.close()
            del core, scripted
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        with manager.open(session_id) as reopened:
            messages = branch_messages(reopened)
    assert shown is not None and shown(WIDE).startswith("› question 0")
    assert shown(NARROW) == render_transcript(NARROW, messages, show_thinking=False, folded=True)
    assert kept < 1_500_000, kept  # 0.7 MB (rich's caches among it); 3.7 MB when the messages were kept
