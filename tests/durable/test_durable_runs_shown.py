"""What ``tether runs`` shows of what programs wrote: a run's error of a class the operator's
process cannot import (DBOS gave its pickle, base64, as the error), run ids and prompts with
control characters (DBOS on SQLite, a worker in this process)."""

from __future__ import annotations

import asyncio
import importlib
import io
import sys
from pathlib import Path

import pytest
from test_durable_runs import MODEL, config as config, new_session, wait_status  # the fixture

from tether.cli.runs_cmd import run_command
from tether.durable import runs
from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.durable.worker import launch, shutdown
from tether.durable.workflow import Runtime

VANISHING = """
class Boom(Exception):
    pass


def setup(core):
    raise Boom("the setup failed\\nits second line")
"""


def test_an_error_this_process_cannot_unpickle_is_its_class_and_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run failed in a worker that had the error's class (its ``--setup`` module); where the
    runs are listed, DBOS cannot unpickle it and gave its base64 pickle, of which the listing
    showed the first line."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "vanishing_errors.py").write_text(VANISHING)
    monkeypatch.setattr(sys, "path", [str(modules), *sys.path])
    vanishing_errors = importlib.import_module("vanishing_errors")

    durable = DurableConfig(
        system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}", sessions=str(tmp_path / "sessions.db")
    )
    dispatcher = launch(
        Runtime(durable, tmp_path / "home" / "config", setup=vanishing_errors.setup, model=MODEL)
    )
    try:
        with DurableClient(durable) as client:
            run_id = client.submit(new_session(durable, tmp_path), "go")
            asyncio.run(wait_status(client, run_id, "ERROR"))
    finally:
        shutdown(dispatcher)
    monkeypatch.delitem(sys.modules, "vanishing_errors")
    (modules / "vanishing_errors.py").unlink()  # gone, as from an operator's machine
    with DurableClient(durable) as client:
        assert runs.show(client, run_id).run.error == "vanishing_errors.Boom: the setup failed"
        assert [run.error for run in runs.list_runs(client)] == ["vanishing_errors.Boom: the setup failed"]


async def test_the_text_listing_escapes_what_programs_wrote(
    config: DurableConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run id is the submitter's key, a prompt its text: a newline in either forged a line of
    ``tether runs list``, an escape sequence drove the operator's terminal."""
    monkeypatch.setenv("TETHER_DATABASE_URL", str(config.sessions))
    session_id = new_session(config, tmp_path)
    with DurableClient(config) as client:
        run_id = client.submit(session_id, "look \x1b]0;owned\x07 here", key="a\nb\x1b[2J")
    assert run_id == "key-a\nb\x1b[2J"

    def run(action: str, **args: object) -> str:
        out = io.StringIO()
        assert (
            run_command(action, durable_database=config.system_database, as_json=False, out=out, **args) == 0
        )
        return out.getvalue()

    listed = await asyncio.to_thread(run, "list")
    assert listed.count("\n") == 1 and "\x1b" not in listed, listed
    assert listed.startswith("key-a\\x0ab\\x1b[2J  ") and "look \\x1b]0;owned\\x07 here" in listed
    shown = await asyncio.to_thread(run, "show", run_id=run_id)
    assert shown.startswith("key-a\\x0ab\\x1b[2J  ") and "\x1b" not in shown, shown
    with DurableClient(config) as client:
        runs.cancel(client, run_id)  # its tool waits 30 s
