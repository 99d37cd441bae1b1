"""``RpcClient``: drive ``tether --mode rpc`` (or any server of the protocol) from asyncio.

    async with RpcClient.spawn(["--model", "anthropic/claude-sonnet-4-5"]) as client:
        events = client.events()                  # subscribe first: frames are not buffered for nobody
        result = await client.prompt("Hello")     # returns when the run has settled
        state = await client.get_state()

The same client drives pi's own RPC mode (``pi --mode rpc``, 1.x): ``connect(argv,
expect_ready=False)`` does not wait for tether's ``ready`` frame, and ``prompt()`` then settles on
pi's ``agent_settled`` event (building the ``prompt_result`` tether would have sent from it and the
run's last assistant message) instead of waiting for tether's ``prompt_result``; pi 0.73 sends no
``agent_settled``, so there its ``agent_end`` (the one without 1.x's ``willRetry``) settles it.
Accessors tolerate pi's empty answers (``data: {}`` when there is nothing to report).

Every command has a method that sends it, waits for its response and returns its ``data``
(raising ``RpcError`` with the server's message on failure). Frames are decoded as plain dicts —
open records keep every key, also those this version does not know — and a frame whose ``type``
this client does not know arrives as an ``UnknownFrame`` rather than being dropped or failing.

The child process is ours: closing the client (leaving the ``async with``) closes its stdin, which
makes the server finish its session write and exit; a server that does not exit in time gets
SIGTERM, then SIGKILL, and is always reaped. Because the server also exits when its stdin closes,
a client process that dies without closing leaves no orphan behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, cast

from tether.errors import TransportError
from tether.rpc import protocol as p
from tether.rpc.jsonl import LineSplitter, encode_frame
from tether.wire import AgentMessage, ImageContent, ModelInfo

KNOWN_FRAME_TYPES = frozenset({"ready", "response", "prompt_result", "extension_ui_request", *p.EVENT_TYPES})
_STDERR_KEEP = 8192


class RpcError(TransportError):
    """A command failed (``success: false``) or the server is gone; ``command`` names the command."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"{command}: {message}")
        self.command = command
        self.message = message


@dataclass(frozen=True, slots=True)
class UnknownFrame:
    """A frame of a type this client does not know (a newer server); ``data`` is all of it."""

    type: str
    data: dict[str, Any]


ServerEvent = p.ServerFrame | UnknownFrame
"""What ``events()`` yields: a known frame (a dict) or an ``UnknownFrame``."""


class _Subscription:
    """One ``events()`` consumer: a queue the reader fills; ``None`` marks the end."""

    def __init__(self, client: RpcClient) -> None:
        self._client = client
        self.queue: asyncio.Queue[ServerEvent | None] = asyncio.Queue()

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> ServerEvent:
        item = await self.queue.get()
        if item is None:
            self._client.unsubscribe(self)
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        self._client.unsubscribe(self)


