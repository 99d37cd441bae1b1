"""``/api/runs``: durable runs listed, shown and cancelled, as ``tether runs`` does it.

Thin on purpose: the work is ``tether.durable.runs``; this opens a DBOS client per request (in a
thread: DBOS's client is blocking; ``tether.durable.client.answer_async`` waits for it a bounded
time) and turns its answers and errors into JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.serve.errors import MAX_MESSAGE_CHARS, ApiError, parse_body
from tether.serve.hub import SessionHub
from tether.session.workspace import FolderGoneError, FolderOutsideError
from tether.store import SessionNotFoundError
from tether.store.store import SessionStore

if TYPE_CHECKING:
    from tether.durable.client import DurableClient
    from tether.durable.config import DurableConfig
    from tether.durable.runs import RunDetail, RunInfo

STATUSES = ("ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED")
USAGE_OF = 50
"""The newest runs of a listing that come with their tokens and cost (a query each)."""


class SubmitBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sessionId: str = Field(min_length=1, max_length=100)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class RunsApi:
    """The run routes over ``config``; ``None``: durable runs are not set up on this server.
    ``store``: where a submit on a server without durable runs looks its session up, to say an
    unknown one is unknown before saying runs are not set up. ``hub``: whose folder a submitted
    run's session must have been recorded in (a worker runs it in that folder, as this server
    would: ``SessionHub.workspace``)."""

    def __init__(self, config: DurableConfig | None, store: SessionStore, hub: SessionHub) -> None:
        self.config = config
        self.store = store
        self.hub = hub

    async def list(self, request: Request) -> Response:
        from tether.durable import runs

        status = request.query_params.get("status")
        if status is not None and status.upper() not in STATUSES:
            raise ApiError(422, f"status: expected one of {', '.join(STATUSES)}")
        session = request.query_params.get("session") or None

        def listed(client: DurableClient) -> list[dict[str, Any]]:
            found = runs.list_runs(
                client, status=status.upper() if status else None, session=session, limit=200
            )
            return [
                _with_usage(run, runs.show(client, run.id) if i < USAGE_OF else None)
                for i, run in enumerate(found)
            ]

        return JSONResponse({"runs": await self._call(listed)})

    async def submit(self, request: Request) -> Response:
        """Enqueue a durable run of a prompt on a stored session (``tether runs submit``)."""
        body = await parse_body(request, SubmitBody)
        if self.config is None:  # nothing is enqueued, so no row to read once: 404, else 501
            try:
                await asyncio.to_thread(self.store.get_session, body.sessionId)
            except SessionNotFoundError as exc:
                raise _no_session(exc) from None

        def where(recorded: str) -> str:
            """The folder checked and resolved, as a prompt here runs in: not the record's,
            resolved again by the worker (a link swapped after the check would lead out). Given
            the row the submit reads to see that the session exists: the folder checked is the
            one of the row the run is enqueued on (read twice, the row could change between)."""
            try:
                return str(self.hub.workspace(body.sessionId, recorded))
            except (FolderGoneError, FolderOutsideError) as exc:
                raise ApiError(409, str(exc)) from None

        run_id = await self._call(
            lambda c: c.submit(body.sessionId, body.message, cwd=where), effect="the submit"
        )
        return JSONResponse({"runId": run_id}, status_code=201)

    async def show(self, request: Request) -> Response:
        from tether.durable import runs

        run_id = request.path_params["run_id"]
        return JSONResponse((await self._call(lambda c: runs.show(c, run_id))).as_dict())

    async def cancel(self, request: Request) -> Response:
        from tether.durable import runs

        run_id = request.path_params["run_id"]
        cancelled = await self._call(lambda c: runs.cancel(c, run_id), effect="the cancel")
        return JSONResponse(cancelled.as_dict())

    async def _call(self, action: Callable[[DurableClient], Any], effect: str = "") -> Any:
        """``action`` with a client, waited for the database's answer (``answer_async``: a
        database that stopped answering is a 503 after ``answer_wait_seconds``, not a request
        held for ever), its errors as HTTP answers."""
        if self.config is None:
            raise ApiError(501, "durable runs are not set up here: install tether[durable] (docs/durable.md)")
        from tether.durable.client import SubmitError, answer_async, shown
        from tether.durable.config import first_line
        from tether.durable.runs import RunNotFoundError

        try:
            return await answer_async(self.config, action, effect=effect)
        except ApiError:
            raise
        except SessionNotFoundError as exc:
            raise _no_session(exc) from None
        except RunNotFoundError as exc:
            raise ApiError(404, str(exc)) from None
        except SubmitError as exc:  # no worker has started there yet, the database refused or is silent
            raise ApiError(503, str(exc)) from None
        except ValueError as exc:
            raise ApiError(409, str(exc)) from None
        except Exception as exc:
            raise ApiError(
                503, f"durable database {shown(self.config.system_database)}: {first_line(exc)}"
            ) from None


def _no_session(exc: SessionNotFoundError) -> ApiError:
    """One answer whichever store had no such session: this server's (durable runs not set up)
    or the one the submit reads (the workers')."""
    return ApiError(404, f"sessionId: {exc}")


def _with_usage(run: RunInfo, detail: RunDetail | None) -> dict[str, Any]:
    """A run as the runs page lists it: ``tether runs list``'s fields, and with ``detail`` its
    tokens and cost so far (``None`` each when not looked up)."""
    listed = run.as_dict()
    listed["inputTokens"] = detail.input_tokens if detail else None
    listed["outputTokens"] = detail.output_tokens if detail else None
    listed["cost"] = detail.cost if detail else None
    return listed
