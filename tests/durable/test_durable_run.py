"""A durable run in this process (DBOS on SQLite): the transcript, the event stream, and replays
that neither duplicate an entry nor run a finished step again (``fork_workflow`` replays a run's
first steps from their checkpoints and runs the rest again, as recovery after a crash does)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import workload
from dbos import DBOS, WorkflowHandleAsync
from dbos._dbos import _get_dbos_instance  # pyright: ignore[reportPrivateUsage]

from narrowing import content_of
from tether.durable.config import EVENTS, DurableConfig
from tether.durable.steps import interrupted_text
from tether.durable.worker import launch, shutdown
from tether.durable.workflow import RunRequest, Runtime, durable_run, executing
from tether.session.manager import SessionManager

MODEL = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SessionManager]:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_TEST_COUNTER", str(tmp_path / "counter"))
    sessions_db = str(tmp_path / "sessions.db")
    config = DurableConfig(system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}", sessions=sessions_db)
    dispatcher = launch(Runtime(config, tmp_path / "home" / "config", setup=workload.setup, model=MODEL))
    sessions = SessionManager.at(sessions_db)
    try:
        yield sessions
    finally:
        sessions.close()
        shutdown(dispatcher)


def counter(tmp_path: Path) -> list[str]:
    return [
        " ".join(line.split()[0:1] + line.split()[2:4])
        for line in (tmp_path / "counter").read_text().splitlines()
    ]


async def read_events(workflow_id: str) -> list[dict[str, Any]]:
    """A run's events: its stream holds batches of them."""
    return [event async for batch in DBOS.read_stream_async(workflow_id, EVENTS) for event in batch]


def transcript(sessions: SessionManager, session_id: str) -> list[dict[str, Any]]:
    return [
        json.loads(e.payload)["message"] for e in sessions.store.entries(session_id) if e.type == "message"
    ]


async def start_run(durable: SessionManager, cwd: Path) -> tuple[str, WorkflowHandleAsync[Any]]:
    """A new, empty session and a durable run of the prompt "go" on it."""
    session = durable.create(cwd)
    session.close()
    return session.id, await DBOS.start_workflow_async(durable_run, {"session": session.id, "prompt": "go"})


