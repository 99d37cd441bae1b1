"""Following a session while it is written: ``tether sessions follow`` in a second process prints
each entry before the next one is even written (PostgreSQL: LISTEN/NOTIFY; SQLite: polling),
and the library iterator yields history, then new entries, and ends when the session goes."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

import tether.store.follow as follow_module
from session_helpers import assistant, call, result, text, user
from tether.cli.sessions_cmd import entry_line
from tether.session import SessionManager
from tether.store import SessionNotFoundError
from tether.store.follow import follow

LINE_TIMEOUT = 60.0
"""Only a guard against a hung follower; a line normally comes within one wake-up."""


def _lines(stream: IO[str]) -> queue.Queue[str]:
    """The stream's lines as they come, read by a thread (so waiting for one can time out)."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put("")  # end of stream

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_a_second_process_follows_the_session_as_it_is_written(
    manager: SessionManager, store_location: str, tether_home: Path
) -> None:
    s = manager.create("/p")
    s.append_message(user("already there"))
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "sessions",
            "--database",
            store_location,
            "follow",
            s.id,
            "--json",
            "--new",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TETHER_HOME": str(tether_home)},
    )
    try:
        assert follower.stdout is not None and follower.stderr is not None
        out, err = _lines(follower.stdout), _lines(follower.stderr)
        assert err.get(timeout=LINE_TIMEOUT) == f"following session {s.id} (Ctrl-C to stop)\n"
        for i in range(4):
            # Lockstep: the follower prints entry i before entry i + 1 exists.
            entry_id = s.append_message(user(f"live {i}"))
            entry = json.loads(out.get(timeout=LINE_TIMEOUT))
            assert (entry["id"], entry["message"]["content"]) == (entry_id, f"live {i}")
        two = s.append_messages([assistant(text("a")), user("b")])
        assert [json.loads(out.get(timeout=LINE_TIMEOUT))["id"] for _ in two] == two
        s.close()
        manager.delete(s.id)
        assert out.get(timeout=LINE_TIMEOUT) == ""  # the follower ends when the session is deleted
        assert follower.wait(timeout=LINE_TIMEOUT) == 1
        assert err.get(timeout=LINE_TIMEOUT) == f"tether: no session {s.id!r}\n"
    finally:
        follower.kill()
        follower.wait()


def test_follow_yields_history_then_new_entries_and_ends_with_the_session(manager: SessionManager) -> None:
    store = manager.store
    s = manager.create("/p")
    first = s.append_message(user("one"))
    second = s.append_message(user("two"))
    assert [e.id for e in itertools.islice(follow(store, s.id), 2)] == [first, second]
    assert [e.id for e in itertools.islice(follow(store, s.id, after=first), 1)] == [second]

    live = follow(store, s.id, history=False)  # watching from here on
    seen: queue.Queue[str | SessionNotFoundError] = queue.Queue()

    def run() -> None:
        try:
            for entry in live:
                seen.put(entry.id)
        except SessionNotFoundError as err:
            seen.put(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    third = s.append_message(user("three"))
    assert seen.get(timeout=LINE_TIMEOUT) == third
    s.close()
    manager.delete(s.id)
    assert isinstance(seen.get(timeout=LINE_TIMEOUT), SessionNotFoundError)


def test_following_entries_reads_the_session_row_only_when_none_came_for_a_while(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each append wakes the follower once and costs it one query (the entries): the row says
    only that the session is still there, which an append just said."""
    monkeypatch.setattr(follow_module, "IDLE_CHECK_SECONDS", LINE_TIMEOUT)  # no idle wake-up here
    store = manager.store
    s = manager.create("/p")
    s.append_message(user("one"))
    rows: list[str] = []
    get_session = store.get_session

    def counted(session_id: str) -> Any:
        rows.append(session_id)
        return get_session(session_id)

    monkeypatch.setattr(store, "get_session", counted)
    stop = threading.Event()
    live = follow(store, s.id, history=False, stop=stop)
    seen: queue.Queue[str] = queue.Queue()
    thread = threading.Thread(target=lambda: [seen.put(e.id) for e in live], daemon=True)
    thread.start()
    first = s.append_message(user("two"))
    assert seen.get(timeout=LINE_TIMEOUT) == first
    before = len(rows)  # the watch's own check and the first pass
    ids = [s.append_message(user(f"message {i}")) for i in range(5)]
    assert [seen.get(timeout=LINE_TIMEOUT) for _ in ids] == ids
    assert len(rows) == before
    stop.set()
    s.append_message(user("wakes the follower to see it is stopped"))
    thread.join(LINE_TIMEOUT)
    assert not thread.is_alive()


def test_following_an_unknown_session_is_one_clear_line(store_location: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "sessions", "--database", store_location, "follow", "nope"],
        capture_output=True,
        text=True,
        timeout=LINE_TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "tether: no session 'nope'\n")


def test_entry_lines_for_people() -> None:
    at = 1_700_000_000_000
    clock = time.strftime("%H:%M:%S", time.localtime(at / 1000))
    message = assistant(text("Reading it."), call("c1", path="a.py"))
    assert entry_line({"type": "message", "timestamp": at, "message": message}) == (
        f'{clock}  assistant: Reading it. → read({{"path": "a.py"}})'
    )
    assert entry_line({"type": "message", "timestamp": at, "message": result("c1", "line 1\n  line 2")}) == (
        f"{clock}  toolResult read: line 1 line 2"
    )
    assert entry_line({"type": "label", "timestamp": at, "targetId": "E1", "label": "start"}) == (
        f"{clock}  [label] E1 = start"
    )
    assert entry_line({"type": "message", "timestamp": at, "message": user("x" * 500)}).endswith("x…")


def test_a_watch_wakes_on_an_append_and_not_without_one(manager: SessionManager, store_location: str) -> None:
    s = manager.create("/p")
    s.close()
    watch = manager.store.watch(s.id)
    try:
        assert not watch.wait(0.05)
        with SessionManager.at(store_location) as writer, writer.open(s.id) as other:  # another connection
            other.append_message(user("wake up"))
        assert watch.wait(LINE_TIMEOUT)  # with no notification this would time out and be False
    finally:
        watch.close()
