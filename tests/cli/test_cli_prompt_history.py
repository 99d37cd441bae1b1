"""The interactive prompt's history file (``tether.cli.prompt_history``): read from its end."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory

from tether.cli.prompt_history import prompt_history


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))


def _entry(text: str) -> str:
    return "\n# 2026-01-01 00:00:00\n" + "".join(f"+{line}\n" for line in text.split("\n"))


def test_a_huge_history_is_read_from_its_last_megabyte(tmp_path: Path) -> None:
    """prompt_toolkit's FileHistory read the file whole, at every start: a history grown for
    years (or 1 GB put there) took that memory and time. The entry cut at the limit is left out."""
    count = 3 * (1 << 20) // 40  # 3 MB
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text("".join(_entry(f"prompt {i}\nits second line") for i in range(count)))
    history, warning = prompt_history()
    strings = list(history.load_history_strings())
    assert warning is None and 0 < len(strings) < count / 2
    newest = count - 1
    assert strings == [f"prompt {i}\nits second line" for i in range(newest, newest - len(strings), -1)]


def test_a_small_history_is_read_as_prompt_toolkit_reads_it(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text(_entry("one") + _entry("two\r\nlines\x0c") + _entry("é") + "junk\n" + _entry(""))
    history, _ = prompt_history()
    assert list(history.load_history_strings()) == list(FileHistory(str(path)).load_history_strings())
    assert list(history.load_history_strings()) == ["", "é", "two\r\nlines\x0c", "one"]


def _within(seconds: float, work: Callable[[], object], unblock: Callable[[], None]) -> object:
    """``work()``'s result if it returns within ``seconds``; else ``unblock()`` frees the thread
    (so the test ends) and the test fails."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(5)
        pytest.fail(f"{work} blocked for {seconds}s")
    return result[0]


def test_a_fifo_swapped_in_after_the_start_is_passed_over_not_waited_on(tmp_path: Path) -> None:
    """The file was checked by its path at the start, then opened by name: a FIFO put there in
    between (or later in the run) blocked the reading thread for good, and the append at each
    prompt froze the input box (opening a FIFO waits for its other end). Each open is now
    non-blocking and the opened descriptor is checked."""
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text(_entry("kept"))
    history, warning = prompt_history()
    assert warning is None
    path.unlink()
    os.mkfifo(path)

    def other_end(flags: int) -> Callable[[], None]:
        return lambda: os.close(os.open(path, flags | os.O_NONBLOCK))

    assert _within(5, lambda: list(history.load_history_strings()), other_end(os.O_WRONLY)) == []
    _within(5, lambda: history.store_string("typed"), other_end(os.O_RDONLY))
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_prompts_are_appended_as_prompt_toolkit_appends_them(tmp_path: Path) -> None:
    history, _ = prompt_history()
    history.store_string("one\ntwo")
    history.store_string("three")
    path = tmp_path / "data" / "prompt-history"
    assert list(FileHistory(str(path)).load_history_strings()) == ["three", "one\ntwo"]


def test_the_start_looks_at_the_path_before_opening_it(tmp_path: Path) -> None:
    """The start-up check opened the path to look at it: opening a FIFO let a writer waiting on
    it go on (then write to no one), as opening some devices does something. It is looked at
    first now, and a FIFO refused without being opened."""
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    time.sleep(0.2)  # the writer waits in open() by then
    try:
        _, warning = prompt_history()
        writer.join(1)
        assert writer.is_alive(), "the FIFO was opened"
        assert warning is not None and "not a regular file" in warning
    finally:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer go
        writer.join(5)


def test_the_start_opens_the_history_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start looked at the path, opened and closed it only to check it, and the first read
    opened it again and checked the descriptor as well: the middle open did nothing the read's
    does not (the FIFO and device tests above keep their answers without it)."""
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text(_entry("kept"))
    opened: list[str] = []
    real_open = os.open

    def counted(file: str, flags: int, *args: int, **kwargs: int | None) -> int:
        opened.append(os.fsdecode(file))
        return real_open(file, flags, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "open", counted)
        history, warning = prompt_history()
        assert list(history.load_history_strings()) == ["kept"]
    assert warning is None
    assert opened.count(str(path)) == 1
