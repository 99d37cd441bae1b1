"""Bad input never ends the server: 1,000 random or malformed lines, each answered by one response.

One server process serves every example (lines are streamed to it as hypothesis makes them), so
the property is also "the server stays up and keeps answering in order". Commands that would start
real work (a prompt, a bash run, a model probe) only ever appear with bad parameters."""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from rpc_support import RpcEnv, check_frame

from tether.rpc import COMMANDS
from tether.rpc.mode import MAX_LINE_BYTES


class LineServer:
    """``tether --mode rpc`` in a subprocess, driven line by line from synchronous test code."""

    def __init__(self, env: RpcEnv) -> None:
        self.process = subprocess.Popen(
            env.argv(),
            cwd=env.project,
            env=env.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.frames: queue.Queue[bytes] = queue.Queue()
        self.pumping = threading.Thread(target=self._pump, daemon=True)
        self.pumping.start()
        assert self.next_frame()["type"] == "ready"

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, b""):
            self.frames.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def next_frame(self) -> dict[str, Any]:
        return json.loads(self.frames.get(timeout=20))

    def next_response(self) -> dict[str, Any]:
        while True:
            frame = self.next_frame()
            check_frame(frame)
            if frame["type"] == "response":
                return frame


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineServer]:
    root = tmp_path_factory.mktemp("bad-input")
    env = RpcEnv(root / "home", root / "project")
    env.home.mkdir()
    env.project.mkdir()
    env.script([])
    running = LineServer(env)
    yield running
    assert running.process.stdin is not None and running.process.stdout is not None
    running.process.stdin.close()
    assert running.process.wait(timeout=20) == 0
    running.pumping.join(timeout=20)  # at the end of the output, once the server has exited
    running.process.stdout.close()


NEVER_SENT = {"shutdown", "get_available_models", "cycle_model", "export", "export_html"}
"""Valid without parameters and not harmless here: ends the server, probes the network, writes files."""
ONLY_INVALID = {"prompt", "bash", "set_model", "switch_session", "fork"}
"""Would start real work when valid: sent with parameters of the wrong type only."""
SAFE_WHEN_VALID = sorted(set(COMMANDS) - NEVER_SENT - ONLY_INVALID)
"""Commands harmless when the random parameters happen to be valid."""

_ids = itertools.count()
_json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=4,
)
_no_lf = st.characters(blacklist_categories=("Cs",), blacklist_characters="\n")


@st.composite
def command_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Objects that look like commands: a known type with random parameters, or an unknown type."""
    kind = draw(
        st.sampled_from(SAFE_WHEN_VALID)
        | st.sampled_from(sorted(ONLY_INVALID))
        | st.text(max_size=12)
        | st.just("extension_ui_response")
    )
    body: dict[str, Any] = draw(st.dictionaries(st.sampled_from(_FIELDS), _json, max_size=3))
    if kind in ONLY_INVALID:
        body["message"] = body["command"] = body["modelId"] = draw(st.integers())  # always invalid
        body["sessionPath"] = body["entryId"] = body["enabled"] = draw(st.integers())
    return {**body, "type": kind, "id": f"h{next(_ids)}"}


_FIELDS = ["message", "images", "level", "mode", "enabled", "name", "exclude", "messageUpdate", "provider"]

lines = (
    st.text(alphabet=_no_lf, max_size=40).map(str.encode)
    | st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
    | _json.map(lambda v: json.dumps(v).encode())
    | command_objects().map(lambda v: json.dumps(v, ensure_ascii=False).encode())
    | st.sampled_from([b"", b"{", b'{"type":', b"\r", b'{"type":"get_state"}\r', b"null", b"[]"])
)


@settings(max_examples=1000, deadline=None)
@given(line=lines)
@pytest.mark.subprocess
def test_every_line_gets_exactly_one_response_and_the_server_stays_up(
    server: LineServer, line: bytes
) -> None:
    server.send(line)
    response = server.next_response()
    try:  # as JSON reads it: json.dumps writes inf as Infinity, which is no JSON (nor to pi)
        sent: dict[str, Any] | list[Any] | str | int | float | bool | None = json.loads(
            line, parse_constant=_no_constant
        )
    except ValueError:
        sent = None
    if isinstance(sent, dict) and isinstance(sent.get("id"), str) and isinstance(sent.get("type"), str):
        assert response["id"] == sent["id"]
        assert response["command"] == sent["type"]
    if not response["success"]:
        assert response["error"]  # says what was wrong
    assert server.process.poll() is None


def _no_constant(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def test_framing_splits_on_lf_only(server: LineServer, tmp_path: Path) -> None:
    """U+2028/U+2029 inside a string stay in the record; CRLF is accepted."""
    name = "line\u2028separator\u2029paragraph\x0cfeed"
    server.send(
        json.dumps({"id": "n", "type": "set_session_name", "name": name}, ensure_ascii=False).encode()
    )
    assert server.next_response()["success"] is True
    server.send(b'{"id":"s","type":"get_state"}\r')
    state = server.next_response()
    assert state["id"] == "s" and state["data"]["sessionName"] == name


@pytest.mark.subprocess
@pytest.mark.parametrize("depth", [100_000, 5_000])
def test_deeply_nested_json_is_one_error_with_its_id(server: LineServer, depth: int) -> None:
    """Issue 14, class 7: nesting deeper than Python's parser allows is a parse error that still
    names the request's id, and the server answers the next command."""
    nested = b"[" * depth + b"]" * depth
    server.send(b'{"type":"prompt","id":"deep","message":' + nested + b"}")
    response = server.next_response()
    assert response["id"] == "deep" and response["success"] is False
    assert "nested too deeply" in response["error"]
    server.send(b'{"type":"get_state","id":"after"}')
    assert server.next_response()["id"] == "after"
    assert server.process.poll() is None


