"""The sessions this server writes: one ``AgentSession`` each, and their live events.

One writer per session: a session is opened for writing once (the store's writer lease makes a
second writer, in this process or another, fail with ``SessionLockedError``), and every prompt,
steer and abort on it goes to that one core. The core is built as the RPC mode builds it
(``SessionOptions.create``), so the server's sessions run with the same tools, settings and model
choice as ``tether`` in that folder.

Followers read the store (``tether.store.follow``); the store only gets a message once it is
complete, so what a model streams meanwhile is passed to the followers of that session from here
as ``delta`` events (live only: they have no id and are not replayed on resume).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, SessionOptions
from tether.session.settings import Settings

Live = dict[str, Any]
"""One live event: ``{"type": "delta", "delta": text}``, ``{"type": "status", "running": bool}``."""

OPEN_TIMEOUT_SECONDS = 10.0
"""How long a new session may take to get its id once its first prompt started."""


class SessionHub:
    """Opens, drives and finally closes the sessions this server writes."""

    def __init__(self, options: SessionOptions, settings: Settings, cwd: Path) -> None:
        self._options = options
        self._settings = settings
        self._cwd = cwd
        self._cores: dict[str, AgentSession] = {}
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._listeners: dict[str, set[asyncio.Queue[Live]]] = {}
        self._lock = asyncio.Lock()

    def is_open(self, session_id: str) -> bool:
        return session_id in self._cores

    def running(self, session_id: str) -> bool:
        core = self._cores.get(session_id)
        return core is not None and core.is_running

    async def core(self, session_id: str) -> AgentSession:
        """The session's core, opened for writing on first use (``SessionLockedError`` when
        another writer has it, ``SessionNotFoundError`` when there is no such session)."""
        async with self._lock:
            core = self._cores.get(session_id)
            if core is None:
                core = self._create(SessionChoice(session_id=session_id))
                self._adopt(session_id, core)
            return core

    async def new_session(self, message: str) -> str:
        """Start a new session on ``message``; its id once the store has it."""
        core = self._create(SessionChoice())
        self._start(core, message, None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + OPEN_TIMEOUT_SECONDS
        while core.session_id is None:
            if loop.time() > deadline:
                core.abort()
                await core.close()
                raise TimeoutError("the new session got no id in time")
            await asyncio.sleep(0.01)
        async with self._lock:
            self._adopt(core.session_id, core)
        return core.session_id

    def prompt(self, session_id: str, core: AgentSession, message: str) -> None:
        self._start(core, message, session_id)

    def listen(self, session_id: str, queue: asyncio.Queue[Live]) -> Callable[[], None]:
        """Pass the session's live events to ``queue`` until the returned function is called."""
        listeners = self._listeners.setdefault(session_id, set())
        listeners.add(queue)

        def unlisten() -> None:
            listeners.discard(queue)

        return unlisten

    async def close(self) -> None:
        """Abort what runs, let it record, close every core (they own their stores' leases)."""
        for core in self._cores.values():
            core.abort()
        runs = list(self._runs.values())
        if runs:
            await asyncio.wait(runs, timeout=10)
        for core in self._cores.values():
            await core.close()
        self._cores.clear()

    def _create(self, choice: SessionChoice) -> AgentSession:
        return self._options.create(cwd=self._cwd, settings=self._settings, ask=None, session=choice)

    def _adopt(self, session_id: str, core: AgentSession) -> None:
        self._cores[session_id] = core

        def on_event(event: Any) -> None:
            self._publish(session_id, event)

        core.subscribe(on_event)

    def _start(self, core: AgentSession, message: str, session_id: str | None) -> None:
        async def run() -> None:
            try:
                await core.prompt(message)
            except Exception as exc:  # the run's own errors are in its messages; this is the rest
                sys.stderr.write(f"tether serve: session {core.session_id}: {exc}\n")
            finally:
                self._runs.pop(key, None)

        key = session_id or f"new-{id(core)}"
        self._runs[key] = asyncio.get_running_loop().create_task(run())

    def _publish(self, session_id: str, event: Any) -> None:
        listeners = self._listeners.get(session_id)
        if not listeners:
            return
        kind = event.get("type")
        live: Live | None = None
        if kind == "message_update":
            inner = cast(dict[str, Any], event.get("assistantMessageEvent") or {})
            if inner.get("type") in ("text_delta", "thinking_delta"):
                live = {"type": "delta", "kind": inner["type"], "delta": inner.get("delta", "")}
        elif kind in ("agent_start", "agent_end"):
            live = {"type": "status", "running": kind == "agent_start"}
        if live is not None:
            for queue in listeners:
                queue.put_nowait(live)
