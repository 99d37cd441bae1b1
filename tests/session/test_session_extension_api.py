"""The rest of pi's ExtensionAPI in a real ``AgentSession`` (scripted model, real store): the
``input`` hook (transform, handled), ``model_select``, ``send_message`` starting a turn, labels,
``get_commands``, shortcuts, a command's session operations (fork, tree navigation, context
usage, idle, mode), and ``Dialogs``: timeouts and calls a front end does not have."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from extension_support import extension_dirs, start_with_extensions

from tether.session import AgentSession
from tether.session.extensions.ui import Dialogs, HeadlessUI
from tether.session.settings import Settings
from tether.testing import MockProvider, Reply


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return extension_dirs(tmp_path, monkeypatch)


def script(monkeypatch: pytest.MonkeyPatch, folder: Path, replies: Sequence[str]) -> None:
    path = folder / "script.json"
    path.write_text(json.dumps([{"content": [{"type": "text", "chunks": [r]}]} for r in replies]))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))


class Silent:
    """A front end whose dialogs are never answered, and that has no editor nor display."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.asked: list[tuple[str, float | None]] = []

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self.asked.append((title, timeout))
        await asyncio.Event().wait()
        return True

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        self.asked.append((title, timeout))
        await asyncio.Event().wait()
        return options[0]

    async def input(self, title: str, placeholder: str = "") -> str | None:  # written before timeouts
        return "typed"

    def notify(self, message: str, level: str = "info") -> None:
        self.notes.append(f"{level}: {message}")


async def test_dialog_timeouts_and_what_a_front_end_lacks() -> None:
    silent = Silent()
    ui = Dialogs(silent)  # pyright: ignore[reportArgumentType]  # an old front end: input takes no timeout
    assert await ui.confirm("Sure?", timeout=0.05) is False
    assert await ui.select("Which?", ["a", "b"], timeout=0.05) is None
    assert silent.asked == [("Sure?", 0.05), ("Which?", 0.05)]
    assert await ui.input("Name") == "typed"  # no timeout: an old front end is called as before
    assert await ui.editor("Long text", "draft") is None
    assert silent.notes == ["warning: Long text: no text editor here; nothing entered"]
    ui.set_status("k", "v")  # no status line here: dropped, not an error
    ui.set_widget("k", ["line"])
    ui.set_title("t")
    ui.set_editor_text("x")
    with pytest.raises(ValueError, match="above 0"):
        await ui.confirm("Now?", timeout=0)
    said: list[str] = []
    headless = Dialogs(HeadlessUI(said.append))
    assert await headless.editor("Note") is None
    assert said == ["Note: nobody can answer here, no text"]


API = """
import json
from pathlib import Path
from tether.session.extensions.api import InputResult

LOG = Path(__file__).with_suffix(".log")

def log(*parts):
    with LOG.open("a") as f:
        f.write(json.dumps(parts) + "\\n")

def setup(api):
    @api.on("input")
    def quick(event):
        log("input", event.text, event.source)
        if event.text == "ping":
            api.ui.notify("pong")
            return InputResult("handled")
        if event.text.startswith("?quick "):
            return InputResult("transform", "Respond briefly: " + event.text[7:])

    @api.on("model_select")
    def selected(event):
        log("model_select", event["model"]["id"], event["previous_model"]["id"], event["source"])

    @api.command("poke")
    def poke(args, ctx):
        api.send_message("a reminder from the extension", custom_type="api.poke", trigger_turn=True)
        return "poked"

    @api.command("usage")
    def usage(args, ctx):
        u = ctx.get_context_usage()
        return json.dumps([u.tokens > 0, u.context_window, ctx.is_idle(), ctx.mode, ctx.has_ui])

    @api.command("fork-first")
    async def fork_first(args, ctx):
        entries = [e for e in api_session(ctx).entries() if e["type"] == "message"]
        return await ctx.fork(entries[int(args)]["id"])

    @api.command("back")
    async def back(args, ctx):
        first = [e for e in api_session(ctx).entries() if e["type"] == "message"][0]
        await ctx.navigate_tree(first["id"], label="start")
        api.set_label(first["id"], "first prompt")
        return ",".join(f"{c.name}:{c.source}" for c in api.get_commands() if c.name in ("poke", "usage"))

    api.register_shortcut("alt+p", lambda ctx: None, description="nothing")
    api.register_shortcut("ctrl+shift+x", lambda ctx: None)

def api_session(ctx):
    return ctx.session.session
"""


