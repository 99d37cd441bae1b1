from __future__ import annotations

import asyncio
import base64
import struct
import sys
import zlib
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from tether.ai.abort import AbortController
from tether.tools.completion import MentionCompleter
from tether.tools.prompt_input import (
    MAX_MENTION_BYTES,
    PythonInput,
    ShellInput,
    file_mentions_message,
    find_mentions,
    parse_prompt_input,
    run_python_input,
    run_shell_input,
)
from tether.tools.workspace import Workspace
from tether.wire import decode_message


def test_parse_prompt_input() -> None:
    assert parse_prompt_input("!ls -la") == ShellInput("ls -la", False)
    assert parse_prompt_input("!! git status ") == ShellInput("git status", True)
    assert parse_prompt_input("$print(1)") == PythonInput("print(1)", False)
    assert parse_prompt_input("$$import os\nprint(os.getpid())") == PythonInput(
        "import os\nprint(os.getpid())", True
    )
    assert parse_prompt_input("hello !ls") is None
    assert parse_prompt_input("!") is None
    assert parse_prompt_input("$$  ") is None


async def test_shell_input_becomes_a_valid_bash_execution_message(tmp_path: Path) -> None:
    message = await run_shell_input("echo hi; echo err >&2; exit 4", cwd=tmp_path)
    assert decode_message(message) == message  # valid seed-000 BashExecutionMessage
    assert message["role"] == "bashExecution"
    assert message["output"] == "hi\nerr\n"
    assert message.get("exitCode") == 4
    assert message["cancelled"] is False and message["truncated"] is False
    assert "excludeFromContext" not in message


async def test_double_bang_excludes_from_context_and_truncation_is_flagged(tmp_path: Path) -> None:
    message = await run_shell_input("seq 1 100000", cwd=tmp_path, exclude_from_context=True)
    assert message.get("excludeFromContext") is True
    assert message["truncated"] is True
    assert message["output"].startswith("1\n") and message["output"].endswith("100000\n")


async def test_shell_input_abort_and_timeout(tmp_path: Path) -> None:
    controller = AbortController()
    chunks: list[str] = []

    def on_output(text: str) -> None:
        chunks.append(text)
        controller.abort()

    aborted = await run_shell_input(
        "echo go; sleep 30", cwd=tmp_path, signal=controller.signal, on_output=on_output
    )
    assert aborted["cancelled"] is True and "exitCode" not in aborted
    assert aborted["output"] == "go\n" and chunks[0] == "go\n"
    timed_out = await run_shell_input("sleep 30", cwd=tmp_path, timeout=0.3)
    assert timed_out["cancelled"] is True
    assert timed_out.get("meta") == {"timedOut": True, "timeoutSeconds": 0.3}


@pytest.mark.subprocess
async def test_python_input_runs_in_a_subprocess_with_this_interpreter(tmp_path: Path) -> None:
    message = await run_python_input("import sys\nprint(sys.executable)\nraise SystemExit(2)", cwd=tmp_path)
    assert decode_message(message) == message
    assert message["role"] == "pythonExecution"
    assert message["output"] == sys.executable + "\n"
    assert message.get("exitCode") == 2


@pytest.mark.subprocess
async def test_python_traceback_is_captured(tmp_path: Path) -> None:
    message = await run_python_input("1/0", cwd=tmp_path, exclude_from_context=True)
    assert message.get("exitCode") == 1
    assert "ZeroDivisionError" in message["output"]
    assert message.get("excludeFromContext") is True


@pytest.mark.subprocess
async def test_python_output_streams_before_the_end(tmp_path: Path) -> None:
    seen: list[str] = []
    code = "import time\nprint('first', flush=False)\ntime.sleep(1)\nprint('second')"
    task = asyncio.create_task(run_python_input(code, cwd=tmp_path, on_output=seen.append))
    while "".join(seen) != "first\n" and not task.done():
        await asyncio.sleep(0.02)
    assert not task.done()  # "first" arrived while the script still ran: -u, no block buffering
    assert (await task)["output"] == "first\nsecond\n"


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


