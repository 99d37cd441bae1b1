"""``run_sync``: one prompt, one answer, no ``async`` in sight: for scripts and notebooks.

It builds a throwaway ``AgentSession`` (nothing stored; by default no tools at all), runs the
prompt to the end and closes it. Inside a running event loop (a notebook, an async web handler),
``asyncio.run`` would refuse, so the run goes to a worker thread with a loop of its own and the
caller's thread waits for it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar, overload

from tether._event_loop import run as run_event_loop

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tether.agent import AgentTool

M = TypeVar("M", bound="BaseModel")
T = TypeVar("T")


@overload
def run_sync(
    prompt: str,
    *,
    model: str | None = None,
    output: None = None,
    tools: Sequence[str | AgentTool] = (),
    system_prompt: str | None = None,
    **options: Any,
) -> str: ...
@overload
def run_sync(
    prompt: str,
    *,
    model: str | None = None,
    output: type[M],
    tools: Sequence[str | AgentTool] = (),
    system_prompt: str | None = None,
    **options: Any,
) -> M: ...
def run_sync(
    prompt: str,
    *,
    model: str | None = None,
    output: type[BaseModel] | None = None,
    tools: Sequence[str | AgentTool] = (),
    system_prompt: str | None = None,
    **options: Any,
) -> Any:
    """Answer ``prompt`` and return the reply's text, or with ``output`` a validated instance of
    that pydantic model (``AgentSession.run``). ``model``, ``tools`` and ``system_prompt`` are
    those of ``AgentOptions`` (``model``: any model spec, default as ``create_agent_session``
    chooses), except that ``tools`` defaults to none; so are its other fields as keywords
    (``thinking=``, ``approval=``, ...); the rest go to ``create_agent_session`` (``cwd``,
    ``settings``, ``session``, ...). A failed reply raises
    ``OutputError``."""
    return _blocking(_run(prompt, model, output, tools, system_prompt, options))


async def _run(
    prompt: str,
    model: str | None,
    output: type[BaseModel] | None,
    tools: Sequence[str | AgentTool],
    system_prompt: str | None,
    options: dict[str, Any],
) -> Any:
    from tether.session.events import message_text
    from tether.session.factory import SessionChoice, create_agent_session
    from tether.session.options import AgentOptions, with_choices
    from tether.session.output import OutputError

    options.setdefault("session", SessionChoice(persist=False))
    agent_fields = {f.name for f in fields(AgentOptions)}
    choices = {name: options.pop(name) for name in list(options) if name in agent_fields}
    chosen = with_choices(AgentOptions(model=model, tools=tools, system_prompt=system_prompt), choices)
    core = create_agent_session(chosen, **options)
    try:
        if output is not None:
            return await core.run(prompt, output=output)
        await core.prompt(prompt)
        last = core.last_assistant()
        if last is None or last["stopReason"] in ("error", "aborted"):
            reason = (last or {}).get("errorMessage") or "no reply"
            raise OutputError(f"the model call failed: {reason}", "failed")
        return message_text(last)
    finally:
        await core.close()
        connections = sys.modules.get("tether.ai.connections")  # not loaded: no request was sent
        if connections is not None:
            await connections.close_connections()  # the loop is ours, and ends here


def _blocking(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to the end from synchronous code, with or without a running event loop here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_event_loop(work)
    outcome: list[T] = []
    failure: list[BaseException] = []

    def worker() -> None:
        try:
            outcome.append(run_event_loop(work))
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=worker, name="tether.run_sync", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
