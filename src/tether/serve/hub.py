"""The sessions this server writes: one ``AgentSession`` each, and their live events.

One writer per session: a session is opened for writing once (the store's writer lease makes a
second writer, in this process or another, fail with ``SessionLockedError``), and every prompt,
steer and abort on it goes to that one core. The core is built as the RPC mode builds it
(``start_session``), so the server's sessions run with the same tools, settings and model
choice as ``tether`` in that folder.

A stored session runs in the folder it was recorded in (its ``cwd``), with that folder's
settings, as ``tether --session`` run there would run it; not in the folder the server was started
in. New sessions start in the server's folder. Only a folder that is the server's or inside it,
though (``workspace``): the recorded folder is whatever the session's file said (an imported pi
file's header), and a session recorded in ``/`` would run its tools with the whole filesystem as
its workspace, which nobody chose; the CLI and the editors run a stored session in the folder
they are in. Such a session can still be read here.

Followers read the store (``tether.serve.feeds``); the store only gets a message once it is
complete, so what a model streams meanwhile is passed to the followers of that session from here
as ``delta`` events (live only: they have no id and are not replayed on resume).

Each assistant message's live events carry its number (``key``), and its end says which entry
stores it (``ended``): the store's writes are committed after the run moves on, so an earlier
message's entry may reach a page while the next message streams, and the page clears only the
live words of the message that entry stores. Queued steering and follow-ups are passed on as
``queue`` events (pi shows them under the editor while a run goes on).

A follower that joins while a message streams has missed its first deltas, so the hub keeps the
words it passed on for the message under way, and a joiner starts (``live_state``, in the event
loop, where deltas are passed on: none falls in between) with them as one ``partial`` event,
then gets the deltas after them: every word once. The words are kept from a core's creation, not
from when its session got an id, so a new session's first words are not lost either. A message
that has ended gets no ``partial``: it is stored (or being stored) and reaches the joiner as an
entry; the agent clears its streaming message before anyone hears that it ended, so the check
holds even while the hub has not been told yet.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tether.errors import TetherError
from tether.serve.approvals import Approvals
from tether.serve.errors import say_once
from tether.session.agent_session import AgentSession
from tether.session.events import QueueSnapshot
from tether.session.factory import SessionChoice, start_session
from tether.session.options import SessionOptions
from tether.session.settings import Settings
from tether.session.workspace import recorded_workspace
from tether.wire import ToolCall

Live = dict[str, Any]
"""One live event: ``{"type": "delta", "key": n, "kind": ..., "delta": text}``, ``{"type":
"ended", "key": n, "entry": id}``, ``{"type": "status", "running": bool}``, ``{"type": "queue",
"steering": [...], "followUp": [...]}``."""


@dataclass(slots=True)
class _Streamed:
    """The deltas a core's message under way has passed on so far (empty between messages)."""

    streaming: bool = False
    key: int = 0
    """The message's number among the core's assistant messages: the key of its live events."""
    text: list[str] = field(default_factory=list[str])
    thinking: list[str] = field(default_factory=list[str])

    def restart(self, streaming: bool) -> None:
        if streaming:
            self.key += 1
        self.streaming = streaming
        self.text.clear()
        self.thinking.clear()


IDLE_CLOSE_SECONDS = 300.0
"""A session this server opened is closed once it has been idle this long: no run, nothing
queued, no approval asked, no follower, no request. Each open core holds its store lease, its
session's transcript in memory, its tools and MCP servers; a server prompting thousands of
sessions would keep them all until it stopped. The next request opens it again."""

OPEN_TIMEOUT_SECONDS = 10.0
"""How long a new session may take to get its id once its first prompt started."""


