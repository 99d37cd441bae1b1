"""pi's ``session_before_switch``/``_fork``/``_tree`` hooks in a real ``AgentSession`` (scripted
model, real store), through the slash commands every front end shares: a hook cancels a new
session, a clone and a move in the tree; gives the branch summary itself (no model call) and a
label; the after-events (``session_shutdown``/``session_start`` with pi's reasons,
``session_tree``) follow each change; a hook that raises or hangs is reported and cancels
nothing, while the time a hook's dialog waits for the user does not count against it."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from extension_support import extension_dirs, start_with_extensions

from tether.session.agent_session import AgentSession
from tether.session.commands import execute_remote


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    replies = ["first answer", "second answer"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": [r]}]} for r in replies]))
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    return extension_dirs(tmp_path, monkeypatch)


GUARD = """
import json
from pathlib import Path
from tether.session import SessionBeforeResult
from tether.session.extensions.host import SessionChangeCancelled

LOG = Path(__file__).with_suffix(".log")
GUARDING = [True]

def log(event):
    with LOG.open("a") as f:
        f.write(json.dumps(event) + "\\n")

def setup(api):
    @api.command("guard")
    def guard(args, ctx):
        GUARDING[0] = args == "on"

    @api.command("ctx-new")
    async def ctx_new(args, ctx):
        try:
            return await ctx.new_session()
        except SessionChangeCancelled as exc:
            return f"ctx: {exc}"

    @api.on("session_before_switch")
    def switch(event):
        log(event)
        if GUARDING[0]:
            return SessionBeforeResult(cancel=True, reason="unsaved notes")

    @api.on("session_before_fork")
    async def fork(event):
        log(event)
        return SessionBeforeResult(cancel=GUARDING[0])

    @api.on("session_before_tree")
    def tree(event):
        log(event)
        if GUARDING[0]:
            return SessionBeforeResult(cancel=True)
        if event["preparation"]["userWantsSummary"]:
            return SessionBeforeResult(summary="the extension's summary", label="left")

    for name in ("session_start", "session_shutdown", "session_tree"):
        api.on(name)(log)
"""

BROKEN = """
import asyncio

def setup(api):
    @api.on("session_before_switch")
    def switch(event):
        raise RuntimeError("no switching today")

    @api.on("session_before_fork")
    async def fork(event):
        await asyncio.Event().wait()  # never answers

    @api.on("session_before_tree")
    async def tree(event):
        if not await api.ui.confirm("Move?", "slowly answered"):
            from tether.session import SessionBeforeResult
            return SessionBeforeResult(cancel=True, reason="the user said no")
