"""Interactive views on long sessions: their cost per frame must follow what is on screen, not
the session's length.

Sessions are real (SQLite in a temporary directory): turns of a prompt, an answer with a tool call
and its 12-line result, plus a fork every 50 turns. Figures are medians of 5 runs (per frame:
the median of 3 rounds over the sizes in turn, the ratios taken within a round).

- Per frame at 100, 1,000 and 10,000 messages (a 100x30 terminal): opening the live area (the
  interactive app attached to the resumed session, first frame rendered by prompt-toolkit),
  opening the Ctrl-O transcript (first screen), scrolling it a page up (the mean of the first
  20 pages, older chunks rendered on the way), and one of 1,000 streamed text deltas (the app's event handling and a full frame,
  for each delta; the frame is rendered at every delta, where the app renders at most 33 a
  second). The ratio recorded is the 10,000-message figure over the 100-message one: 1.00 is
  flat. The status line's totals (tokens, cost) are counted once when a session is loaded, then
  kept up to date message by message (``stats.Tally``): that one pass is shown on its own line.

- Tree: the rows of the whole tree (``session_rows``) and one 30-line screen of them; the
  reference is reading the entries and the active path from the session (``entries()`` +
  ``path()``), the floor any navigator pays.
- Transcript: the last 200 messages rendered with everything expanded; the reference is the
  same messages rendered folded, as the scrollback already did while they arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import create_app_session, set_app
from prompt_toolkit.data_structures import Size
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from _summary import interleaved, record_paired
from _table import print_table
from tether.agent import Agent
from tether.cli.interactive import InteractiveApp
from tether.cli.interactive_views import transcript_pages
from tether.cli.keybindings import DEFAULTS
from tether.cli.render import Painter, result_lines, result_text, thinking_text, tool_header, tool_result
from tether.cli.screens import Lines, TranscriptLines, Viewport
from tether.cli.transcript import branch_messages, render_transcript
from tether.session import AgentSession, CompactionSettings, Session, SessionManager, Settings
from tether.session.stats import Tally
from tether.session.tree_view import row_line, session_rows
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, TextBlock, reply
from tether.wire import Usage, UsageCost

RUNS = 5
TURNS = 1000
SIZES = (100, 1_000, 10_000)
"""Session lengths, in messages, of the per-frame measures."""
DELTAS = 1000
ROUNDS = 3
COLUMNS, ROWS = 100, 30
USAGE: Usage = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def usage(turn: int) -> Usage:
    """What a provider reports for the answer of ``turn``: the context so far read, 50 written."""
    read = 300 * (turn + 1)
    cost: UsageCost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.0001}
    return {**USAGE, "input": read, "output": 50, "totalTokens": read + 50, "cost": cost}


def fill(session: Session, turns: int = TURNS) -> None:
    fork_from: str | None = None
    for turn in range(turns):
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
                "usage": usage(turn),
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


def wall_ms(action: Callable[[], object]) -> Callable[[], float]:
    """A measure: milliseconds of one call of ``action``."""

    def measure() -> float:
        start = time.perf_counter()
        action()
        return (time.perf_counter() - start) * 1000

    return measure


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
                tool_result(
                    painter, result_lines(result_text(message["content"]), expanded=False), is_error=False
                )
            )
    return "\n".join(parts)


def render_frame(app: Application[Any]) -> None:
    """What prompt-toolkit does for one redraw of ``app`` (written to a string, not a terminal)."""
    with set_app(app):
        app.renderer.render(app, app.layout)
    app.output.flush()


def screen_of(source: TranscriptLines, view: Viewport) -> int:
    """Render one screen of the transcript view: its line source and the visible lines."""
    content = Lines(source, view).create_content(COLUMNS, ROWS - 2)
    return sum(len(content.get_line(i)) for i in range(content.line_count))


async def per_frame(messages: int) -> dict[str, float]:
    """Milliseconds per frame of each view on a session of ``messages`` messages."""
    with tempfile.TemporaryDirectory() as tmp, SessionManager.at(Path(tmp) / "bench.db") as sessions:
        session = sessions.create(tmp)
        fill(session, turns=max(1, messages // 3))
        words = TextBlock(tuple(f"word{n} " for n in range(DELTAS)))
        stream = ScriptedModel([reply(words)], model={**SCRIPTED_MODEL, "contextWindow": 100_000_000})
        core = AgentSession(  # the whole session is the context: no compaction
            Agent(model=stream.model, stream_fn=stream),
            session,
            sessions=sessions,
            cwd=Path(tmp),
            settings=Settings(compaction=CompactionSettings(enabled=False)),
        )
        sink = io.StringIO()
        output = Vt100_Output(sink, lambda: Size(rows=ROWS, columns=COLUMNS), term="xterm-256color")
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=output):

            def open_live() -> Application[Any]:
                ui = InteractiveApp(cwd=Path(tmp), bindings=DEFAULTS)
                app = ui.attach(core, history=InMemoryHistory())
                render_frame(app)
                ui.detach()
                return app

            live = median_ms(open_live)
            totals = median_ms(lambda: Tally().update(core.messages))  # once, when a session is loaded

            make_pages = transcript_pages(core, None, color=True)

            def open_transcript() -> tuple[TranscriptLines, Viewport]:
                view = Viewport(count=0, top=1 << 30)
                source = TranscriptLines(make_pages, view, show_thinking=False)
                screen_of(source, view)
                return source, view

            transcript = median_ms(open_transcript)
            source, view = open_transcript()
            pages: list[float] = []
            for _ in range(20):
                start = time.perf_counter()
                view.move(-view.page)
                screen_of(source, view)
                pages.append(time.perf_counter() - start)
            page = statistics.mean(pages) * 1000  # the mean: the pages that render a chunk count

            spent: list[float] = []
            began = [0.0]

            def before(event: Any) -> None:
                began[0] = time.perf_counter()

            core.subscribe(before)  # listeners are called in order: this one, the app's, the next
            ui = InteractiveApp(cwd=Path(tmp), bindings=DEFAULTS)
            app = ui.attach(core, history=InMemoryHistory())

            def after(event: Any) -> None:
                if event["type"] == "message_update":
                    render_frame(app)
                    spent.append(time.perf_counter() - began[0])

            core.subscribe(after)
            added = await core.prompt("stream please")
            if not spent:
                raise SystemExit(f"no text streamed: {added[-1].get('errorMessage')}")
            delta = statistics.median(spent) * 1000
            await core.close()
        session.close()
        return {
            "live": live,
            "transcript": transcript,
            "page": page,
            "delta": delta,
            "totals": totals,
            "deltas": len(spent),
        }


def main() -> None:
    rounds: dict[int, dict[str, list[float]]] = {size: {} for size in SIZES}
    with contextlib.redirect_stdout(io.StringIO()):  # what the app prints above its live area
        for _ in range(ROUNDS):  # sizes interleaved: ratios are taken within a round
            for size in SIZES:
                for key, value in asyncio.run(per_frame(size)).items():
                    rounds[size].setdefault(key, []).append(value)
    frames = {
        size: {key: statistics.median(values) for key, values in figures.items()}
        for size, figures in rounds.items()
    }
    small, large = frames[SIZES[0]], frames[SIZES[-1]]
    labels = {
        "live": "open the live area",
        "transcript": "open the transcript",
        "page": "scroll the transcript a page",
        "delta": "a streamed text delta",
    }
    for key, label in labels.items():
        record_paired(
            f"{label}, {SIZES[-1]:,} vs {SIZES[0]} messages",
            rounds[SIZES[-1]][key],
            rounds[SIZES[0]][key],
            f"the same at {SIZES[0]} messages",
            "flat: 1.00",
        )
    labels["totals"] = "(once per session loaded: its totals)"
    print_table(
        f"ms per frame ({COLUMNS}x{ROWS}), medians of {ROUNDS} interleaved rounds; each delta is a frame "
        f"({int(large['deltas'])} deltas streamed)",
        ["view", *(f"{size:,} msgs" for size in SIZES), f"{SIZES[-1]:,}/{SIZES[0]}"],
        [
            [label, *(f"{frames[size][key]:.2f}" for size in SIZES), f"{large[key] / small[key]:.2f}"]
            for key, label in labels.items()
        ],
    )

    with tempfile.TemporaryDirectory() as tmp, SessionManager.at(Path(tmp) / "bench.db") as sessions:
        session = sessions.create(tmp)
        fill(session)
        rows = session_rows(session)
        floors, trees = interleaved(
            [wall_ms(lambda: (session.entries(), session.path())), wall_ms(lambda: session_rows(session))],
            RUNS,
        )
        floor, tree = statistics.median(floors), statistics.median(trees)
        screen = median_ms(lambda: [row_line(r, 100) for r in rows[:30]])
        painter = Painter(100, color=True)
        messages = branch_messages(session)[-200:]
        expanded = median_ms(lambda: render_transcript(painter, messages, show_thinking=False))
        scrollback = median_ms(lambda: folded(painter, messages))
        record_paired("tree rows (whole tree)", trees, floors, "entries() + path()")
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
