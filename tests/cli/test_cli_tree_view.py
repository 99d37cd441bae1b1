"""The tree navigator's pure parts: entries → rows, cutting rows to the width, what a choice
means, scrolling. Entries are written as the store keeps them (id, parentId, type, payload)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, strategies as st
from rich.cells import cell_len

from tether.cli.keybindings import DEFAULTS, Bindings
from tether.cli.screens import EditLabel, Viewport
from tether.session import SessionManager
from tether.session.tree_view import (
    FILTERS,
    HERE,
    BranchChoice,
    TreeSource,
    branch_choice,
    branch_jump,
    fit,
    label_time,
    leaves_something,
    row_line,
    tool_call_text,
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
        ("u4", "├─ "),  # the branch on the active path first, as pi orders siblings
        ("a4", "│  "),
        ("u3", "└─ "),
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
        ("b", "├─ "),  # on the active path: first
        ("a", "└─ "),
        ("a1", "   ├─ "),
        ("a2", "   └─ "),
    ]


def test_the_active_branch_comes_first_among_siblings() -> None:
    """pi 1.6's ``flattenTree``: at every fork, and among several roots, the child whose subtree
    holds the active leaf is listed first; the others keep their append order."""
    entries = [
        message("r1", None, "user", "root one"),
        message("r2", None, "user", "root two"),
        message("x", "r2", "assistant", "X"),
        message("y", "r2", "assistant", "Y"),
        message("z", "r2", "assistant", "Z"),
        message("y1", "y", "user", "Y1"),
    ]
    assert [r.id for r in tree_rows(entries, ["r2", "y", "y1"])] == ["r2", "y", "y1", "x", "z", "r1"]
    assert [r.id for r in tree_rows(entries, ["r1"])] == ["r1", "r2", "x", "y", "y1", "z"]


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


PATH = ["s", "u1", "a1", "u2", "a2", "r2", "u4", "a4", "l1"]


def shown(mode: str, folded: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    return [
        (r.id, r.prefix, r.text)
        for r in tree_rows(forked(), PATH, {"u4": "good one"}, mode=mode, folded=folded)
    ]


def test_the_default_filter_shows_tool_results_and_hides_settings() -> None:
    """pi's ``default``: a tool result is a row naming its call; an answer that only called
    tools is left out (its results stand for it); settings and label entries are not rows."""
    assert shown("default") == [
        ("u1", "", "user: hello there"),
        ("a1", "", "assistant: Hi!"),
        ("u2", "", "user: run it"),
        ("r2", "", "[bash]"),  # its call id matches no call: the tool's name
        ("u4", "├─ ", "user: second try"),
        ("a4", "│  ", "assistant: done"),
        ("u3", "└─ ", "user: first try"),
    ]


def test_a_tool_result_row_is_the_call_it_answers() -> None:
    entries = [
        message("u", None, "user", "look"),
        message("a", "u", "assistant"),
        message("r", "a", "toolResult", "text"),
    ]
    entries[1]["message"]["content"] = [
        {
            "type": "toolCall",
            "id": "c",
            "name": "read",
            "arguments": {"path": "src/x.py", "offset": 10, "limit": 20},
        }
    ]
    assert [r.text for r in tree_rows(entries, ["u", "a", "r"], mode="default")] == [
        "user: look",
        "[read: src/x.py:10-29]",
    ]
    # The current entry is always a row, even an answer that only called tools.
    assert [r.id for r in tree_rows(entries, ["u", "a"], mode="default")] == ["u", "a", "r"]
    calls: dict[str, tuple[dict[str, Any], str]] = {
        "bash": ({"command": "ls  -la\n"}, "[bash: ls -la]"),
        "grep": ({"pattern": "x+", "path": "src"}, "[grep: /x+/ in src]"),
        "find": ({"pattern": "*.py"}, "[find: *.py in .]"),
        "edit": ({"path": "a.py", "edits": []}, "[edit: a.py]"),
        "mcp_tool": ({"q": 1}, '[mcp_tool: {"q": 1}]'),
    }
    for name, (args, text) in calls.items():
        assert tool_call_text(name, args) == text


def test_the_no_tools_filter_folds_results_into_the_answer() -> None:
    assert [(i, t) for i, _, t in shown("no-tools")][2:5] == [
        ("u2", "user: run it"),
        ("a2", "assistant: [tools: bash, read]"),
        ("u4", "user: second try"),
    ]
    assert "r2" not in [i for i, _, _ in shown("no-tools")]


def test_the_all_filter_shows_settings_and_label_entries() -> None:
    rows = tree_rows(forked(), PATH, {"u4": "good one"}, mode="all")
    assert [(r.id, r.text) for r in rows if r.id in ("s", "r2", "l1")] == [
        ("s", "[thinking: high]"),
        ("r2", "[bash]"),
        ("l1", "[label: good one]"),
    ]
    assert [r.id for r in rows if r.current] == ["l1"]  # the leaf itself is a row now


def test_the_user_and_labelled_filters() -> None:
    assert shown("user-only") == [
        ("u1", "", "user: hello there"),
        ("u2", "", "user: run it"),
        ("u4", "├─ ", "user: second try"),
        ("u3", "└─ ", "user: first try"),
    ]
    rows = tree_rows(forked(), PATH, {"u4": "good one", "a1": "hi"}, mode="labeled-only")
    assert [(r.id, r.prefix) for r in rows] == [("a1", ""), ("u4", "")]
    assert rows[1].current  # the nearest shown entry on the active path
    assert FILTERS == ("default", "no-tools", "user-only", "labeled-only", "all")  # Ctrl-O's order


def test_folding_a_branch_hides_what_is_below_it() -> None:
    rows = {r.id: r for r in tree_rows(forked(), PATH, mode="default")}
    assert rows["u1"].foldable  # a root with rows below
    assert rows["u4"].foldable and not rows["u3"].foldable  # u3 has nothing below it
    assert not rows["a1"].foldable  # inside a straight line: not a branch start
    assert [i for i, _, _ in shown("default", ("u4",))] == ["u1", "a1", "u2", "r2", "u4", "u3"]
    folded = {r.id: r for r in tree_rows(forked(), PATH, mode="default", folded=("u4",))}
    assert folded["u4"].folded and row_line(folded["u4"], 40) == "• ├⊞ user: second try"
    assert [i for i, _, _ in shown("default", ("u1",))] == ["u1"]
    assert (
        row_line(tree_rows(forked(), PATH, mode="default", folded=("u1",))[0], 40) == "• ⊞ user: hello there"
    )
    assert shown("default", ("a1",)) == shown("default")  # not a branch start: nothing to fold


def test_branch_jumps_go_to_segment_starts() -> None:
    """Ctrl-Left/Right with nothing to fold: up to the start of the branch the cursor is in (or
    the one above), down along first children to the next fork's first branch or the end."""
    entries = [
        message("u1", None, "user", "root"),
        message("a", "u1", "assistant", "A"),
        message("b", "u1", "assistant", "B"),
        message("a1", "a", "user", "A1"),
        message("a2", "a", "user", "A2"),
        message("a3", "a2", "assistant", "A3"),
    ]
    rows = tree_rows(entries, ["u1", "a", "a1"])
    index = {r.id: n for n, r in enumerate(rows)}
    assert [r.id for r in rows] == ["u1", "a", "a1", "a2", "a3", "b"]
    assert branch_jump(rows, index["a3"], -1) == index["a2"]
    assert branch_jump(rows, index["a2"], -1) == index["a"]
    assert branch_jump(rows, index["a"], -1) == index["u1"]
    assert branch_jump(rows, index["u1"], 1) == index["a"]
    assert branch_jump(rows, index["a"], 1) == index["a1"]
    assert branch_jump(rows, index["a2"], 1) == index["a3"]  # the branch's end


