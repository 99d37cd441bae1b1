"""The ASGI application of ``tether serve``: JSON routes, the SSE follow stream, the web page.

Every ``/api`` route and ``/openapi.json`` need a bearer token once the server has one; the page
itself (``/`` and ``/static``) holds no data and is served to anyone, so that a browser can load it
and then send the token it was given (``#token=...`` in the address, never sent to the server).
``EventSource`` cannot send headers, so the follow stream also takes ``?access_token=``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.errors import TetherError
from tether.serve.auth import RateLimit, Tokens, browser_problem
from tether.serve.errors import MAX_MESSAGE_CHARS, ApiError, echoed, parse_body, say_once
from tether.serve.feeds import SUBSCRIBER_BUFFER, Feeds, Subscriber, entry_chunk
from tether.serve.hub import SessionHub
from tether.serve.openapi import openapi_document
from tether.serve.runs_api import RunsApi
from tether.serve.tree_api import TreeApi, present_then, stored_entries, stored_session
from tether.session.events import QueueSnapshot
from tether.session.html_page import render_session_page, session_meta
from tether.session.workspace import FolderGoneError, FolderOutsideError
from tether.store import SessionLockedError, SessionNotFoundError
from tether.store.entries import EntryDict
from tether.store.store import SessionRecord, SessionStore, StoredEntry

if TYPE_CHECKING:
    from tether.durable.config import DurableConfig

HISTORY_BUDGET = 256 << 20
"""Bytes of history the followers may have yet to take, together; past it a new one is a 503."""
HISTORY_PIECE = 64 << 10
"""A follower's history goes out in pieces of about this size, each when its connection took the
one before (uvicorn waits for a connection over its buffer's limit)."""

JOINS_AT_ONCE = 32
"""Followers joining at once: a burst of joins would otherwise read every history before any of
them is counted against the budget."""

RENDERS_AT_ONCE = 2
"""Session pages rendered at once. A long session's page is seconds of CPU (markdown, highlighted
code), so it is made in a thread, away from the event loop that answers every other request and
stream; and only this many at once, so that renders (the page asks for one on every new entry)
never hold all the default executor's threads, which every read of the store waits for."""

PAGES_KEPT = 8
"""Sessions whose latest page is kept, with the state of the session it shows: every page that
follows a session asks for its page on each new entry, so without it N open pages made the same
seconds-long render N times an entry; now the first request makes it and the others wait for it."""

KEEP_ALIVE_SECONDS = 15.0
"""A comment line this often on a quiet follow stream: proxies close idle connections."""

PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-src 'self' about:; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""The page's policy: its own script only. The conversation is shown in a sandboxed frame (no
scripts) whose inline styles come from the exported page, hence ``style-src 'unsafe-inline'``."""


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """What the server needs: the store to read, the hub that writes, who may do what."""

    store: SessionStore
    hub: SessionHub
    tokens: Tokens = field(default_factory=Tokens)
    prompts_per_minute: int = 30
    cors_origins: tuple[str, ...] = ()
    model: str | None = None
    durable: DurableConfig | None = None
    """Where durable runs are (``/api/runs``); ``None``: not set up on this server."""
    max_followers: int = 10_000
    """Follow streams open at once; more are answered 503. They share one store watch per
    session (``tether.serve.feeds``): a follower costs a connection and its buffer, no thread."""
    follower_buffer: int = SUBSCRIBER_BUFFER
    """Chunks a follower may be behind before it is dropped (it resumes by ``Last-Event-ID``)."""
    history_budget: int = HISTORY_BUDGET
    """Bytes of history the followers may have yet to take, together (``HISTORY_BUDGET``)."""


class PromptBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    streamingBehavior: Literal["steer", "followUp"] | None = None


class ApprovalBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: bool = Field(strict=True)


class MessageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


def create_app(config: ServeConfig) -> Starlette:
    """The application; the caller owns ``config.store`` and closes ``config.hub`` (``lifespan``)."""
    feeds = Feeds(config.store, config.follower_buffer, config.hub.live_state)
    config.hub.on_live = feeds.publish
    config.hub.followed = feeds.following
    api = _Api(config, feeds)
    tree = TreeApi(config.store, config.hub)
    runs = RunsApi(config.durable, config.store, config.hub)
    routes: list[BaseRoute] = [
        Route("/", _index, methods=["GET"]),
        Mount("/static", app=StaticFiles(packages=[("tether.serve", "static")]), name="static"),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/api/sessions", api.list_sessions, methods=["GET"]),
        Route("/api/sessions", api.create_session, methods=["POST"]),
        Route("/api/sessions/{session_id}", api.read_session, methods=["GET"]),
        Route("/api/sessions/{session_id}/tree", tree.tree, methods=["GET"]),
        Route("/api/sessions/{session_id}/branch", tree.branch, methods=["POST"]),
        Route("/api/sessions/{session_id}/fork", tree.fork, methods=["POST"]),
        Route("/api/sessions/{session_id}/approvals", api.approvals, methods=["GET"]),
        Route("/api/sessions/{session_id}/approvals/{approval_id}", api.approve, methods=["POST"]),
        Route("/api/sessions/{session_id}/html", api.html, methods=["GET"]),
        Route("/api/sessions/{session_id}/events", api.events, methods=["GET"]),
        Route("/api/sessions/{session_id}/state", api.state, methods=["GET"]),
        Route("/api/sessions/{session_id}/prompt", api.prompt, methods=["POST"]),
        Route("/api/sessions/{session_id}/steer", api.steer, methods=["POST"]),
        Route("/api/sessions/{session_id}/follow-up", api.follow_up, methods=["POST"]),
        Route("/api/sessions/{session_id}/clear-queue", api.clear_queue, methods=["POST"]),
        Route("/api/sessions/{session_id}/abort", api.abort, methods=["POST"]),
        Route("/api/models", api.models, methods=["GET"]),
        Route("/api/runs", runs.list, methods=["GET"]),
        Route("/api/runs", runs.submit, methods=["POST"]),
        Route("/api/runs/{run_id}", runs.show, methods=["GET"]),
        Route("/api/runs/{run_id}/cancel", runs.cancel, methods=["POST"]),
    ]
    middleware = [Middleware(_Guard, tokens=config.tokens, cors_origins=config.cors_origins)]
    if config.cors_origins:  # outermost: a preflight is answered before the token is asked for
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            ),
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            await feeds.close()
            await config.hub.close()

    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            ApiError: _api_error,
            TetherError: _setup_error,
            404: _not_found,
            405: _not_allowed,
        },
    )


class _Guard:
    """Bearer auth on the API (read-only tokens refused on POST), the page's security headers, and
    without a token, no request a page of another site sends (``auth.browser_problem``)."""

    def __init__(self, app: ASGIApp, tokens: Tokens, cors_origins: tuple[str, ...]) -> None:
        self.app = app
        self.tokens = tokens
        self.cors_origins = cors_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.tokens.required:
            headers = Headers(scope=scope)
            problem = browser_problem(headers.get("host"), headers.get("origin"), self.cors_origins)
            if problem is not None:
                await _error(403, problem)(scope, receive, send)
                return
        path: str = scope["path"]
        if path.startswith("/api/") or path == "/openapi.json":
            request = Request(scope)
            presented = _bearer(request)
            access = self.tokens.access(presented)
            if access == "none":
                answer = _error(401, "a bearer token is required" if presented is None else "wrong token")
                answer.headers["WWW-Authenticate"] = "Bearer"
                await answer(scope, receive, send)
                return
            if access == "read" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
                await _error(403, "this token may only read")(scope, receive, send)
                return
            scope.setdefault("state", {})["client_key"] = presented or "local"

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"content-security-policy", PAGE_CSP.encode()),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


_FOLLOW_PATH = re.compile(r"/api/sessions/[^/]+/events")
"""The one route that takes its token in the address: ``/api/runs/events`` (a run id) does not."""


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        return value.strip() or None if scheme.lower() == "bearer" else None
    if _FOLLOW_PATH.fullmatch(request.url.path):  # EventSource sends no headers of its own
        return request.query_params.get("access_token") or None
    return None


class _Api:
    def __init__(self, config: ServeConfig, feeds: Feeds) -> None:
        self.config = config
        self.store = config.store
        self.hub = config.hub
        self.feeds = feeds
        self.limit = RateLimit(config.prompts_per_minute)
        self._history_held = 0
        """Bytes of history the followers have yet to take (``_stream``)."""
        self._joins = asyncio.Semaphore(JOINS_AT_ONCE)
        self._renders = asyncio.Semaphore(RENDERS_AT_ONCE)
        self._pages: dict[str, tuple[SessionRecord, asyncio.Future[str]]] = {}
        """Session id -> the row its kept page shows and the page (``PAGES_KEPT``), oldest first."""

    async def openapi(self, _request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def list_sessions(self, request: Request) -> Response:
        query = (request.query_params.get("q") or "").strip().lower()
        limit = _int_param(request, "limit", 100, 1, 1000)
        records = await asyncio.to_thread(present_then, self.store, self.store.list_sessions)
        found = [r for r in records if not query or query in _haystack(r)]
        return JSONResponse({"sessions": [_record(r) for r in found[:limit]], "total": len(found)})

    async def read_session(self, request: Request) -> Response:
        record, entries = await self._session(request)
        return JSONResponse({"session": _record(record), "entries": entries})

    async def html(self, request: Request) -> Response:
        record, _ = await self._session(request, entries=False)
        # What the page shows is the session's row: every append changes its counters and
        # ``updated``, a leaf move its leaf and ``updated``, a name its title. So the page of an
        # unchanged session costs one row read, not a read of every entry (a followed long
        # session's page is asked for again on each new entry, by every page that follows it);
        # the entries are read by the render, once for all who wait for it.
        kept = self._pages.pop(record.id, None)
        if kept is None or kept[0] != record or (kept[1].done() and not _made(kept[1])):
            render = asyncio.ensure_future(self._render(record))
            render.add_done_callback(_made)  # its failure is said to whoever waits, if anyone
            kept = (record, render)
        self._pages[record.id] = kept  # the newest last
        while len(self._pages) > PAGES_KEPT:
            del self._pages[next(iter(self._pages))]
        # shielded: a client that leaves does not cancel the render the others wait for
        return HTMLResponse(await asyncio.shield(kept[1]))

    async def _render(self, record: SessionRecord) -> str:
        """The page of ``record``'s session, its entries read now (appended after the row was
        read, some may show: the next request, with the newer row, renders again)."""
        entries = await stored_entries(self.store, record.id)
        title = record.title or record.first_prompt or record.id
        meta = session_meta(record.id, record.cwd, record.created, entries)
        async with self._renders:  # RENDERS_AT_ONCE says why a thread
            return await asyncio.to_thread(
                render_session_page, entries, record.leaf_id, title=title[:200], meta=meta
            )

    async def state(self, request: Request) -> Response:
        record, _ = await self._session(request, entries=False)
        return JSONResponse(
            {
                "sessionId": record.id,
                "open": self.hub.is_open(record.id),
                "running": self.hub.running(record.id),
                "leafId": record.leaf_id,
                "queue": _queue_json(self.hub.queued(record.id)),
            }
        )

    async def events(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if request.method == "HEAD":  # a stream's headers only: its body would never end, and
            # the keep-alive connection's next request waited behind it for ever
            await self._session(request, entries=False)
            return Response(media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        after = request.headers.get("last-event-id") or request.query_params.get("lastEventId") or None
        from_end = after is None and request.query_params.get("history", "true") == "false"
        if after is not None:  # a resume: the entry must be the session's
            _, entries = await self._session(request)
            if after not in {e["id"] for e in entries}:
                raise ApiError(400, f"Last-Event-ID: no entry {echoed(after)} in session {session_id}")
        if self.feeds.followers >= self.config.max_followers:
            raise ApiError(
                503, f"this server follows {self.feeds.followers} streams already: try again later"
            )
        async with self._joins:  # histories read at once: each is held until it is counted
            if not from_end and self._history_held >= self.config.history_budget:
                raise self._history_full()  # before the history is read, not after
            try:
                subscriber, backlog = await self.feeds.subscribe(session_id, after, from_end=from_end)
            except SessionNotFoundError:
                raise ApiError(404, f"no session {echoed(session_id)}") from None
            size = sum(len(entry.payload) for entry in backlog)
            if size and self._history_held and self._history_held + size > self.config.history_budget:
                self.feeds.unsubscribe(session_id, subscriber)
                raise self._history_full()
            self._history_held += size
        return StreamingResponse(
            self._stream(session_id, subscriber, deque(backlog), size),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    def _history_full(self) -> ApiError:
        return ApiError(
            503,
            f"this server is sending {self._history_held >> 20} MB of history to followers "
            "that have not taken it yet: try again later",
        )

    async def _stream(
        self, session_id: str, subscriber: Subscriber, backlog: deque[StoredEntry], held: int
    ) -> AsyncIterator[str]:
        """The follower's history, then what its feed brings; a ``dropped`` event (and the end)
        when it fell too far behind, naming the entry to resume after.

        The history goes out in pieces (``HISTORY_PIECE``), each yielded when the connection
        has taken the one before, and each piece's entries let go as it goes: a client that
        reads nothing holds a piece in its connection's buffer, not the whole history, and what
        it has yet to take counts against ``history_budget`` (``held``) until it takes it."""
        last = subscriber.start_after
        try:
            yield "retry: 2000\n\n"
            while backlog:
                piece: list[StoredEntry] = []
                size = 0
                while backlog and size < HISTORY_PIECE:
                    piece.append(backlog.popleft())
                    size += len(piece[-1].payload)
                yield entry_chunk(piece).text
                held -= size
                self._history_held -= size
            # then where the run is now (status, words so far), as the subscriber's first chunks
            while True:
                chunks = await subscriber.take(KEEP_ALIVE_SECONDS)
                if chunks:
                    yield "".join(chunk.text for chunk in chunks)
                    last = next((c.last_id for c in reversed(chunks) if c.last_id), last)
                if subscriber.dropped:
                    dropped = {"type": "dropped", "reason": "this follower fell behind", "lastEventId": last}
                    yield f"event: dropped\ndata: {json.dumps(dropped)}\n\n"
                    return
                if subscriber.ended:
                    return
                if not chunks:
                    yield ": keep-alive\n\n"
        finally:
            self._history_held -= held
            self.feeds.unsubscribe(session_id, subscriber)

    async def create_session(self, request: Request) -> Response:
        body = await parse_body(request, MessageBody)
        self._spend(request)
        try:
            session_id = await self.hub.new_session(body.message)
        except TimeoutError as exc:  # a slow store or extension hook: not the client's mistake, nor ours
            raise ApiError(503, f"{exc}: try again later") from None
        return JSONResponse({"sessionId": session_id, "disposition": "started"}, status_code=201)

    async def prompt(self, request: Request) -> Response:
        body = await parse_body(request, PromptBody)
        core = await self._core(request)
        self._spend(request)
        if not core.is_running:
            self.hub.prompt(request.path_params["session_id"], core, body.message)
            return JSONResponse({"disposition": "started"}, status_code=202)
        if body.streamingBehavior is None:
            raise ApiError(409, "the session is running: give streamingBehavior 'steer' or 'followUp'")
        queue = core.steer if body.streamingBehavior == "steer" else core.follow_up
        return JSONResponse({"disposition": queue(body.message)}, status_code=202)

    async def steer(self, request: Request) -> Response:
        body = await parse_body(request, MessageBody)
        core = await self._core(request)
        self._spend(request)
        return JSONResponse({"disposition": core.steer(body.message)}, status_code=202)

    async def follow_up(self, request: Request) -> Response:
        body = await parse_body(request, MessageBody)
        core = await self._core(request)
        self._spend(request)
        return JSONResponse({"disposition": core.follow_up(body.message)}, status_code=202)

    async def clear_queue(self, request: Request) -> Response:
        """pi's RPC ``clear_queue``: an abort keeps the queues (as pi's ``abort`` does), so a
        client that means to drop them, or to put them back in its input box as the page does
        before it aborts, takes them here."""
        session_id = request.path_params["session_id"]
        await self._session(request, entries=False)
        return JSONResponse(_queue_json(self.hub.clear_queue(session_id)))

    async def abort(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await self._session(request, entries=False)
        return JSONResponse({"aborted": self.hub.abort(session_id)})

    async def approvals(self, request: Request) -> Response:
        record, _ = await self._session(request, entries=False)
        return JSONResponse({"approvals": self.hub.approvals.pending(record.id)})

    async def approve(self, request: Request) -> Response:
        body = await parse_body(request, ApprovalBody)
        session_id = request.path_params["session_id"]
        approval_id = request.path_params["approval_id"]
        if not self.hub.approvals.answer(session_id, approval_id, body.allow):
            raise ApiError(
                404, f"no approval {echoed(approval_id)} waits in session {echoed(session_id, quoted=False)}"
            )
        return JSONResponse({"id": approval_id, "allowed": body.allow})

    async def models(self, _request: Request) -> Response:
        from tether.ai.local_servers import usable_models

        models = await usable_models()
        listed = [{"provider": m["provider"], "id": m["id"], "name": m.get("name", m["id"])} for m in models]
        return JSONResponse({"default": self.config.model, "models": listed})

    async def _session(
        self, request: Request, *, entries: bool = True
    ) -> tuple[SessionRecord, list[EntryDict]]:
        return await stored_session(self.store, request.path_params["session_id"], entries=entries)

    async def _core(self, request: Request) -> Any:
        session_id = request.path_params["session_id"]
        record, _ = await self._session(request, entries=False)
        try:
            return await self.hub.core(session_id, record.cwd)
        except SessionLockedError:
            raise ApiError(409, f"session {session_id} is being written by another process") from None
        except (FolderGoneError, FolderOutsideError) as exc:
            raise ApiError(409, str(exc)) from None

    def _spend(self, request: Request) -> None:
        key = cast(str, request.scope.get("state", {}).get("client_key", "local"))
        wait = self.limit.take(key)
        if wait is not None:
            raise ApiError(429, f"too many prompts: {self.limit.per_minute} a minute; retry in {wait:.0f}s")


def _made(render: asyncio.Future[str]) -> bool:
    """Whether a finished render made its page (not cancelled, no exception)."""
    return not render.cancelled() and render.exception() is None


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    digits = raw.lstrip("0") or "0"  # int() refuses over 4,300 digits, leading zeros too
    if (
        not (raw.isascii() and raw.isdigit())  # "²".isdigit()
        or len(digits) > len(str(high))
        or not low <= int(digits) <= high
    ):
        raise ApiError(422, f"{name}: expected an integer from {low} to {high}")
    return int(digits)


def _haystack(record: SessionRecord) -> str:
    return " ".join(filter(None, [record.id, record.title, record.first_prompt, record.cwd])).lower()


def _queue_json(queue: QueueSnapshot) -> dict[str, list[str]]:
    """A queue snapshot in pi's RPC names (``clear_queue``'s answer, ``queue_update``)."""
    return {"steering": list(queue.steering), "followUp": list(queue.follow_up)}


def _record(record: SessionRecord) -> dict[str, Any]:
    return {
        **record.identity(),
        "firstPrompt": record.first_prompt,
        "entryCount": record.entry_count,
        "messageCount": record.message_count,
        "cost": record.cost,
        "inputTokens": record.input_tokens,
        "outputTokens": record.output_tokens,
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _api_error(_request: Request, exc: Exception) -> Response:
    error = cast(ApiError, exc)
    response = _error(error.status, error.message)
    if error.status == 429:
        response.headers["Retry-After"] = "60"
    return response


async def _setup_error(_request: Request, exc: Exception) -> Response:
    """The server cannot start the session as configured (a bad ``--model``, ...) or read it (a
    stored entry damaged outside tether, ``CorruptSessionError``): any error tether raises on
    purpose says what and where, so it is said in one line to the client and on stderr, not a
    traceback and "Internal Server Error" (on stderr once: ``say_once``)."""
    say_once(f"tether serve: {exc}")
    return _error(500, str(exc))


async def _not_found(request: Request, _exc: Exception) -> Response:
    return _error(404, f"no route {echoed(request.url.path, quoted=False)}")


async def _not_allowed(request: Request, _exc: Exception) -> Response:
    return _error(
        405,
        f"{echoed(request.method, quoted=False)} is not allowed on {echoed(request.url.path, quoted=False)}",
    )


async def _index(_request: Request) -> Response:
    page = resources.files("tether.serve").joinpath("static/index.html").read_text(encoding="utf-8")
    return HTMLResponse(page)
