"""Run one scripted conversation against real pi 1.6.0 (``pi --mode rpc``) and against
``tether --mode rpc``, recording every frame, so a test can compare their shapes.

Both talk to the same faux OpenAI-compatible server on 127.0.0.1 (``FauxOpenAI``), which plays
a list of replies in order: pi finds it through its own ``models.json``
(``PI_CODING_AGENT_DIR``), tether through its ``models.json`` (``$TETHER_HOME/config``). The
same replies, streamed the same way, reach both; what differs in the frames is then the
agents' doing.

``comparable`` turns a step's frames into skeletons (keys, JSON types, lists element by element),
so ids, timestamps, texts and numbers do not count, leaving out what differs on purpose; each
such exception is named there and in docs/rpc.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

Frame = dict[str, Any]


def text(*chunks: str) -> dict[str, Any]:
    """A faux reply streaming ``chunks`` as text."""
    return {"text": list(chunks)}


def failure(status: int, message: str) -> dict[str, Any]:
    """A faux reply that is an HTTP error with an OpenAI-style body."""
    return {"status": status, "message": message}


def broken_stream(first: str, message: str) -> dict[str, Any]:
    """A faux reply that streams ``first``, then an in-stream error: too late for a provider to
    retry the request, so the agent's own retry (``auto_retry_*``) takes over."""
    return {"text": [first], "error": message}


def bash_call(command: str, call_id: str) -> dict[str, Any]:
    """A faux reply calling the bash tool."""
    return {"tools": [{"id": call_id, "name": "bash", "arguments": {"command": command}}]}


def bash_calls(*commands: tuple[str, str]) -> dict[str, Any]:
    """A faux reply calling the bash tool once per ``(command, call id)``, in one turn."""
    return {"tools": [{"id": i, "name": "bash", "arguments": {"command": c}} for c, i in commands]}


def thinking_text(thinking: str, *chunks: str) -> dict[str, Any]:
    """A faux reply that reasons first (``reasoning_content``, as DeepSeek-style servers stream
    it), then streams ``chunks`` as text."""
    return {"thinking": [thinking], "text": list(chunks)}


