"""The event loop tether runs on: uvloop when it is installed (``pip install 'tether[uvloop]'``),
else asyncio's own.

The agent loop passes through the event loop several thousand times a run (P2: ~1,600 passes for
200 turns), and uvloop makes a pass cheaper: P2 costs 10-20% less CPU on it (bench/p2_agent_loop.py
prints both). It stays an extra: a compiled dependency, and one more event loop implementation
under subprocesses, signals and sockets. ``TETHER_UVLOOP=0`` keeps asyncio's loop when it is
installed. The CLI's front ends and ``run_sync`` start their loops here; code that starts its
own loop chooses its own.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory when it is installed and not turned off; ``None``: asyncio's loop."""
    if os.environ.get("TETHER_UVLOOP", "").strip() == "0":
        return None
    try:
        uvloop = importlib.import_module("uvloop")  # an optional extra: not imported statically
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop ``loop_factory`` chooses."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