class SessionHub:
    """Opens, drives and finally closes the sessions this server writes."""

    def __init__(
        self,
        options: SessionOptions,
        settings_for: Callable[[Path], Settings],
        cwd: Path,
        *,
        idle_close: float = IDLE_CLOSE_SECONDS,
    ) -> None:
        """``settings_for(folder)``: the settings a session in ``folder`` runs with (the user's,
        and the folder's project file as trust allows); ``cwd``: where new sessions start;
        ``idle_close``: seconds after which an idle session is closed (``IDLE_CLOSE_SECONDS``)."""
        self._options = options
        self._settings_for = settings_for
        self._cwd = cwd
        self._cores: dict[str, AgentSession] = {}
        self._streamed: dict[int, tuple[AgentSession, _Streamed]] = {}
        """Every core this hub made, by ``id()``, with its message under way: new ones before
        their session has an id too."""
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self.on_live: Callable[[str, Live], None] | None = None
        """Where the sessions' live events go (``Feeds.publish``)."""
        self.approvals = Approvals(self._emit)
        self.followed: Callable[[str], bool] = lambda _session_id: False
        """Whether a client follows the session (``Feeds.following``): a followed core stays open."""
        if not idle_close > 0:
            raise ValueError(f"idle_close must be a positive number of seconds, not {idle_close!r}")
        self._idle_close = idle_close
        self._used: dict[str, float] = {}
        """When each open core was last busy or asked for (the event loop's clock)."""
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def open_count(self) -> int:
        return len(self._cores)

    def is_open(self, session_id: str) -> bool:
        return session_id in self._cores

    def open_core(self, session_id: str) -> AgentSession | None:
        """The session's core if this server has it open."""
        return self._cores.get(session_id)

    def running(self, session_id: str) -> bool:
        core = self._cores.get(session_id)
        return core is not None and core.is_running

    def live_state(self, session_id: str) -> list[Live]:
        """(In the event loop.) What a follower joining now needs to be in the present: the run's
        ``status`` and the ``partial`` words of the message under way, when this server has the
        session; the deltas after those reach it as they come."""
        core = self._cores.get(session_id)
        found = (
            self._streamed.get(id(core))
            if core is not None
            else next((pair for pair in self._streamed.values() if pair[0].session_id == session_id), None)
        )
        if found is None:
            return []
        core, streamed = found
        live: list[Live] = [{"type": "status", "running": core.is_running}]
        queued = core.queued()
        if queued.steering or queued.follow_up:
            live.append(
                {"type": "queue", "steering": list(queued.steering), "followUp": list(queued.follow_up)}
            )
        # The agent drops its streaming message before telling anyone the message ended.
        if streamed.streaming and core.agent.streaming_message is not None:
            text, thinking = "".join(streamed.text), "".join(streamed.thinking)
            live.append({"type": "partial", "key": streamed.key, "text": text, "thinking": thinking})
        return live

    def workspace(self, session_id: str, folder: str) -> Path:
        """Where the session recorded in ``folder`` runs on this server: ``folder`` resolved, when
        it is this server's folder or inside it (``recorded_workspace``: ``FolderOutsideError``
        otherwise, ``FolderGoneError`` when it is gone)."""
        # Not "start tether serve there": the folder is whatever the file said, "/" as well.
        outside = (
            f"this server's folder {self._cwd}: it can be read here; to run it, open it with "
            f"tether --session {session_id} in the folder it should work in"
        )
        return recorded_workspace(session_id, folder, self._cwd, outside)

    async def core(self, session_id: str, folder: str) -> AgentSession:
        """The session's core, opened for writing on first use in ``folder``, where the session
        was recorded (``SessionLockedError`` when another writer has it, ``SessionNotFoundError``
        when there is no such session, ``FolderGoneError`` or ``FolderOutsideError`` from
        ``workspace``)."""
        async with self._lock:
            core = self._cores.get(session_id)
            if core is None:
                where = self.workspace(session_id, folder)
                core = self._create(SessionChoice(session_id=session_id), where)
                self._adopt(session_id, core)
            self._used[session_id] = asyncio.get_running_loop().time()
            return core

    async def new_session(self, message: str) -> str:
        """Start a new session on ``message``; its id once the store has it."""
        core = self._create(SessionChoice(), self._cwd)
        self._start(core, message, None)
        run = self._runs[f"new-{id(core)}"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + OPEN_TIMEOUT_SECONDS
        # A new session is stored with its first message, appended once the run has begun: until
        # then it has an id no store knows, and another server (PostgreSQL) may be asked next.
        while core.session_id is None or (core.session is not None and not core.session.stored):
            if core.session_id is not None and run.done():
                break  # the run ended before storing anything: its id is all there is to give
            if loop.time() > deadline:
                core.abort()
                await core.close()
                del self._streamed[id(core)]
                raise TimeoutError(f"the new session was not stored within {OPEN_TIMEOUT_SECONDS:g} s")
            await asyncio.sleep(0.01)
        if core.session is not None:
            await core.session.written()
        async with self._lock:
            self._adopt(core.session_id, core)
        return core.session_id

    def prompt(self, session_id: str, core: AgentSession, message: str) -> None:
        self._start(core, message, session_id)

    def clear_queue(self, session_id: str) -> QueueSnapshot:
        """Take the session's queued steering and follow-ups back (pi's RPC ``clear_queue``); none
        when this server does not have the session open, as nothing of it is queued here."""
        core = self._cores.get(session_id)
        return QueueSnapshot((), ()) if core is None else core.clear_queue()

    def queued(self, session_id: str) -> QueueSnapshot:
        core = self._cores.get(session_id)
        return QueueSnapshot((), ()) if core is None else core.queued()

    def abort(self, session_id: str) -> bool:
        """Abort the session's run here, denying the approvals it waits for; whether one ran."""
        core = self._cores.get(session_id)
        if core is None or not core.is_running:
            return False
        self.approvals.deny_all(session_id)
        core.abort()
        return True

    async def close(self) -> None:
        """Abort what runs, let it record, close every core (they own their stores' leases)."""
        if self._sweeper is not None:
            async with self._lock:  # a sweep closing cores ends first: cut there, one is closed twice
                self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        self.approvals.deny_all()
        for core in self._cores.values():
            core.abort()
        runs = list(self._runs.values())
        if runs:
            await asyncio.wait(runs, timeout=10)
        for core in self._cores.values():
            try:
                await core.close()
            except TetherError as exc:  # a store deleted under the server: one line, not a traceback
                say_once(f"tether serve: {exc}")  # ... and not once per session it served
        self._cores.clear()
        self._streamed.clear()
        self._used.clear()

    def _busy(self, session_id: str, core: AgentSession) -> bool:
        queued = core.queued()
        return (
            core.is_running
            or session_id in self._runs
            or bool(queued.steering or queued.follow_up)
            or bool(self.approvals.pending(session_id))
            or self.followed(session_id)
        )

    async def _sweep(self) -> None:
        """Every quarter of ``idle_close``: close the cores idle for ``idle_close``."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._idle_close / 4)
            async with self._lock:  # ``core()`` waits: a session reopened after its close ended
                now = loop.time()
                for session_id, core in list(self._cores.items()):
                    if self._busy(session_id, core):
                        self._used[session_id] = now
                    elif now - self._used.get(session_id, now) >= self._idle_close:
                        await self._close_idle(session_id, core)

    async def _close_idle(self, session_id: str, core: AgentSession) -> None:
        """(Holding the lock.) Close the core, then forget it: until then ``is_open`` holds and
        ``core()`` waits, so the session is reopened only once its lease is given back."""
        try:
            await core.close()
        except Exception as exc:  # one session's failure to close must not stop the sweeps
            sys.stderr.write(f"tether serve: session {session_id}: closing it when idle: {exc}\n")
        del self._cores[session_id]
        self._used.pop(session_id, None)
        self._streamed.pop(id(core), None)

    def _create(self, choice: SessionChoice, folder: Path) -> AgentSession:
        created: list[AgentSession] = []

        async def ask(call: ToolCall, question: str) -> bool:
            session_id = created[0].session_id if created else None
            return session_id is not None and await self.approvals.ask(session_id, call, question)

        core = start_session(
            self._options, cwd=folder, settings=self._settings_for(folder), ask=ask, session=choice
        )
        created.append(core)
        streamed = _Streamed()
        self._streamed[id(core)] = (core, streamed)

        def on_event(event: Any) -> None:
            self._publish(core, streamed, event)

        core.subscribe(on_event)
        return core

    def _emit(self, session_id: str, live: Live) -> None:
        if self.on_live is not None:
            self.on_live(session_id, live)

    def _adopt(self, session_id: str, core: AgentSession) -> None:
        self._cores[session_id] = core
        self._used[session_id] = asyncio.get_running_loop().time()
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="tether-serve-idle")

    def _start(self, core: AgentSession, message: str, session_id: str | None) -> None:
        """Start the run now, before the request is answered: a prompt checked in the same step
        of the event loop sees the core running (a 409, or queued), where a run left to start in
        its task let every such prompt through as ``started``, and the busy agent dropped them."""
        started = core.prompt(message).start()

        async def run() -> None:
            try:
                await started
            except Exception as exc:  # the run's own errors are in its messages; this is the rest
                sys.stderr.write(f"tether serve: session {core.session_id}: {exc}\n")
            finally:
                self._runs.pop(key, None)
                if core.session_id in self._used:
                    self._used[core.session_id] = asyncio.get_running_loop().time()
                if core.session_id is not None:  # now, not at agent_end: the core may take a prompt
                    self._emit(core.session_id, {"type": "status", "running": False})

        key = session_id or f"new-{id(core)}"
        self._runs[key] = asyncio.get_running_loop().create_task(run())

    def _publish(self, core: AgentSession, streamed: _Streamed, event: Any) -> None:
        kind = event.get("type")
        live: Live | None = None
        if kind == "message_update":
            inner = cast(dict[str, Any], event.get("assistantMessageEvent") or {})
            delta_kind = inner.get("type")
            if delta_kind in ("text_delta", "thinking_delta"):
                delta = inner.get("delta", "")
                (streamed.text if delta_kind == "text_delta" else streamed.thinking).append(delta)
                live = {"type": "delta", "key": streamed.key, "kind": delta_kind, "delta": delta}
        elif kind == "message_start":
            streamed.restart(event["message"]["role"] == "assistant")
        elif kind == "message_end":
            if streamed.streaming and core.session is not None:
                # Recorded before listeners hear it ended: the page clears this message's live
                # words when this entry reaches it, not when any assistant entry does.
                live = {"type": "ended", "key": streamed.key, "entry": core.session.last_entry_id}
            streamed.restart(False)
        elif kind == "agent_end":
            streamed.restart(False)
        elif kind == "agent_start":
            live = {"type": "status", "running": True}
        elif kind == "queue_update":
            live = {"type": "queue", "steering": event["steering"], "followUp": event["followUp"]}
        session_id = core.session_id
        if live is not None and session_id is not None and self.on_live is not None:
            self.on_live(session_id, live)