def test_a_filter_keeps_the_cursor_on_the_nearest_shown_entry() -> None:
    source = TreeSource(forked(), PATH)
    rows = source.rows("user-only")
    assert source.nearest("a4", rows) == "u4" and source.nearest("u3", rows) == "u3"
    assert source.nearest("s", rows) is None


def test_every_filter_is_one_pass_on_a_long_session() -> None:
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for i in range(3000):
        entries.append(message(f"e{i}", parent, "user" if i % 2 == 0 else "assistant", f"n{i}"))
        parent = f"e{i}"
    for mode in FILTERS:
        rows = tree_rows(
            entries, [e["id"] for e in entries], {"e0": "a", "e2": "b"}, mode=mode, folded=("e0",)
        )
        assert [r.id for r in rows] == ["e0"] and rows[0].folded


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
    assert row_line(rows[4], 80) == "• ├⊟ user: second try (good one)"  # pi's mark: it can be folded


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
            ("├─ ", "user: two", True, True),
            ("└─ ", "assistant: answer one", False, False),
        ]
        text = render_tree(session)
        assert f"* {first}  user: one" in text and "├─ user: two  <- you are here" in text
        session.close()


async def navigator_keys(keys: str, bindings: Bindings = DEFAULTS) -> object:
    """What the navigator returns after ``keys`` (typed into a pipe) end with Shift-L, which
    hands back the row under the cursor and the filter in use."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from tether.cli.screens import pick_tree_row

    # Only u1 is labelled: l1's label on u4 is moved there (same id, so PATH still ends on it).
    entries = [
        *forked()[:-1],
        {"id": "l1", "parentId": "a4", "type": "label", "targetId": "u1", "label": "start"},
    ]
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys + "L")
        return await asyncio.wait_for(
            pick_tree_row(TreeSource(entries, PATH), color=False, bindings=bindings), 10
        )


async def test_the_navigator_filter_and_fold_keys() -> None:
    """pi's keys, end to end through prompt-toolkit: Ctrl-A toggles ``all``, Ctrl-O cycles on
    from there, Ctrl-D is the default; Ctrl-Left on the last prompt's branch folds it and the
    cursor stays; Ctrl-Left again goes up to the start of the conversation."""
    ctrl_left, ctrl_right = "\x1b[1;5D", "\x1b[1;5C"
    cases = {
        "": ("a4", "default"),  # the current entry
        "\x01": ("a4", "all"),  # Ctrl-A: the cursor stays where it was
        "\x01\x01": ("a4", "default"),  # toggled back
        "\x01\x0f": ("a4", "default"),  # Ctrl-O after all: default again
        "\x0f\x0f": ("u4", "user-only"),  # default → no-tools → user-only: a4's prompt
        "\x14": ("a4", "no-tools"),  # Ctrl-T
        "\x15\x04": ("u4", "default"),  # Ctrl-U then Ctrl-D: the cursor stays on the prompt
        "\x0c": ("u1", "labeled-only"),  # the nearest labelled entry above
        "\x1b[A" + ctrl_left: ("u4", "default"),  # on u4: folds it
        "\x1b[A" + ctrl_left + ctrl_left: ("u1", "default"),  # folded already: up to the start
        "\x1b[A" + ctrl_left + ctrl_right + "\x1b[B": ("a4", "default"),  # unfolded: a4 is back
    }
    for keys, (row, mode) in cases.items():
        result = await navigator_keys(keys)
        assert isinstance(result, EditLabel), (keys, result)
        assert (result.row.id, result.mode) == (row, mode), keys
    rebound = Bindings(
        {**DEFAULTS.keys, "app.tree.filter.all": ("ctrl+b",), "app.tree.editLabel": ("shift+l",)}
    )
    result = await navigator_keys("\x02", rebound)
    assert isinstance(result, EditLabel) and result.mode == "all"


def test_copy_text_is_the_entrys_whole_text() -> None:
    """pi's ``getEntryCopyText``: a message's full text, a failed answer's error, a shell run's
    command, a summary; nothing for an entry without text (a settings entry, tools only)."""
    entries = [
        *forked(),
        message("e", "a4", "assistant", stopReason="error", errorMessage="HTTP 500"),
        message("x", "e", "bashExecution", command="ls -la", output="", exitCode=0),
        {
            "id": "c",
            "parentId": "x",
            "type": "compaction",
            "summary": "We said hi.",
            "firstKeptEntryId": "u1",
        },
    ]
    source = TreeSource(entries, PATH)
    assert source.copy_text("u4") == "second\ntry"  # whole, not the row's one line
    assert source.copy_text("a4") == "done"
    assert source.copy_text("e") == "HTTP 500"
    assert source.copy_text("x") == "ls -la"
    assert source.copy_text("c") == "We said hi."
    assert source.copy_text("a2") is None and source.copy_text("s") is None
    assert source.copy_text("missing") is None


def test_labels_and_their_times_come_from_the_newest_label_entry() -> None:
    entries = [
        message("u", None, "user", "x"),
        {"id": "l1", "parentId": "u", "type": "label", "targetId": "u", "label": "a", "timestamp": 1_000},
        {"id": "l2", "parentId": "l1", "type": "label", "targetId": "u", "label": "b", "timestamp": 2_000},
        {"id": "l3", "parentId": "l2", "type": "label", "targetId": "l1", "label": "c", "timestamp": 3_000},
        {"id": "l4", "parentId": "l3", "type": "label", "targetId": "l1", "label": None, "timestamp": 4_000},
    ]
    source = TreeSource(entries, ["u"])
    assert source.label_times == {"u": 2_000}  # l1's label was removed
    assert source.labels == {"u": "b"}  # the same fold gives the labels


def test_label_time_reads_like_pis() -> None:
    now = datetime(2026, 12, 5, 18, 30).astimezone()

    def at(year: int, month: int, day: int, hour: int, minute: int) -> int:
        return int(datetime(year, month, day, hour, minute).astimezone().timestamp() * 1000)

    assert label_time(at(2026, 12, 5, 9, 4), now) == "09:04"
    assert label_time(at(2026, 3, 9, 14, 3), now) == "3/9 14:03"
    assert label_time(at(2025, 3, 9, 14, 3), now) == "25/3/9 14:03"
    row = tree_rows(forked(), PATH, {"u4": "good one"})[4]
    assert row_line(row, 80, "09:04") == "• ├⊟ user: second try (good one · 09:04)"
    assert row_line(tree_rows(forked(), PATH)[0], 80, "09:04") == "• user: hello there"  # no label


async def test_the_navigator_copies_the_row_under_the_cursor() -> None:
    """Ctrl-X hands the row's whole text to the copier and stays in the navigator (Shift-L then
    ends it here); on a row without text the copier is not called."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from tether.cli.screens import pick_tree_row

    copied: list[str] = []

    def copy(text: str) -> str:
        copied.append(text)
        return "copied"

    up = "\x1b[A"
    # In "all", on the leaf (the label entry l1: no text), then a4, then u4.
    for keys in ("\x18", up + "\x18", up * 2 + "\x18"):
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text(keys + "L")
            source = TreeSource(forked(), PATH)
            result = await asyncio.wait_for(pick_tree_row(source, color=False, copy=copy, mode="all"), 10)
        assert isinstance(result, EditLabel)
    assert copied == ["done", "second\ntry"]