def test_find_mentions(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir/a b.txt").write_text("x")
    text = 'see @notes.md, mail me@example.com, @nobody and @"dir/a b.txt" and @notes.md again; @dir'
    assert find_mentions(text, tmp_path) == [tmp_path / "notes.md", tmp_path / "dir/a b.txt"]
    assert find_mentions("no mentions here", tmp_path) == []


def test_file_mention_message(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\nprint(2)")
    (tmp_path / "pic.png").write_bytes(tiny_png())
    (tmp_path / "blob").write_bytes(b"\x00\x01\x02")
    (tmp_path / "big.txt").write_text("x" * (MAX_MENTION_BYTES + 1))
    message = file_mentions_message("@a.py @pic.png @blob @big.txt", tmp_path)
    assert message is not None
    assert decode_message(message) == message
    text, image, binary, big = message["files"]
    assert text == {"path": "a.py", "content": "print(1)\nprint(2)", "lineCount": 2, "byteSize": 17}
    assert image.get("image") == {
        "type": "image",
        "data": base64.b64encode(tiny_png()).decode(),
        "mimeType": "image/png",
    }
    assert binary == {"path": "blob", "content": "", "byteSize": 3, "skippedReason": "binary"}
    assert big == {
        "path": "big.txt",
        "content": "",
        "byteSize": MAX_MENTION_BYTES + 1,
        "skippedReason": "tooLarge",
    }
    assert file_mentions_message("nothing", tmp_path) is None


def test_mention_completer(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/main.py").write_text("")
    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / ".env").write_text("")
    completer = MentionCompleter(tmp_path)

    def complete(text: str) -> list[str]:
        document = Document(text, len(text))
        return [
            str(c.display_text) + "|" + c.text for c in completer.get_completions(document, CompleteEvent())
        ]

    assert complete("look at @s") == ["src/|rc/", "setup.cfg|etup.cfg"]
    assert complete("@src/m") == ["main.py|ain.py"]
    assert complete("@.") == [".env|env"]
    assert complete("@nowhere/x") == []
    assert complete("no mention") == []


def test_a_nul_byte_typed_after_at_completes_nothing(tmp_path: Path) -> None:
    """A NUL in the folder part of ``@dir\0/x``: os.scandir's ValueError came out of the completer."""
    (tmp_path / "src").mkdir()
    completer = MentionCompleter(tmp_path)
    for text in ("@src\0/m", "@\0/", "@src/\0"):
        assert list(completer.get_completions(Document(text, len(text)), CompleteEvent())) == []


def test_a_mention_no_file_can_answer_is_prose(tmp_path: Path) -> None:
    """A link loop, a name too long for the file system and a NUL byte name no file: left as text,
    as @nobody is (each raised out of the prompt, a traceback in -p and a second, failed response
    to an RPC prompt already answered "started")."""
    (tmp_path / "notes.md").write_text("n")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    text = f"@loop1 @{'a' * 300} @{'b' * 200}/{'c' * 200} @a\x00b @notes.md"
    assert find_mentions(text, tmp_path) == [tmp_path / "notes.md"]


def test_a_mention_that_cannot_be_read_is_prose(tmp_path: Path) -> None:
    """A file found but not readable (no permission; /proc/self/mem, whose read is EIO even for
    root, with --allow-outside): its OSError ended the prompt with a traceback."""
    (tmp_path / "a.py").write_text("print(1)")
    anywhere = Workspace(tmp_path, allow_outside=True)
    message = file_mentions_message("@/proc/self/mem and @a.py", tmp_path, anywhere)
    assert message is not None and [f["path"] for f in message["files"]] == ["a.py"]
    assert file_mentions_message("@/proc/self/mem", tmp_path, anywhere) is None
