"""Extension dialogs over RPC: pi's ``extension_ui_request`` / ``extension_ui_response``.

An extension's ``confirm``, ``select``, ``input`` or ``editor`` writes an
``extension_ui_request`` frame and waits for the client's ``extension_ui_response`` with the
same ``id`` (pi 1.6's ``docs/rpc-extension-ui.md``; pi 0.73 clients see the same frames). A
dialog with a time limit carries it as ``timeout`` in milliseconds, and the agent dismisses it
when it runs out (``tether.session.extensions.ui.Dialogs``): the client need not track time.
``notify``, ``setStatus``, ``setWidget``, ``setTitle`` and ``set_editor_text`` are written and
not waited for. Each answer gets a response frame (tether's one-response-per-line rule; a pi
client takes a response it did not ask for as an event and ignores it). A dialog never
outlives the run it belongs to: ``abort`` (and the end of the input) cancels every open one,
which the extension sees as a dismissal (``False`` / ``None``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from tether.rpc.protocol import ExtensionUiRequest
from tether.session.extensions.ui import NotifyLevel, WidgetPlacement


class RpcExtensionUI:
    """The ``ExtensionUI`` of RPC mode; ``answer`` takes the client's responses."""

    ui_mode = "rpc"

    def __init__(self, write: Callable[[Any], None]) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        answer = await self._ask({"method": "confirm", "title": title, "message": message}, timeout)
        return answer.get("confirmed") is True and not answer.get("cancelled")

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        answer = await self._ask({"method": "select", "title": title, "options": list(options)}, timeout)
        value = answer.get("value")
        return value if isinstance(value, str) and value in options and not answer.get("cancelled") else None

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        answer = await self._ask({"method": "input", "title": title, "placeholder": placeholder}, timeout)
        return _text(answer)

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        answer = await self._ask({"method": "editor", "title": title, "prefill": prefill}, timeout)
        return _text(answer)

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._tell({"method": "notify", "message": message, "notifyType": level})

    def set_status(self, key: str, text: str | None) -> None:
        """pi's ``setStatus``: ``statusText`` left out clears the entry."""
        frame: dict[str, Any] = {"method": "setStatus", "statusKey": key}
        if text is not None:
            frame["statusText"] = text
        self._tell(frame)

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement) -> None:
        """pi's ``setWidget``: ``widgetLines`` left out clears the widget."""
        frame: dict[str, Any] = {"method": "setWidget", "widgetKey": key, "widgetPlacement": placement}
        if lines is not None:
            frame["widgetLines"] = list(lines)
        self._tell(frame)

    def set_title(self, title: str) -> None:
        self._tell({"method": "setTitle", "title": title})

    def set_editor_text(self, text: str) -> None:
        self._tell({"method": "set_editor_text", "text": text})

    def answer(self, response: Mapping[str, Any]) -> bool:
        """Resolve the dialog ``response["id"]`` names; ``False`` when none is open by that id
        (answered already, cancelled, timed out, or never asked)."""
        future = self._pending.pop(str(response.get("id")), None)
        if future is None or future.done():
            return False
        future.set_result(response)
        return True

    def cancel_all(self) -> None:
        """Dismiss every open dialog (the run was aborted, or the client went away)."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_result({"cancelled": True})

    def _tell(self, fields: Mapping[str, Any]) -> None:
        """A fire-and-forget frame."""
        frame = cast(ExtensionUiRequest, {"type": "extension_ui_request", "id": self._next_id(), **fields})
        self._write(frame)

    async def _ask(self, fields: dict[str, Any], timeout: float | None) -> Mapping[str, Any]:
        request_id = self._next_id()
        future: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        if timeout is not None:
            fields["timeout"] = round(timeout * 1000)
        self._write({"type": "extension_ui_request", "id": request_id, **fields})
        try:
            return await future
        finally:  # answered, or cancelled (its timeout ran out): a late answer finds nothing
            self._pending.pop(request_id, None)

    def _next_id(self) -> str:
        return f"ext-ui-{next(self._ids)}"


def _text(answer: Mapping[str, Any]) -> str | None:
    value = answer.get("value")
    return value if isinstance(value, str) and not answer.get("cancelled") else None
