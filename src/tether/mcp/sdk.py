"""Loading the MCP SDK in a thread, while the servers start.

``import mcp`` takes about a second here, and none of it can be skipped: the package's
``__init__`` imports its client, its whole server side (Starlette, uvicorn) and every protocol
type, whichever module one asks for. Done on the event loop it would also freeze the front end
for that second (an RPC client would wait for its ``ready`` frame). So the first connection
starts the import in a thread of its own and every connection awaits the same import, having
spawned its server first (``tether.mcp.stdio``): the server's start and the SDK's load overlap.

Code that uses the SDK imports it normally after ``await loaded()``: the modules are then in
``sys.modules``, so those imports cost nothing and cannot race the thread's.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from concurrent.futures import Future

MODULES = ("anyio", "mcp", "mcp_types", "mcp.client.streamable_http", "mcp.shared._httpx_utils")
"""What the connections use; ``mcp`` brings the rest of its package with it."""

_lock = threading.Lock()
_loading: Future[None] | None = None


def load_in_background() -> Future[None]:
    """Start importing ``MODULES`` in a thread, once per process; the import's future."""
    global _loading
    with _lock:
        if _loading is None:
            _loading = Future()
            _loading.set_running_or_notify_cancel()  # a waiter's cancellation must not cancel it
            if all(name in sys.modules for name in MODULES):
                _loading.set_result(None)
            else:
                # not a daemon: a process ending mid-import (a session closed at once) waits for
                # it, where killing the thread would abort the interpreter at exit
                threading.Thread(target=_load, args=(_loading,), name="mcp sdk import").start()
        return _loading


async def loaded() -> None:
    """Return once the SDK is imported (starting the import if needed); an import failure (the
    SDK missing or broken) is raised here."""
    await asyncio.wrap_future(load_in_background())


def _load(done: Future[None]) -> None:
    try:
        for name in MODULES:
            importlib.import_module(name)
    except BaseException as exc:  # handed to every waiter, the thread itself ends quietly
        done.set_exception(exc)
    else:
        done.set_result(None)