class RpcClient:
    """See the module docstring. Create with ``RpcClient.spawn(args)`` or ``RpcClient.connect``."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ready: p.ReadyFrame | None = None
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._prompts: dict[str, asyncio.Future[p.PromptResultFrame]] = {}
        self._settling: dict[str, asyncio.Future[p.PromptResultFrame]] = {}
        """Prompts to a pi server (no ``prompt_result``): settled by the next ``agent_settled``."""
        self._last_assistant: dict[str, Any] | None = None
        self._subscribers: list[_Subscription] = []
        self._ready = asyncio.get_running_loop().create_future()
        self._write_lock = asyncio.Lock()
        self._stderr = bytearray()
        self._closed = False
        self._tasks = [asyncio.ensure_future(self._read_stdout()), asyncio.ensure_future(self._read_stderr())]

    # -- lifecycle ---------------------------------------------------------------------------------

    @classmethod
    def spawn(
        cls,
        args: Sequence[str] = (),
        *,
        program: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = 30.0,
    ) -> _Spawn:
        """Start ``tether --mode rpc ARGS`` (``program`` replaces ``tether``: default, this Python's
        ``-m tether.cli``). Use as ``async with``; the client is usable once ``ready`` arrived."""
        argv = [*(program or (sys.executable, "-m", "tether.cli")), "--mode", "rpc", *args]
        return _Spawn(cls, argv, cwd, env, ready_timeout)

    @classmethod
    async def connect(cls, argv: Sequence[str], *, expect_ready: bool = True, **kwargs: Any) -> RpcClient:
        """Start ``argv`` as it is (a server of the protocol) and wait for its ``ready`` frame;
        with ``expect_ready=False`` (pi, which sends none) return at once."""
        ready_timeout: float = kwargs.pop("ready_timeout", 30.0)
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            **kwargs,
        )
        client = cls(process)
        if not expect_ready:
            return client
        try:
            client.ready = await asyncio.wait_for(asyncio.shield(client._ready), ready_timeout)
        except BaseException:
            await client.close()
            raise
        return client

    @property
    def stderr(self) -> str:
        """The end of what the server wrote to stderr (for error reports)."""
        return self._stderr.decode(errors="replace")

    async def close(self, timeout: float = 10.0) -> int:
        """End the server: close its stdin, wait; then SIGTERM, then SIGKILL. Returns its exit code."""
        process = self.process
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            code = await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                code = await asyncio.wait_for(process.wait(), 3)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                code = await process.wait()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._fail_all("the client was closed")
        return code

    # -- frames ------------------------------------------------------------------------------------

    def events(self) -> _Subscription:
        """Frames from now on (events, ``prompt_result``, ``ready``; not responses) as they come.

        Subscribe before sending the command whose events you want; frames nobody is subscribed
        to are not kept. The iterator ends when the server's output ends."""
        subscription = _Subscription(self)
        if self._closed:
            subscription.queue.put_nowait(None)
        self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: _Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    async def request(self, command: str, /, **params: Any) -> Any:
        """Send any command; return its ``data`` (``None`` when it has none)."""
        response = await self._send(command, params)
        return response.get("data")

    async def _send(self, command: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise RpcError(command, f"the server is gone{self._stderr_note()}")
        request_id = f"py-{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame = {"id": request_id, "type": command, **{k: v for k, v in params.items() if v is not None}}
        try:
            await self._write(frame)
            response = await future
        finally:  # a call that failed to write, or its caller gave up on: nothing left pending
            self._pending.pop(request_id, None)
        if not response.get("success"):
            raise RpcError(command, str(response.get("error") or "failed"))
        return response

    async def _write(self, frame: Mapping[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        async with self._write_lock:
            try:
                stdin.write(encode_frame(frame))
                await stdin.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise RpcError(str(frame.get("type")), f"cannot write to the server: {exc}") from None

    async def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        splitter = LineSplitter()
        try:
            while chunk := await stdout.read(1 << 16):
                for line in splitter.feed(chunk):
                    self._on_line(line)
            last = splitter.finish()
            if last is not None:
                self._on_line(last)
        finally:
            self._closed = True
            self._fail_all(f"the server's output ended{self._stderr_note()}")

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(1 << 14):
            self._stderr += chunk
            del self._stderr[:-_STDERR_KEEP]

    def _on_line(self, line: bytes) -> None:
        try:
            decoded: object = json.loads(line)
        except ValueError:
            return  # not a frame (the protocol never writes one): nothing to deliver
        if not isinstance(decoded, dict):
            return
        frame = cast(dict[str, Any], decoded)
        kind = frame.get("type")
        if kind == "response":
            future = self._pending.pop(str(frame.get("id")), None)
            if future is not None and not future.done():
                future.set_result(frame)
            return
        if kind == "ready" and not self._ready.done():
            self._ready.set_result(frame)
        elif kind == "prompt_result":
            waiter = self._prompts.pop(str(frame.get("id")), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(cast(p.PromptResultFrame, frame))
        elif (
            kind == "message_end"
            and cast(dict[str, Any], frame.get("message") or {}).get("role") == "assistant"
        ):
            self._last_assistant = cast(dict[str, Any], frame["message"])
        elif kind == "agent_settled" and self.ready is None:
            self._settle(bool(frame.get("aborted")))
        elif kind == "agent_end" and self.ready is None and "willRetry" not in frame:
            # pi before 1.0 (0.73) sends no agent_settled: its own client waits for agent_end,
            # which there comes once a run is over (1.x marks each agent_end with willRetry).
            self._settle(False)
        event: ServerEvent = (
            cast(p.ServerFrame, frame) if kind in KNOWN_FRAME_TYPES else UnknownFrame(str(kind), frame)
        )
        for subscription in self._subscribers:
            subscription.queue.put_nowait(event)

    def _settle(self, aborted: bool) -> None:
        """A pi server's run settled: every prompt it took gets the ``prompt_result`` tether sends."""
        last = self._last_assistant or {}
        error = last.get("errorMessage") or "the model request failed"
        for request_id, waiter in list(self._settling.items()):
            if waiter.done():
                continue
            result: p.PromptResultFrame = {"type": "prompt_result", "id": request_id, "status": "completed"}
            if aborted or last.get("stopReason") == "aborted":
                result["status"] = "aborted"
            elif last.get("stopReason") == "error":
                result.update(status="error", error=str(error))
            waiter.set_result(result)
        self._settling.clear()
        self._last_assistant = None

    def _fail_all(self, why: str) -> None:
        for futures in (self._pending, self._prompts, self._settling):
            for command_id, future in list(futures.items()):
                if not future.done():
                    future.set_exception(RpcError(f"request {command_id}", why))
            futures.clear()
        if not self._ready.done():
            self._ready.set_exception(RpcError("ready", why))
            self._ready.exception()  # retrieved: no "never retrieved" warning when nobody waits
        for subscription in self._subscribers:
            subscription.queue.put_nowait(None)

    def _stderr_note(self) -> str:
        tail = self.stderr.strip().splitlines()[-5:]
        code = self.process.returncode
        return (f" (exit code {code})" if code is not None else "") + (
            ": " + " | ".join(tail) if tail else ""
        )

    # -- prompting ---------------------------------------------------------------------------------

    async def prompt(
        self,
        message: str,
        images: Sequence[ImageContent] | None = None,
        *,
        streaming_behavior: Literal["steer", "followUp"] | None = None,
    ) -> p.PromptResultFrame:
        """Send a prompt and wait until its run has settled: the ``prompt_result`` frame (from a pi
        server, built when ``agent_settled`` comes; at once for a prompt pi ``handled``)."""
        if self._closed:
            raise RpcError("prompt", f"the server is gone{self._stderr_note()}")
        request_id = f"py-{next(self._ids)}"
        settled: asyncio.Future[p.PromptResultFrame] = asyncio.get_running_loop().create_future()
        waiters = self._prompts if self.ready is not None else self._settling
        waiters[request_id] = settled
        accepted: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = accepted
        frame: dict[str, Any] = {"id": request_id, "type": "prompt", "message": message}
        if images:
            frame["images"] = list(images)
        if streaming_behavior is not None:
            frame["streamingBehavior"] = streaming_behavior
        try:
            await self._write(frame)
            response = await accepted
            if not response.get("success"):
                raise RpcError("prompt", str(response.get("error") or "failed"))
            if cast(dict[str, Any], response.get("data") or {}).get("disposition") == "handled":
                return {"type": "prompt_result", "id": request_id, "status": "completed"}
            return await settled
        finally:
            waiters.pop(request_id, None)
            self._pending.pop(request_id, None)

    async def answer_extension_ui(
        self,
        request_id: str,
        *,
        value: str | None = None,
        confirmed: bool | None = None,
        cancelled: bool = False,
    ) -> None:
        """Answer an ``extension_ui_request`` dialog (from ``events()``): ``confirmed`` for a
        ``confirm``, ``value`` for a ``select`` or ``input``, or ``cancelled``. No response comes."""
        frame: dict[str, Any] = {"type": "extension_ui_response", "id": request_id}
        if cancelled:
            frame["cancelled"] = True
        if confirmed is not None:
            frame["confirmed"] = confirmed
        if value is not None:
            frame["value"] = value
        await self._write(frame)

    async def steer(self, message: str, images: Sequence[ImageContent] | None = None) -> str | None:
        """Queue a steering message; returns its disposition (``queued``; ``None`` from a server
        older than pi 1.x)."""
        response = await self._send("steer", {"message": message, "images": list(images) if images else None})
        return cast(dict[str, Any], response.get("data") or {}).get("disposition")

    async def follow_up(self, message: str, images: Sequence[ImageContent] | None = None) -> str | None:
        """Queue a follow-up message; returns its disposition, as ``steer``."""
        response = await self._send(
            "follow_up", {"message": message, "images": list(images) if images else None}
        )
        return cast(dict[str, Any], response.get("data") or {}).get("disposition")

    async def clear_queue(self) -> p.ClearedQueue:
        return await self.request("clear_queue")

    async def abort(self) -> None:
        await self._send("abort", {})

    async def new_session(self, parent_session: str | None = None) -> p.CancelledResult:
        return await self.request("new_session", parentSession=parent_session)

    # -- state, model, thinking --------------------------------------------------------------------

    async def get_state(self) -> p.SessionState:
        return await self.request("get_state")

    async def get_messages(self) -> list[AgentMessage]:
        return _field(await self.request("get_messages"), "messages", [])

    async def set_model(self, provider: str, model_id: str) -> ModelInfo:
        return await self.request("set_model", provider=provider, modelId=model_id)

    async def cycle_model(self) -> p.CycleModelResult | None:
        return await self.request("cycle_model")

    async def get_available_models(self) -> list[ModelInfo]:
        return _field(await self.request("get_available_models"), "models", [])

    async def set_thinking_level(self, level: str) -> None:
        await self._send("set_thinking_level", {"level": level})

    async def cycle_thinking_level(self) -> p.ThinkingLevelResult | None:
        return await self.request("cycle_thinking_level")

    async def get_available_thinking_levels(self) -> list[str]:
        """The levels the current model accepts (``["off"]`` when it does not reason; pi 1.x)."""
        return _field(await self.request("get_available_thinking_levels"), "levels", [])

    async def set_steering_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        await self._send("set_steering_mode", {"mode": mode})

    async def set_follow_up_mode(self, mode: Literal["all", "one-at-a-time"]) -> None:
        await self._send("set_follow_up_mode", {"mode": mode})

    # -- compaction, retry, bash -------------------------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> p.CompactionResult:
        return await self.request("compact", customInstructions=custom_instructions)

    async def set_auto_compaction(self, enabled: bool) -> None:
        await self._send("set_auto_compaction", {"enabled": enabled})

    async def set_auto_retry(self, enabled: bool) -> None:
        await self._send("set_auto_retry", {"enabled": enabled})

    async def abort_retry(self) -> None:
        await self._send("abort_retry", {})

    async def bash(self, command: str, *, exclude_from_context: bool = False) -> p.BashResult:
        """Run ``command``; its output also streams as ``bash_execution_update`` events.
        ``exclude_from_context``: record it in the session but never send it to the model."""
        return await self.request("bash", command=command, excludeFromContext=exclude_from_context or None)

    async def abort_bash(self) -> None:
        await self._send("abort_bash", {})

    # -- sessions ----------------------------------------------------------------------------------

    async def get_session_stats(self) -> p.SessionStats:
        return await self.request("get_session_stats")

    async def export_html(self, output_path: str | None = None) -> str:
        return _field(await self.request("export_html", outputPath=output_path), "path", "")

    async def export(self, output_path: str | None = None) -> str:
        return _field(await self.request("export", outputPath=output_path), "path", "")

    async def switch_session(self, session_path: str) -> p.CancelledResult:
        """Continue another session: what ``get_state`` reported as ``sessionFile`` (pi and
        tether), or a tether session id."""
        return await self.request("switch_session", sessionPath=session_path)

    async def fork(self, entry_id: str) -> p.ForkResult:
        return await self.request("fork", entryId=entry_id)

    async def clone(self) -> p.CancelledResult:
        return await self.request("clone")

    async def get_entries(self, since: str | None = None) -> p.EntriesResult:
        return await self.request("get_entries", since=since)

    async def get_tree(self) -> p.TreeResult:
        return await self.request("get_tree")

    async def get_fork_messages(self) -> list[p.ForkMessage]:
        return _field(await self.request("get_fork_messages"), "messages", [])

    async def get_last_assistant_text(self) -> str | None:
        return _field(await self.request("get_last_assistant_text"), "text", None)

    async def set_session_name(self, name: str) -> None:
        await self._send("set_session_name", {"name": name})

    async def get_commands(self) -> list[p.SlashCommandInfo]:
        return _field(await self.request("get_commands"), "commands", [])

    # -- tether additions --------------------------------------------------------------------------

    async def set_event_filter(
        self,
        *,
        exclude: Sequence[str] | None = None,
        message_update: Literal["full", "delta"] | None = None,
    ) -> p.EventFilter:
        return await self.request(
            "set_event_filter",
            exclude=list(exclude) if exclude is not None else None,
            messageUpdate=message_update,
        )

    async def shutdown(self) -> None:
        """Ask the server to exit (it answers first); ``close`` still reaps it."""
        await self._send("shutdown", {})


def _field(data: object, key: str, default: Any) -> Any:
    """``data[key]``, or ``default`` where the server left it out: pi answers ``data: {}`` (or no
    ``data``) when there is nothing to say, e.g. ``get_last_assistant_text`` before any reply."""
    if isinstance(data, dict):
        value = cast(dict[str, Any], data).get(key)
        if value is not None:
            return value
    return default


class _Spawn:
    """``async with RpcClient.spawn(...) as client``: start, wait for ``ready``; close on exit."""

    def __init__(
        self,
        client_class: type[RpcClient],
        argv: list[str],
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
        ready_timeout: float,
    ) -> None:
        self._class = client_class
        self._argv = argv
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._timeout = ready_timeout
        self._client: RpcClient | None = None

    async def __aenter__(self) -> RpcClient:
        self._client = await self._class.connect(
            self._argv, cwd=self._cwd, env=self._env, ready_timeout=self._timeout
        )
        return self._client

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._client is not None:
            await self._client.close()
