"""The one error of the serve routes, and the body parsing that produces most of them.

Every answer other than success is ``{"error": "one line"}`` with a status; a route raises
``ApiError`` and the application turns it into that answer (``app._api_error``).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request

B = TypeVar("B", bound=BaseModel)

MAX_MESSAGE_CHARS = 100_000
"""The longest prompt a request may carry."""
MAX_BODY_BYTES = 2 << 20
"""The largest request body read: a prompt at ``MAX_MESSAGE_CHARS`` fits however it is encoded
(``\\ud83d\\ude00``-escaped, 12 bytes a character at most), and nothing bigger is held in memory."""


MAX_ECHOED_CHARS = 200
"""The most of a client's own text (a session id, an entry id, a path) an error repeats."""


def echoed(text: str, *, quoted: bool = True) -> str:
    """``text`` as an error names it (``repr``, or as it is with ``quoted=False``), cut at
    ``MAX_ECHOED_CHARS`` saying so: a 100 KB id in a request's path came back whole in its 404,
    for whoever logs or shows the answer."""
    shown = text[:MAX_ECHOED_CHARS]
    shown = repr(shown) if quoted else shown
    return shown if len(text) <= MAX_ECHOED_CHARS else f"{shown}… (cut: {len(text)} characters)"


LINES_REMEMBERED = 256
"""Distinct lines ``say_once`` remembers having said (the oldest forgotten first)."""

_said: dict[str, None] = {}
_saying = threading.Lock()
"""``say_once`` is called from the event loop and from the feeds' threads."""


def say_once(line: str) -> None:
    """Write ``line`` on stderr unless it was said already: a failure of the store (a SQLite
    file deleted under the server) is met by every read, follower and page reload after it, and
    was a line each time."""
    with _saying:
        if line in _said:
            return
        _said[line] = None
        while len(_said) > LINES_REMEMBERED:
            del _said[next(iter(_said))]
    sys.stderr.write(line + "\n")


class ApiError(Exception):
    """An answer other than success: ``status`` and one line saying what was wrong and where."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def parse_body(request: Request, model: type[B]) -> B:
    """The request's JSON body as ``model``; ``ApiError`` 415 (said to be something else than
    JSON: ``json_type``), 400 (not JSON), 413 (over ``MAX_BODY_BYTES``: refused by its
    ``Content-Length`` before a byte is read, or as soon as a streamed body passes the limit) or
    422 (naming the field)."""
    declared = request.headers.get("content-type")
    if declared is not None and not json_type(declared):
        raise ApiError(415, f"Content-Type {echoed(declared)}: the body must be application/json")
    raw = await _bounded_body(request)
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise ApiError(400, "body: not valid JSON") from None
    except RecursionError:  # json recurses: 2 MiB of "[" is deeper than it can go
        raise ApiError(400, "body: JSON nested too deeply") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ApiError(422, f"{where}: {first['msg']}") from None


def json_type(content_type: str) -> bool:
    """Whether a ``Content-Type`` says JSON (``application/json``, ``application/*+json``, with
    any parameters). A body sent as ``application/xml`` or a form was read as JSON all the same,
    so a client that meant another format had its request carried out instead of refused (and
    ``curl -d`` without ``-H 'Content-Type: application/json'`` is now told so). No
    ``Content-Type`` at all is taken as JSON: some clients send none with a body."""
    media = content_type.partition(";")[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


async def _bounded_body(request: Request) -> bytes:
    too_big = ApiError(413, f"body: larger than {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_big
    parts: list[bytes] = []
    size = 0
    try:
        async for part in request.stream():
            size += len(part)
            if size > MAX_BODY_BYTES:
                raise too_big
            parts.append(part)
    except ClientDisconnect:  # gone (or cut off by ``slow_clients``): nobody to answer, no traceback
        raise ApiError(400, "body: the client left before sending it whole") from None
    return b"".join(parts)