async def test_input_model_select_messages_and_session_operations(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    script(monkeypatch, dirs["tmp"], ["first", "briefly", "saw the reminder", "after the fork"])
    extension = dirs["tmp"] / "api.py"
    extension.write_text(textwrap.dedent(API))
    core = start_with_extensions(dirs["project"], extension)
    notices: list[str] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    try:
        assert core.resources is not None and core.resources.extensions is not None
        host = core.resources.extensions
        assert [(s.key, s.extension) for s in host.shortcuts()] == [("alt+p", "api"), ("ctrl+shift+x", "api")]
        await core.submit("hello")
        await core.submit("ping")  # handled by the extension: no model call
        await core.submit("?quick what is 2+2")
        previous = core.model
        core.set_model(previous)
        await core.submit("/poke")
        for _ in range(1000):  # the message's turn starts once the command's run has ended
            if not core.is_running and "saw the reminder" in json.dumps(core.messages):
                break
            await asyncio.sleep(0.01)
        await core.wait_for_idle()
        sent = [
            (m["role"], m["content"]) for m in core.messages if m["role"] == "user" or m["role"] == "custom"
        ]
        await core.submit("/usage")
        session_before = core.session_id
        await core.submit("/fork-first 2")  # the second user prompt: forks before it
        forked = core.session_id
        assert core.session is not None
        await core.submit("/back")
        labels = [e for e in core.session.entries() if e["type"] == "label"]
        first_id = next(e["id"] for e in core.session.entries() if e["type"] == "message")
        users = [m["content"] for m in core.messages if m["role"] == "user"]
    finally:
        await core.close()
    log = [json.loads(line) for line in (dirs["tmp"] / "api.log").read_text().splitlines()]
    assert log[:3] == [
        ["input", "hello", "rpc"],
        ["input", "ping", "rpc"],
        ["input", "?quick what is 2+2", "rpc"],
    ]
    assert ["model_select", "script", "script", "set"] in log
    assert "pong" in notices and "poked" in notices
    usage = json.loads(next(n for n in notices if n.startswith("[")))
    assert usage[0] is True and usage[2:] == [True, "print", False]  # no front end: print mode's
    assert forked != session_before and forked is not None
    assert [(lb["targetId"], lb["label"]) for lb in labels][-2:] == [
        (first_id, "start"),
        (first_id, "first prompt"),
    ]
    assert "poke:extension,usage:extension" in notices  # get_commands: pi's, the user's commands
    assert sent == [
        ("user", "hello"),  # "ping" was handled: never sent
        ("user", "Respond briefly: what is 2+2"),
        ("custom", "a reminder from the extension"),
    ]
    assert users == ["hello"]  # back at the first prompt


FLAGS = """
import json
from pathlib import Path

def setup(api):
    api.register_flag("plan", description="start in plan mode")
    api.register_flag("depth", type="string", default="1")
    api.register_flag("quiet")
    seen_in_setup = api.get_flag("plan")

    @api.on("session_start")
    def started(event):
        values = [seen_in_setup, api.get_flag("plan"), api.get_flag("depth"), api.get_flag("quiet")]
        Path(__file__).with_suffix(".log").write_text(json.dumps(values))
"""


async def test_flags_from_the_command_line(dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    script(monkeypatch, dirs["tmp"], [])
    extension = dirs["tmp"] / "flags.py"
    extension.write_text(textwrap.dedent(FLAGS))
    given = ("plan", "depth=3", "nope", "quiet=maybe")
    core = start_with_extensions(dirs["project"], extension, persist=False, flags=given)
    try:
        assert core.resources is not None
        warnings = list(core.resources.warnings)
    finally:
        await core.close()
    # in setup a flag is its default; from session_start on, what the command line gave
    assert json.loads((dirs["tmp"] / "flags.log").read_text()) == [None, True, "3", None]
    assert warnings == [
        "--flag nope: no extension registered that flag (depth, plan, quiet)",
        "--flag quiet=maybe: quiet is a yes/no flag (give it as --flag quiet)",
    ]


PROVIDER_HOOKS = """
from pathlib import Path
from tether.session.extensions.api import ProviderResponse

def setup(api):
    @api.on("before_provider_headers")
    def headers(request):
        request.headers["x-trace"] = "ext-1"
        request.headers["content-type"] = None

    @api.on("before_provider_request")
    def payload(request):
        return {**request.payload, "temperature": 0}

    @api.on("after_provider_response")
    def response(answer: ProviderResponse):
        Path(__file__).with_suffix(".log").write_text(f"{answer.status} {answer.headers.get('x-request-id')}")
"""


async def hooked_call(
    dirs: dict[str, Path], source: str, replies: Sequence[Any]
) -> tuple[AgentSession, MockProvider, list[dict[str, Any]]]:
    """One prompt of a session with the extension ``source`` to a real provider's HTTP request
    (openai-completions), answered in process by ``MockProvider``: the session (closed), the
    provider and the session's notices and ``extension_error`` events."""
    from tether.agent import Agent
    from tether.ai import SimpleStreamOptions
    from tether.session.resources import load_resources

    extension = dirs["tmp"] / "provider_hooks.py"
    extension.write_text(textwrap.dedent(source))
    provider = MockProvider(list(replies))
    model: Any = {
        "id": "m", "name": "m", "api": "openai-completions", "provider": "openai",
        "baseUrl": "https://api.example.invalid/v1", "reasoning": False, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000, "maxTokens": 100,
    }  # fmt: skip
    resources = load_resources(
        dirs["project"], dirs["tmp"] / "home" / "config", Settings(), extension_paths=(extension,)
    )
    heard: list[dict[str, Any]] = []
    async with provider.client() as client:
        agent = Agent(model=model, options=SimpleStreamOptions(api_key="k", http_client=client))
        core = AgentSession(agent, resources=resources, cwd=dirs["project"])
        core.subscribe(
            lambda e: heard.append(dict(e)) if e["type"] in ("notice", "extension_error") else None
        )
        try:
            await core.prompt("hello")
        finally:
            await core.close()
    return core, provider, heard


async def test_provider_request_hooks_change_the_http_request(dirs: dict[str, Path]) -> None:
    """``before_provider_headers``/``before_provider_request``/``after_provider_response`` on a
    real provider's HTTP request."""
    body = (
        b'data: {"id":"r1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},'
        b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    core, provider, _ = await hooked_call(
        dirs, PROVIDER_HOOKS, [Reply(body, headers={"x-request-id": "req-7"})]
    )
    [request] = provider.requests
    assert request.headers["x-trace"] == "ext-1" and "content-type" not in request.headers
    assert json.loads(request.content)["temperature"] == 0
    assert (dirs["tmp"] / "provider_hooks.log").read_text() == "200 req-7"
    assert core.last_assistant() is not None


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ("'not a payload'", "'not a payload', not a JSON object (a dict) or None"),
        (
            "[1] * 30",
            "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,..., not a JSON object (a dict) or None",
        ),
        (
            "{**request.payload, 'temperature': {0.5}}",
            "a payload that is not JSON (Object of type set is not JSON serializable)",
        ),
    ],
)
async def test_a_payload_hook_returning_no_json_object_ends_the_run_naming_it(
    dirs: dict[str, Path], returned: str, said: str
) -> None:
    """A ``before_provider_request`` hook's replacement was taken as it was: a string or a list
    went to the provider as the request (refused there, far from its cause), and a set in the
    dict ended the run as "TypeError: Object of type set is not JSON serializable", naming
    nobody. Now the run ends before any request, its error naming the extension, the hook and
    what it returned (never raised)."""
    source = f"def setup(api):\n    api.on('before_provider_request')(lambda request: {returned})\n"
    core, provider, heard = await hooked_call(dirs, source, [Reply(b"data: [DONE]\n\n")])
    line = f"extension provider_hooks's before_provider_request hook returned {said}"
    last = core.last_assistant()
    assert last is not None and last["stopReason"] == "error"
    assert last.get("errorMessage") == f"TypeError: {line}"
    assert provider.requests == []
    assert [(e["type"], e.get("error")) for e in heard] == [("extension_error", f"TypeError: {line}")]
