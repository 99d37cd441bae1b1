"""``--mode json`` (and print mode) owns stdout: an extension's ``print()``, a raw write to fd 1 and a child
process's output (at import, in ``setup`` and in a hook while the run goes on) all land on
stderr, and stdout holds the event lines alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

NOISY = """\
import os, subprocess
print('PRINTED-AT-IMPORT')
os.write(1, b'FD1-AT-IMPORT\\n')
subprocess.run(['echo', 'CHILD-AT-IMPORT'], check=True)

def setup(api):
    print('PRINTED-IN-SETUP')

    @api.on('before_run')
    def noisy(context):
        print('PRINTED-IN-HOOK')
        subprocess.run(['echo', 'CHILD-IN-HOOK'], check=True)
"""


def test_json_mode_stdout_holds_events_only(cli: CliEnv) -> None:
    extensions = cli.home / "config" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "noisy.py").write_text(NOISY)
    done = cli.run("--mode", "json", "hello", script=cli.script("s", [text_reply("answer")]))
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)  # every line is JSON: nothing else got in
    assert events[0]["type"] == "session" and any(e["type"] == "agent_end" for e in events)
    for marker in ("PRINTED-AT-IMPORT", "FD1-AT-IMPORT", "CHILD-AT-IMPORT", "PRINTED-IN-SETUP"):
        assert marker in done.stderr, marker
    assert "PRINTED-IN-HOOK" in done.stderr and "CHILD-IN-HOOK" in done.stderr


def test_print_mode_stdout_holds_the_answer_only(cli: CliEnv) -> None:
    """``answer=$(tether -p ...)`` captures the answer alone: the same noise went to stdout
    before the answer in print mode, which owned no stdout of its own."""
    extensions = cli.home / "config" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "noisy.py").write_text(NOISY)
    done = cli.run("-p", "hello", script=cli.script("s", [text_reply("answer")]))
    assert (done.returncode, done.stdout) == (0, "answer\n"), done.stderr
    for marker in ("PRINTED-AT-IMPORT", "FD1-AT-IMPORT", "CHILD-AT-IMPORT", "PRINTED-IN-SETUP"):
        assert marker in done.stderr, marker
    assert "PRINTED-IN-HOOK" in done.stderr and "CHILD-IN-HOOK" in done.stderr


def test_one_ctrl_c_ends_p_waiting_on_an_open_stdin_pipe(cli: CliEnv) -> None:
    """``tether -p`` reading a pipe nobody writes to or closes: one SIGINT ends it (130)."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    # The child starts with SIGINT at its default, as a terminal's foreground job does. A suite
    # started in the background by a non-interactive shell (CI's `bash .ci/run &`) runs with
    # SIGINT ignored, and an ignored signal stays ignored across exec: the child then rightly
    # ignored the Ctrl-C (as Python and every program started with `&` do). A handler, unlike an
    # ignore, is reset to the default by exec, so one is installed around the start.
    given = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tether.cli", "-p", "question"],
            cwd=cli.project,
            env=cli.env(PYTHONFAULTHANDLER="1"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, given)
    try:
        syscall = Path(f"/proc/{process.pid}/syscall")
        deadline = time.monotonic() + 60
        while not syscall.read_text().startswith("0 0x0 "):  # blocked in read(0, ...)
            assert process.poll() is None and time.monotonic() < deadline, "never read stdin"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        try:
            status = process.wait(30)
        except subprocess.TimeoutExpired:
            # Still running: faulthandler prints every thread's stack on SIGABRT, so the failure
            # says where it stands.
            process.send_signal(signal.SIGABRT)
            _, stderr = process.communicate(timeout=30)
            raise AssertionError(
                "tether -p outlived one Ctrl-C:\n" + stderr.decode(errors="replace")
            ) from None
        assert status == 130, process.communicate()[1].decode(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _reader_leaves(cli: CliEnv, replies: list[dict[str, object]], *args: str, channel: str = "pipe") -> float:
    """``tether --yes ARGS`` answered by ``replies``, its stdout's reader gone at the first tool
    call's start (an event line in JSON mode, a ``[tool]`` line on stderr in print mode): the
    seconds it took to exit then (with status 1). Its stdout is a pipe or a socket (a Node
    parent's piped stdio is a socketpair)."""
    import socket
    import subprocess
    import sys
    import time

    script = cli.script("s", replies)
    ours, theirs = socket.socketpair() if channel == "socket" else (None, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "--yes", *args],
        cwd=cli.project,
        env=cli.env(TETHER_SCRIPTED=str(script)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if theirs is None else theirs.fileno(),
        stderr=subprocess.PIPE,
    )
    events = process.stdout if ours is None else ours.makefile("rb")
    if theirs is not None:
        theirs.close()
    assert events is not None and process.stderr is not None
    json_mode = "json" in args
    for line in events if json_mode else process.stderr:
        if (b'"tool_execution_start"' if json_mode else b"[tool] ") in line:
            break
    events.close()
    if ours is not None:
        ours.close()
    left = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    return time.monotonic() - left


def test_json_mode_stops_the_run_when_its_reader_leaves(cli: CliEnv) -> None:
    """``tether --mode json ... | head -n 3``: once an event line cannot be written (the reader
    is gone), the run is aborted; it went on to its end (every model call and tool call, with no
    one reading) and only then exited 1."""
    calls = [tool_reply("bash", {"command": f"sleep 0.2; echo {i} >> steps"}, f"c{i}") for i in range(8)]
    _reader_leaves(cli, [*calls, text_reply("done")], "--mode", "json", "go")
    steps = (cli.project / "steps").read_text().split() if (cli.project / "steps").exists() else []
    assert len(steps) <= 2, steps  # the call under way, and none after the next event


@pytest.mark.parametrize("channel", ["pipe", "socket"])
def test_json_mode_stops_a_quiet_tool_call_as_soon_as_its_reader_leaves(cli: CliEnv, channel: str) -> None:
    """A tool call that writes nothing for a long time (a build, a test suite) no longer runs to
    its end for a reader that has gone: stdout's hang-up is watched, not only the next write."""
    quiet = tool_reply("bash", {"command": "sleep 30; echo ran >> steps"}, "c1")
    assert _reader_leaves(cli, [quiet, text_reply("done")], "--mode", "json", "go", channel=channel) < 15
    assert not (cli.project / "steps").exists()


def test_print_mode_stops_when_its_reader_leaves_and_runs_no_later_prompt(cli: CliEnv) -> None:
    """``tether -p`` writes its answer at the end, so a reader that has gone before it (``| head
    -c 0``, a killed consumer) gets nothing whatever the run does: it is aborted as soon as the
    pipe closes, as ``--mode json`` is, and the next prompt is not run. It ran every model call
    and tool call to the end (a quiet tool call of 30 s, then the second prompt), then exited 1."""
    first = [tool_reply("bash", {"command": "sleep 30; echo first >> steps"}, "c1"), text_reply("one")]
    then = [tool_reply("bash", {"command": "echo second >> steps"}, "c2"), text_reply("two")]
    assert _reader_leaves(cli, [*first, *then], "-p", "go", "and then") < 15
    assert not (cli.project / "steps").exists()


def test_json_mode_to_a_fifo_opened_read_write_runs_to_its_end(cli: CliEnv, tmp_path: Path) -> None:
    """``tether --mode json 1<>fifo`` with a reader on the FIFO: tether holds a read end itself,
    so the FIFO polls readable whenever a line is still unread, which is no reader leaving; the
    run was aborted at its first event line."""
    import subprocess
    import sys

    fifo = tmp_path / "events"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    calls = [tool_reply("bash", {"command": f"echo {i} >> steps"}, f"c{i}") for i in range(2)]
    script = cli.script("s", [*calls, text_reply("done")])
    out = os.open(fifo, os.O_RDWR)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tether.cli", "--yes", "--mode", "json", "go"],
            cwd=cli.project,
            env=cli.env(TETHER_SCRIPTED=str(script)),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(out)  # with tether's copy gone, the last write end: cat reads to the end
        lines, _ = reader.communicate(timeout=30)
    assert done.returncode == 0, done.stderr
    assert (cli.project / "steps").read_text().split() == ["0", "1"]
    assert any(event["type"] == "agent_end" for event in json_lines(lines.decode()))
