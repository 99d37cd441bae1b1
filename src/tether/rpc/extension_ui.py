"""Extension dialogs over RPC: pi's ``extension_ui_request`` / ``extension_ui_response``.

An extension's ``confirm``, ``select`` or ``input`` writes an ``extension_ui_request`` frame and
waits for the client's ``extension_ui_response`` with the same ``id`` (pi 1.6's
``docs/rpc-extension-ui.md``; pi 0.73 clients see the same frames). ``notify`` is written and
not waited for. Each answer gets a response frame (tether's one-response-per-line rule; a pi
client takes a response it did not ask for as an event and ignores it). A dialog never outlives the run it belongs to: ``abort`` (and the end of the
input) cancels every open one, which the extension sees as a dismissal (``False`` / ``None``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tether.rpc.protocol import ExtensionUiRequest
from tether.session.extensions.api import NotifyLevel


class RpcExtensionUI:
    """The ``ExtensionUI`` of RPC mode; ``answer`` takes the client's responses."""

    def __init__(self, write: Callable[[Any], None]) -> None:
        self._write = write
        self._pending: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)

    async def confirm(self, title: str, message: str = "") -> bool:
        answer = await self._ask({"method": "confirm", "title": title, "message": message})
        return answer.get("confirmed") is True and not answer.get("cancelled")

    async def select(self, title: str, options: Sequence[str]) -> str | None:
        answer = await self._ask({"method": "select", "title": title, "options": list(options)})
        value = answer.get("value")
        return value if isinstance(value, str) and value in options and not answer.get("cancelled") else None

    async def input(self, title: str, placeholder: str = "") -> str | None:
        answer = await self._ask({"method": "input", "title": title, "placeholder": placeholder})
        value = answer.get("value")
        return value if isinstance(value, str) and not answer.get("cancelled") else None

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        frame: ExtensionUiRequest = {
            "type": "extension_ui_request",
            "id": self._next_id(),
            "method": "notify",
            "message": message,
            "notifyType": level,
        }
        self._write(frame)

    def answer(self, response: Mapping[str, Any]) -> bool:
        """Resolve the dialog ``response["id"]`` names; ``False`` when none is open by that id
        (answered already, cancelled, or never asked)."""
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

    async def _ask(self, fields: dict[str, Any]) -> Mapping[str, Any]:
        request_id = self._next_id()
        future: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._write({"type": "extension_ui_request", "id": request_id, **fields})
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    def _next_id(self) -> str:
        return f"ext-ui-{next(self._ids)}"
