"""A permission request a cancelled turn leaves behind, in process: what it ends with later is
read, so asyncio reports nothing about it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from types import SimpleNamespace
from typing import Any, cast

from acp.interfaces import Client

from tether.acp.session import AcpSession
from tether.acp.tools import EditorAccess
from tether.session.agent_session import AgentSession


class StubbornClient:
    """A client whose permission request swallows its cancellation and fails afterwards (a
    connection lost while it cleaned up)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.ended = asyncio.Event()

    async def request_permission(self, **_: Any) -> Any:
        self.asked.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        await asyncio.sleep(0)
        self.ended.set()
        raise ConnectionError("the connection was lost")


async def test_a_request_whose_cancel_is_swallowed_and_that_fails_later_leaves_no_error_behind() -> None:
    """The request's task, cancelled but not done, was dropped: when it ended with an error,
    asyncio logged "Task exception was never retrieved" with its traceback."""
    caught: list[str] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: caught.append(context["message"]))
    client = StubbornClient()
    session = AcpSession(cast(Client, client), EditorAccess())
    session._core = cast(AgentSession, SimpleNamespace(session_id="s1"))  # pyright: ignore[reportPrivateUsage]
    asking = asyncio.ensure_future(session.confirm("Delete it?"))
    await client.asked.wait()
    session.cancelled.set()
    assert await asking is False
    await client.ended.wait()
    await asyncio.sleep(0)
    gc.collect()
    assert caught == []
