"""pi session files in and out, checked against pi itself.

pi's own ``SessionManager`` (0.73.1 and 1.6.0, from npm) writes the session files
(``pi/pi-sessions.mjs``: a tree with every entry kind, a linear session, and the v2 and v1 forms
pi still reads) and reads back what tether exports. A round trip pi -> tether -> pi must give
the same ``buildSessionContext()`` (messages, model, thinking level) as the original, the file
must continue in pi, and tether's own context of the imported session must be pi's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_packages import PI_073, PI_16, PiPackage, installed, pi_context, run_sessions_script
from tether.session import SessionManager
from tether.session.pi_files import LEAF_MARKER, export_pi_session, import_pi_session, read_pi_session
from tether.wire import AgentMessage, ModelInfo

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

FILES = ("tree", "linear", "linear-v2", "linear-v1")


@pytest.fixture(scope="module", params=[PI_073, PI_16], ids=["pi-0.73.1", "pi-1.6.0"])
def pi_files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sessions this pi version's SessionManager writes (and the v2/v1 forms of the linear one)."""
    pi: PiPackage = installed(request.param)
    out = tmp_path_factory.mktemp(f"pi-{pi.version}")
    written = [Path(p) for p in run_sessions_script(pi, "write", str(out))]
    return dict(zip(FILES, written, strict=True))


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[SessionManager]:
    manager = SessionManager.at(tmp_path / "sessions.db")
    yield manager
    manager.close()


@pytest.mark.parametrize("name", FILES)
def test_pi_to_tether_to_pi_keeps_the_context(
    pi_files: dict[str, Path], sessions: SessionManager, tmp_path: Path, name: str
) -> None:
    original = pi_files[name]
    record = import_pi_session(sessions, original)
    exported = export_pi_session(sessions, record.id, tmp_path / "exported.jsonl")
    before, after = pi_context(original), pi_context(exported)
    assert after["messages"] == before["messages"]
    assert (after["model"], after["thinkingLevel"]) == (before["model"], before["thinkingLevel"])
    assert after["name"] == before["name"]
    if name != "linear-v1":  # pi gives v1 entries random ids when it reads them
        assert after["leafId"] == before["leafId"]
    kinds = [e["type"] for e in read_pi_session(exported)[1]]
    assert kinds == [e["type"] for e in read_pi_session(original)[1]]


def test_tether_reads_the_context_pi_reads(pi_files: dict[str, Path], sessions: SessionManager) -> None:
    for name in FILES:
        record = import_pi_session(sessions, pi_files[name])
        expected = pi_context(pi_files[name])
        session = sessions.open(record.id, readonly=True)
        try:
            to_pi = {e["id"]: e.get("piId", e["id"]) for e in session.entries()}
            mine = [_pi_ids(m, to_pi) for m in json.loads(json.dumps(session.messages))]
            model = session.context.model
            thinking = session.context.thinking_level
            title = session.title
        finally:
            session.close()
        assert mine == expected["messages"], name
        assert (
            model is not None and {"provider": model.provider, "modelId": model.model_id} == expected["model"]
        )
        assert (thinking or "off") == expected["thinkingLevel"]
        assert title == (expected["name"] or title)


def _pi_ids(message: dict[str, Any], to_pi: dict[str, str]) -> dict[str, Any]:
    """A branch summary names the branch it left by entry id: pi's id, once mapped back."""
    if message.get("role") == "branchSummary":
        return {**message, "fromId": to_pi.get(message["fromId"], message["fromId"])}
    return message


def test_pi_continues_an_exported_session(
    pi_files: dict[str, Path], sessions: SessionManager, tmp_path: Path
) -> None:
    record = import_pi_session(sessions, pi_files["tree"])
    exported = export_pi_session(sessions, record.id, tmp_path / "exported.jsonl")
    before = pi_context(exported)
    continued = pi_context(exported, "and one more thing")
    assert continued["messages"][:-2] == before["messages"]
    assert [m["role"] for m in continued["messages"][-2:]] == ["user", "assistant"]
    assert continued["messages"][-2]["content"] == "and one more thing"


def test_reading_a_session_with_pi_leaves_no_temporary_folder(
    pi_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi opens a copy of the file in a temporary folder (opening an old format rewrites it): one
    ``pi-session-*`` folder a run was left in /tmp (225 had piled up)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))  # Node's os.tmpdir()
    pi_context(pi_files["linear-v1"], "and one more thing")
    assert list(temporary.iterdir()) == []


