"""Interactive views: opening the ``/tree`` navigator and the Ctrl-O transcript on a long session.

The session is real (SQLite in a temporary directory): 1,000 turns of a prompt, an answer with
a tool call and its 12-line result, plus a fork every 50 turns. Figures are medians of 5 runs.

- Tree: the rows of the whole tree (``session_rows``) and one 30-line screen of them; the
  reference is reading the entries and the active path from the session (``entries()`` +
  ``path()``), the floor any navigator pays.
- Transcript: the last 200 messages rendered with everything expanded; the reference is the
  same messages rendered folded, as the scrollback already did while they arrived.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _summary import record
from _table import print_table
from tether.cli.render import Painter, result_text, thinking_text, tool_header, tool_result
from tether.cli.transcript import branch_messages, render_transcript
from tether.session import Session, SessionManager
from tether.session.tree_view import row_line, session_rows

RUNS = 5
TURNS = 1000
USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def fill(session: Session) -> None:
    fork_from: str | None = None
    for turn in range(TURNS):
        prompt = session.append_message(
            {"role": "user", "content": f"step {turn}: look at file {turn}.py", "timestamp": 0}
        )
        session.append_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"I should read {turn}.py first. " * 5},
                    {"type": "text", "text": f"Reading **{turn}.py**, then:\n\n- check\n- fix"},
                    {
                        "type": "toolCall",
                        "id": f"c{turn}",
                        "name": "read",
                        "arguments": {"path": f"{turn}.py"},
                    },
                ],
                "api": "x",
                "provider": "x",
                "model": "x",
                "usage": USAGE,
                "stopReason": "toolUse",
                "timestamp": 0,
            }
        )
        lines = "\n".join(f"{n}: value_{n} = compute({n})" for n in range(12))
        session.append_message(
            {
                "role": "toolResult",
                "toolCallId": f"c{turn}",
                "toolName": "read",
                "content": [{"type": "text", "text": lines}],
                "isError": False,
                "timestamp": 0,
            }
        )
        if turn % 50 == 0:
            fork_from = prompt
        if turn % 50 == 25 and fork_from is not None:
            leaf = session.leaf_id
            session.branch(fork_from)
            session.append_message({"role": "user", "content": f"an abandoned try at {turn}", "timestamp": 0})
            session.branch(leaf)


def median_ms(action: Callable[[], object]) -> float:
    times: list[float] = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def folded(painter: Painter, messages: list[dict[str, Any]]) -> str:
    """What the scrollback printed for these messages (thinking and results folded)."""
    parts: list[str] = []
    for message in messages:
        if message["role"] == "user":
            parts.append(painter.styled(str(message["content"]), "bold"))
        elif message["role"] == "assistant":
            for block in message["content"]:
                if block["type"] == "thinking":
                    parts.append(thinking_text(painter, block["thinking"], expanded=False))
                elif block["type"] == "text":
                    parts.append(painter.markdown(block["text"]))
        elif message["role"] == "toolResult":
            parts.append(tool_header(painter, message["toolName"], {}, "ok"))
            parts.append(
                tool_result(painter, result_text(message["content"]), is_error=False, expanded=False)
            )
    return "\n".join(parts)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, SessionManager.at(Path(tmp) / "bench.db") as sessions:
        session = sessions.create(tmp)
        fill(session)
        rows = session_rows(session)
        floor = median_ms(lambda: (session.entries(), session.path()))
        tree = median_ms(lambda: session_rows(session))
        screen = median_ms(lambda: [row_line(r, 100) for r in rows[:30]])
        painter = Painter(100, color=True)
        messages = branch_messages(session)[-200:]
        expanded = median_ms(lambda: render_transcript(painter, messages, show_thinking=False))
        scrollback = median_ms(lambda: folded(painter, messages))
        record("tree rows (whole tree)", tree / floor, "entries() + path()")
        print_table(
            f"{len(session.entries())} entries, {len(rows)} tree rows; transcript of {len(messages)} messages",
            ["step", "ms", "reference ms", "ratio"],
            [
                ["tree rows (whole tree)", f"{tree:.1f}", f"{floor:.1f}", f"{tree / floor:.2f}"],
                ["one screen of rows", f"{screen:.2f}", "", ""],
                [
                    "transcript, expanded",
                    f"{expanded:.1f}",
                    f"{scrollback:.1f}",
                    f"{expanded / scrollback:.2f}",
                ],
            ],
        )
        session.close()


if __name__ == "__main__":
    main()
