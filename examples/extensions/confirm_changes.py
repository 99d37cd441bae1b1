"""Ask before leaving a conversation: pi's ``confirm-destructive`` example.

``/new``, ``/resume`` and a switch over RPC ask "Leave this conversation?"; ``/fork`` and
``/clone`` ask too. Saying no (or nobody answering, as in print mode) cancels the change: the
session stays where it is. A move in ``/tree`` labels the entry moved to with where it came from.
"""

from __future__ import annotations

from typing import Any

from tether.session import ExtensionAPI, SessionBeforeResult

ASK_TIMEOUT = 120.0
"""Seconds a question stays open unanswered (then: no)."""


def setup(api: ExtensionAPI) -> None:
    @api.on("session_before_switch")
    async def before_switch(event: dict[str, Any]) -> SessionBeforeResult | None:
        where = "a new session" if event["reason"] == "new" else event["targetSessionFile"]
        if await api.ui.confirm("Leave this conversation?", f"for {where}", timeout=ASK_TIMEOUT):
            return None
        return SessionBeforeResult(cancel=True, reason="kept the conversation")

    @api.on("session_before_fork")
    async def before_fork(event: dict[str, Any]) -> SessionBeforeResult | None:
        what = "Fork before this message?" if event["position"] == "before" else "Copy the session?"
        if await api.ui.confirm(what, f"entry {event['entryId']}", timeout=ASK_TIMEOUT):
            return None
        return SessionBeforeResult(cancel=True, reason="not forked")

    @api.on("session_before_tree")
    def before_tree(event: dict[str, Any]) -> SessionBeforeResult:
        return SessionBeforeResult(label=f"came from {event['preparation']['oldLeafId']}")
