"""A submitter's or an operator's command against a database that stopped answering ends, in one
line: a real PostgreSQL frozen (SIGSTOP: the kernel accepts and acknowledges, nothing answers)
before the command connects (``CONNECT_TIMEOUT``) or after (``answer_wait_seconds``); at most
``MAX_WAITING`` calls are left waiting for it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_durable_crash import wait_for

from tether.durable import runs
from tether.durable.client import MAX_WAITING, DurableClient, SubmitError, answer, client_url
from tether.durable.config import ANSWER_WAIT_ENV, DurableConfig
from tether.testing.postgres import PostgresServer

SRC = Path(__file__).resolve().parents[2] / "src"
HANG = 60
"""Seconds after which a command is taken to wait for ever (a failure, not a measure)."""


def tether(tmp_path: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env={
            **os.environ,
            "PYTHONPATH": str(SRC),
            "TETHER_HOME": str(tmp_path / "home"),
            "TETHER_DATABASE_URL": str(tmp_path / "sessions.db"),
            "TETHER_DURABLE_DATABASE_URL": url,
            **env,
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def test_commands_on_a_frozen_database_end_in_one_line(server: PostgresServer, tmp_path: Path) -> None:
    """``tether runs list`` waited for ever at its connect; past the connect, a cancel waits
    ``$TETHER_DURABLE_ANSWER_WAIT`` and says it may still take effect."""
    url = server.url()
    server.freeze()
    listed = one_line(tether(tmp_path, url, "runs", "list", "--json"))
    assert f"durable database {url}" in listed and "timeout" in listed
    cancelled = one_line(tether(tmp_path, url, "runs", "cancel", "r1", **{ANSWER_WAIT_ENV: "1"}))
    assert cancelled == (
        f"tether: durable database {url} did not answer within 1 s: the cancel may still take effect\n"
    )
    submitted = one_line(tether(tmp_path, url, "submit", "s1", "go", **{ANSWER_WAIT_ENV: "1"}))
    assert submitted.endswith("did not answer within 1 s: the submit may still take effect\n")
    refused = one_line(tether(tmp_path, url, "runs", "list", **{ANSWER_WAIT_ENV: "soon"}))
    assert refused == f"tether: {ANSWER_WAIT_ENV}='soon': expected a number of seconds above 0\n"


def test_a_database_frozen_after_connecting_is_waited_for_then_said(server: PostgresServer) -> None:
    """Connected, then frozen: the connect timeout is past and the kernel acknowledges, so only
    the wait for the answer ends the call (it waited for ever)."""
    config = DurableConfig(system_database=server.url(), answer_wait_seconds=1)

    def frozen_then_cancel(client: DurableClient) -> runs.RunInfo:
        server.freeze()
        return runs.cancel(client, "r1")

    try:
        with pytest.raises(SubmitError) as said:
            answer(config, frozen_then_cancel, effect="the cancel")
    finally:
        server.thaw()
    calls_ended()  # answered once thawed
    assert str(said.value) == (
        f"durable database {server.url()} did not answer within 1 s: the cancel may still take effect"
    )


def calls_ended() -> None:
    wait_for(lambda: not any(t.name == "tether-durable-call" for t in threading.enumerate()), HANG, "calls")


def test_at_most_max_waiting_calls_are_left_waiting(tmp_path: Path) -> None:
    config = DurableConfig(
        system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}", answer_wait_seconds=0.01
    )
    silent = threading.Event()
    calls_ended()  # an earlier test's, once its database answered
    try:
        for _ in range(MAX_WAITING):
            with pytest.raises(SubmitError, match="did not answer"):
                answer(config, lambda _client: silent.wait())
        with pytest.raises(SubmitError) as refused:
            answer(config, lambda _client: "never called")
        assert str(refused.value).endswith(
            f"{MAX_WAITING} calls are still waiting for its answer; try again later"
        )
    finally:
        silent.set()
    calls_ended()  # each place is given back as its call ends
    patient = dataclasses.replace(config, answer_wait_seconds=HANG)
    assert answer(patient, lambda _client: "answered") == "answered"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql://u:pw@h:5/db",
            "postgresql://u:pw@h:5/db?connect_timeout=5&keepalives=1&keepalives_count=3"
            "&keepalives_idle=30&keepalives_interval=10",
        ),
        (
            "postgresql://h/db?connect_timeout=20&keepalives_idle=600",
            "postgresql://h/db?connect_timeout=20&keepalives_idle=600",
        ),
        ("sqlite:///runs.db", "sqlite:///runs.db"),
    ],
)
def test_a_clients_connections_are_bounded_and_kept_alive_unless_the_url_says(
    url: str, expected: str
) -> None:
    assert client_url(url) == expected
