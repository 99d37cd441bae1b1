"""The tree navigator's pure parts: entries → rows, cutting rows to the width, what a choice
means, scrolling. Entries are written as the store keeps them (id, parentId, type, payload)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, strategies as st
from rich.cells import cell_len

from tether.cli.screens import Viewport
from tether.session import SessionManager
from tether.session.tree_view import (
    HERE,
    BranchChoice,
    branch_choice,
    fit,
    leaves_something,
    row_line,
    tree_rows,
)


def message(entry_id: str, parent: str | None, role: str, text: str = "", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, **extra}
    if role == "user":
        body["content"] = text
    elif role == "assistant":
        body["content"] = [{"type": "text", "text": text}] if text else []
        body["content"] += [
            {"type": "toolCall", "id": f"c-{n}", "name": n, "arguments": {}} for n in extra.pop("tools", [])
        ]
        body.pop("tools", None)
    elif role == "toolResult":
        body.update(toolCallId="c", toolName="bash", content=[{"type": "text", "text": text}], isError=False)
    return {"id": entry_id, "parentId": parent, "type": "message", "message": body}


def setting(entry_id: str, parent: str | None) -> dict[str, Any]:
    return {"id": entry_id, "parentId": parent, "type": "thinking_level_change", "thinkingLevel": "high"}


def forked() -> list[dict[str, Any]]:
    """hello → answer → (tool call → result → [first try | second try → reply])."""
    return [
        setting("s", None),
        message("u1", "s", "user", "hello there"),
        message("a1", "u1", "assistant", "Hi!"),
        message("u2", "a1", "user", "run it"),
        message("a2", "u2", "assistant", tools=["bash", "read"]),
        message("r2", "a2", "toolResult", "ok"),
        message("u3", "r2", "user", "first try"),
        message("u4", "r2", "user", "second\ntry"),
        message("a4", "u4", "assistant", "done"),
        {"id": "l1", "parentId": "a4", "type": "label", "targetId": "u4", "label": "good one"},
    ]


def test_a_straight_conversation_stays_in_one_column() -> None:
    entries = forked()[:5]
    rows = tree_rows(entries, [e["id"] for e in entries])
    assert [r.text for r in rows] == [
        "user: hello there",
        "assistant: Hi!",
        "user: run it",
        "assistant: [tools: bash, read]",
    ]
    assert all(r.prefix == "" and r.on_path for r in rows)
    assert [r.current for r in rows] == [False, False, False, True]


def test_a_fork_below_a_hidden_tool_result_indents_with_connectors() -> None:
    entries = forked()
    path = ["s", "u1", "a1", "u2", "a2", "r2", "u4", "a4", "l1"]
    rows = tree_rows(entries, path, {"u4": "good one"})
    assert [(r.id, r.prefix) for r in rows] == [
        ("u1", ""),
        ("a1", ""),
        ("u2", ""),
        ("a2", ""),
        ("u3", "├─ "),
        ("u4", "└─ "),
        ("a4", "   "),
    ]
    by_id = {r.id: r for r in rows}
    assert not by_id["u3"].on_path and by_id["u4"].on_path
    assert by_id["a4"].current  # the leaf is a label entry: the last shown entry stands for it
    assert by_id["u4"].label == "good one" and by_id["u4"].prompt == "second\ntry"
    assert by_id["u4"].text == "user: second try"  # one line
    assert by_id["a4"].kind == "assistant" and by_id["u3"].kind == "user"


def test_nested_forks_keep_the_gutter_of_open_siblings() -> None:
    entries = [
        message("u1", None, "user", "root"),
        message("a", "u1", "assistant", "A"),
        message("b", "u1", "assistant", "B"),
        message("a1", "a", "user", "A1"),
        message("a2", "a", "user", "A2"),
    ]
    rows = tree_rows(entries, ["u1", "b"])
    assert [(r.id, r.prefix) for r in rows] == [
        ("u1", ""),
        ("a", "├─ "),
        ("a1", "│  ├─ "),
        ("a2", "│  └─ "),
        ("b", "└─ "),
    ]


def test_summaries_compactions_and_shell_runs_are_rows() -> None:
    entries = [
        message("u1", None, "user", "hi"),
        {
            "id": "c",
            "parentId": "u1",
            "type": "compaction",
            "summary": "We  said\nhi.",
            "firstKeptEntryId": "u1",
        },
        {"id": "b", "parentId": "c", "type": "branch_summary", "fromId": "x", "summary": "Tried B."},
        message("x", "b", "bashExecution", command="ls -la", output="", exitCode=0),
        message("y", "x", "pythonExecution", code="print(1)", output="1", exitCode=0),
    ]
    rows = tree_rows(entries, [e["id"] for e in entries])
    assert [r.text for r in rows] == [
        "user: hi",
        "[compaction] We said hi.",
        "[branch summary] Tried B.",
        "!ls -la",
        "$print(1)",
    ]
    assert [r.kind for r in rows][1:3] == ["compaction", "branch_summary"]


def test_a_very_deep_session_needs_no_recursion() -> None:
    entries = [message(f"e{i}", f"e{i - 1}" if i else None, "user", f"n{i}") for i in range(5000)]
    rows = tree_rows(entries, [e["id"] for e in entries])
    assert len(rows) == 5000 and rows[-1].current


def test_choosing_a_prompt_goes_back_before_it_with_its_text() -> None:
    rows = {r.id: r for r in tree_rows(forked(), ["s", "u1", "a1"])}
    assert branch_choice(rows["u4"]) == BranchChoice("r2", "second\ntry")
    assert branch_choice(rows["u1"]) == BranchChoice("s", "hello there")
    assert branch_choice(rows["a4"]) == BranchChoice("a4")
    first = tree_rows([message("u", None, "user", "x")], ["u"])[0]
    assert branch_choice(first) == BranchChoice(None, "x")  # before the first entry


def test_leaves_something() -> None:
    entries = {e["id"]: e for e in forked()}

    def path(*ids: str) -> list[dict[str, Any]]:
        return [entries[i] for i in ids]

    here = path("s", "u1", "a1", "u2", "a2", "r2", "u4", "a4", "l1")
    assert leaves_something(here, path("s", "u1", "a1"))
    assert leaves_something(here, path("s", "u1", "a1", "u2", "a2", "r2", "u3"))
    assert not leaves_something(path("s", "u1"), path("s", "u1", "a1"))  # forward: nothing left
    assert not leaves_something(path("s", "u1", "a1", "l1"), path("s", "u1", "a1"))  # a label only


def test_rows_fit_the_width_and_keep_the_here_mark() -> None:
    rows = tree_rows(forked(), ["s", "u1", "a1", "u2", "a2", "r2", "u4", "a4", "l1"], {"u4": "good one"})
    for row in rows:
        for width in (10, 30, 80):
            line = row_line(row, width)
            assert cell_len(line) <= width
            if row.current:
                assert line.endswith(HERE if width >= 2 * cell_len(HERE) else " ←")
    assert row_line(rows[5], 80) == "• └─ user: second try (good one)"


@given(st.text(alphabet="ab漢字é🙂 ", max_size=40), st.integers(min_value=0, max_value=30))
def test_fit_never_exceeds_the_width(text: str, width: int) -> None:
    cut = fit(text, width)
    assert cell_len(cut) <= width
    if cell_len(text) <= width:
        assert cut == text
    elif width > 0:
        assert cut.endswith("…") and text.startswith(cut[:-1])


def test_viewport_pages_and_clamps() -> None:
    view = Viewport(count=100, top=1 << 30)
    view.resize(100, 10)
    assert view.top == 90  # a pager starts at the end
    view.scroll(-95)
    assert view.top == 0
    view.scroll(view.page)
    assert view.top == 9
    view.end()
    assert view.top == 90
    view.resize(5, 10)  # fewer lines than the screen
    assert view.top == 0


def test_viewport_cursor_stays_visible() -> None:
    view = Viewport(count=50, height=10, cursor=0)
    view.move(12)
    assert (view.cursor, view.top) == (12, 3)
    view.move(-5)
    assert (view.cursor, view.top) == (7, 3)
    view.move(-100)
    assert (view.cursor, view.top) == (0, 0)
    view.end()
    assert (view.cursor, view.top) == (49, 40)
    view.scroll(-20)  # the wheel moves the view; the cursor is pulled along
    assert view.top == 20 and view.cursor == 29
    view.resize(50, 5)
    assert view.top <= view.cursor < view.top + 5


def test_session_rows_on_a_real_session(tmp_path: Path) -> None:
    from tether.session.tree_view import render_tree, session_rows

    with SessionManager.at(tmp_path / "s.db") as sessions:
        session = sessions.create(tmp_path)
        first = session.append_message({"role": "user", "content": "one", "timestamp": 0})
        session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "answer one"}],
                "api": "x",
                "provider": "x",
                "model": "x",
                "usage": {
                    "input": 0,
                    "output": 0,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "stop",
                "timestamp": 0,
            }
        )
        session.branch(first)
        session.append_message({"role": "user", "content": "two", "timestamp": 0})
        rows = session_rows(session)
        assert [(r.prefix, r.text, r.on_path, r.current) for r in rows] == [
            ("", "user: one", True, False),
            ("├─ ", "assistant: answer one", False, False),
            ("└─ ", "user: two", True, True),
        ]
        text = render_tree(session)
        assert f"* {first}  user: one" in text and "└─ user: two  <- you are here" in text
        session.close()