"""


async def say(core: AgentSession, line: str, answers: list[str]) -> None:
    """``line`` as an RPC client's prompt: a built-in command runs (its answer kept), anything
    else (an extension's command, a prompt) is submitted."""
    result = await execute_remote(core, line, "rpc")
    if result is None:
        await core.submit(line)
    else:
        answers.append(result.text)


class SlowNo:
    """A front end whose user takes a while, then says no."""

    ui_mode = "library"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.asked: list[str] = []

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self.asked.append(title)
        await asyncio.sleep(self.delay)
        return False

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        return None

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        return None

    def notify(self, message: str, level: str = "info") -> None:
        pass


async def test_hooks_cancel_and_shape_changes_and_hear_of_them(dirs: dict[str, Path]) -> None:
    guard = dirs["tmp"] / "guard.py"
    guard.write_text(textwrap.dedent(GUARD))
    core = start_with_extensions(dirs["project"], guard)
    answers: list[str] = []
    try:
        await core.submit("hello")
        await core.submit("again")
        assert core.session is not None
        original, original_file = core.session_id, core.session_file
        first_user = next(e["id"] for e in core.session.entries() if e["type"] == "message")
        leaf = core.session.leaf_id

        await say(core, "/guard on", answers)
        await say(core, "/new", answers)
        await say(core, "/clone", answers)
        await say(core, f"/tree {first_user}", answers)
        notices: list[str] = []
        core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
        await say(core, "/ctx-new", answers)  # a command's own switch asks the hooks too
        assert (core.session_id, core.session.leaf_id) == (original, leaf)  # nothing moved
        cancelled = [n for n in answers if "cancelled" in n]

        await say(core, "/guard off", answers)
        await say(core, "/clone", answers)
        cloned, cloned_file = core.session_id, core.session_file
        await say(core, f"/resume {original}", answers)
        assert core.session_id == original
        await say(core, f"/tree {first_user} --summary", answers)  # no reply left: no model call made
        summary = [e for e in core.session.entries() if e["type"] == "branch_summary"]
        moved_to = core.session.leaf_id  # the label's entry, after the summary
        labels = [(e["targetId"], e["label"]) for e in core.session.entries() if e["type"] == "label"]
        await say(core, "/new", answers)
        renewed_file = core.session_file
    finally:
        await core.close()

    assert cancelled == [
        "/new: cancelled by extension guard: unsaved notes",
        "/clone: cancelled by extension guard",
        "/tree: cancelled by extension guard",
    ]
    assert notices == ["ctx: cancelled by extension guard: unsaved notes"]
    assert cloned not in (None, original)
    assert [s["summary"] for s in summary] == ["the extension's summary"]
    assert labels == [(summary[0]["id"], "left")]
    log = [json.loads(line) for line in (dirs["tmp"] / "guard.log").read_text().splitlines()]
    store = str(original_file).rpartition("/")[0]
    assert log == [
        {"type": "session_start", "reason": "startup"},
        {"type": "session_before_switch", "reason": "new"},
        {"type": "session_before_fork", "entryId": leaf, "position": "at"},
        {
            "type": "session_before_tree",
            "preparation": {
                "targetId": first_user,
                "oldLeafId": leaf,
                "userWantsSummary": False,
                "customInstructions": None,
                "label": None,
            },
        },
        {"type": "session_before_switch", "reason": "new"},
        {"type": "session_before_fork", "entryId": leaf, "position": "at"},
        {"type": "session_shutdown", "reason": "fork", "targetSessionFile": cloned_file},
        {"type": "session_start", "reason": "fork", "previousSessionFile": original_file},
        {"type": "session_before_switch", "reason": "resume", "targetSessionFile": f"{store}/{original}"},
        {"type": "session_shutdown", "reason": "resume", "targetSessionFile": original_file},
        {"type": "session_start", "reason": "resume", "previousSessionFile": cloned_file},
        {
            "type": "session_before_tree",
            "preparation": {
                "targetId": first_user,
                "oldLeafId": leaf,
                "userWantsSummary": True,
                "customInstructions": None,
                "label": None,
            },
        },
        {
            "type": "session_tree",
            "newLeafId": moved_to,
            "oldLeafId": leaf,
            "summaryEntry": log[12]["summaryEntry"],
            "fromExtension": True,
        },
        {"type": "session_before_switch", "reason": "new"},
        {"type": "session_shutdown", "reason": "new", "targetSessionFile": renewed_file},
        {"type": "session_start", "reason": "new", "previousSessionFile": original_file},
        {"type": "session_shutdown", "reason": "quit"},
    ]
    assert log[12]["summaryEntry"]["type"] == "branch_summary"
    assert log[12]["summaryEntry"]["summary"] == "the extension's summary"


async def test_a_hook_that_fails_or_hangs_cancels_nothing(dirs: dict[str, Path]) -> None:
    broken = dirs["tmp"] / "broken.py"
    broken.write_text(textwrap.dedent(BROKEN))
    core = start_with_extensions(dirs["project"], broken)
    errors: list[dict[str, Any]] = []
    answers: list[str] = []
    core.subscribe(lambda e: errors.append(dict(e)) if e["type"] == "extension_error" else None)
    try:
        assert core.resources is not None and core.resources.extensions is not None
        host = core.resources.extensions
        host.hook_time_limit = 0.2
        await core.submit("hello")
        first = core.session_id
        await say(core, "/clone", answers)  # the fork hook never answers: cut off, the clone goes ahead
        cloned = core.session_id
        await say(core, "/new", answers)  # the switch hook raises: reported, the new session starts
        renewed = core.session_id
        await say(core, f"/resume {first}", answers)
        assert core.session is not None
        user = next(e["id"] for e in core.session.entries() if e["type"] == "message")
        leaf = core.session.leaf_id
        # the tree hook asks; the user takes longer than the hook's limit, then says no: the
        # time the dialog waited is not the hook's, so the no counts
        slow = SlowNo(delay=1.0)
        host.ui = slow
        await say(core, f"/tree {user}", answers)
        assert core.session.leaf_id == leaf and slow.asked == ["Move?"]
    finally:
        await core.close()
    assert len({first, cloned, renewed}) == 3
    assert [(e["event"], e["error"].split(":")[0]) for e in errors] == [
        ("session_before_fork", "HookTimeout"),
        ("session_before_switch", "RuntimeError"),
        ("session_before_switch", "RuntimeError"),  # the /resume asked it too
    ]