def test_tether_session_to_pi_and_back(sessions: SessionManager, tmp_path: Path) -> None:
    """What only tether has (service tier, system prompt, a file mention) survives pi's format,
    and a leaf that is not the last entry is where pi opens the file."""
    installed(PI_16)
    model: ModelInfo = {
        "id": "m1",
        "name": "m1",
        "api": "openai-completions",
        "provider": "acme",
        "baseUrl": "http://127.0.0.1:1",
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }
    session = sessions.create(tmp_path)
    session.set_model(model)
    session.set_thinking_level("low")
    session.set_service_tier("flex")
    session.set_system_prompt("Be brief.")
    mention: AgentMessage = {
        "role": "fileMention",
        "files": [{"path": "a.txt", "content": "A"}],
        "timestamp": 1,
    }
    session.append_message(mention)
    first = session.append_message({"role": "user", "content": "hi", "timestamp": 2})
    session.append_message(_reply("hello", 3))
    session.label(first, "greeting")
    session.append_custom("acme.note", {"n": 1})
    session.append_message({"role": "user", "content": "again", "timestamp": 4})
    session.append_message(_reply("again hello", 5))
    session.rename("round trip")
    session.branch(first)  # back to the first prompt; nothing written since
    leaf, entries, messages = session.leaf_id, session.entries(), session.messages
    session_id = session.id
    session.close()

    exported = export_pi_session(sessions, session_id, tmp_path / "to-pi.jsonl")
    last = read_pi_session(exported)[1][-1]
    assert (last["type"], last["customType"]) == ("custom", LEAF_MARKER)
    pi = pi_context(exported)
    assert (pi["model"], pi["thinkingLevel"]) == ({"provider": "acme", "modelId": "m1"}, "low")
    assert [m["role"] for m in pi["messages"]] == ["custom", "user"]  # the mention shows as a custom message

    back = sessions.open(import_pi_session(sessions, exported).id, readonly=True)
    try:
        restored = back.entries()  # the leaf marker is not imported: the leaf is back where it was
        assert [_plain(e) for e in restored] == [_plain(e) for e in entries]
        assert back.messages == messages
        assert back.context.service_tier == "flex" and back.context.system_prompt == "Be brief."
        assert back.leaf_id == restored[[e["id"] for e in entries].index(leaf)]["id"]
    finally:
        back.close()


def _reply(text: str, timestamp: int) -> AgentMessage:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions",
        "provider": "acme",
        "model": "m1",
        "usage": {
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": timestamp,
    }


def _plain(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry without what the store assigns (ids, parent ids) and pi's own id."""
    return {k: v for k, v in entry.items() if k not in ("id", "parentId", "piId", "targetId")}


@pytest.mark.parametrize("index", [0, 2, 4, 9])
def test_a_v1_compaction_index_migrates_as_pi_migrates_it(
    sessions: SessionManager, tmp_path: Path, index: int
) -> None:
    """pi turns a v1 compaction's ``firstKeptEntryIndex`` into an id in the same pass that gives
    the entries their ids: the header (0), the compaction itself (4), an entry after it (9, not
    there) or a missing one keep nothing, an earlier entry keeps from there. pi 1.6 is the judge."""
    installed(PI_16)

    def message(role: str, text: str, at: int) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": text, "timestamp": at}
        if role == "assistant":
            body.update(
                content=[{"type": "text", "text": text}],
                api="openai-completions",
                provider="faux",
                model="faux-1",
                usage={
                    "input": 1,
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 2,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                stopReason="stop",
            )
        return {"type": "message", "timestamp": f"2024-01-01T00:00:0{at}.000Z", "message": body}

    records = [
        {"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"},
        message("user", "one", 1),
        message("assistant", "two", 2),
        message("user", "three", 3),
        {
            "type": "compaction",
            "timestamp": "2024-01-01T00:00:04.000Z",
            "summary": "s",
            "firstKeptEntryIndex": index,
            "tokensBefore": 9,
        },
        message("user", "four", 5),
        message("assistant", "five", 6),
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    record = import_pi_session(sessions, path)
    session = sessions.open(record.id, readonly=True)
    try:
        mine = json.loads(json.dumps(session.messages))
    finally:
        session.close()
    assert mine == pi_context(path)["messages"]