class _FauxHandler(BaseHTTPRequestHandler):
    replies: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    lock: threading.Lock

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # GET /v1/models: tether asks a local server what it serves
        payload = json.dumps({"object": "list", "data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            self.requests.append(body)
            reply = self.replies.pop(0) if self.replies else text("(no reply left)")
        if "status" in reply:
            kind = "server_error" if reply["status"] >= 500 else "invalid_request_error"
            payload = json.dumps({"error": {"message": reply["message"], "type": kind}}).encode()
            self.send_response(reply["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in reply.get("thinking", ()):
            self._chunk({"delta": {"role": "assistant", "reasoning_content": piece}})
        if "tools" in reply:
            for index, tool in enumerate(reply["tools"]):
                call = {
                    "index": index,
                    "id": tool["id"],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": ""},
                }
                self._chunk({"delta": {"role": "assistant", "tool_calls": [call]}})
                arguments = json.dumps(tool["arguments"])
                self._chunk(
                    {"delta": {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}}
                )
            finish = "tool_calls"
        else:
            for piece in reply["text"]:
                self._chunk({"delta": {"content": piece}})
            if "error" in reply:
                self._chunk_raw({"error": {"message": reply["error"], "type": "server_error", "code": 503}})
                self.wfile.write(b"data: [DONE]\n\n")
                return
            finish = "stop"
        self._chunk({"delta": {}, "finish_reason": finish})
        self._chunk_raw(
            {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}
        )
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _chunk(self, choice: dict[str, Any]) -> None:
        self._chunk_raw({"choices": [{"index": 0, **choice}]})

    def _chunk_raw(self, extra: dict[str, Any]) -> None:
        chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "faux-1", **extra}
        try:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        except OSError:  # the agent aborted the request
            pass


@dataclass
class FauxOpenAI:
    """The faux server's address and the requests it got."""

    base_url: str
    requests: list[dict[str, Any]]


@contextmanager
def faux_openai(replies: Sequence[Mapping[str, Any]]) -> Generator[FauxOpenAI, None, None]:
    """Serve ``replies`` one per ``POST /v1/chat/completions``, in order."""
    requests: list[dict[str, Any]] = []
    handler = type(
        "Handler",
        (_FauxHandler,),
        {"replies": [dict(r) for r in replies], "requests": requests, "lock": threading.Lock()},
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FauxOpenAI(f"http://127.0.0.1:{server.server_address[1]}/v1", requests)
    finally:
        server.shutdown()
        server.server_close()


def models_json(base_url: str, **key: str) -> dict[str, Any]:
    """One provider, two models (so ``cycle_model`` has somewhere to go), both reasoning.
    ``key``: how the agent finds the API key (pi: ``apiKey``; tether keeps keys out of the file)."""
    model = {"reasoning": True, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096}
    return {
        "providers": {
            "faux": {
                "baseUrl": base_url,
                "api": "openai-completions",
                **key,
                "models": [{"id": "faux-1", **model}, {"id": "faux-2", **model}],
            }
        }
    }


SETTINGS = {"compaction": {"keepRecentTokens": 1}, "retry": {"baseDelayMs": 20, "maxRetries": 2}}
"""The same settings for both (pi's and tether's settings files share these keys)."""


class Driver:
    """A raw JSONL connection to an agent's RPC mode: send commands, read every frame."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.frames: list[Frame] = []
        self._changed = asyncio.Condition()
        self._next_id = 0
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        while chunk := await self.process.stdout.read(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            async with self._changed:
                self.frames.extend(json.loads(line) for line in lines if line.strip())
                self._changed.notify_all()

    def mark(self) -> int:
        """A position in ``frames``: the frames from here on belong to what comes next."""
        return len(self.frames)

    def write(self, command: Mapping[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        data = command if isinstance(command, bytes) else json.dumps(command).encode()
        self.process.stdin.write(data + b"\n")

    async def wait_for(self, test: Callable[[Frame], bool], since: int, timeout: float = 60) -> Frame:
        """The first frame from ``since`` on for which ``test(frame)`` holds."""

        async def find() -> Frame:
            async with self._changed:
                while True:
                    for frame in self.frames[since:]:
                        if test(frame):
                            return frame
                    await self._changed.wait()

        return await asyncio.wait_for(find(), timeout)

    async def command(self, kind: str, **params: Any) -> Frame:
        """Send one command with a fresh string id; its response."""
        self._next_id += 1
        request_id = f"req-{self._next_id}"
        since = self.mark()
        self.write({"id": request_id, "type": kind, **params})
        return await self.wait_for(lambda f: f.get("type") == "response" and f.get("id") == request_id, since)

    async def settled(self, since: int) -> Frame:
        return await self.wait_for(lambda f: f.get("type") == "agent_settled", since)

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        await self._reader


@dataclass
class Agent:
    """How to start one of the two agents on the faux server."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path

    async def start(self) -> Driver:
        process = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return Driver(process)


def pi_agent(node: str, package: Path, base_url: str, root: Path) -> Agent:
    agent_dir, home, work = root / "pi-agent", root / "pi-home", root / "pi-work"
    for folder in (agent_dir, home, work):
        folder.mkdir(parents=True)
    (agent_dir / "models.json").write_text(json.dumps(models_json(base_url, apiKey="faux-key")))
    (agent_dir / "settings.json").write_text(json.dumps(SETTINGS))
    env = {
        "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
    }
    argv = [node, str(package / "dist" / "bundle" / "cli.js"), "--mode", "rpc"]
    argv += ["--session-dir", str(root / "pi-sessions"), "--provider", "faux", "--model", "faux-1"]
    return Agent("pi", argv, env, work)


def tether_agent(base_url: str, root: Path) -> Agent:
    home, work = root / "tether-home", root / "tether-work"
    for folder in (home / "config", work):
        folder.mkdir(parents=True)
    (home / "config" / "models.json").write_text(json.dumps(models_json(base_url, apiKeyEnv="FAUX_KEY")))
    (home / "config" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "TETHER_SCRIPTED"}
    env.update({"TETHER_HOME": str(home), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", "FAUX_KEY": "faux-key"})
    argv = [sys.executable, "-m", "tether.cli", "--mode", "rpc", "--yes"]
    argv += ["--provider", "faux", "--model", "faux-1"]
    return Agent("tether", argv, env, work)


# -- shapes ----------------------------------------------------------------------------------------

TETHER_ADDITIONS = frozenset({"ready", "prompt_result"})
"""Frames only tether writes (docs/rpc.md, "Additions"); a pi client ignores them."""

_ONE_SIDED: dict[str, frozenset[str]] = {
    # Message fields the agent loops record differently (agent/ and ai/ territory, not the
    # protocol's): pi 1.6 adds rawStopReason (the provider's own finish reason); tether keeps
    # duration, completedAt, ttft; tool results carry each side's own details. Both stamp
    # durationMs and thinkingLevel (tether.session.message_stamps).
    "message": frozenset(
        {
            "rawStopReason",
            "duration",
            "completedAt",
            "ttft",
            "details",
            "tokensAfter",
            "errorStatus",
        }
    ),
    "usage": frozenset({"reasoning"}),  # pi-ai 1.6's reasoning token count
    "cost": frozenset({"totalFromProvider"}),
    "tool_result": frozenset({"details", "terminate", "structuredContent"}),
    "compaction": frozenset({"tokensAfter"}),  # 0.73's name kept
    "state": frozenset({"autoRetryEnabled"}),  # tether addition
    "model_change": frozenset({"model"}),  # tether keeps the whole model in the entry
    "header": frozenset({"model", "thinkingLevel"}),  # tether's JSON-mode header says them too
}


def _kind(value: Mapping[str, Any]) -> str | None:
    if "role" in value:
        return "message"
    if "totalTokens" in value:
        return "usage"
    if "cacheWrite" in value and "total" in value:
        return "cost"
    if "content" in value and {"details", "terminate", "structuredContent"} & value.keys():
        return "tool_result"
    if "firstKeptEntryId" in value:
        return "compaction"
    if "steeringMode" in value:
        return "state"
    if value.get("type") == "model_change":
        return "model_change"
    if value.get("type") == "session":
        return "header"
    return None


def _is_system_prompt(value: object) -> bool:
    """pi 1.6 puts the system prompt in the conversation as a ``system`` message (and entry);
    tether keeps it aside, recording changes as ``tether.system_prompt_change`` entries."""
    if not isinstance(value, dict):
        return False
    item = cast(dict[str, Any], value)
    if isinstance(item.get("entry"), dict):  # a tree node
        return _is_system_prompt(item["entry"])
    if item.get("customType") == "tether.system_prompt_change":
        return True
    message = item.get("message") if item.get("type") in ("message", "message_start", "message_end") else item
    return isinstance(message, dict) and cast(dict[str, Any], message).get("role") == "system"


def _flat_tree(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tree's nodes in depth-first order, each without its children (depth differs only by
    the system prompt's entry, which one side has and the other leaves out)."""
    flat: list[dict[str, Any]] = []
    for node in nodes:
        flat.append({k: v for k, v in node.items() if k != "children"})
        flat.extend(_flat_tree(node["children"]))
    return flat


BY_VALUE = frozenset({"type", "role", "stopReason", "reason", "source", "event", "disposition"})
"""Keys whose string values are compared as they are, not by type: what kind of frame, message,
block or entry it is, why a reply stopped (``pending`` while it streams), why a compaction ran,
what a summary retry or an extension error was about, and what became of a prompt (``started``,
``queued``, or ``handled`` for an extension's command, which starts no run)."""


def skeleton(value: object, key: str | None = None) -> object:
    """The skeleton of a JSON value: objects become their keys (sorted, less the fields one side
    records and the other does not, ``_ONE_SIDED``) with their values' skeletons, lists their
    elements' skeletons (system-prompt messages and entries left out), scalars their JSON type
    (the strings under a ``BY_VALUE`` key themselves). A user message's plain-string content
    counts as its one text block (both are pi's forms)."""
    if isinstance(value, dict):
        item = cast(dict[str, Any], value)
        if item.get("role") == "user" and isinstance(item.get("content"), str):
            item = {**item, "content": [{"type": "text", "text": item["content"]}]}
        if isinstance(item.get("tree"), list):
            item = {**item, "tree": _flat_tree(item["tree"])}
        if "contextWindow" in item and "percent" in item:
            # pi says null until a reply after a compaction reports usage; tether estimates at once
            return {
                k: "number|null" if item[k] is None or k != "contextWindow" else "number"
                for k in sorted(item)
            }
        drop = _ONE_SIDED.get(_kind(item) or "", frozenset())
        return {k: skeleton(item[k], k) for k in sorted(item) if k not in drop}
    if isinstance(value, list):
        return [skeleton(v) for v in cast(list[object], value) if not _is_system_prompt(v)]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return value if key in BY_VALUE else "string"


def _pi_only(frame: Frame) -> bool:
    if frame["type"] == "tool_execution_update":
        return not frame["partialResult"]["content"]
    return frame["type"] == "entry_appended" and frame["entry"]["type"] == "context_edit"


def counted(frames: Sequence[Frame], agent: str) -> list[Frame]:
    """The frames of one step that count, less what differs on purpose (docs/rpc.md, "pi
    versions"): tether's additions; pi's system-prompt message events; pi's first, empty
    ``tool_execution_update`` (its bash tool reports "no output yet"; tether's first update
    comes with output); pi's ``entry_appended`` for the ``context_edit`` entry that takes a failed
    reply out of the context before a retry (tether moves the session's leaf instead: no new
    entry). ``get_commands`` lists each agent's own commands (pi has built-in
    extension commands), so only its form counts. A report of where two steps part shows these
    frames: the n-th of ``comparable`` is the n-th of these, not of the step's."""
    kept: list[Frame] = []
    for frame in frames:
        if agent == "tether" and frame["type"] in TETHER_ADDITIONS:
            continue
        if agent == "pi" and _is_system_prompt(frame):
            continue
        if agent == "pi" and _pi_only(frame):
            continue
        if frame.get("command") == "get_commands" and frame.get("success"):
            frame = {**frame, "data": {"commands": list[str]()}}
        kept.append(frame)
    return kept


def _timed(value: object) -> object:
    """``value`` with pi 1.6's replies that failed before their request (empty, no tokens: pi-ai's
    ``lazyStream`` made them when its set-up failed, as an abort during a tool makes the next
    turn's) stamped ``durationMs`` where pi left it out. pi means to time them: ``lazyStream``
    dates such a reply by a ``Date.now()`` read just before its stream reads its own start, and
    the stream leaves a reply dated before its start untimed (pi-ai ``dist/api/lazy.js``,
    ``utils/event-stream.js``), so a millisecond ticking between the two reads, now and then
    under load, drops the field. That toss is pi's, not a shape tether should copy."""
    if isinstance(value, list):
        return [_timed(v) for v in cast(list[object], value)]
    if not isinstance(value, dict):
        return value
    item = {k: _timed(v) for k, v in cast(dict[str, Any], value).items()}
    usage = item.get("usage")
    if (
        item.get("role") == "assistant"
        and item.get("stopReason") in ("aborted", "error")
        and item.get("content") == []
        and isinstance(usage, dict)
        and cast(dict[str, Any], usage).get("totalTokens") == 0
        and "durationMs" not in item
    ):
        item["durationMs"] = 0
    return item


def comparable(frames: Sequence[Frame], agent: str) -> list[object]:
    """The skeletons of one step's frames that count (``counted``), pi's with its untimed
    failed-before-the-request replies timed (``_timed``)."""
    return [skeleton(_timed(frame) if agent == "pi" else frame) for frame in counted(frames, agent)]


def json_mode(agent: Agent, *prompts: str, args: Sequence[str] = ()) -> list[Frame]:
    """The lines of one ``--mode json`` run of ``agent`` with ``prompts`` (and ``args`` before
    them)."""
    at = agent.argv.index("--mode") + 1
    argv = [*agent.argv[:at], "json", *agent.argv[at + 1 :], *args, *prompts]
    done = subprocess.run(argv, cwd=agent.cwd, env=agent.env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, f"{agent.name} --mode json failed: {done.stderr.decode()[-2000:]}"
    return [json.loads(line) for line in done.stdout.split(b"\n") if line.strip()]


# -- the conversation ------------------------------------------------------------------------------

SPLIT_TURN_SUMMARY = text("SUMMARY: the turn cut in two")
"""pi summarises the turn its compaction cuts in two with a second call; tether keeps whole turns,
so its replies are ``REPLIES`` without this one."""

REPLIES = [
    text("Hello ", "there"),  # 1. prompt
    bash_call("sleep 1; echo tool-ran", "call_1"),  # 2. a tool call; steer and follow up meanwhile
    text("steered"),
    text("followed up"),
    bash_call("sleep 30", "call_2"),  # 3. abort during the tool
    text("SUMMARY: a short talk"),  # 7. compact
    SPLIT_TURN_SUMMARY,
    broken_stream("Hel", "503 Service Unavailable: overloaded"),  # 8. a retry that works
    text("second time lucky"),
    failure(400, "faux refuses"),  # 9. a failure that is not retried
]


def _is(kind: str) -> Callable[[Frame], bool]:
    return lambda f: f.get("type") == kind


async def abort_during_tool(driver: Driver) -> list[Frame]:
    """The frames of a prompt whose reply calls a tool that runs until ``abort`` is sent, once the
    call has started (the faux server's next reply: a long ``sleep``)."""
    since = driver.mark()
    await driver.command("prompt", message="abort me")
    await driver.wait_for(_is("tool_execution_start"), since)
    await driver.command("abort")
    await driver.settled(since)
    await asyncio.sleep(0.5)
    return driver.frames[since:]


async def conversation(driver: Driver) -> dict[str, list[Frame]]:
    """Every step a pi 1.6 client takes, the same for both agents; the frames of each step
    (``switch_session`` gets back the ``sessionFile`` the first ``get_state`` reported)."""
    steps: dict[str, list[Frame]] = {}

    async def step(name: str, *commands: tuple[str, dict[str, Any]]) -> None:
        since = driver.mark()
        for kind, params in commands:
            await driver.command(kind, **params)
        steps[name] = driver.frames[since:]

    await step(
        "idle",
        ("compact", {}),  # nothing to compact yet: an error, and compaction_end without a result
        ("steer", {"message": "early"}),
        ("follow_up", {"message": "later"}),
        ("clear_queue", {}),
    )
    since = driver.mark()
    await driver.command("prompt", message="hello")
    await driver.settled(since)
    steps["prompt"] = driver.frames[since:]
    first_state = await driver.command("get_state")

    since = driver.mark()
    await driver.command("prompt", message="run a tool")
    await driver.wait_for(_is("tool_execution_start"), since)
    await driver.command("prompt", message="no behaviour given")
    await driver.command("steer", message="steer this way")
    await driver.command("follow_up", message="and then this")
    await driver.command("prompt", message="queued prompt", streamingBehavior="followUp")
    await driver.command("clear_queue")
    await driver.command("follow_up", message="and then this")
    await driver.settled(since)
    steps["steer_follow_up"] = driver.frames[since:]

    steps["abort"] = await abort_during_tool(driver)

    entries = (await driver.command("get_entries"))["data"]["entries"]
    await step(
        "queries",
        ("get_state", {}),
        ("get_messages", {}),
        ("get_entries", {}),
        ("get_entries", {"since": entries[1]["id"]}),
        ("get_entries", {"since": "no-such-entry"}),
        ("get_tree", {}),
        ("get_fork_messages", {}),
        ("get_last_assistant_text", {}),
        ("get_session_stats", {}),
        ("get_commands", {}),
        ("get_available_thinking_levels", {}),
        ("get_available_models", {}),
    )
    await step(
        "model_thinking",
        ("set_thinking_level", {"level": "high"}),
        ("cycle_thinking_level", {}),
        ("set_model", {"provider": "faux", "modelId": "faux-2"}),
        ("cycle_model", {}),
        ("set_model", {"provider": "faux", "modelId": "nope"}),
        ("set_steering_mode", {"mode": "all"}),
        ("set_follow_up_mode", {"mode": "all"}),
        ("set_auto_compaction", {"enabled": True}),
        ("set_auto_retry", {"enabled": True}),
        ("abort_retry", {}),
        ("get_state", {}),
    )
    await step("bash", ("bash", {"command": "echo hi"}), ("abort_bash", {}))
    await step("compact", ("compact", {}), ("get_session_stats", {}), ("get_messages", {}))
    await step("export_html", ("export_html", {"outputPath": "out.html"}))

    since = driver.mark()
    await driver.command("prompt", message="try again")
    await driver.settled(since)
    await driver.command("get_session_stats")
    steps["retry"] = driver.frames[since:]

    since = driver.mark()
    await driver.command("prompt", message="this fails")
    await driver.settled(since)
    await driver.command("abort")  # idle: nothing to abort
    await driver.command("get_last_assistant_text")
    steps["model_error"] = driver.frames[since:]

    fork_from = (await driver.command("get_fork_messages"))["data"]["messages"][-1]["entryId"]
    await step(
        "sessions",
        ("set_session_name", {"name": "my work"}),
        ("fork", {"entryId": fork_from}),
        ("clone", {}),
        ("new_session", {}),
        ("get_messages", {}),
        ("get_entries", {}),
        ("switch_session", {"sessionPath": first_state["data"]["sessionFile"]}),
        ("get_state", {}),
    )
    since = driver.mark()
    driver.write(b"{not json")
    driver.write({"id": "e1", "type": "no_such_command"})
    await driver.wait_for(lambda f: f.get("id") == "e1", since)
    await driver.command("set_model", provider="faux")  # no modelId
    await driver.command("fork", entryId="no-such-entry")
    await driver.command("set_session_name", name="  ")
    steps["errors"] = driver.frames[since:]
    return steps
