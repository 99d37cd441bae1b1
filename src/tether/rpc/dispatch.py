"""The request/response half of the RPC protocol: one line in, exactly one ``response`` out.

``CommandDispatch`` reads a line, checks it against the command's declaration
(``tether.rpc.protocol.COMMANDS``), calls the handler and writes the answer — also when the line
is not JSON, names no known command, or has bad parameters (the error names the command and the
field). It stands apart from ``tether.rpc.server`` because none of it knows the session: the
parsing, the ordering of answers and the wording of errors are the protocol's own rules, the
same for every command, while the server's handlers are each a thin call into the core. A
command that never waits is answered at once; one that waits (``bash``, ``compact``,
``abort``, ...) runs in its own task, so ``abort`` or ``abort_bash`` get through while a
``compact`` or ``bash`` is still working, and quick commands still answer in order. (A task per
line cost more than the command itself: about half of a ``get_state``.)
"""

from __future__ import annotations

import asyncio
import inspect
import math
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from tether.errors import UserError
from tether.rpc import protocol as p
from tether.store.store import SessionError
from tether.wire.json_line import load_message, top_level_id

Frame = Mapping[str, Any]
WriteFrame = Callable[[Frame], None]
_Handler = Callable[[dict[str, Any]], object]
"""A ``_cmd_*`` method: plain for commands that never wait, ``async`` for those that do."""


class CommandError(UserError):
    """A command that cannot be done as asked; the message becomes the response's ``error``."""


class _NoData:
    """A successful response without ``data`` (``None`` means ``data: null``)."""


class _Answered(_NoData):
    """The handler wrote its response itself (``prompt`` answers before its run starts)."""


NO_DATA = _NoData()
ANSWERED = _Answered()

_VALIDATORS: dict[str, Callable[[object], Any]] = {}
"""Each command's parameter check, built on its first use (building all of them would slow start-up)."""


def _validator(command: str) -> Callable[[object], Any]:
    validate = _VALIDATORS.get(command)
    if validate is None:
        # The schema validator itself: TypeAdapter.validate_python adds a Python call per line.
        validate = _VALIDATORS[command] = TypeAdapter(p.COMMANDS[command][0]).validator.validate_python
    return validate


def load_command(line: bytes) -> object:
    """The line's JSON value: pydantic-core's parser (one native call: 3.5k instructions on a
    ``get_state`` line where ``json.loads`` takes 20k), else ``load_message``, which also accepts what that parser
    refuses but JSON allows (lone surrogate escapes, read as U+FFFD; a UTF-16 line) and words its
    errors. Neither takes ``NaN`` or ``Infinity``; a number past a float's range is caught at the
    id (``_parse``), the one number echoed."""
    try:
        return from_json(line, allow_inf_nan=False)
    except ValueError:
        return load_message(line)


