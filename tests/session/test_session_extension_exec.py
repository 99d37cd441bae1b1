"""pi's ``pi.exec`` and ``pi.events`` in a real session, with extension files loaded as ``-e``
loads them: ``api.exec`` runs inside the session's sandbox without credentials (a write outside
the workspace fails; the key in tether's environment is not in the program's), stops a program
at its timeout, and needs a running session; ``api.events`` carries data from one extension to
another, an ``async`` listener included, and a listener that raises is reported by name while
the others still hear the event."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from extension_support import extension_dirs, start_with_extensions

from tether.tools.sandbox import unavailable

pytestmark = pytest.mark.subprocess

RUNNER = """
import json

def setup(api):
    try:
        api.exec("true")
    except RuntimeError as exc:
        api.events.on("runner:setup", lambda data: None)
        SETUP_ERROR.append(str(exc))

    @api.command("run")
    async def run(args, ctx):
        result = await api.exec("sh", ["-c", args], timeout=5)
        api.events.emit("runner:ran", {"command": args, "code": result.code})
        return json.dumps([result.stdout, result.stderr, result.code, result.killed])

    @api.command("stuck")
    async def stuck(args, ctx):
        result = await api.exec("sleep", ["300"], timeout=0.3)
        return json.dumps([result.killed, result.code])

    @api.command("setup-error")
    def setup_error(args, ctx):
        return SETUP_ERROR[0]

SETUP_ERROR = []
"""

LISTENER = """
import asyncio
import json
from pathlib import Path

LOG = Path(__file__).with_suffix(".log")

def setup(api):
    def heard(data):
        with LOG.open("a") as f:
            f.write(json.dumps(["sync", data]) + "\\n")

    async def later(data):
        await asyncio.sleep(0)
        with LOG.open("a") as f:
            f.write(json.dumps(["async", data["code"]]) + "\\n")

    def broken(data):
        raise ValueError("cannot read " + data["command"])

    api.events.on("runner:ran", broken)
    api.events.on("runner:ran", heard)
    stop = api.events.on("runner:ran", later)

    @api.command("deaf")
    def deaf(args, ctx):
        stop()
"""


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-exec-ext-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
async def test_exec_and_the_event_bus(tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = extension_dirs(tmp_path, monkeypatch)["project"]
    monkeypatch.setenv("ACME_API_KEY", "sk-never-shown-to-programs")
    script = tmp_path / "script.json"
    script.write_text("[]")
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    runner, listener = tmp_path / "runner.py", tmp_path / "listener.py"
    runner.write_text(textwrap.dedent(RUNNER))
    listener.write_text(textwrap.dedent(LISTENER))
    core = start_with_extensions(project, runner, listener, persist=False)
    said: list[str] = []
    errors: list[dict[str, Any]] = []
    core.subscribe(lambda e: said.append(e["message"]) if e["type"] == "notice" and "command" in e else None)
    core.subscribe(lambda e: errors.append(dict(e)) if e["type"] == "extension_error" else None)
    try:
        await core.submit('/run pwd; echo "key=$ACME_API_KEY"; echo oops >&2; exit 4')
        await core.submit(f"/run echo x > {outside}/escaped")
        await core.submit("/stuck")
        await core.submit("/deaf")
        await core.submit("/run true")
        await core.submit("/setup-error")
        await asyncio.sleep(0.05)  # the async listener's task
    finally:
        await core.close()
    ran, escaped, stuck = (json.loads(s) for s in said[:3])
    assert ran == [f"{project.resolve()}\nkey=\n", "oops\n", 4, False]
    assert escaped[2] != 0 and "Read-only file system" in escaped[1] and not (outside / "escaped").exists()
    assert stuck == [True, 143]
    assert said[-1] == "exec needs a running session (not available during setup)"
    log = [json.loads(line) for line in (tmp_path / "listener.log").read_text().splitlines()]
    heard = [entry for entry in log if entry[0] == "sync"]
    assert [d["code"] for _, d in heard] == [4, 2, 0]  # the broken listener did not stop it
    assert sorted(code for kind, code in log if kind == "async") == [2, 4]  # unsubscribed after two
    assert [e["event"] for e in errors] == ["events runner:ran"] * 3
    assert "ValueError: cannot read pwd" in errors[0]["error"]
