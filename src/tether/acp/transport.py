"""Newline-delimited JSON-RPC over stdio, answering what is not JSON-RPC instead of dropping it.

The SDK's own stdio transport logs a line that is not JSON and skips it, and takes any object for
a message, so a client that sent garbage would wait forever for an answer. JSON-RPC 2.0 asks for
an error response instead: ``-32700`` (parse error) for text that is not JSON, ``-32600``
(invalid request) for JSON that is not a request, notification or response; both with the
request's ``id`` when it can be read, else ``null``. This transport does exactly that and hands
everything else, untouched, to the SDK's ``Connection``, which still does all the dispatching
(unknown methods, invalid params).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, cast

from tether.wire.json_line import load_line, top_level_id

logger = logging.getLogger("tether.acp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class JsonRpcStdio:
    """An ``acp`` message ``Transport`` (``send``/``receive``/``close``) over a reader and writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; ``None`` at end of input."""
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # longer than the reader's limit; readline dropped it
                await self._error(None, INVALID_REQUEST, "Invalid request", "message too large")
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message: object = load_line(line)
            except ValueError as exc:
                await self._error(top_level_id(line), PARSE_ERROR, "Parse error", f"not JSON: {exc}")
                continue
            problem = message_problem(message)
            if problem is None:
                return cast(dict[str, Any], message)
            await self._error(_id_of(message), INVALID_REQUEST, "Invalid request", problem)

    async def close(self) -> None:
        self._writer.close()

    async def _error(self, request_id: object, code: int, message: str, details: str) -> None:
        logger.warning("answered a bad JSON-RPC message with %s: %s", code, details)
        error = {"code": code, "message": message, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": error})


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


def _valid_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _id_of(message: object) -> object:
    if isinstance(message, dict):
        value = cast(dict[str, object], message).get("id")
        return value if _valid_id(value) else None
    return None
