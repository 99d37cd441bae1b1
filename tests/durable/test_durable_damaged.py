"""Issue 14 (classes 9 and 10) on durable runs: ``tether worker`` and ``tether submit`` given a
broken system database URL or a file that is not a database answer in one line that names it
(without its password), never a traceback, DBOS's own words about engine arguments, or a claim
that no worker has started on a database that cannot be used at all.

Each command runs in a child process with its own ``TETHER_HOME``; nothing listens on the
PostgreSQL URLs, which fail before any connection is tried.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess


def tether(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["TETHER_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=home.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///", "tether: durable database 'sqlite:///': name a file: "),
        (
            "postgresql://me:secret@[::1",
            "tether: durable database 'postgresql://me:***@[::1': not a valid URL",
        ),
        (
            "postgresql://me:secret@db:99999/x",
            "tether: durable database 'postgresql://me:***@db:99999/x': not a valid URL (Port out of range",
        ),
    ],
)
@pytest.mark.parametrize("command", ["worker", "submit"])
def test_a_broken_url_is_one_line(tmp_path: Path, url: str, expected: str, command: str) -> None:
    args = ["worker"] if command == "worker" else ["submit", "S", "hi"]
    done = tether(tmp_path / "home", *args, "--durable-database", url)
    assert done.returncode == 1
    assert done.stderr.startswith(expected), done.stderr
    assert done.stderr.count("\n") == 1 and "secret" not in done.stderr


def test_a_folder_is_not_a_database_file(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    done = tether(tmp_path / "home", "worker", "--durable-database", f"sqlite:///{folder}")
    assert done.returncode == 1
    assert done.stderr == f"tether: durable database 'sqlite:///{folder}': name a file: " + (
        "sqlite:///relative/path or sqlite:////absolute/path\n"
    )


def test_a_file_that_is_not_a_database_is_said_so(tmp_path: Path) -> None:
    """``submit`` said "no worker has started on it yet", which sends the user to start one."""
    home = tmp_path / "home"
    damaged = tmp_path / "durable.sqlite"
    damaged.write_bytes(os.urandom(8192))
    from tether.session.manager import SessionManager

    with SessionManager.at(home / "data" / "sessions.db") as sessions:
        session = sessions.create(tmp_path)
        session.close()
    url = f"sqlite:///{damaged}"
    for args in (["submit", session.id, "hi"], ["worker"]):
        done = tether(home, *args, "--durable-database", url)
        assert done.returncode == 1
        assert done.stderr == f"tether: durable database {url}: file is not a database\n", done.stderr


def test_a_count_too_large_for_the_database_is_the_settings_fault(tmp_path: Path) -> None:
    """``workerConcurrency: 1e30`` failed inside the durable database ("Python int too large to
    convert to SQLite INTEGER"), as if the database were broken; the setting and the flag say it."""
    home = tmp_path / "home"
    settings = home / "config" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"durable": {"workerConcurrency": 1' + "0" * 30 + "}}")
    done = tether(home, "worker")
    assert done.returncode == 1
    assert done.stderr == (
        f'tether: {settings}: "durable.workerConcurrency": expected a non-negative integer up to 2147483647\n'
    )
    settings.unlink()
    flag = tether(home, "worker", "--concurrency", "1" + "0" * 30)
    assert flag.returncode == 2 and "is not in the range 0<=x<=2147483647" in flag.stderr


@pytest.mark.parametrize("command", ["worker", "submit"])
def test_other_schemes_and_uncreatable_folders_are_one_line(tmp_path: Path, command: str) -> None:
    args = ["worker"] if command == "worker" else ["submit", "S", "hi"]
    mysql = tether(tmp_path / "home", *args, "--durable-database", "mysql://bob:hunter2@db/runs")
    assert mysql.returncode == 1
    assert (
        mysql.stderr
        == "tether: durable database 'mysql://bob:***@db/runs': use postgresql://… or sqlite:///path\n"
    )
    blocked = tmp_path / "file"
    blocked.write_text("a file where a folder should be")
    url = f"sqlite:///{blocked / 'runs' / 'durable.sqlite'}"
    done = tether(tmp_path / "home", *args, "--durable-database", url)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        f"tether: durable database {url!r}: cannot create its folder {blocked / 'runs'}"
    )


def test_submit_follow_says_when_no_worker_is_polling(tmp_path: Path) -> None:
    """A worker started once (the queue exists) and stopped: ``submit --follow`` says, within a
    few heartbeats, that nobody is taking runs, instead of waiting in silence."""
    import signal

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")} | {"TETHER_HOME": str(home)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "worker"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stderr is not None
        assert "taking runs from" in worker.stderr.readline()
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    from tether.session.manager import SessionManager
    from tether.store.paths import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(home)})) as sessions:
        session = sessions.create(tmp_path)
        session.close()
    follow = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "submit", "--follow", session.id, "hi"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stderr is not None
        lines = [follow.stderr.readline(), follow.stderr.readline()]
    finally:
        follow.send_signal(signal.SIGINT)
        try:
            follow.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            follow.kill()
            follow.communicate()
    assert lines[0].startswith("run "), lines
    assert lines[1].startswith("tether: no worker is polling sqlite:///"), lines
    assert "the run waits in the queue" in lines[1]