class CommandDispatch:
    """Turns lines into handler calls and their results into ``response`` frames; a subclass
    gives one ``_cmd_<type>`` method per command of ``tether.rpc.protocol.COMMANDS``."""

    def __init__(self, write: WriteFrame) -> None:
        self._write = write
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, _Handler] = {kind: getattr(self, f"_cmd_{kind}") for kind in p.COMMANDS}
        self._waits = {
            kind for kind, handler in self._handlers.items() if inspect.iscoroutinefunction(handler)
        }
        """The commands whose handler is ``async``: each gets a task."""
        self._bare = {
            kind
            for kind, (params, _) in p.COMMANDS.items()
            if params.__annotations__.keys() == {"id", "type"}
        }
        """The commands with no parameters but their ``id``: one whose id is echoed as sent (a
        string or a number) or absent needs no schema check (its ``type`` found the handler; its
        handler reads no parameters), which cost a tenth of a ``get_state``."""
        self._unstarted = 0
        """Command tasks dispatched but not yet begun: later lines must wait behind them."""

    def dispatch(self, line: bytes) -> None:
        """Handle one input line: a command that never waits is answered right here; one that
        waits (``bash``, ``compact``, ``abort``, ...) gets its own task, started now so tasks keep
        arrival order. While such a task has not taken its first step, later lines queue behind it
        in tasks too, so every response still follows the order of the lines."""
        if self._unstarted:
            self._spawn(self._handle(line))
            return
        call = self._parse(line)
        if call is None:
            return
        handler, request_id, kind, params = call
        if kind in self._waits:
            self._spawn(self._finish_async(handler, request_id, kind, params))
            return
        try:
            data = handler(params)
        except Exception as exc:
            self._fail(request_id, kind, exc)
        else:
            if data is not ANSWERED:
                self._respond(request_id, kind, data=data)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._unstarted += 1
        task = asyncio.ensure_future(self._started(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _started(self, work: Coroutine[Any, Any, None]) -> None:
        self._unstarted -= 1
        await work

    async def _handle(self, line: bytes) -> None:
        call = self._parse(line)
        if call is None:
            return
        handler, request_id, kind, params = call
        try:
            data = await cast(Awaitable[object], handler(params)) if kind in self._waits else handler(params)
        except Exception as exc:
            self._fail(request_id, kind, exc)
        else:
            self._succeed(request_id, kind, data)

    async def _finish_async(
        self, handler: _Handler, request_id: p.RequestId | None, kind: str, params: dict[str, Any]
    ) -> None:
        try:
            data = await cast(Awaitable[object], handler(params))
        except Exception as exc:
            self._fail(request_id, kind, exc)
        else:
            self._succeed(request_id, kind, data)

    def _parse(self, line: bytes) -> tuple[_Handler, p.RequestId | None, str, dict[str, Any]] | None:
        """The command's handler, id, name and validated parameters; ``None`` when the line was
        answered with an error already."""
        try:
            raw: object = load_command(line)
        except ValueError as exc:
            self._respond(top_level_id(line), "parse", error=f"Failed to parse command: {exc}")
            return None
        if type(raw) is not dict:
            self._respond(None, "parse", error=f"a command is a JSON object, not {_json_kind(raw)}")
            return None
        command = cast("dict[str, Any]", raw)  # a string: ``dict[str, Any]`` would build an alias per line
        sent_id = command.get("id")
        if type(sent_id) is str:  # the usual id: no further checks
            request_id: p.RequestId | None = sent_id
        elif isinstance(sent_id, float) and not math.isfinite(sent_id):  # echoed: ``Infinity``, no JSON
            self._respond(None, "parse", error='Failed to parse command: "id": a number out of range')
            return None
        else:
            request_id = _request_id(sent_id)
        kind = command.get("type")
        if type(kind) is not str:
            self._respond(request_id, "parse", error='a command needs a string "type"')
            return None
        handler = self._handlers.get(kind)
        if handler is None:
            self._respond(request_id, kind, error=f"Unknown command: {kind}")
            return None
        if kind in self._bare and (sent_id is None or request_id is sent_id):
            return handler, request_id, kind, command
        try:
            params: dict[str, Any] = (_VALIDATORS.get(kind) or _validator(kind))(command)
        except ValidationError as exc:
            self._respond(request_id, kind, error=f"bad parameters for {kind}: {_describe(exc)}")
            return None
        return handler, request_id, kind, params

    def _succeed(self, request_id: p.RequestId | None, kind: str, data: object) -> None:
        if not isinstance(data, _Answered):
            self._respond(request_id, kind, data=data)

    def _fail(self, request_id: p.RequestId | None, kind: str, exc: Exception) -> None:
        if isinstance(exc, CommandError):
            self._respond(request_id, kind, error=str(exc))
        elif isinstance(exc, ValueError | LookupError | OSError | RuntimeError | SessionError):
            self._respond(request_id, kind, error=str(exc) or type(exc).__name__)
        else:  # a bug must not end the server: report it, keep serving
            traceback.print_exception(exc, file=sys.stderr)
            self._respond(request_id, kind, error=f"internal error: {type(exc).__name__}: {exc}")

    def _respond(
        self, request_id: p.RequestId | None, command: str, *, data: object = NO_DATA, error: str = ""
    ) -> None:
        frame: dict[str, Any] = {} if request_id is None else {"id": request_id}
        frame["type"] = "response"
        frame["command"] = command
        frame["success"] = not error
        if error:
            frame["error"] = error
        elif not isinstance(data, _NoData):
            frame["data"] = data
        self._write(frame)


def _request_id(value: object) -> p.RequestId | None:
    """The command's id to echo: a string or a number, as sent (``true`` is neither)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return None


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _describe(exc: ValidationError) -> str:
    """``modelId: Field required; level: Input should be 'off', ...`` — field path, then why."""
    parts: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(x) for x in error["loc"]) or "(command)"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts[:5]) + (f" (and {len(parts) - 5} more)" if len(parts) > 5 else "")
