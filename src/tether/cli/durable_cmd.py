"""``tether worker`` and ``tether submit``: the terminal side of durable runs (``tether.durable``).

Thin on purpose: configuration comes from settings and flags, the work from ``tether.durable``.
DBOS is imported only here, when one of these commands runs.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from tether.cli.collector import start_up_done
from tether.errors import UserError

if TYPE_CHECKING:
    from tether.durable.client import DurableClient
    from tether.durable.config import DurableConfig
    from tether.durable.workflow import Setup

MISSING = "durable runs need the durable extra: pip install 'dbos>=3.4,<4'"


class DurableCommandError(UserError):
    """A mistake in a ``worker``/``submit`` invocation; the message says what and where."""


def run_worker(
    *,
    name: str,
    concurrency: int | None,
    global_concurrency: int | None,
    durable_database: str | None,
    setup: str | None,
    model: str | None,
    yes: bool,
    verbose: bool = False,
    err: TextIO = sys.stderr,
) -> int:
    """Serve runs until SIGINT/SIGTERM; the unfinished ones are resumed by the next worker.
    A failed run is one line; ``verbose`` adds its traceback (``tether.durable`` at DEBUG). A stop
    that could not finish (the database away) exits at once with ``CUT_EXIT`` (``leave``)."""
    config = durable_config(
        durable_database, name=name, worker_concurrency=concurrency, global_concurrency=global_concurrency
    )
    from tether.ai.paths import config_dir
    from tether.durable.worker import Stopped, leave, serve
    from tether.durable.workflow import Runtime

    runtime = Runtime(
        config,
        config_dir(),
        setup=_load_setup(setup) if setup else None,
        model=model,
        approval="yes" if yes else None,
    )
    stop = threading.Event()

    def stop_serving(number: int, frame: object) -> None:
        stop.set()

    started = threading.Event()

    def ready() -> None:
        started.set()
        start_up_done(many_sessions=True)  # DBOS is up: from here the worker serves runs for hours
        from tether.durable.client import shown

        limit = config.worker_concurrency or "no limit"
        err.write(
            f"tether worker {config.executor_id}: taking runs from {shown(config.system_database)} "
            f"(at most {limit} at once)\n"
        )
        err.flush()

    from tether.telemetry.otlp import start_from_env

    stop_telemetry = start_from_env()  # run spans and metrics, when an OTLP endpoint is configured
    previous = {number: signal.signal(number, stop_serving) for number in (signal.SIGINT, signal.SIGTERM)}
    logs = logging.getLogger("tether.durable")
    # Its lines as Python writes them with no handler (the message alone), DEBUG's as well.
    verbose_log = logging.StreamHandler(err) if verbose else None
    if verbose_log is not None:
        logs.addHandler(verbose_log)
        logs.setLevel(logging.DEBUG)
    stopped: Stopped | None = None
    try:
        stopped = serve(runtime, stop, on_ready=ready)
    except UserError:
        raise  # says what is wrong itself (a DBOS of another version), not the database
    except Exception as exc:
        if started.is_set():
            raise
        from tether.durable.client import shown
        from tether.durable.config import first_line

        raise DurableCommandError(
            f"durable database {shown(config.system_database)}: {first_line(exc)}"
        ) from None
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if verbose_log is not None:
            logs.removeHandler(verbose_log)
            logs.setLevel(logging.NOTSET)
        if stop_telemetry is not None:
            stop_telemetry()
        if started.is_set():  # whatever ended serve: past threads waiting for an away database
            leave(stopped)
    return 0


def submit_run(
    session_id: str,
    prompt: str,
    *,
    follow: bool,
    as_json: bool,
    durable_database: str | None,
    key: str | None = None,
    timeout: float | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Enqueue a run; with ``follow``, print its events as they happen and wait for its end."""
    config = durable_config(durable_database)

    from tether.durable.client import DurableClient, SubmitError, answer

    logging.getLogger("dbos").setLevel(logging.CRITICAL)  # its errors reach the user as SubmitError

    where = partial(_workspace, session_id)  # given the row submit reads, after the client's start
    try:
        run_id = answer(
            config,
            lambda client: client.submit(session_id, prompt, key=key, timeout=timeout, cwd=where),
            effect="the submit",
        )
        if not follow:
            out.write(run_id + "\n")
            return 0
        err.write(f"run {run_id}\n")
        err.flush()
        with DurableClient(config) as client:
            return asyncio.run(_follow(client, run_id, as_json, out, err, config))
    except SubmitError as exc:
        raise DurableCommandError(str(exc)) from None


