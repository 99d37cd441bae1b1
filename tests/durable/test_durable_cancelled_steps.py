"""DBOS logs a warning for each step it cancels as a worker stops; its text ended with the step's
callable and arguments: for a model call, the run's whole context (the system prompt and every
message) in one line of the worker's log per step. A worker on DBOS's SQLite stopped mid-run."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import workload
from test_durable_runs import MODEL, new_session

from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.durable.worker import DBOS_CANCELLED, launch, shutdown
from tether.durable.workflow import Runtime


def test_a_step_cancelled_as_the_worker_stops_is_one_short_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_TEST_COUNTER", str(tmp_path / "counter"))
    monkeypatch.setenv("TETHER_TEST_STREAM_DELAY", "60")  # the model call is under way at the stop
    config = DurableConfig(
        system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}",
        sessions=str(tmp_path / "sessions.db"),
        name="w1",
    )
    said: list[str] = []
    dbos_log = logging.getLogger("dbos")  # it does not propagate: a handler of its own

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    handler = Kept()
    dbos_log.addHandler(handler)
    try:
        dispatcher = launch(Runtime(config, tmp_path / "home" / "config", setup=workload.setup, model=MODEL))
        try:
            session = new_session(config, tmp_path)
            with DurableClient(config) as client:
                run_id = client.submit(session, "go")
            deadline = time.monotonic() + 60
            while "model-start" not in workload_lines(tmp_path):
                assert time.monotonic() < deadline, "the model call did not start"
                time.sleep(0.05)
        finally:
            shutdown(dispatcher)
    finally:
        dbos_log.removeHandler(handler)
    cancelled = [line for line in said if line.startswith(DBOS_CANCELLED)]
    # DBOS's text, with the step's function and its run: a DBOS saying it otherwise fails here
    assert f"{DBOS_CANCELLED}_stream_step of run {run_id}" in cancelled, said
    assert not [line for line in cancelled if "systemPrompt" in line or len(line) > 200], cancelled


def workload_lines(tmp_path: Path) -> str:
    counter = tmp_path / "counter"
    return counter.read_text() if counter.exists() else ""