def test_before_any_worker_there_are_no_runs_not_a_missing_table(tmp_path: Path) -> None:
    """Before a worker has made DBOS's tables, ``runs list`` said ``no such table:
    main.workflow_status`` and failed; ``runs show`` said the same of any id."""
    home = tmp_path / "home"
    listed = tether(home, "runs", "list", "--json")
    assert (listed.returncode, listed.stdout.strip(), listed.stderr) == (0, "[]", "")
    shown = tether(home, "runs", "show", "nope")
    assert (shown.returncode, shown.stderr) == (1, "tether: no durable run 'nope'\n")


def test_an_age_past_the_calendar_is_the_flags_fault(tmp_path: Path) -> None:
    """``--newer-than 99999999999999d`` was reported as the database's fault ("Value too large
    for defined data type")."""
    done = tether(tmp_path / "home", "runs", "list", "--newer-than", "99999999999999d")
    assert done.returncode == 1
    assert done.stderr == "tether: --newer-than '99999999999999d': more than 10000 years\n"


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_a_worker_says_a_failed_run_in_one_line(tmp_path: Path, verbose: bool) -> None:
    """A run whose ``--setup`` raises fails in one line for its submitter, and in one line of the
    worker's log naming the run, its session and why; the worker logged DBOS's traceback of some
    70 lines for every such run. ``--verbose`` adds the traceback (of the setup's raise)."""
    import signal

    home = tmp_path / "home"
    (tmp_path / "failing_setup.py").write_text("def setup(core):\n    raise RuntimeError('no tools today')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")} | {"TETHER_HOME": str(home)}
    from tether.session.manager import SessionManager
    from tether.store.paths import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(home)})) as sessions:
        session = sessions.create(tmp_path)
        session.close()
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "tether.cli", "worker", "--model", "anthropic/claude-sonnet-4-5"]
    command += ["--setup", "failing_setup:setup", *(["--verbose"] if verbose else [])]
    with log.open("wb") as out:
        worker = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 60
        while b"taking runs" not in log.read_bytes():
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
            time.sleep(0.1)
        submitted = tether(home, "submit", "--follow", session.id, "hi")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    run_id = submitted.stderr.splitlines()[0].removeprefix("run ")
    assert submitted.returncode == 1
    assert submitted.stderr.splitlines()[1:] == [f"tether: run {run_id} failed: no tools today"]
    lines = log.read_text().splitlines()
    assert lines[0].startswith("tether worker ") and "taking runs" in lines[0], lines
    said = f"run {run_id} of session {session.id} failed: no tools today"
    if not verbose:
        assert lines[1:] == [said]
    else:
        assert lines[1] == said and lines[2] == "Traceback (most recent call last):"
        assert lines[-2:] == ["    raise RuntimeError('no tools today')", "RuntimeError: no tools today"]
        assert "Exception encountered" not in log.read_text()
