"""``grep`` and ``find`` in a child process, so a model-chosen pattern cannot freeze tether.

A regular expression such as ``(a+)+$`` backtracks for hours on a long line, and a glob with
many ``**`` expands into such a regex; Python's ``re`` holds the interpreter (and the GIL) while
it does, so in-process neither a thread nor ``asyncio`` could answer SIGINT, an RPC ``abort`` or
``get_state``. The search runs in a fresh interpreter instead (``python -m
tether.tools.search_child``), its request on stdin and its result as JSON on stdout. Abort kills
it at once, ``SEARCH_TIMEOUT`` ends it with an error the model can act on, and the event loop
stays free the whole time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal as signals
import sys
from typing import Any, cast

from tether.agent.tool import AgentToolResult
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.process import supervised
from tether.tools.workspace import Workspace

CHILD = "tether.tools.search_child"
"""The module the child runs (``python -m``): the searches themselves, apart from this parent side,
which ``find`` and ``grep`` load."""

SEARCH_TIMEOUT = 60.0
"""Seconds a search may take before it is stopped and reported as too costly."""


async def run_search(
    tool: str, workspace: Workspace, params: dict[str, Any], signal: AbortSignal | None
) -> AgentToolResult[dict[str, Any]]:
    """Run ``tool`` (``grep`` or ``find``) on ``params`` in a child process; see the module doc."""
    if signal is not None and signal.aborted:
        raise ToolError(f"{tool} aborted.")
    request = {
        "tool": tool,
        "root": str(workspace.root),
        "extra_roots": [str(p) for p in workspace.extra_roots],
        "read_roots": [str(p) for p in workspace.read_roots],
        "allow_outside": workspace.allow_outside,
        "hidden": _hidden(workspace),
        "params": params,
    }
    process = await asyncio.create_subprocess_exec(
        *supervised([sys.executable, "-m", CHILD]),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    work = asyncio.ensure_future(process.communicate(json.dumps(request).encode()))
    stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_abort(_reason: object) -> None:
        if not stop.done():
            stop.set_result(None)

    remove = signal.add_listener(on_abort) if signal is not None else None
    try:
        done, _ = await asyncio.wait(
            {work, stop}, timeout=SEARCH_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        if remove is not None:
            remove()
        if not work.done():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signals.SIGKILL)
            await asyncio.gather(work, return_exceptions=True)
    if work not in done:
        if stop in done:
            raise ToolError(f"{tool} aborted.")
        raise ToolError(
            f"{tool} stopped after {SEARCH_TIMEOUT:g} s: the pattern is too costly for these files (nested "
            "repetition such as (a+)+ or many ** can take forever). Simplify the pattern or narrow the path."
        )
    stdout, stderr = work.result()
    try:
        answer = cast(dict[str, Any], json.loads(stdout))
    except ValueError:
        last = stderr.decode(errors="replace").strip().splitlines()[-1:] or [
            f"exit status {process.returncode}"
        ]
        raise ToolError(f"{tool} failed: {last[0]}") from None
    if "error" in answer:
        raise ToolError(str(answer["error"]))
    return AgentToolResult(answer["content"], answer["details"])


def _hidden(workspace: Workspace) -> dict[str, list[str]] | None:
    """What the sandbox hides, for the child to refuse as ``read`` does (``None``: nothing)."""
    policy = workspace.sandbox
    if policy is None or not policy.active:
        return None
    return {"hide": [str(p) for p in policy.hide], "others": [str(p) for p in policy.other_workspaces]}
