"""The operator's library calls (``tether.durable.runs``) on runs in this process (DBOS on SQLite):
listing and filtering, a run's steps with their tokens and cost, cancel stopping the tool under
way and leaving the session consistent, resume after cancel, retry, idempotent submit, prune."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import workload
from dbos import EnqueueOptions

from narrowing import as_assistant, as_tool_result, block_text
from tether.cli.durable_cmd import DurableCommandError
from tether.cli.runs_cmd import parse_age, run_command
from tether.durable import runs
from tether.durable.client import DurableClient, SubmitError
from tether.durable.config import QUEUE, WORKFLOW, DurableConfig
from tether.durable.worker import launch, shutdown
from tether.durable.workflow import RunRequestError, Runtime
from tether.session.manager import SessionManager

MODEL = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DurableConfig]:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_TEST_COUNTER", str(tmp_path / "counter"))
    monkeypatch.setenv("TETHER_TEST_TOOL_SECONDS", "30")
    config = DurableConfig(
        system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}",
        sessions=str(tmp_path / "sessions.db"),
        name="w1",
    )
    dispatcher = launch(Runtime(config, tmp_path / "home" / "config", setup=workload.setup, model=MODEL))
    try:
        yield config
    finally:
        shutdown(dispatcher)


def sessions_of(config: DurableConfig) -> SessionManager:
    """The session store the workers write to (the fixture's config names one)."""
    assert config.sessions is not None
    return SessionManager.at(config.sessions)


def new_session(config: DurableConfig, cwd: Path) -> str:
    with sessions_of(config) as sessions:
        session = sessions.create(cwd)
        session.close()
    return session.id


async def wait_status(client: DurableClient, run_id: str, *wanted: str) -> str:
    deadline = time.monotonic() + 60
    while (status := client.status(run_id)) not in wanted:
        assert time.monotonic() < deadline, f"run {run_id} still {status}"
        await asyncio.sleep(0.1)
    return status


def tool_started(tmp_path: Path) -> bool:
    counter = tmp_path / "counter"
    return counter.exists() and "-work " in counter.read_text()


async def test_cancel_stops_the_tool_and_leaves_the_session_consistent(
    config: DurableConfig, tmp_path: Path
) -> None:
    session_id = new_session(config, tmp_path)
    with DurableClient(config) as client:
        run_id = client.submit(session_id, "go")
        deadline = time.monotonic() + 60
        while not tool_started(tmp_path):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        cancelled_at = time.monotonic()
        assert runs.cancel(client, run_id).status == "CANCELLED"
        # The `work` tool sleeps 30 s: the run stops long before, the tool aborted.
        with sessions_of(config) as sessions:
            while True:
                messages = sessions.open(session_id, readonly=True).messages
                if len(messages) >= 5 or time.monotonic() - cancelled_at > 20:
                    break
                await asyncio.sleep(0.1)
        assert f"tool-done {session_id} {session_id}-work" not in (tmp_path / "counter").read_text()
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"], roles
        # Every tool call is answered, the prompt too (aborted, saying why): nothing is left
        # pending for the next prompt.
        last = as_assistant(messages[-1])
        assert last["stopReason"] == "aborted" and "cancelled" in last.get("errorMessage", "")
        work = next(m for m in messages if m["role"] == "toolResult" and m["toolName"] == "work")
        assert work["isError"] and "cancelled" in block_text(work["content"][0])
        assert {as_tool_result(m)["toolCallId"] for m in messages[2:4]} == {
            b["id"] for b in as_assistant(messages[1])["content"] if b["type"] == "toolCall"
        }
        listed = runs.list_runs(client, status="CANCELLED")
        assert [r.id for r in listed] == [run_id] and listed[0].session == session_id
        # Its replay would take the cancel's answers for its own: resuming it is refused.
        with pytest.raises(ValueError, match=r"cancelled while it ran.*runs retry"):
            runs.resume(client, run_id)


async def test_list_show_retry_and_an_idempotent_submit(
    config: DurableConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_TOOL_SECONDS", "0")
    first, second = new_session(config, tmp_path), new_session(config, tmp_path)
    with DurableClient(config) as client:
        run_id = client.submit(first, "go", key="order-17")
        assert client.submit(first, "go", key="order-17") == run_id  # the same run, not a second
        with pytest.raises(SubmitError, match="order-17"):
            client.submit(second, "go", key="order-17")
        other = client.submit(second, "go")
        await wait_status(client, run_id, "SUCCESS")
        await wait_status(client, other, "SUCCESS")
        assert {r.id for r in runs.list_runs(client)} == {run_id, other}
        assert [r.id for r in runs.list_runs(client, session=second)] == [other]
        assert [r.id for r in runs.list_runs(client, worker="w1", status="SUCCESS", newer_than=3600)] == [
            other,
            run_id,
        ]
        assert runs.list_runs(client, older_than=3600) == []
        detail = runs.show(client, run_id)
        names = [s.name for s in detail.steps]
        assert names[0] == "begin" and names.count("model") == 2 and "tool:work" in names
        with sessions_of(config) as sessions:
            record = sessions.store.get_session(first)
        assert (
            (detail.input_tokens, detail.output_tokens)
            == (record.input_tokens, record.output_tokens)
            == (200, 40)
        )
        assert detail.cost == pytest.approx(record.cost) and record.cost == pytest.approx(0.0012)
        assert all(
            s.started is not None and s.ended is not None and s.ended >= s.started for s in detail.steps
        )
        again = runs.retry(client, run_id)
        assert again != run_id
        await wait_status(client, again, "SUCCESS")
        with sessions_of(config) as sessions:
            assert len(sessions.open(first, readonly=True).messages) == 5 + 2
        assert runs.prune(client, older_than_days=1) == []
        assert sorted(runs.prune(client, older_than_days=0)) == sorted([run_id, other, again])
        assert runs.list_runs(client) == []


async def test_the_runs_commands_print_json_and_text(
    config: DurableConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_TOOL_SECONDS", "0")
    monkeypatch.setenv("TETHER_DATABASE_URL", str(config.sessions))
    session_id = new_session(config, tmp_path)
    with DurableClient(config) as client:
        run_id = client.submit(session_id, "go")
        await wait_status(client, run_id, "SUCCESS")

    def run(action: str, as_json: bool = True, **args: object) -> str:
        out = io.StringIO()
        code = run_command(action, durable_database=config.system_database, as_json=as_json, out=out, **args)
        assert code == 0
        return out.getvalue()

    listed = json.loads(await asyncio.to_thread(run, "list", session=session_id))
    assert [(r["id"], r["status"], r["session"], r["prompt"]) for r in listed] == [
        (run_id, "SUCCESS", session_id, "go")
    ]
    shown = json.loads(await asyncio.to_thread(run, "show", run_id=run_id))
    assert shown["run"]["id"] == run_id and shown["input_tokens"] == 200
    text = await asyncio.to_thread(run, "show", False, run_id=run_id)
    assert text.startswith(run_id) and "tool:work" in text and "total: 200→40 tokens $0.0012" in text
    assert json.loads(await asyncio.to_thread(run, "cancel", run_id=run_id))["status"] == "SUCCESS"
    with pytest.raises(DurableCommandError, match="has finished: `tether runs retry"):
        await asyncio.to_thread(run, "resume", run_id=run_id)
    with pytest.raises(DurableCommandError, match="no durable run 'nope'"):
        await asyncio.to_thread(run, "show", run_id="nope")
    assert json.loads(await asyncio.to_thread(run, "prune", older_than_days=None)) == []
    assert parse_age("2h", "--older-than") == 7200
    with pytest.raises(DurableCommandError, match="--older-than 'soon'"):
        parse_age("soon", "--older-than")


def test_text_follow_starts_a_model_call_asked_again_on_a_line_of_its_own() -> None:
    """After a worker crash mid-stream the model is asked again and its text streams from the
    start: not glued to the cut text ("job job T9 done")."""
    from tether.cli.durable_cmd import _show, _Shown  # pyright: ignore[reportPrivateUsage]

    def start() -> dict[str, object]:
        return {"type": "message_start", "message": {"role": "assistant", "content": []}}

    def delta(text: str) -> dict[str, object]:
        return {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": text}}

    out, err, shown = io.StringIO(), io.StringIO(), _Shown()
    end = {"type": "message_end", "message": {"role": "assistant", "stopReason": "stop"}}
    for event in [
        start(),
        delta("job "),
        start(),
        delta("job "),
        delta("T9 done"),
        end,
        start(),
        delta("ok"),
    ]:
        _show(event, out, err, shown)
    assert out.getvalue() == "job \njob T9 doneok"
    assert err.getvalue().count("cut by a worker crash") == 1


async def test_a_failed_run_says_why(config: DurableConfig, tmp_path: Path) -> None:
    """A run whose session is gone when it starts (deleted after the submit) fails naming it, and
    ``show`` and ``list`` say so: they asked DBOS for the runs without their outputs, which
    leaves out their errors too, so no failed run ever showed why."""
    with DurableClient(config) as client:
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW,
            "queue_name": QUEUE,
            "queue_partition_key": "gone",
        }
        run_id = client.dbos.enqueue(options, {"session": "gone", "prompt": "go"}).get_workflow_id()
        await wait_status(client, run_id, "ERROR")
        # said once: DBOS unpickles the error, which built it again from its message, and the
        # runs read ``no session "no session 'gone'"``
        assert runs.show(client, run_id).run.error == "no session 'gone'"
        assert [r.error for r in runs.list_runs(client)] == ["no session 'gone'"]
        # an error of two arguments could not be unpickled at all: the run's error was the
        # pickle's base64 text
        session_id = new_session(config, tmp_path)
        options["queue_partition_key"] = session_id
        bad = client.dbos.enqueue(options, {"session": session_id, "prompt": 5}).get_workflow_id()
        await wait_status(client, bad, "ERROR")
        assert runs.show(client, bad).run.error == (
            f"run {bad}: the request's 'prompt' must be a string, not int"
        )


async def test_a_failed_run_is_one_line_in_the_workers_log(
    config: DurableConfig, caplog: pytest.LogCaptureFixture
) -> None:
    """A run that fails (its session gone) is one line of the worker's log naming the run, its
    session and why; DBOS logged it too, with a traceback of some 70 lines, for every failed run.
    The traceback is in the line's record when ``tether.durable`` logs at DEBUG (``--verbose``)."""
    by_dbos: list[logging.LogRecord] = []
    dbos_log = logging.getLogger("dbos")  # it does not propagate: a handler of its own

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            by_dbos.append(record)

    handler = Kept()
    dbos_log.addHandler(handler)
    caplog.set_level(logging.INFO, "tether.durable")
    options: EnqueueOptions = {"workflow_name": WORKFLOW, "queue_name": QUEUE, "queue_partition_key": "gone"}
    try:
        with DurableClient(config) as client:
            run_id = client.dbos.enqueue(options, {"session": "gone", "prompt": "go"}).get_workflow_id()
            await wait_status(client, run_id, "ERROR")
            said = [r for r in caplog.records if r.name == "tether.durable"]
            assert [(r.levelno, r.getMessage(), r.exc_info) for r in said] == [
                (logging.ERROR, f"run {run_id} of session gone failed: no session 'gone'", None)
            ]
            caplog.set_level(logging.DEBUG, "tether.durable")
            caplog.clear()
            verbose = client.dbos.enqueue(options, {"session": "gone", "prompt": "go"}).get_workflow_id()
            await wait_status(client, verbose, "ERROR")
            said = [r for r in caplog.records if r.name == "tether.durable"]
            assert len(said) == 1 and said[0].getMessage().startswith(f"run {verbose} of session gone failed")
            assert said[0].exc_info is not None and "SessionNotFoundError" in caplog.text
    finally:
        dbos_log.removeHandler(handler)
    assert [r.getMessage() for r in by_dbos if r.exc_info is not None] == []


async def test_a_failed_runs_line_is_escaped_and_says_what_it_cut(
    config: DurableConfig, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed run's line wrote the session id and the error as they were: a newline in an
    enqueued session id forged a second line of the log, an escape sequence in an error set the
    terminal's title (``tail -f``), and an error of several lines lost all but its first without
    a word. Control characters are now escaped as the terminal shows them
    (``tether.wire.escapes.visible``) and the line says how many lines it left out."""
    import tether.durable.workflow as workflow

    async def failing(_runtime: object, _session_id: str) -> None:
        raise RuntimeError("bad \x1b]0;owned\x07 lock\nsecond line\nthird line")

    monkeypatch.setattr(workflow, "_lock", failing)
    caplog.set_level(logging.INFO, "tether.durable")
    session = "s\nrun x of session y failed: forged"
    options: EnqueueOptions = {"workflow_name": WORKFLOW, "queue_name": QUEUE, "queue_partition_key": session}
    with DurableClient(config) as client:
        run_id = client.dbos.enqueue(options, {"session": session, "prompt": "go"}).get_workflow_id()
        await wait_status(client, run_id, "ERROR")
    said = [r.getMessage() for r in caplog.records if r.name == "tether.durable"]
    assert said == [
        f"run {run_id} of session s\\x0arun x of session y failed: forged failed: "
        "bad \\x1b]0;owned\\x07 lock (2 more lines: tether worker --verbose shows them)"
    ]


def test_recovered_and_unrecorded_run_ids_are_escaped_in_the_workers_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run id is the enqueuing program's choice: "recovering run ID of a dead worker" and "run
    ID ended but the database did not record it" wrote it raw, a newline forging a log line."""
    import tether.durable.worker as worker

    stop = threading.Event()

    class Unrecorded:
        def __init__(self, *_args: object) -> None:
            pass

        def look(self) -> list[str]:
            stop.set()
            return ["c\x1b]0;owned\x07"]

    def nothing(*_args: object) -> None:
        return None

    def dead(*_args: object) -> list[str]:
        return ["a\nrun b"]

    monkeypatch.setattr(worker, "launch", nothing)
    monkeypatch.setattr(worker, "shutdown", nothing)
    monkeypatch.setattr(worker, "recover_dead", dead)
    monkeypatch.setattr(worker, "Unrecorded", Unrecorded)
    monkeypatch.setattr(worker, "executing", frozenset)
    caplog.set_level(logging.WARNING, "tether.durable")
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    config = DurableConfig(system_database=url, name="w1", heartbeat_seconds=0.01, keep_runs_days=0)
    worker.serve(Runtime(config, tmp_path / "config"), stop)
    assert [r.getMessage() for r in caplog.records if r.name == "tether.durable"] == [
        "recovering run a\\x0arun b of a dead worker",
        "run c\\x1b]0;owned\\x07 ended but the database did not record it: running it again",
    ]


@dataclasses.dataclass(frozen=True)
class FrozenError(Exception):
    reason: str

    def __str__(self) -> str:
        return self.reason

    def __reduce__(self) -> tuple[type[FrozenError], tuple[str]]:  # DBOS stores it pickled
        return (FrozenError, (self.reason,))


async def test_a_failure_refusing_attributes_is_the_runs_error(
    config: DurableConfig, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception that refuses attributes (a frozen dataclass) failed the mark ``durable_run``
    puts on the failure it logged: the mark's FrozenInstanceError replaced the run's error."""
    import tether.durable.workflow as workflow

    async def failing(_runtime: object, _session_id: str) -> None:
        raise FrozenError("the lock is frozen")

    monkeypatch.setattr(workflow, "_lock", failing)
    caplog.set_level(logging.INFO, "tether.durable")
    options: EnqueueOptions = {"workflow_name": WORKFLOW, "queue_name": QUEUE, "queue_partition_key": "s"}
    with DurableClient(config) as client:
        run_id = client.dbos.enqueue(options, {"session": "s", "prompt": "go"}).get_workflow_id()
        await wait_status(client, run_id, "ERROR")
        error = runs.show(client, run_id).run.error
    assert error is not None and "the lock is frozen" in error and "cannot assign" not in error
    said = [r.getMessage() for r in caplog.records if r.name == "tether.durable"]
    assert said == [f"run {run_id} of session s failed: the lock is frozen"]


async def test_a_malformed_request_fails_in_one_line_naming_what_is_wrong(
    config: DurableConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program may enqueue the workflow by name with anything: the run ends in ``ERROR`` with
    one line naming the field (not ``KeyError('prompt')``), and listing, showing and retrying
    such a run say so too (the text listing split an int prompt and crashed)."""
    monkeypatch.setenv("TETHER_DATABASE_URL", str(config.sessions))
    session_id = new_session(config, tmp_path)
    options: EnqueueOptions = {
        "workflow_name": WORKFLOW,
        "queue_name": QUEUE,
        "queue_partition_key": session_id,
    }
    cases = {
        "the request has no 'prompt'": {"session": session_id},
        "the request has no 'session'": {"prompt": "go"},
        "the request's 'session' must be a string, not int": {"session": 7, "prompt": "go"},
        "the request has unknown fields 'model'": {"session": session_id, "prompt": "go", "model": "x"},
        "the request's 'cwd' must be an absolute folder": {"session": session_id, "prompt": "go", "cwd": "."},
        "the request's 'cwd' must be a string, not int": {"session": session_id, "prompt": "go", "cwd": 1},
        'the request must be {"session": <session id>, "prompt": <text>, optionally "cwd": '
        "<absolute folder>}, not list": ["go"],
    }
    with DurableClient(config) as client:
        ids = {client.dbos.enqueue(options, request).get_workflow_id(): why for why, request in cases.items()}
        for run_id, why in ids.items():
            await wait_status(client, run_id, "ERROR")
            error = runs.show(client, run_id).run.error
            assert error is not None and error.startswith(f"run {run_id}: {why}"), error
        with pytest.raises(
            RunRequestError, match="submit: the request's 'prompt' must be a string, not list"
        ):
            client.submit(session_id, ["go"])  # type: ignore[arg-type]
        assert len(runs.list_runs(client)) == len(cases)  # nothing was enqueued

    def run(action: str, as_json: bool, **args: object) -> str:
        out = io.StringIO()
        run_command(action, durable_database=config.system_database, as_json=as_json, out=out, **args)
        return out.getvalue()

    text = await asyncio.to_thread(run, "list", False)
    assert text.count("ERROR") == len(cases)
    for run_id in (run_id for run_id, why in ids.items() if "unknown" not in why and "'cwd'" not in why):
        with pytest.raises(DurableCommandError, match=f"run {run_id} has no recorded session and prompt"):
            await asyncio.to_thread(run, "retry", False, run_id=run_id)
    relative = next(run_id for run_id, why in ids.items() if "absolute" in why)
    with pytest.raises(DurableCommandError, match="submit: the request's 'cwd' must be an absolute folder"):
        await asyncio.to_thread(run, "retry", False, run_id=relative)  # retried where it was sent