@pytest.mark.subprocess
def test_numeric_ids_are_echoed_as_sent(server: LineServer) -> None:
    """Issue 14.7: pi's clients send string ids, JSON-RPC habits send numbers: both come back as
    they were sent, for an answer, an unknown command, bad parameters and a line cut short."""
    for line, expected in (
        (b'{"type":"get_state","id":7}', 7),
        (b'{"type":"get_state","id":"7"}', "7"),
        (b'{"type":"get_state","id":2.5}', 2.5),
        (b'{"type":"teleport","id":8}', 8),
        (b'{"type":"set_thinking_level","id":9,"level":"enormous"}', 9),
        (b'{"type":"get_state","id":10,', 10),
    ):
        server.send(line)
        response = server.next_response()
        assert "id" in response and response["id"] == expected, line
        assert type(response["id"]) is type(expected), line
    server.send(b'{"type":"get_state","id":true}')
    response = server.next_response()
    assert "id" not in response  # neither a string nor a number: nothing to echo
    # and refused: a command without parameters skips its schema check only for an id it accepts
    assert response["success"] is False and response["error"].startswith("bad parameters for get_state: id")


@pytest.mark.subprocess
def test_json_the_fast_parser_refuses_is_still_read_as_json_reads_it(server: LineServer) -> None:
    """Lines are parsed natively first; what that parser refuses but JSON allows (a lone surrogate
    escape, a byte-order mark) is still a command, and a real syntax error keeps json's wording."""
    server.send(b'{"type":"get_state","id":"lone","note":"\\ud800"}')
    response = server.next_response()
    assert response["id"] == "lone" and response["success"] is True
    server.send(b'\xef\xbb\xbf{"type":"get_state","id":"bom"}')
    response = server.next_response()
    assert response["id"] == "bom" and response["success"] is True
    server.send(b'{"type":"get_state","id":"cut",')
    response = server.next_response()
    assert response["id"] == "cut" and response["success"] is False
    assert response["error"].startswith("Failed to parse command: Expecting property name")


def _strict(raw: bytes) -> dict[str, Any]:
    """A frame as a strict JSON reader reads it: UTF-8, and no ``Infinity`` or ``NaN``."""

    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON: {raw[:200]!r}")

    return json.loads(raw.decode("utf-8"), parse_constant=refuse)


def _next_strict_response(server: LineServer) -> dict[str, Any]:
    while True:
        frame = _strict(server.frames.get(timeout=20))
        if frame["type"] == "response":
            return frame


@pytest.mark.subprocess
def test_ids_json_cannot_carry_back_are_one_short_error_and_the_frames_stay_json(server: LineServer) -> None:
    """An id past a float's range was echoed as ``Infinity`` (no JSON reader takes that line);
    5,000 digits gave Python's advice on ``sys.set_int_max_str_digits``; a lone surrogate escape
    (JSON allows it, UTF-8 cannot hold it) in an id got no answer at all (a traceback on stderr)."""
    for line, error in (
        (b'{"type":"get_state","id":1e999}', 'Failed to parse command: "id": a number out of range'),
        (b'{"type":"get_state","id":-1e400}', 'Failed to parse command: "id": a number out of range'),
        (b'{"type":"get_state","id":NaN}', "Failed to parse command: NaN is not JSON"),
        (
            b'{"type":"get_state","id":' + b"9" * 5000 + b"}",
            "Failed to parse command: a number of more than 4300 digits",
        ),
    ):
        server.send(line)
        response = _next_strict_response(server)
        assert "id" not in response and response["error"] == error, line
    server.send(b'{"type":"get_state","id":"x\\ud800y"}')
    assert _next_strict_response(server)["id"] == "x\ufffdy"


@pytest.mark.subprocess
def test_a_lone_surrogate_in_a_text_is_replaced_not_the_end_of_the_session(server: LineServer) -> None:
    """A name (or a prompt) with a lone surrogate escape could not be stored (UTF-8 cannot hold
    it): ``could not store session``. It is read as U+FFFD, as a UTF-8 decoder reads bad bytes."""
    server.send(b'{"type":"set_session_name","id":"n","name":"a\\udc00b"}')
    assert _next_strict_response(server)["success"] is True
    server.send(b'{"type":"get_state","id":"s"}')
    assert _next_strict_response(server)["data"]["sessionName"] == "a\ufffdb"


@pytest.mark.subprocess
def test_an_overlong_line_is_one_error_and_its_tail_never_runs(server: LineServer) -> None:
    """A command line past ``MAX_LINE_BYTES`` gets one error response, its bytes dropped as they
    come (whatever stood at its tail never runs), and the next line is read as usual."""
    padding = b" " * (MAX_LINE_BYTES + (3 << 20))  # whitespace: what is left after a cut parses
    server.send(padding + b'{"type":"get_state","id":"tail"}')
    server.send(b'{"type":"get_state","id":"next"}')
    first = server.next_response()
    assert first["command"] == "parse" and not first["success"] and "skipped to its end" in first["error"]
    second = server.next_response()
    assert second["id"] == "next" and second["success"]  # "tail" never answered
