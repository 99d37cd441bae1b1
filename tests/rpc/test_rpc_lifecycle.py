"""How the server and the client start and end: ready, shutdown, EOF, SIGTERM, no zombie, no orphan,
unknown frames, and a server that cannot start."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from rpc_support import RpcEnv, bash_reply, next_of, text_reply, user_texts

from pipe_support import finish, wait_until_stdout_full
from tether.rpc import LineSplitter, RpcClient, RpcError, UnknownFrame
from tether.rpc.jsonl import OVERLONG
from tether.rpc.mode import GATHER_BYTES, _Output, _StopSignals  # pyright: ignore[reportPrivateUsage]
from tether.session.manager import SessionManager


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.subprocess
async def test_closing_the_client_ends_and_reaps_the_server(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn() as client:
        pid = client.process.pid
    assert client.process.returncode == 0
    assert not _alive(pid)  # reaped: not even a zombie entry is left
    with pytest.raises(RpcError, match="gone"):
        await client.get_state()


@pytest.mark.subprocess
async def test_shutdown_command_answers_then_exits_0(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn() as client:
        await client.shutdown()
        assert await asyncio.wait_for(client.process.wait(), 20) == 0


@pytest.mark.subprocess
async def test_sigterm_during_a_run_records_the_session_and_exits_0(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("sleep 30"), text_reply("never")])
    async with rpc.spawn("--yes") as client:
        session_id = (await client.get_state())["sessionId"]
        assert session_id is not None
        events = client.events()
        run = asyncio.create_task(client.prompt("long task"))
        await next_of(events, "tool_execution_start")
        client.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(client.process.wait(), 20) == 0
        assert (await run)["status"] == "aborted"  # the run settled before the server went
    rpc.script([])
    async with rpc.spawn() as again:
        await again.switch_session(session_id)
        messages = await again.get_messages()
        assert user_texts(messages) == ["long task"]
        assert messages[-1]["role"] in ("assistant", "toolResult")


@pytest.mark.subprocess
def test_sigterm_ends_a_server_whose_client_stopped_reading(rpc: RpcEnv) -> None:
    """A client that stops reading stdout leaves a frame write blocked on the full pipe; SIGTERM
    (what a client's ``kill()`` sends) must still end the server, which gives up the frames the
    client does not take rather than wait for ever with the loop stuck in that write."""
    rpc.script([text_reply(*["many words " * 100] * 5000)])  # some 5 MB of deltas: no pipe holds it
    server = subprocess.Popen(
        rpc.argv(), cwd=rpc.project, env=rpc.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(b'{"type":"prompt","message":"talk"}\n')
        server.stdin.flush()
        wait_until_stdout_full(server)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        lines = server.stdout.read().split(b"\n")
        # every frame written whole is a frame; the one it gave up on may be cut short
        assert all(json.loads(line) for line in lines[:-2])
    finally:
        server.kill()
        server.wait()
        server.stdin.close()
        server.stdout.close()


@pytest.mark.subprocess
def test_end_of_input_finishes_pending_commands_and_exits_0(rpc: RpcEnv) -> None:
    rpc.script([])
    done = subprocess.run(
        rpc.argv(),
        input=b'{"id":"a","type":"get_state"}\n{"id":"b","type":"set_session_name","name":"last line, no LF"}',
        capture_output=True,
        cwd=rpc.project,
        env=rpc.env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    frames = [json.loads(line) for line in done.stdout.splitlines()]
    assert [f["type"] for f in frames] == ["ready", "response", "session_info_changed", "response"]
    assert frames[2] == {"type": "session_info_changed", "name": "last line, no LF"}
    assert [f["id"] for f in frames[1::2]] == ["a", "b"] and frames[3]["success"] is True


@pytest.mark.subprocess
def test_a_dying_client_leaves_no_orphan(rpc: RpcEnv) -> None:
    """The client process is killed without closing: the server sees end of input and exits."""
    rpc.script([])
    program = textwrap.dedent(
        f"""
        import asyncio, os, sys
        from tether.rpc import RpcClient

        async def main():
            client = await RpcClient.connect({rpc.argv()!r}, cwd={str(rpc.project)!r})
            print(client.process.pid, flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, env=rpc.env(), text=True
    )
    assert parent.stdout is not None
    with parent.stdout:
        child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    for _ in range(200):
        if not _alive(child):
            break
        import time

        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the server outlived its client")


@pytest.mark.subprocess
@pytest.mark.parametrize("channel", ["pipe", "socket"])
def test_a_client_that_closes_its_read_end_ends_a_quiet_run(rpc: RpcEnv, channel: str) -> None:
    """A client that closes the pipe it reads frames from, keeping stdin open, while a tool
    call writes nothing: the server ends at once (the run aborted and recorded), not when the
    call's next frame fails to go out. A socket alike: Node (libuv) hands a child a socketpair
    end for each piped stdio, so pi's RPC client and editor extensions give tether one."""
    rpc.script([bash_reply("sleep 30; echo ran >> steps"), text_reply("done")])
    ours, theirs = socket.socketpair() if channel == "socket" else (None, None)
    server = subprocess.Popen(
        rpc.argv("--yes"),
        cwd=rpc.project,
        env=rpc.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if theirs is None else theirs.fileno(),
    )
    frames = server.stdout if ours is None else ours.makefile("rb")
    if theirs is not None:
        theirs.close()
    assert server.stdin is not None and frames is not None
    with server.stdin:
        server.stdin.write(b'{"type": "prompt", "message": "go"}\n')
        server.stdin.flush()
        for line in frames:
            if b'"tool_execution_start"' in line:
                break
        frames.close()
        if ours is not None:
            ours.close()
        left = time.monotonic()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise AssertionError("the server went on for a client that had left") from None
    assert time.monotonic() - left < 15 and not (rpc.project / "steps").exists()


@pytest.mark.subprocess
def test_a_server_writing_to_a_fifo_opened_read_write_runs_its_commands(rpc: RpcEnv, tmp_path: Path) -> None:
    """``tether --mode rpc 1<>fifo`` with a reader on the FIFO: the server holds a read end
    itself, so the FIFO polls readable whenever a frame is still unread, which is no client
    leaving; the server shut down after its ready frame."""
    rpc.script([bash_reply("echo 0 >> steps", "c0"), bash_reply("echo 1 >> steps", "c1"), text_reply("done")])
    fifo = tmp_path / "frames"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    out = os.open(fifo, os.O_RDWR)
    try:
        server = subprocess.Popen(
            rpc.argv("--yes"), cwd=rpc.project, env=rpc.env(), stdin=subprocess.PIPE, stdout=out
        )
    finally:
        os.close(out)  # the server's copy is the FIFO's last write end: cat ends with it
    assert server.stdin is not None and reader.stdout is not None
    with server.stdin:
        server.stdin.write(b'{"type": "prompt", "message": "go"}\n')
        server.stdin.flush()
        for line in reader.stdout:
            if b'"agent_end"' in line:
                break
    assert server.wait(30) == 0
    reader.communicate(timeout=30)
    assert (rpc.project / "steps").read_text().split() == ["0", "1"]


@pytest.mark.subprocess
async def test_unknown_frame_types_arrive_as_unknown_frames() -> None:
    """A newer server's frame type is handed over whole, not dropped; known ones stay dicts."""
    server = textwrap.dedent(
        """
        import sys
        print('{"type":"ready","protocolVersion":9,"version":"x","sessionId":null,"novel":1}', flush=True)
        sys.stdin.readline()
        print('{"type":"hologram","payload":{"a":[1,2]}}', flush=True)
        print('{"type":"queue_update","steering":[],"followUp":[],"extra":"kept"}', flush=True)
        print('{"id":"py-1","type":"response","command":"get_state","success":true,"data":{"x":1}}', flush=True)
        sys.stdin.readline()
        """
    )
    client = await RpcClient.connect([sys.executable, "-c", server])
    try:
        assert client.ready is not None and client.ready.get("novel") == 1
        events = client.events()
        assert await client.request("get_state") == {"x": 1}
        first = await events.__anext__()
        second = await events.__anext__()
        assert first == UnknownFrame("hologram", {"type": "hologram", "payload": {"a": [1, 2]}})
        assert second == {"type": "queue_update", "steering": [], "followUp": [], "extra": "kept"}
    finally:
        await client.close()


@pytest.mark.subprocess
async def test_a_server_that_cannot_start_is_an_error_with_its_message(rpc: RpcEnv) -> None:
    with pytest.raises(RpcError, match="no-such-provider"):
        async with RpcClient.spawn(["--model", "no-such-provider/x"], cwd=rpc.project, env=rpc.env()):
            pass


def test_line_splitter_keeps_unicode_separators_and_split_utf8() -> None:
    splitter = LineSplitter()
    record = json.dumps({"t": "a\u2028b\u2029c\r"}, ensure_ascii=False).encode() + b"\r\n"
    halves = [record[:5], record[5:9], record[9:]]  # cuts inside multi-byte characters too
    out = [line for half in halves for line in splitter.feed(half)]
    assert out == [record[:-2]]
    assert json.loads(out[0]) == {"t": "a\u2028b\u2029c\r"}
    assert splitter.feed(b"tail") == [] and splitter.finish() == b"tail" and splitter.finish() is None


@given(
    data=st.binary(max_size=60).map(lambda b: b.replace(b"x", b"\n").replace(b"y", b"\r")),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6),
)
def test_line_splitter_gives_the_same_lines_however_the_bytes_are_cut(data: bytes, cuts: list[int]) -> None:
    """Whole lines in one chunk take a shorter path than lines spread over chunks: both give
    the records split on LF, one trailing CR dropped, and the unterminated rest at the end."""
    *records, rest = data.split(b"\n")
    expected = [r[:-1] if r.endswith(b"\r") else r for r in records]
    if rest:
        expected.append(rest[:-1] if rest.endswith(b"\r") else rest)
    splitter = LineSplitter()
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    out = [line for a, b in itertools.pairwise(bounds) for line in splitter.feed(data[a:b])]
    last = splitter.finish()
    assert out + ([last] if last is not None else []) == expected
    assert all(type(line) is bytes for line in out)


