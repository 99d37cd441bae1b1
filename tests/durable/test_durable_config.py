"""Durable settings and flags, and the one-line errors of `tether worker` and `tether submit`."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from tether.cli.main import main
from tether.durable.config import config_from_settings
from tether.session.settings import Durable, Settings, SettingsError, load_settings


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    for name in ("TETHER_DATABASE_URL", "TETHER_DURABLE_DATABASE_URL", "TETHER_SESSIONS_DB"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_the_durable_section_is_read_and_checked(tmp_path: Path) -> None:
    durable = {
        "database": "sqlite:///x.sqlite",
        "workerConcurrency": 8,
        "globalConcurrency": 20,
        "rerunTools": ["web"],
    }
    write(tmp_path / "c" / "settings.json", {"durable": durable})
    assert load_settings(tmp_path / "c", tmp_path).durable == Durable("sqlite:///x.sqlite", 8, 20, ("web",))
    write(tmp_path / "c" / "settings.json", {"durable": {"workerConcurrency": -1}})
    with pytest.raises(SettingsError, match=r'"durable.workerConcurrency": expected a non-negative integer'):
        load_settings(tmp_path / "c", tmp_path)
    write(tmp_path / "c" / "settings.json", {"durable": {"workers": 2}})
    with pytest.raises(SettingsError, match=r'"durable.workers": unknown key'):
        load_settings(tmp_path / "c", tmp_path)


def test_an_untrusted_project_cannot_change_durable_runs(tmp_path: Path) -> None:
    """A repository must not pick where runs are recorded, nor let risky tools run twice."""
    write(tmp_path / "proj" / ".tether" / "settings.json", {"durable": {"rerunTools": ["bash"]}})
    settings = load_settings(tmp_path / "c", tmp_path / "proj")
    assert settings.ignored == ("durable",) and settings.durable == Durable()


def test_the_system_database_follows_the_session_store(tmp_path: Path, home: Path) -> None:
    pg = "postgresql://u@db.example/tether"
    assert config_from_settings(Settings(), database=pg).system_database == pg
    assert config_from_settings(Settings()).system_database == f"sqlite:///{home / 'data' / 'durable.sqlite'}"
    mine = "sqlite:///" + str(tmp_path / "runs.sqlite")
    flags = config_from_settings(
        Settings(durable=Durable(worker_concurrency=2)), durable_database=mine, name="w1"
    )
    assert (flags.system_database, flags.worker_concurrency, flags.executor_id) == (mine, 2, "w1")
    with pytest.raises(
        ValueError, match=r"durable database 'mysql://x': use postgresql://… or sqlite:///path"
    ):
        config_from_settings(Settings(), durable_database="mysql://x")


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    code = exited.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err


def test_submitting_to_an_unknown_session_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["submit", "NOPE", "hi"], capsys)
    assert (code, err) == (1, "tether: no session 'NOPE'\n")


def test_a_bad_setup_hook_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["worker", "--setup", "no_such_module_here:setup"], capsys)
    assert code == 1
    assert err.startswith("tether: --setup 'no_such_module_here:setup': cannot import no_such_module_here")
    assert err.count("\n") == 1
    code, err = run_cli(["worker", "--setup", "nocolon"], capsys)
    assert (code, err) == (1, "tether: --setup 'nocolon': expected MODULE:FUNCTION\n")


def test_submitting_before_any_worker_started_is_one_line(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.session.manager import SessionManager

    monkeypatch.chdir(tmp_path)  # submitted from the session's folder
    with SessionManager() as sessions:
        session = sessions.create(tmp_path)
        session.close()
    code, err = run_cli(["submit", session.id, "hi"], capsys)
    where = f"sqlite:///{home / 'data' / 'durable.sqlite'}"
    assert (code, err) == (
        1,
        f"tether: no worker has started on {where} yet: start `tether worker` there first\n",
    )


def test_a_run_is_submitted_from_its_sessions_folder_and_works_there_resolved(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker runs a session in its recorded folder, and an imported pi file records what its
    header said: ``tether submit`` on a session recorded in ``/`` ran the model's tools there on
    the worker, from any folder, without a word. As ``tether serve`` does, the folder must be the
    one the command is typed in or inside it, and the run is handed that folder resolved (a link
    swapped after the check does not lead the worker out)."""
    from tether.cli.durable_cmd import submit_run
    from tether.durable.client import DurableClient
    from tether.durable.runs import list_runs
    from tether.durable.worker import launch, shutdown
    from tether.durable.workflow import Runtime
    from tether.session.manager import SessionManager

    project = tmp_path / "project"
    (project / "inside").mkdir(parents=True)
    (project / "link").symlink_to(project / "inside")
    with SessionManager() as sessions:
        ids: list[str] = []
        for folder in ("/", str(project / "link"), str(tmp_path / "gone")):
            session = sessions.create(folder)
            session.close()
            ids.append(session.id)
    monkeypatch.chdir(project)
    code, err = run_cli(["submit", ids[0], "hi"], capsys)
    assert (code, err) == (
        1,
        f"tether: session {ids[0]} was recorded in /, outside this folder {project}, and a worker "
        "runs it in that folder: submit it from / (or a folder containing it) if it should work "
        f"there, or run it here with tether --session {ids[0]}\n",
    )
    code, err = run_cli(["submit", ids[2], "hi"], capsys)
    assert code == 1 and err.startswith(f"tether: session {ids[2]} ran in {tmp_path / 'gone'}, which is gone")

    config = config_from_settings(Settings())
    with capsys.disabled():  # DBOS's log handler would keep this test's stream, closed after it
        shutdown(launch(Runtime(config, home / "config")))  # its tables made: a run waits in the queue
    printed = io.StringIO()  # submit_run's default out is the stdout of its import
    assert submit_run(ids[1], "hi", follow=False, as_json=False, durable_database=None, out=printed) == 0
    with DurableClient(config) as client:
        runs = list_runs(client)
    assert [(r.id, r.session, r.cwd) for r in runs] == [
        (printed.getvalue().strip(), ids[1], str((project / "inside").resolve()))
    ]


