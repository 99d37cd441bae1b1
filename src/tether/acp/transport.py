"""Newline-delimited JSON-RPC over stdio, answering what is not JSON-RPC instead of dropping it,
with memory bounded whatever the client does.

The SDK's own stdio transport logs a line that is not JSON and skips it, and takes any object for
a message, so a client that sent garbage would wait forever for an answer. JSON-RPC 2.0 asks for
an error response instead: ``-32700`` (parse error) for text that is not JSON, ``-32600``
(invalid request) for JSON that is not a request, notification or response; both with the
request's ``id`` when it can be read, else ``null``. This transport does exactly that and hands
everything else, untouched, to the SDK's ``Connection``, which still does all the dispatching
(unknown methods, invalid params).

Bounds, as the RPC transport has them (``tether.rpc.mode``):

- a line longer than ``MAX_MESSAGE_BYTES`` gets one ``-32600`` error and is skipped *to its end*:
  its bytes are dropped as they arrive (memory stays at one chunk), and whatever stood at its tail
  (a request padded in front) never runs; the next line is read normally. (asyncio's
  ``readline``, which the SDK uses, drops only what it has buffered and reads the rest as new
  lines: two errors, and the tail ran.)
- output goes through a pipe transport whose buffer is capped (``WRITE_HIGH_WATER``): a send
  waits while the client is not reading (a turn's updates with it), and requests read then are
  held unrun, up to ``HELD_BYTES`` of them, past which no more are read: a client that sends
  without ever reading holds us still instead of growing our memory (each request's answer
  would otherwise be buffered: 150k requests cost half a gigabyte). The error answers of bad
  lines, and the ``null`` answers of cancels sent as requests, are written at once, counted with
  the held requests: the reading never waits on them.
- ``session/cancel`` is always read and acts at once, ahead of the held requests: reading goes on
  while output waits, and a cancel lifts the waiting of sends until the cancelled turn's answer
  is written (or the client reads again), so the cancelled turn ends now (recorded, its answer
  ``cancelled`` waiting for the client) instead of standing still in its next update. Only that
  long: asyncio says ``pause_writing`` once per crossing of the limit, so a lift left standing
  would let every later send of every session through unbounded.
- the client closing our stdout ends the connection like the end of stdin does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO, cast

from tether.acp.mcp_entries import unread_entries, with_notes
from tether.wire.json_line import load_message, replace_lone_surrogates, top_level_id

logger = logging.getLogger("tether.acp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
CANCEL = "session/cancel"
INITIALIZE = "initialize"
PROMPT = "session/prompt"


MAX_MESSAGE_BYTES = 50 * 1024 * 1024
"""The longest line read as a message (the SDK's own limit): a prompt with a few large images."""
WRITE_HIGH_WATER = 1 << 20
"""Bytes of output buffered before a send waits for the client to read."""
MAX_WAITING_SENDS = 64
"""Messages waiting to be sent before no more requests are read: the SDK answers each request
in a task of its own, so the answers of requests read faster than they can be sent would pile
up in memory, one task each, as long as the client is not reading."""
CLOSING_WRITE_SECONDS = 5.0
"""At the end, how long what waits for the client may wait while it takes nothing."""
HELD_BYTES = 1 << 20
"""Bytes of requests read while the client is not reading, held unrun, past which no more are
read until it reads again."""
_CHUNK = 1 << 16


class _Output(asyncio.Protocol):
    """The write side's flow control: ``writable()`` waits while the buffer is over its limit
    (``paused``), unless a cancel lifted that (``lift``) until the client reads again."""

    def __init__(self) -> None:
        self._writable = asyncio.Event()
        self._writable.set()
        self.paused = False
        self.closed = False
        self.on_change: Callable[[], None] = lambda: None

    def pause_writing(self) -> None:
        self.paused = True
        self._writable.clear()
        self.on_change()

    def resume_writing(self) -> None:
        self.paused = False
        self._writable.set()
        self.on_change()

    def lift(self) -> None:
        """Let sends through without waiting for the client, until it reads again or ``drop``."""
        self._writable.set()

    def drop(self) -> None:
        """End a ``lift``: sends wait again while the buffer is over its limit."""
        if self.paused and not self.closed:
            self._writable.clear()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._writable.set()
        self.on_change()

    async def writable(self) -> None:
        await self._writable.wait()


async def open_stdio(stdin: TextIO, stdout: BinaryIO) -> JsonRpcStdio:
    """The transport over ``stdin`` and ``stdout`` (the protocol's private copy of fd 1)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK)  # reading pauses past 2 chunks buffered
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, output = await loop.connect_write_pipe(_Output, stdout)
    transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
    return JsonRpcStdio(reader, transport, output)


class JsonRpcStdio:
    """An ``acp`` message ``Transport`` (``send``/``receive``/``close``) over a reader and a pipe."""

    def __init__(
        self, reader: asyncio.StreamReader, transport: asyncio.WriteTransport, output: _Output
    ) -> None:
        self._reader = reader
        self._transport = transport
        self._output = output
        self._lock = asyncio.Lock()
        self._buffer = bytearray()
        self._scanned = 0
        """How far ``_buffer`` is known to hold no LF."""
        self._skipping = False
        """Inside an oversized line: drop bytes up to its LF."""
        self._waiting_sends = 0
        self._held: deque[tuple[dict[str, Any], int]] = deque()
        """Messages read, with their sizes, waiting for the client to read our output."""
        self._held_bytes = 0
        self._answered_bytes = 0
        """Bytes of answers the reader wrote while the client was not reading (``_answer_now``):
        counted with the held requests, so that a flood of bad lines or of cancels sent as
        requests stops the reading as a flood of other requests does."""
        self._cancels: deque[dict[str, Any]] = deque()
        self._prompts: dict[object, str] = {}
        """The ``session/prompt`` requests handed on and not yet answered: their sessions, by id."""
        self._lifted_for: set[object] = set()
        """The ids of the cancelled prompts whose answers end the lift of the output."""
        self._ended = False
        """The input (or the output) ended: no more messages after the held ones."""
        self._changed = asyncio.Event()
        """Something ``receive`` or the reader waits on changed."""
        self._reading: asyncio.Task[None] | None = None
        self._notes: dict[object, list[str]] = {}
        """Session requests handed on, by id, with the lines their answers add (``mcp_entries``)."""
        output.on_change = self._output_changed

    async def send(self, message: dict[str, Any]) -> None:
        if "method" not in message and (notes := self._notes.pop(message.get("id"), None)):
            message = with_notes(message, notes)
        data = _encode(message)
        self._waiting_sends += 1
        try:
            async with self._lock:
                if self._output.closed:
                    return  # the client stopped listening; receive() ends the connection
                self._transport.write(data)
                if "method" not in message:
                    self._answered(message.get("id"))
                await self._output.writable()
        finally:
            self._waiting_sends -= 1
            if self._waiting_sends <= MAX_WAITING_SENDS:
                self._changed.set()

    def _answered(self, request_id: object) -> None:
        """A response went out: the lift ends once every cancelled prompt is answered."""
        self._prompts.pop(request_id, None)
        if request_id in self._lifted_for:
            self._lifted_for.discard(request_id)
            if not self._lifted_for:
                self._output.drop()

    def _lift_for(self, cancel: dict[str, Any]) -> None:
        """Let sends through until the cancelled turn's answer is out: it ends now."""
        session = cancel["params"]["sessionId"]
        cancelled = {request_id for request_id, of in self._prompts.items() if of == session}
        if cancelled:
            self._lifted_for |= cancelled
            self._output.lift()

    def _output_changed(self) -> None:
        if not self._output.paused:
            self._answered_bytes = 0  # the client reads again: what was written is on its way
            self._lifted_for.clear()
        self._changed.set()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; ``None`` at end of input (or of output). A cancel comes
        first; the others in order, once the client takes our output (``_room``)."""
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read())
        await asyncio.sleep(0)  # the tasks of the messages read so far take a step: to their send
        while True:
            self._changed.clear()
            if self._cancels:
                return self._cancels.popleft()
            if self._output.closed:
                return None
            if self._held and self._room():
                message, size = self._held.popleft()
                self._held_bytes -= size
                if message.get("method") == PROMPT and (session := _session_of(message)) is not None:
                    self._prompts[message.get("id")] = session
                self._changed.set()  # the reader may read on
                return message
            if self._ended and not self._held:
                return None
            await self._changed.wait()

    def _room(self) -> bool:
        """Whether the client takes our output: requests read may run (their answers go out)."""
        return not self._output.paused and self._waiting_sends <= MAX_WAITING_SENDS

    async def _read(self) -> None:
        """Read messages as they come, whether or not the client reads our output, holding up to
        ``HELD_BYTES`` of them: a cancel must get through a client that stopped reading."""
        try:
            while True:
                while self._held_bytes + self._answered_bytes > HELD_BYTES and not self._output.closed:
                    self._changed.clear()
                    await self._changed.wait()
                line = await self._next_line()
                if line is None:
                    return
                message = self._message(line)
                if message is None:
                    continue
                if message.get("method") == CANCEL and "id" not in message and not self._room():
                    self._cancels.append(message)  # ahead of the held: they wait for the client
                    self._lift_for(message)
                else:
                    self._held.append((message, len(line)))
                    self._held_bytes += len(line)
                self._changed.set()
        except Exception:  # the input broke: ending the connection is all that is left
            logger.exception("reading the client's messages failed")
        finally:
            self._ended = True
            self._changed.set()

    def _message(self, line: bytes) -> dict[str, Any] | None:
        """The line's message, or ``None`` when it is none (answered with an error if need be)."""
        if not line.strip():
            return None
        try:
            message: object = load_message(line)
        except ValueError as exc:
            self._error(top_level_id(line), PARSE_ERROR, "Parse error", f"not JSON: {exc}")
            return None
        problem = message_problem(message)
        if problem is None:
            fields = cast(dict[str, Any], message)
            if fields.get("method") == CANCEL and "id" in fields:
                return self._cancel_request(fields)
            if "method" in fields and "id" not in fields and not _takes_notification(fields):
                return None
            if fields.get("method") == INITIALIZE and "id" in fields:
                wrong = _version_problem(fields.get("params"))
                if wrong is not None:
                    self._error(fields["id"], INVALID_PARAMS, "Invalid params", wrong)
                    return None
            _drop_meta(fields)
            if notes := unread_entries(fields):
                for note in notes:
                    logger.warning("%s", note)
                if "id" in fields:
                    self._notes[fields["id"]] = notes
            return fields
        self._error(_id_of(message), INVALID_REQUEST, "Invalid request", problem)
        return None

    def _cancel_request(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """``session/cancel`` sent as a request: ACP makes it a notification, which the SDK routes
        as such only, answering a request "Method not found" with the run left going. The cancel
        is what the client means: it is answered ``null`` here and passed on as the notification
        (``None``: its params were wrong, answered as ``-32602``). Both answers are written
        without waiting for the client to read: the reading of a cancel must never wait."""
        params = request.get("params")
        if not isinstance(params, dict) or not isinstance(cast(dict[str, Any], params).get("sessionId"), str):
            detail = f'{CANCEL}: "sessionId" must be a string'
            self._answer_now(_error_message(request["id"], INVALID_PARAMS, "Invalid params", detail))
            return None
        self._answer_now({"jsonrpc": "2.0", "id": request["id"], "result": None})
        return {"jsonrpc": "2.0", "method": CANCEL, "params": params}

    def _answer_now(self, message: dict[str, Any]) -> None:
        """Answer a line the reader settles itself (an error, a cancel sent as a request) without
        waiting for the client to read, counted with the held requests while it does not: a
        flood of such lines stops the reading as a flood of requests does."""
        written = self._write_now(message)
        if self._output.paused:
            self._answered_bytes += written

    def _write_now(self, message: dict[str, Any]) -> int:
        """Write ``message`` behind what is buffered, without waiting for the client to take it;
        the bytes written."""
        if self._output.closed:
            return 0
        data = _encode(message)
        self._transport.write(data)
        return len(data)

    async def _next_line(self) -> bytes | None:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                if self._skipping:
                    self._skipping = False  # the oversized line's end: the next one is read normally
                    continue
                if len(line) > MAX_MESSAGE_BYTES:
                    self._too_large()
                    continue
                return line
            self._scanned = len(self._buffer)
            if len(self._buffer) > MAX_MESSAGE_BYTES and not self._skipping:
                self._skipping = True
                self._too_large()
            if self._skipping:
                self._buffer.clear()
                self._scanned = 0
            if self._output.closed:
                return None
            chunk = await self._reader.read(_CHUNK)
            if not chunk:
                if self._skipping or not self._buffer:
                    return None
                line, self._buffer = bytes(self._buffer), bytearray()
                return line
            self._buffer += chunk

    async def close(self) -> None:
        """Stop reading, let the client take what waits for it (up to ``CLOSING_WRITE_SECONDS``
        of it taking nothing: a client that stopped reading cannot keep us from ending), close."""
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        waiting, since = self._transport.get_write_buffer_size(), time.monotonic()
        while waiting and not self._output.closed and time.monotonic() - since < CLOSING_WRITE_SECONDS:
            await asyncio.sleep(0.05)
            if (now := self._transport.get_write_buffer_size()) != waiting:
                waiting, since = now, time.monotonic()
        self._transport.close()

    def _too_large(self) -> None:
        detail = f"message longer than {MAX_MESSAGE_BYTES // (1 << 20)} MiB; skipped to its end"
        self._error(None, INVALID_REQUEST, "Invalid request", detail)

    def _error(self, request_id: object, code: int, message: str, details: str) -> None:
        """Answer a bad line without waiting for the client to read (a send would stop the
        reader, and a cancel behind the line would never be read)."""
        self._answer_now(_error_message(request_id, code, message, details))


def _error_message(request_id: object, code: int, message: str, details: str) -> dict[str, Any]:
    logger.warning("answered a bad JSON-RPC message with %s: %s", code, details)
    error = {"code": code, "message": message, "data": {"details": details}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _encode(message: dict[str, Any]) -> bytes:
    """One line of compact JSON, non-ASCII as UTF-8; a lone surrogate (a file name that is not
    UTF-8, read by a tool) has no UTF-8 form and is sent U+FFFD, as RPC and ``--mode json`` send
    it (``wire.dumpb``): its ASCII escape ``"\\ud800"`` is JSON, but serde_json (Zed's) refuses
    the whole line ("lone leading surrogate in hex escape")."""
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return replace_lone_surrogates(text).encode() + b"\n"


def _takes_notification(note: dict[str, Any]) -> bool:
    """Whether the SDK may be handed the notification ``note``: ``session/cancel`` with a session
    id, or an extension's (``_``-prefixed). It answers no notification, so for any other it logs
    a traceback; a client's wrong one is said here in one line, and ignored as JSON-RPC asks."""
    method = cast(str, note["method"])
    if method.startswith("_"):
        return True
    if method == CANCEL:
        params = note.get("params")
        if isinstance(params, dict) and isinstance(cast(dict[str, Any], params).get("sessionId"), str):
            return True
        logger.warning('ignored a %s notification: "sessionId" must be a string', CANCEL)
        return False
    logger.warning("ignored a notification of %s: the only one tether takes is %s", method, CANCEL)
    return False


def _version_problem(params: object) -> str | None:
    """Why an ``initialize`` request's ``protocolVersion`` is not one (``None``: it is). ACP's
    schema makes it an integer from 0 to 65535; the SDK would read a string it cannot parse as
    version 1 and answer as if the client spoke it. A version we do not speak is no error: the
    agent answers with its own latest (the spec's negotiation), which the SDK's handler does."""
    if not isinstance(params, dict):
        return None  # no params at all: the SDK's own validation answers -32602
    fields = cast(dict[str, object], params)
    if "protocolVersion" not in fields:
        return 'initialize: "protocolVersion" is missing (an integer: the latest version the client speaks)'
    version = fields["protocolVersion"]
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
        return f'initialize: "protocolVersion" must be an integer from 0 to 65535, not {json.dumps(version)}'
    return None


def message_problem(message: object) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response (``None``: it is)."""
    if isinstance(message, list):
        return "batches are not used by ACP"
    if not isinstance(message, dict):
        return f"expected a JSON object, got {type(message).__name__}"
    fields = cast(dict[str, object], message)
    if fields.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"'
    if "id" in fields and not _valid_id(fields["id"]):
        return '"id" must be a string, a number or null'
    if "method" in fields:
        if not isinstance(fields["method"], str):
            return '"method" must be a string'
        params = fields.get("params")
        if params is not None and not isinstance(params, dict | list):
            return '"params" must be an object or an array'
        return None
    if "id" in fields and ("result" in fields or "error" in fields):
        return None
    return 'neither a request ("method") nor a response ("id" with "result" or "error")'


def _drop_meta(message: dict[str, Any]) -> None:
    """Take the ``_meta`` out of a request's or notification's params. The SDK passes each of
    its keys to the method as an argument of its own, over the validated ones: ``_meta:
    {"cwd": 5}`` replaced the ``cwd`` (an internal error, and a ``cwd`` no check had seen),
    ``{"self": 1}`` failed the call. tether reads nothing of an editor's ``_meta``."""
    params = message.get("params")
    if "method" in message and isinstance(params, dict):
        cast(dict[str, Any], params).pop("_meta", None)


def _session_of(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        session = cast(dict[str, object], params).get("sessionId")
        return session if isinstance(session, str) else None
    return None


def _valid_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _id_of(message: object) -> object:
    if isinstance(message, dict):
        value = cast(dict[str, object], message).get("id")
        return value if _valid_id(value) else None
    return None
