"""``session/load`` of a session another process is running: the editor follows it read-only.

Real processes on a real store (SQLite, and PostgreSQL): a ``tether --mode rpc`` writes the
session while ``tether --mode acp`` processes, driven by the SDK's client, load it, replay its
history and then receive each message the writer stores, as ``session/update``s.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import acp
import psycopg
import pytest
from acp import RequestError
from acp_support import AcpEnv, EditorClient, text_reply, tool_reply
from psycopg import sql

from tether.rpc import RpcClient
from tether.session import SessionManager
from tether.store import SessionLockedError
from tether.store.paths import default_db_path
from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess

UPDATE_TIMEOUT = 30.0
"""Only a guard against a hung follower; an update normally comes within one wake-up."""
LOCK_RELEASE_TIMEOUT = 10.0
"""How long a writer's lock may outlive its exit: PostgreSQL frees it once the server has noticed
the closed connection, which takes a moment on a loaded machine."""
_schemas = itertools.count(1)


@dataclass(frozen=True)
class Store:
    """Where the processes of a test keep their sessions: the environment that says so, and the
    location for this process (to delete the session from outside)."""

    env: dict[str, str]
    location: str


@pytest.fixture(params=("sqlite", "postgres"))
def store(request: pytest.FixtureRequest, acp_env: AcpEnv) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store({}, str(default_db_path({"TETHER_HOME": str(acp_env.home)})))
        return
    server = cast(PostgresServer, request.getfixturevalue("postgres"))
    schema = f"acp_follow_{next(_schemas)}"
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    url = server.url(options=f"-csearch_path%3D{schema}")
    yield Store({"TETHER_DATABASE_URL": url}, url)
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _delete_when_free(sessions: SessionManager, session_id: str) -> None:
    """Delete a session once its writer's lock is gone (see ``LOCK_RELEASE_TIMEOUT``)."""
    deadline = time.monotonic() + LOCK_RELEASE_TIMEOUT
    while True:
        try:
            return sessions.delete(session_id)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _writer(acp_env: AcpEnv, store: Store, script: Path) -> Any:
    env = acp_env.env(TETHER_SCRIPTED=str(script), **store.env)
    return RpcClient.spawn(["--yes"], cwd=acp_env.project, env=env)


def _until(client: EditorClient, done: Callable[[dict[str, Any]], bool]) -> asyncio.Event:
    """An event set once an update satisfying ``done`` arrives at ``client``."""
    arrived = asyncio.Event()

    def check(update: dict[str, Any]) -> None:
        if done(update):
            arrived.set()

    client.on_update = check
    return arrived


def _is_text(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda u: u["sessionUpdate"] == "agent_message_chunk" and text in u["content"]["text"]


def _texts(updates: list[dict[str, Any]]) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"].endswith("_chunk")]


async def _connect(conn: acp.core.ClientSideConnection, client: EditorClient) -> None:
    await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities())


async def test_an_editor_follows_a_session_another_process_runs(acp_env: AcpEnv, store: Store) -> None:
    writer_script = acp_env.script(
        "writer",
        [
            text_reply("first answer"),
            tool_reply("bash", {"command": "echo followed"}, "b1"),
            text_reply("all done"),
        ],
    )
    mine = acp_env.script("follower", [text_reply("mine now")])
    client = EditorClient()
    async with _writer(acp_env, store, writer_script) as writer:
        await writer.prompt("before the editor")
        session_id = (await writer.get_state())["sessionId"]
        async with acp_env.agent(client, mine, env=store.env) as conn:
            await _connect(conn, client)
            loaded = await conn.load_session(cwd=str(acp_env.project), session_id=session_id, mcp_servers=[])
            holder = f"pid {writer.process.pid} on {socket.gethostname()}"
            assert loaded is not None and loaded.field_meta == {
                "tether": {"readOnly": True, "writer": holder}
            }
            assert _texts(client.updates()) == ["before the editor", "first answer"]  # the history
            client.clear()

            finished = _until(client, _is_text("all done"))
            await writer.prompt("while the editor watches")
            await asyncio.wait_for(finished.wait(), UPDATE_TIMEOUT)
            live = client.updates()
            assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in live] == [
                ("user_message_chunk", None, None),
                ("tool_call", "b1", "pending"),
                ("tool_call_update", "b1", "completed"),
                ("agent_message_chunk", None, None),
            ]
            assert live[0]["content"]["text"] == "while the editor watches"
            assert live[1]["title"] == "`echo followed`"
            assert live[2]["content"][0]["content"]["text"].strip() == "followed"

            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=session_id, prompt=[acp.text_block("may I?")])
            assert "read-only" in str(refused.value) and holder in str(refused.value)
            with pytest.raises(RequestError, match="read-only"):
                await conn.set_config_option(config_id="model", session_id=session_id, value="x/y")
            state = await writer.get_state()  # the writer kept its session and its lock throughout
            assert state["sessionId"] == session_id and state["messageCount"] == 6

            await writer.close()  # the writer is done: loading again takes the session over
            deadline = time.monotonic() + LOCK_RELEASE_TIMEOUT
            while True:
                client.clear()
                again = await conn.load_session(
                    cwd=str(acp_env.project), session_id=session_id, mcp_servers=[]
                )
                assert again is not None
                if again.field_meta is None or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)  # the server has not noticed the writer's exit yet
            assert again.field_meta is None
            assert _texts(client.updates())[-1] == "all done"
            client.clear()
            response = await conn.prompt(session_id=session_id, prompt=[acp.text_block("and now?")])
            assert response.stop_reason == "end_turn"
            assert _texts(client.updates()) == ["mine now"]
    with SessionManager.at(store.location) as sessions, sessions.open(session_id, readonly=True) as stored:
        assert [m["role"] for m in stored.messages][-2:] == ["user", "assistant"]
        assert len(stored.messages) == 8


async def test_following_ends_on_cancel_and_when_the_session_is_deleted(
    acp_env: AcpEnv, store: Store
) -> None:
    writer_script = acp_env.script("writer", [text_reply("one"), text_reply("two")])
    unused = acp_env.script("unused", [])
    cancelled, watching = EditorClient(), EditorClient()
    async with _writer(acp_env, store, writer_script) as writer:
        await writer.prompt("first")
        session_id = (await writer.get_state())["sessionId"]
        async with (
            acp_env.agent(cancelled, unused, env=store.env) as stops,
            acp_env.agent(watching, unused, env=store.env) as keeps,
        ):
            for conn, client in ((stops, cancelled), (keeps, watching)):
                await _connect(conn, client)
                await conn.load_session(cwd=str(acp_env.project), session_id=session_id, mcp_servers=[])
                client.clear()
            await stops.cancel(session_id=session_id)
            with pytest.raises(RequestError, match="read-only"):  # answered after the cancel was handled
                await stops.prompt(session_id=session_id, prompt=[acp.text_block("x")])

            second = _until(watching, _is_text("two"))
            await writer.prompt("second")
            await asyncio.wait_for(second.wait(), UPDATE_TIMEOUT)
            await writer.close()
            deleted = _until(watching, _is_text("deleted"))
            with SessionManager.at(store.location) as sessions:
                await asyncio.to_thread(_delete_when_free, sessions, session_id)
            await asyncio.wait_for(deleted.wait(), UPDATE_TIMEOUT)
            assert _texts(watching.updates()) == [
                "second",
                "two",
                "\n[this session was deleted; there is nothing more to follow]\n",
            ]
            # The cancelled one stopped: by now it would have had all of that too.
            assert cancelled.updates() == []
