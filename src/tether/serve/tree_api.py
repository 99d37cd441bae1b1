"""The session tree over HTTP: read it, move the session to another branch, fork from an entry.

A move (``branch``) goes through the session's one writer: this server's core when it has the
session open (refused while it runs), else the session opened for writing just for the move (a
``409`` when another process writes it). Followers of the session on this server get a ``leaf``
event. A fork copies the path up to an entry into a new session (``SessionManager.fork``), which
stays closed until someone prompts it; the session forked from stays where it is.

Extensions hear of both as in every front end, through the session's core when this server has
it open (they belong to a running session: one no core of this server runs has none here to ask).
A move is the core's ``branch`` (``session_before_tree``, then ``session_tree``); a fork asks the
core's ``before_fork`` (``session_before_fork``, ``position`` ``at``: the copy holds the entry)
first. A hook that cancels makes either a ``409`` with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.serve.errors import ApiError, echoed, parse_body
from tether.serve.hub import SessionHub
from tether.session.branching import BranchError
from tether.session.html_page import entry_preview
from tether.session.manager import SessionManager
from tether.store import SessionLockedError, SessionNotFoundError
from tether.store.entries import EntryDict
from tether.store.store import SessionRecord, SessionStore

T = TypeVar("T")


class EntryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entryId: str | None = Field(max_length=100)
    """The entry to move to or fork at; ``None``: before the first entry (branch), the leaf (fork)."""


async def stored_session(
    store: SessionStore, session_id: str, *, entries: bool = True
) -> tuple[SessionRecord, list[EntryDict]]:
    """The session's row and (with ``entries``) its entries, parsed; a bad entry is skipped,
    never fatal to the rest. ``ApiError`` 404 when there is no such session."""
    try:
        record = await asyncio.to_thread(present_then, store, store.get_session, session_id)
        return record, await stored_entries(store, session_id) if entries else []
    except SessionNotFoundError:
        raise ApiError(404, f"no session {echoed(session_id)}") from None


def present_then(store: SessionStore, read: Callable[..., T], *args: Any) -> T:
    """(In a worker thread.) ``read(*args)``, once the store's file is known to be where it was
    opened (``SessionStore.check_present``: a ``stat``): a SQLite file deleted under the server
    went on being read unlinked, its sessions as they were when it went, while what other
    processes wrote since went to a new file at its path. Now ``SessionDatabaseError``: a 500
    naming the file (``app._setup_error``, said once on stderr)."""
    store.check_present()
    return read(*args)


async def stored_entries(store: SessionStore, session_id: str) -> list[EntryDict]:
    """The session's entries, parsed; a bad entry is skipped, never fatal to the rest."""
    parsed: list[EntryDict] = []
    for entry in await asyncio.to_thread(store.entries, session_id):
        with contextlib.suppress(ValueError):
            parsed.append(cast(EntryDict, json.loads(entry.payload)))
    return parsed


class TreeApi:
    def __init__(self, store: SessionStore, hub: SessionHub) -> None:
        self.store = store
        self.hub = hub

    async def tree(self, request: Request) -> Response:
        record, entries = await stored_session(self.store, request.path_params["session_id"])
        nodes = [_node(e) for e in entries]
        parents = {e["id"]: e.get("parentId") for e in entries}
        path: list[str] = []
        at = record.leaf_id
        while at is not None and at in parents and len(path) <= len(parents):
            path.append(at)
            at = parents[at]
        return JSONResponse({"leafId": record.leaf_id, "nodes": nodes, "currentPath": path[::-1]})

    async def branch(self, request: Request) -> Response:
        from tether.session.extensions.host import SessionChangeCancelled  # loads with the cores

        session_id = request.path_params["session_id"]
        body = await parse_body(request, EntryBody)
        record, entries = await stored_session(self.store, session_id)
        target = body.entryId
        if target is not None and target not in {e["id"] for e in entries}:
            raise ApiError(404, f"entryId: no entry {echoed(target)} in session {session_id}")
        core = self.hub.open_core(session_id)
        try:
            if core is not None:
                if core.is_running:
                    raise ApiError(409, "the session is running: abort it or wait before moving it")
                await core.branch(target)
                leaf = core.session.leaf_id if core.session is not None else target
            else:
                leaf = await asyncio.to_thread(self._move, record.id, target)
        except SessionLockedError:
            raise ApiError(409, f"session {session_id} is being written by another process") from None
        except (BranchError, SessionChangeCancelled) as exc:
            raise ApiError(409, str(exc)) from None
        return JSONResponse({"leafId": leaf})  # the followers, on every server, hear it from the store

    async def fork(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = await parse_body(request, EntryBody)
        _, entries = await stored_session(self.store, session_id)
        if body.entryId is not None and body.entryId not in {e["id"] for e in entries}:
            raise ApiError(404, f"entryId: no entry {echoed(body.entryId)} in session {session_id}")
        core = self.hub.open_core(session_id)
        if core is not None:
            from tether.session.extensions.host import SessionChangeCancelled

            try:
                await core.before_fork(body.entryId, "at")
            except SessionChangeCancelled as exc:
                raise ApiError(409, str(exc)) from None
        forked = await asyncio.to_thread(self._fork, session_id, body.entryId)
        return JSONResponse({"sessionId": forked}, status_code=201)

    def _move(self, session_id: str, entry_id: str | None) -> str | None:
        session = SessionManager(self.store).open(session_id)
        try:
            return session.branch(entry_id)
        finally:
            session.close()

    def _fork(self, session_id: str, entry_id: str | None) -> str:
        session = SessionManager(self.store).fork(session_id, entry_id)
        session.close()
        return session.id


def _node(entry: EntryDict) -> dict[str, Any]:
    message = cast(dict[str, Any], entry.get("message") or {})
    return {
        "id": entry["id"],
        "parentId": entry.get("parentId"),
        "type": entry["type"],
        "timestamp": entry.get("timestamp"),
        "role": message.get("role"),
        "preview": entry_preview(entry),
    }