def test_an_unreachable_database_is_one_line_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://me:secret@127.0.0.1:1/x"
    for command in (["worker"], ["submit", "S", "hi"]):
        code, err = run_cli([*command, "--durable-database", url], capsys)
        assert code == 1 and err.count("\n") == 1, err
        assert (
            err.startswith("tether: durable database postgresql://me:***@127.0.0.1:1/x: ")
            and "secret" not in err
        )


def test_the_durable_database_tether_makes_is_its_owners_alone(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session database is 0600, but DBOS made its own (``durable.sqlite``, which holds every
    run's prompt and events) 0644: readable by every user of the machine. tether makes it 0600
    first now; one the user made keeps its mode."""
    from tether.session.manager import SessionManager

    monkeypatch.chdir(tmp_path)  # submitted from the session's folder
    old_umask = os.umask(0o022)
    try:
        with SessionManager() as sessions:
            session = sessions.create(tmp_path)
            session.close()
        code, _ = run_cli(["submit", session.id, "hi"], capsys)
        theirs = tmp_path / "theirs.sqlite"
        theirs.touch(0o644)
        run_cli(["submit", session.id, "hi", "--durable-database", f"sqlite:///{theirs}?timeout=5"], capsys)
    finally:
        os.umask(old_umask)
    assert code == 1  # no worker yet: DBOS opened the database all the same
    made = {p.name: oct(p.stat().st_mode & 0o777) for p in (home / "data").glob("durable.sqlite*")}
    assert made and set(made.values()) == {"0o600"}, made
    assert oct(theirs.stat().st_mode & 0o777) == "0o644"
    assert not list(tmp_path.glob("theirs.sqlite?*"))


def test_a_percent_encoded_sqlite_name_is_the_file_dbos_opens(tmp_path: Path, home: Path) -> None:
    """SQLAlchemy (so DBOS) unquotes the URL's path: ``a%20b.sqlite`` is ``a b.sqlite``; tether
    made a stray ``a%20b.sqlite`` 0600 and left the file DBOS then opened to DBOS (0644)."""
    old_umask = os.umask(0o022)
    try:
        config = config_from_settings(
            Settings(), durable_database=f"sqlite:///{tmp_path}/a%20b.sqlite?timeout=5"
        )
    finally:
        os.umask(old_umask)
    assert config.system_database.endswith("a%20b.sqlite?timeout=5")
    assert [p.name for p in tmp_path.glob("*.sqlite*")] == ["a b.sqlite"]
    assert oct((tmp_path / "a b.sqlite").stat().st_mode & 0o777) == "0o600"
