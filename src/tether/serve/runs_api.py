"""``/api/runs``: durable runs listed, shown and cancelled, as ``tether runs`` does it.

Thin on purpose: the work is ``tether.durable.runs``; this opens a DBOS client per request (in a
thread: DBOS's client is blocking) and turns its answers and errors into JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

if TYPE_CHECKING:
    from tether.durable.client import DurableClient
    from tether.durable.config import DurableConfig

STATUSES = ("ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED")


class RunsError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RunsApi:
    """The run routes over ``config``; ``None``: durable runs are not set up on this server."""

    def __init__(self, config: DurableConfig | None) -> None:
        self.config = config

    async def list(self, request: Request) -> Response:
        from tether.durable import runs

        status = request.query_params.get("status")
        if status is not None and status.upper() not in STATUSES:
            raise RunsError(422, f"status: expected one of {', '.join(STATUSES)}")
        session = request.query_params.get("session") or None
        found = await self._call(
            lambda c: runs.list_runs(c, status=status.upper() if status else None, session=session, limit=200)
        )
        return JSONResponse({"runs": [run.as_dict() for run in found]})

    async def show(self, request: Request) -> Response:
        from tether.durable import runs

        run_id = request.path_params["run_id"]
        return JSONResponse((await self._call(lambda c: runs.show(c, run_id))).as_dict())

    async def cancel(self, request: Request) -> Response:
        from tether.durable import runs

        run_id = request.path_params["run_id"]
        return JSONResponse((await self._call(lambda c: runs.cancel(c, run_id))).as_dict())

    async def _call(self, action: Callable[[DurableClient], Any]) -> Any:
        if self.config is None:
            raise RunsError(
                501, "durable runs are not set up here: install tether[durable] (docs/durable.md)"
            )
        config = self.config

        def call() -> Any:
            from tether.durable.client import DurableClient, first_line, shown
            from tether.durable.runs import RunNotFoundError

            try:
                with DurableClient(config) as client:
                    return action(client)
            except RunNotFoundError as exc:
                raise RunsError(404, str(exc)) from None
            except ValueError as exc:
                raise RunsError(409, str(exc)) from None
            except Exception as exc:
                raise RunsError(
                    503, f"durable database {shown(config.system_database)}: {first_line(exc)}"
                ) from None

        return await asyncio.to_thread(call)