async def test_a_durable_run_records_the_transcript_and_streams_its_events(
    durable: SessionManager, tmp_path: Path
) -> None:
    session_id, handle = await start_run(durable, tmp_path)
    outcome = await handle.get_result()
    assert outcome == {"session": session_id, "stopReason": "stop", "messages": 5}
    messages = transcript(durable, session_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert [m["content"][0]["text"] for m in messages[2:4]] == ["worked on a", "looked at b"]
    assert messages[4]["content"][0]["text"] == "all work is done"
    events = await read_events(handle.get_workflow_id())
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_settled"
    updates = [e["assistantMessageEvent"] for e in events if e["type"] == "message_update"]
    assert "".join(u["delta"] for u in updates if u["type"] == "text_delta") == "all work is done"
    assert kinds.count("message_start") == kinds.count("message_end") == 5
    assert kinds.count("tool_execution_end") == 2
    assert sorted(counter(tmp_path)) == sorted(
        [
            "model-start " + f"{session_id} 0",
            "model-done " + f"{session_id} 0",
            f"tool-start {session_id} {session_id}-work",
            f"tool-start {session_id} {session_id}-look",
            f"tool-done {session_id} {session_id}-look",
            f"tool-done {session_id} {session_id}-work",
            f"model-start {session_id} 1",
            f"model-done {session_id} 1",
        ]
    )


async def test_a_run_works_in_the_folder_its_request_names(durable: SessionManager, tmp_path: Path) -> None:
    """A request's ``cwd`` (the folder its submitter checked, resolved) is where the run works;
    without one, the session's recorded folder."""
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    session = durable.create(tmp_path)
    session.close()
    request: RunRequest = {"session": session.id, "prompt": "go", "cwd": str(chosen)}
    handle = await DBOS.start_workflow_async(durable_run, request)
    await handle.get_result()
    _, plain = await start_run(durable, tmp_path)
    await plain.get_result()
    begun: list[object] = []
    for run in (handle.get_workflow_id(), plain.get_workflow_id()):
        steps = await DBOS.list_workflow_steps_async(run)
        begun += [cast(dict[str, Any], s["output"])["cwd"] for s in steps if s["function_name"] == "begin"]
    assert begun == [str(chosen), str(tmp_path)]


async def _steps(workflow_id: str) -> list[tuple[str, int]]:
    """(step name, function id) of a run, in order."""
    return [(s["function_name"], s["function_id"]) for s in await DBOS.list_workflow_steps_async(workflow_id)]


async def test_a_replay_skips_checkpointed_steps_and_writes_no_entry_twice(
    durable: SessionManager, tmp_path: Path
) -> None:
    session_id, handle = await start_run(durable, tmp_path)
    await handle.get_result()
    entries = durable.store.entries(session_id)
    steps = await _steps(handle.get_workflow_id())
    # Replay everything up to the final model call, which runs again.
    last_model = [number for name, number in steps if name == "model"][-1]
    fork = await DBOS.fork_workflow_async(handle.get_workflow_id(), last_model)
    await fork.get_result()
    assert durable.store.entries(session_id) == entries
    lines = counter(tmp_path)
    assert lines.count(f"tool-done {session_id} {session_id}-work") == 1
    assert lines.count(f"model-done {session_id} 0") == 1
    assert lines.count(f"model-done {session_id} 1") == 2


async def test_an_interrupted_tool_call_is_answered_not_run_again(
    durable: SessionManager, tmp_path: Path
) -> None:
    session_id, handle = await start_run(durable, tmp_path)
    await handle.get_result()
    steps = await _steps(handle.get_workflow_id())
    # From the `work` call's own step: its start step is an earlier execution's, as after a crash.
    work = next(number for name, number in steps if name == "tool:work")
    fork = await DBOS.fork_workflow_async(handle.get_workflow_id(), work)
    await fork.get_result()
    lines = counter(tmp_path)
    assert lines.count(f"tool-start {session_id} {session_id}-work") == 1
    events = await read_events(fork.get_workflow_id())
    ends = [e for e in events if e["type"] == "tool_execution_end" and e["toolName"] == "work"]
    assert [e["isError"] for e in ends] == [True]
    assert ends[0]["result"]["content"][0]["text"] == interrupted_text("work")


async def test_a_run_waits_for_a_session_held_elsewhere(durable: SessionManager, tmp_path: Path) -> None:
    """As a recovered run does while a dead worker's lease lingers (see docs/durable.md)."""
    held = durable.create(tmp_path)
    handle = await DBOS.start_workflow_async(durable_run, {"session": held.id, "prompt": "go"})
    await asyncio.sleep(1.5)
    assert transcript(durable, held.id) == []
    held.close()
    assert (await handle.get_result())["stopReason"] == "stop"
    assert len(transcript(durable, held.id)) == 5


async def test_a_run_queued_behind_a_person_starts_from_their_last_message(
    durable: SessionManager, tmp_path: Path
) -> None:
    """The run's start is taken once it holds the lock, not when it was submitted: no fork."""
    held = durable.create(tmp_path)
    handle = await DBOS.start_workflow_async(durable_run, {"session": held.id, "prompt": "go"})
    await asyncio.sleep(1.5)  # the run waits for the lock meanwhile
    held.append_message({"role": "user", "content": "a person's question", "timestamp": 1})
    held.close()
    assert (await handle.get_result())["stopReason"] == "stop"
    on_path = durable.open(held.id, readonly=True).messages
    assert [m["role"] for m in on_path] == [
        "user",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert content_of(on_path[0]) == "a person's question"


async def test_a_replay_after_the_session_moved_on_is_refused_not_forked(
    durable: SessionManager, tmp_path: Path
) -> None:
    session_id, first = await start_run(durable, tmp_path)
    await first.get_result()
    second = await DBOS.start_workflow_async(durable_run, {"session": session_id, "prompt": "go"})
    await second.get_result()
    leaf = durable.store.get_session(session_id).leaf_id
    # The first run replayed (as `resume` of a cancelled run would): the second's messages are
    # after its own, so rewinding to its start would leave them on an abandoned branch.
    steps = await _steps(first.get_workflow_id())
    fork = await DBOS.fork_workflow_async(
        first.get_workflow_id(), [n for name, n in steps if name == "model"][-1]
    )
    with pytest.raises(Exception, match="moved on since this run started"):
        await fork.get_result()
    assert durable.store.get_session(session_id).leaf_id == leaf
    assert len(durable.open(session_id, readonly=True).messages) == 5 + 2  # the second: prompt, answer


async def test_a_run_whose_outcome_is_being_written_counts_as_executing(
    durable: SessionManager, tmp_path: Path
) -> None:
    """DBOS writes a run's outcome after the workflow returns, retrying it through an outage for
    up to 90 s: until that write is done the run is not unattended, or the worker would put it
    back on the queue to run a second time while DBOS still records the first."""
    system = _get_dbos_instance()._sys_db  # pyright: ignore[reportPrivateUsage]
    write = system.update_workflow_outcome
    seen: list[frozenset[str] | BaseException] = []

    def watched(workflow_id: str, *args: Any, **kwargs: Any) -> Any:
        try:  # DBOS logs what its outcome write raises: kept here to be seen
            seen.append(executing())
        except Exception as exc:
            seen.append(exc)
        return write(workflow_id, *args, **kwargs)

    system.update_workflow_outcome = watched  # type: ignore[method-assign]
    try:
        _, handle = await start_run(durable, tmp_path)
        await handle.get_result()
    finally:
        del system.update_workflow_outcome
    assert seen and all(
        not isinstance(running, BaseException) and handle.get_workflow_id() in running for running in seen
    ), seen


async def test_executing_lists_the_runs_under_way_here(
    durable: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``executing`` reads DBOS's private record of its executions: a DBOS without it (or whose
    record no longer lists a run while it runs) must fail here, not leave every worker's look for
    unattended runs failing on each beat, logged as a passing fault. The run's ``work`` tool
    sleeps a second, so the run is under way across many looks (an instant run could start and end
    between two looks on a loaded machine, and was once missed that way)."""
    monkeypatch.setenv("TETHER_TEST_TOOL_SECONDS", "1")
    assert executing() == frozenset()
    _, handle = await start_run(durable, tmp_path)
    for _ in range(3000):  # the run starts in DBOS's own task; bounded, not timed
        if handle.get_workflow_id() in executing():
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail(f"run {handle.get_workflow_id()} never listed by executing() while it ran")
    await handle.get_result()
    assert handle.get_workflow_id() not in executing()