def _workspace(session_id: str, folder: str) -> str:
    """The folder the run works in: the session's recorded ``folder``, resolved, when this
    command is typed in it or in a folder containing it; ``DurableCommandError`` naming both
    folders otherwise (``recorded_workspace``: a worker runs a session in its recorded folder,
    which an imported pi file sets to what its header said, ``/`` as well, and nobody chose)."""
    from tether.session.workspace import FolderGoneError, FolderOutsideError, recorded_workspace

    here = Path.cwd()
    outside = (
        f"this folder {here}, and a worker runs it in that folder: submit it from {folder} (or a "
        f"folder containing it) if it should work there, or run it here with tether --session "
        f"{session_id}"
    )
    try:
        return str(recorded_workspace(session_id, folder, here, outside))
    except (FolderGoneError, FolderOutsideError) as exc:
        raise DurableCommandError(str(exc)) from None


async def _follow(
    client: DurableClient, run_id: str, as_json: bool, out: TextIO, err: TextIO, config: DurableConfig
) -> int:
    shown = _Shown()
    watching = asyncio.ensure_future(_say_when_no_worker(config, err))
    try:
        async for event in client.follow(run_id):
            if as_json:
                out.write(json.dumps(event) + "\n")
            else:
                _show(event, out, err, shown)
            out.flush()
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    try:
        outcome = await client.result(run_id)
    except Exception as exc:
        err.write(f"tether: run {run_id} failed: {exc}\n")
        return 1
    if not as_json:
        out.write("\n")
    return 1 if outcome["stopReason"] in ("error", "aborted") else 0


async def _say_when_no_worker(config: DurableConfig, err: TextIO) -> None:
    """While following: one line on stderr when no worker has recorded a heartbeat within
    ``dead_after_seconds`` (none started, or the last one died), instead of a silent wait."""
    from tether.durable.client import shown
    from tether.durable.worker import Heartbeats

    try:
        heartbeats = await asyncio.to_thread(Heartbeats, config)
    except Exception:  # the follow itself reports an unreachable database
        return
    try:
        while True:
            await asyncio.sleep(config.heartbeat_seconds * 2)
            if not await asyncio.to_thread(heartbeats.live):
                err.write(
                    f"tether: no worker is polling {shown(config.system_database)} (no heartbeat "
                    f"within {config.dead_after_seconds:g} s): the run waits in the queue until "
                    "`tether worker` runs there\n"
                )
                err.flush()
                return
    except Exception:
        return
    finally:
        await asyncio.to_thread(heartbeats.close)


class _Shown:
    """What text mode has printed of the reply under way."""

    text = False
    """Some of its text, and no end yet."""


def _show(event: Any, out: TextIO, err: TextIO, shown: _Shown) -> None:
    """Text mode: the reply's text on stdout, tool calls and failures on stderr. A model call cut
    by a worker crash is asked again from the start on another worker: its text starts again on a
    line of its own, after a note, not glued to the cut one ("job job T9 done")."""
    kind = event["type"]
    if kind == "message_start" and event["message"].get("role") == "assistant" and shown.text:
        out.write("\n")
        out.flush()
        err.write("[the model call was cut by a worker crash; asked again]\n")
        shown.text = False
    elif kind == "message_end":
        shown.text = False
    if kind == "message_update":
        update = event["assistantMessageEvent"]
        if update["type"] == "text_delta":
            out.write(update["delta"])
            shown.text = True
    elif kind == "tool_execution_start":
        err.write(f"\n[{event['toolName']}]\n")
    elif kind == "tool_execution_end" and event["isError"]:
        texts = [b.get("text", "") for b in event["result"]["content"]]
        err.write(f"[{event['toolName']} failed] {' '.join(texts)}\n")
    elif kind == "message_end" and event["message"].get("stopReason") == "error":
        err.write(f"[error] {event['message'].get('errorMessage', '')}\n")


def durable_config(durable_database: str | None, **flags: Any) -> DurableConfig:
    try:
        from tether.durable.config import config_from_settings
    except ImportError:
        raise DurableCommandError(MISSING) from None
    try:
        importlib.import_module("dbos")
    except ImportError:
        raise DurableCommandError(MISSING) from None
    from tether.ai.paths import config_dir
    from tether.session.settings import load_settings

    settings = load_settings(config_dir(), Path.cwd())
    try:
        return config_from_settings(settings, durable_database=durable_database, **flags)
    except ValueError as exc:
        raise DurableCommandError(str(exc)) from None


def _load_setup(spec: str) -> Setup:
    """``module:function`` → the function (imported from ``sys.path``, the current directory first)."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise DurableCommandError(f"--setup {spec!r}: expected MODULE:FUNCTION")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DurableCommandError(f"--setup {spec!r}: cannot import {module_name}: {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise DurableCommandError(f"--setup {spec!r}: {module_name} has no function {function_name}")
    return cast("Setup", function)