@given(
    data=st.binary(max_size=60).map(lambda b: b.replace(b"x", b"\n").replace(b"y", b"\r")),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6),
    limit=st.integers(min_value=0, max_value=8),
)
def test_a_limited_splitter_gives_one_overlong_per_line_past_its_limit(
    data: bytes, cuts: list[int], limit: int
) -> None:
    """However the bytes are cut: each line longer than the limit (its CR dropped) is one
    ``OVERLONG``, the others are as without a limit, and no more than the limit is ever kept."""
    *records, rest = data.split(b"\n")
    stripped = [r[:-1] if r.endswith(b"\r") else r for r in [*records, *([rest] if rest else [])]]
    expected = [OVERLONG if len(r) > limit else r for r in stripped]
    splitter = LineSplitter(limit)
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    out: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        out += splitter.feed(data[a:b])
        assert len(splitter._buffer) <= limit + 1  # pyright: ignore[reportPrivateUsage]
    last = splitter.finish()
    assert out + ([last] if last is not None else []) == expected


async def test_frames_larger_than_the_pipe_go_out_whole_and_in_order() -> None:
    """stdout is non-blocking (the server makes a pipe so; one socket as stdin and stdout too):
    what the pipe cannot take waits and goes out as it drains, frames whole and in order."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    frames = [{"type": "x", "n": n, "data": "ab" * (1 << 19)} for n in range(3)]  # 1 MiB each
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 1 << 14):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    broken = asyncio.Event()
    with open(write_end, "wb", closefd=True) as stream:
        output = _Output(stream, broken, asyncio.get_running_loop())
        for frame in frames:
            output(frame)  # never blocks: nobody reads yet
        assert output.waiting > 0
        reader.start()
        try:
            await output.drain()
        finally:
            stream.close()
            reader.join(timeout=20)
            os.close(read_end)
    assert not broken.is_set()
    assert [json.loads(line) for line in bytes(received).splitlines()] == frames


async def test_the_answers_to_one_chunk_of_commands_go_out_together() -> None:
    """While a chunk of stdin's lines runs (``gather``), its answers wait and then go out in
    one write, whole and in order; past ``GATHER_BYTES`` they go out without waiting for the
    chunk's end; what the pipe does not take waits for the loop, behind which later answers queue."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    os.set_blocking(read_end, False)
    loop = asyncio.get_running_loop()

    def unread() -> bytes:
        try:
            return os.read(read_end, 1 << 20)
        except BlockingIOError:
            return b""

    broken = asyncio.Event()
    with open(write_end, "wb", closefd=True) as stream:
        output = _Output(stream, broken, loop)
        output.gather()
        small = [{"type": "response", "n": n} for n in range(100)]
        for frame in small:
            output(frame)
        assert unread() == b""  # held until the chunk's lines have run
        output.send_gathered()
        assert [json.loads(line) for line in unread().splitlines()] == small
        big = [{"type": "response", "n": n, "text": "x" * 1000} for n in range(2 * GATHER_BYTES // 1000)]
        output.gather()
        for frame in big:
            output(frame)
        received = bytearray(unread())
        assert len(received) >= GATHER_BYTES  # sent before the chunk's end
        output.send_gathered()
        deadline = time.monotonic() + 20
        while output.waiting and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            received += unread()
        received += unread()
        assert output.waiting == 0
    os.close(read_end)
    assert not broken.is_set()
    assert [json.loads(line) for line in bytes(received).splitlines()] == big


@pytest.mark.subprocess
def test_abort_ends_the_run_while_the_client_reads_nothing(rpc: RpcEnv) -> None:
    """A client that stops reading stdout and sends ``abort``: the server reads it and the run
    ends (recorded aborted) with its frames still waiting; when the client reads again, the
    abort's answer and the run's end are there. (The server wrote frames synchronously, its
    loop stuck in a write to the full pipe: it read nothing, and the run stood still.)"""
    database = rpc.home / "sessions.db"
    rpc.script([text_reply(*["many words " * 100] * 5000)])  # some 5 MB of deltas: no pipe holds it
    server = subprocess.Popen(
        rpc.argv(),
        cwd=rpc.project,
        env=rpc.env(TETHER_DATABASE_URL=str(database)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(b'{"type":"prompt","message":"talk"}\n')
        server.stdin.flush()
        wait_until_stdout_full(server)
        server.stdin.write(b'{"type":"abort","id":"stop"}\n')
        server.stdin.flush()
        deadline = time.monotonic() + 60
        while not _aborted_reply(database):
            assert time.monotonic() < deadline, "the abort did not end the run while the client read nothing"
            time.sleep(0.2)
        server.stdin.write(b'{"type":"shutdown","id":"end"}\n')
        frames = finish(server, timeout=20)
    finally:
        server.kill()
        server.wait()
    answers = [f for f in frames if f["type"] == "response"]
    assert [(a["command"], a.get("id"), a["success"]) for a in answers] == [
        ("prompt", None, True),
        ("abort", "stop", True),
        ("shutdown", "end", True),
    ]
    ends = [f for f in frames if f["type"] == "agent_end"]
    assert len(ends) == 1 and ends[0]["messages"][-1]["stopReason"] == "aborted"


def _aborted_reply(database: object) -> bool:
    """Whether the session in ``database`` holds an assistant reply recorded as aborted."""
    with SessionManager.at(str(database)) as sessions:
        found = sessions.store.list_sessions()
        messages = sessions.open(found[0].id, readonly=True).messages if found else []
    return any(m["role"] == "assistant" and m.get("stopReason") == "aborted" for m in messages)


def test_stop_signals_off_the_main_thread_leave_no_socket_open() -> None:
    """Only the main thread may set the wakeup descriptor: a server run on another thread goes
    on without the stop signals, and the socket pair made for them is closed, not left to the
    garbage collector (a ResourceWarning under ``-X dev``)."""
    loop = asyncio.new_event_loop()
    failures: list[type[BaseException]] = []  # not the errors: their frames hold the sockets

    def make() -> None:
        try:
            _StopSignals(loop, lambda: None)
        except BaseException as error:
            failures.append(type(error))

    gc.collect()  # what earlier tests left to the collector warns now, not inside the window
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            thread = threading.Thread(target=make)
            thread.start()
            thread.join(timeout=20)
            gc.collect()
    finally:
        loop.close()
    assert failures == [ValueError]
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


@pytest.mark.subprocess
def test_a_prompt_argument_is_refused_in_rpc_mode(rpc: RpcEnv) -> None:
    rpc.script([])
    done = subprocess.run(
        [*rpc.argv(), "hello"], capture_output=True, text=True, cwd=rpc.project, env=rpc.env(), check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "prompts as commands on stdin" in done.stderr


@pytest.mark.subprocess
async def test_close_escalates_to_sigkill_for_a_server_that_will_not_end() -> None:
    """A server that ignores end of input and SIGTERM is killed and reaped all the same."""
    stubborn = textwrap.dedent(
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('{"type":"ready","protocolVersion":1,"version":"x","sessionId":null}', flush=True)
        sys.stdin.read()
        time.sleep(60)
        """
    )
    client = await RpcClient.connect([sys.executable, "-c", stubborn])
    pid = client.process.pid
    code = await client.close(timeout=0.2)
    assert code == -signal.SIGKILL
    assert not _alive(pid)


@pytest.mark.subprocess
async def test_a_call_that_could_not_be_sent_leaves_nothing_to_report_at_close() -> None:
    """A prompt to a server that had died failed to write, but stayed pending; ``close`` then
    failed it too and asyncio logged "Future exception was never retrieved" for a call whose
    caller had its error already."""
    dying = textwrap.dedent(
        """
        import os, sys
        print('{"type":"ready","protocolVersion":1,"version":"x","sessionId":null}', flush=True)
        os.close(0)
        sys.stdin.readline()  # fails at once: the client's writes hit a closed pipe
        """
    )
    reported: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        client = await RpcClient.connect([sys.executable, "-c", dying])
        await asyncio.wait_for(client.process.wait(), 20)
        with pytest.raises(RpcError):
            await client.prompt("hello")
        await client.close()
        del client
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert [c.get("message") for c in reported] == []


@pytest.mark.subprocess
def test_a_file_of_commands_is_not_read_past_the_held_bound(rpc: RpcEnv, tmp_path: Path) -> None:
    """stdin a regular file (read by a thread, not the event loop) of 32 MiB of commands, stdout
    a pipe nobody reads: once the answers back up, the server stops reading the file, a few MiB
    in. (The thread could not be paused: it read the whole file into the held lines.)"""
    rpc.script([text_reply("ok")])  # a model: the server starts
    commands = tmp_path / "commands.jsonl"
    line = json.dumps({"type": "get_state", "id": "x" * 1000}).encode() + b"\n"
    commands.write_bytes(line * ((32 << 20) // len(line)))
    with commands.open("rb") as stdin:
        server = subprocess.Popen(
            rpc.argv(), cwd=rpc.project, env=rpc.env(), stdin=stdin, stdout=subprocess.PIPE
        )
    try:
        offset, deadline = -1, time.monotonic() + 60
        while (now := _stdin_offset(server.pid)) != offset or now == 0:  # still reading
            assert time.monotonic() < deadline, "the server never stopped reading"
            offset = now
            time.sleep(1)
        assert offset < 8 << 20, f"{offset >> 20} MiB of the file read although nothing was answered"
    finally:
        server.kill()
        server.wait()
        assert server.stdout is not None
        server.stdout.close()


def _stdin_offset(pid: int) -> int:
    """How far the process has read its stdin (a regular file)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/fdinfo/0").read_text().splitlines())
    return int(fields["pos"])
