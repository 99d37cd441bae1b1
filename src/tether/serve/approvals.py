"""Tool approvals answered over HTTP: a call that needs the user's approval waits here until
someone with a full token allows or denies it (``POST .../approvals/{id}``), or the run is aborted.

Without ``--yes`` a session run by the server asks as the terminal would: the question (the
approval gate's one line, ``describe_call``) goes to the session's followers as an ``approval``
event and stays listed (``GET .../approvals``) until it is answered; the answer goes out as
``approval_done``. An abort denies what its session was waiting for, so it is always answered.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tether.wire import ToolCall

Publish = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class Pending:
    id: str
    session_id: str
    tool: str
    question: str
    arguments: dict[str, Any]
    answer: asyncio.Future[bool] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "approval",
            "id": self.id,
            "sessionId": self.session_id,
            "tool": self.tool,
            "question": self.question,
            "arguments": self.arguments,
        }


class Approvals:
    """The questions waiting for an answer, by id, in the server's event loop."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._pending: dict[str, Pending] = {}

    async def ask(self, session_id: str, call: ToolCall, question: str) -> bool:
        """Wait for the answer to ``question`` about ``call`` (the approval gate's ``ask``)."""
        pending = Pending(
            id=secrets.token_hex(8),
            session_id=session_id,
            tool=call["name"],
            question=question,
            arguments=dict(call["arguments"]),
            answer=asyncio.get_running_loop().create_future(),
        )
        self._pending[pending.id] = pending
        self._publish(session_id, pending.as_dict())
        try:
            return await pending.answer
        finally:
            self._pending.pop(pending.id, None)

    def pending(self, session_id: str) -> list[dict[str, Any]]:
        return [p.as_dict() for p in self._pending.values() if p.session_id == session_id]

    def answer(self, session_id: str, approval_id: str, allow: bool) -> bool:
        """Answer a waiting question; False when the session has none of that id (answered
        already, or never asked)."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.session_id != session_id or pending.answer.done():
            return False
        pending.answer.set_result(allow)
        self._publish(session_id, {"type": "approval_done", "id": approval_id, "allowed": allow})
        return True

    def deny_all(self, session_id: str | None = None) -> None:
        """Deny what the session (every session: ``None``) waits for: it is being aborted."""
        for pending in list(self._pending.values()):
            if session_id is None or pending.session_id == session_id:
                self.answer(pending.session_id, pending.id, False)
