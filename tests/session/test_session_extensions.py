"""Python extensions in a real ``AgentSession`` (scripted model, real store): discovery and trust,
entry points, the hooks (block, change arguments, change results, prompt edits, stopping a run),
commands, providers, dialogs, and failures that are reported once and never end the session."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from extension_support import start_with_extensions

from narrowing import as_assistant, block_text
from tether.session.extensions.ui import HeadlessUI, NotifyLevel
from tether.session.factory import SessionChoice, start_session
from tether.session.options import SessionOptions
from tether.session.resources import ENTRY_POINTS_CACHE, installed_entry_points, load_resources
from tether.session.settings import Settings
from tether.session.trust import trust
from tether.testing.scripted import ScriptedModel
from tether.wire import ToolResultMessage

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    config = tmp_path / "home" / "config"
    project = tmp_path / "project"
    config.mkdir(parents=True)
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git tells one
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return {"config": config, "project": project, "data": tmp_path / "home" / "data", "tmp": tmp_path}


def write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


def script(monkeypatch: pytest.MonkeyPatch, folder: Path, responses: Sequence[dict[str, Any]]) -> None:
    path = folder / "script.json"
    path.write_text(json.dumps(responses))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": [t]}]}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": f"call_{name}", "name": name, "arguments": arguments}]}


async def prompt_once(extension: Path, project: Path) -> tuple[Any, list[str], ToolResultMessage]:
    """One prompt in an unstored session with ``extension`` loaded: the closed session, the
    names of the tools the model was offered, and the first tool result."""
    core = start_session(
        SessionOptions(extension_paths=(extension,)),
        cwd=project,
        settings=Settings(),
        ask=None,
        session=SessionChoice(persist=False),
    )
    try:
        await core.prompt("go")
        tools = [t.name for t in core.agent.tools]
        result = next(m for m in core.messages if m["role"] == "toolResult")
    finally:
        await core.close()
    return core, tools, result


class Answers:
    """An ``ExtensionUI`` with answers given in advance; records what it was asked."""

    def __init__(self, *, confirm: bool = True, select: str | None = None, text: str | None = None) -> None:
        self.asked: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self._confirm, self._select, self._text = confirm, select, text

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self.asked.append(("confirm", f"{title}|{message}"))
        return self._confirm

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        self.asked.append(("select", f"{title}|{','.join(options)}"))
        return self._select

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        self.asked.append(("input", title))
        return self._text

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self.notes.append(message)


# -- discovery ---------------------------------------------------------------------------------


def test_user_and_trusted_project_folders(dirs: dict[str, Path]) -> None:
    config, project = dirs["config"], dirs["project"]
    write(
        config / "extensions" / "mine.py",
        "def setup(api):\n    api.register_command('mine', lambda a, c: 'm')\n",
    )
    write(config / "extensions" / "_private.py", "raise SystemExit('helpers are not extensions')\n")
    write(
        config / "extensions" / "pkg" / "__init__.py",
        "from .impl import setup\n",
    )
    write(
        config / "extensions" / "pkg" / "impl.py",
        "def setup(api):\n    api.register_command('pkg', lambda a, c: 'p')\n",
    )
    marker = dirs["tmp"] / "project-code-ran"
    write(
        project / ".tether" / "extensions" / "repo.py",
        f"open({str(marker)!r}, 'w').close()\ndef setup(api):\n    api.register_command('repo', lambda a, c: 'r')\n",
    )

    untrusted = load_resources(project, config, Settings(), data_dir=dirs["data"])
    assert untrusted.extensions is not None
    assert sorted(untrusted.extensions.commands()) == ["mine", "pkg"]
    assert not marker.exists()  # the repository's code never ran
    assert any(w.startswith(f"{project / '.tether' / 'extensions'}: ignored") for w in untrusted.warnings)

    trust(config, project)
    trusted = load_resources(project, config, Settings(), data_dir=dirs["data"])
    assert trusted.extensions is not None
    assert sorted(trusted.extensions.commands()) == ["mine", "pkg", "repo"]
    assert marker.exists()
    assert [c.name for c in trusted.commands()] == ["mine", "pkg", "repo"]

    off = load_resources(project, config, Settings(), data_dir=dirs["data"], extensions=False)
    assert off.extensions is None


def test_entry_points_are_found_and_cached(dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    site = dirs["tmp"] / "lib" / "site-packages"
    write(
        site / "hello_ext.py", "def setup(api):\n    api.register_command('hello', lambda a, c: 'hi ' + a)\n"
    )
    info = site / "hello_ext-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: hello-ext\nVersion: 1.0\n")
    write(info / "entry_points.txt", "[tether.extensions]\nhello = hello_ext\n")
    monkeypatch.syspath_prepend(str(site))  # pyright: ignore[reportUnknownMemberType]: untyped in pytest

    assert ("hello", "hello_ext") in installed_entry_points(dirs["data"])
    cache = dirs["data"] / ENTRY_POINTS_CACHE
    cached = json.loads(cache.read_text())
    assert cached["folders"][str(site)] == site.stat().st_mtime_ns
    # The cache answers while the folder is unchanged: a planted answer comes back as is.
    cached["entryPoints"].append(["planted", "nowhere"])
    cache.write_text(json.dumps(cached))
    assert ("planted", "nowhere") in installed_entry_points(dirs["data"])
    # Installing another package changes the folder: the search runs again.
    write(site / "other-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    found = installed_entry_points(dirs["data"])
    assert ("hello", "hello_ext") in found and ("planted", "nowhere") not in found

    resources = load_resources(dirs["project"], dirs["config"], Settings(), data_dir=dirs["data"])
    assert resources.extensions is not None
    assert [e.origin for e in resources.extensions.extensions] == ["entry point hello (hello_ext)"]


def test_a_link_planted_at_the_cache_temporary_name_is_not_written_through(dirs: dict[str, Path]) -> None:
    """The entry-point cache is written as tether's other files are: a link at the name a
    writer would use (``NAME.<pid>.tmp`` once) sent the write into the file it points to."""
    os.makedirs(dirs["data"], exist_ok=True)
    victim = dirs["tmp"] / "victim"
    victim.write_text("keep me")
    (dirs["data"] / f"{ENTRY_POINTS_CACHE}.{os.getpid()}.tmp").symlink_to(victim)

    installed_entry_points(dirs["data"])

    assert victim.read_text() == "keep me"
    cache = dirs["data"] / ENTRY_POINTS_CACHE
    assert not cache.is_symlink() and "entryPoints" in json.loads(cache.read_text())
    assert cache.stat().st_mode & 0o777 == 0o600


def test_broken_extensions_are_one_line_each_and_the_rest_loads(dirs: dict[str, Path]) -> None:
    folder = dirs["config"] / "extensions"
    write(folder / "syntax.py", "def setup(api)\n")
    write(folder / "nosetup.py", "x = 1\n")
    write(folder / "asyncsetup.py", "async def setup(api):\n    pass\n")
    write(folder / "raises.py", "def setup(api):\n    raise RuntimeError('no config')\n")
    write(folder / "exits.py", "import sys\nsys.exit(3)\n")
    write(folder / "good.py", "def setup(api):\n    api.register_command('good', lambda a, c: 'ok')\n")

    resources = load_resources(dirs["project"], dirs["config"], Settings(), data_dir=dirs["data"])

    assert resources.extensions is not None
    assert [e.name for e in resources.extensions.extensions] == ["good"]
    problems = sorted(resources.extensions.problems)
    assert len(problems) == 5
    assert "extension asyncsetup" in problems[0] and "must be a plain function" in problems[0]
    assert "extension exits" in problems[1] and "exit()" in problems[1]
    assert "extension nosetup" in problems[2] and "no setup(api)" in problems[2]
    assert "extension raises" in problems[3] and "RuntimeError: no config" in problems[3]
    assert "extension syntax" in problems[4] and "SyntaxError" in problems[4]
    assert all(p in resources.warnings for p in problems)


# -- in a session ------------------------------------------------------------------------------


HOOKS = """
from tether.agent import AfterToolCallResult, BeforeToolCallResult
from tether.session.extensions.api import BeforeRunResult

def setup(api):
    @api.on("before_run")
    def no_secrets(context):
        if "password" in context.text:
            return BeforeRunResult(block=True, reason="prompts may not hold passwords")

    @api.on("tool_call")
    def rewrite(context):
        if context.tool_call["name"] == "ls" and context.args.get("path") == "forbidden":
            return BeforeToolCallResult(block=True, reason="forbidden is off limits")
        if context.tool_call["name"] == "ls":
            context.args["path"] = "sub"  # changed in place: the tool sees the new value

    @api.on("tool_result")
    def tag(context):
        if context.tool_call["name"] == "ls":
            first = context.result.content[0]["text"]
            return AfterToolCallResult(content=[{"type": "text", "text": "[tagged] " + first}])

    @api.on("prompt")
    def remind(editor):
        editor.append({"role": "user", "parts": [{"type": "text", "text": "REMINDER"}]})
"""


async def test_hooks_block_change_arguments_and_results_and_edit_the_prompt(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = dirs["project"]
    (project / "sub").mkdir()
    (project / "sub" / "inside.txt").write_text("x")
    extension = write(dirs["tmp"] / "hooks.py", HOOKS)
    script(monkeypatch, dirs["tmp"], [call("ls", path="."), call("ls", path="forbidden"), text("done")])
    options = SessionOptions(extension_paths=(extension,))
    core = start_session(options, cwd=project, settings=Settings(), ask=None, session=SessionChoice())
    notices: list[str] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    try:
        blocked = await core.prompt("my password is hunter2")
        assert blocked == [] and notices == ["run stopped: prompts may not hold passwords"]
        await core.prompt("list things")
        stored = [m for m in core.session.messages] if core.session is not None else []
    finally:
        await core.close()
    results = [m for m in stored if m["role"] == "toolResult"]
    assert block_text(results[0]["content"][0]).startswith("[tagged] inside.txt")
    assert results[1]["isError"] and block_text(results[1]["content"][0]) == "forbidden is off limits"
    model: ScriptedModel = core.agent.stream_fn  # type: ignore[assignment]
    sent = model.requests[0].context["messages"]
    assert sent[-1]["content"] == [{"type": "text", "text": "REMINDER"}]
    assert all("REMINDER" not in json.dumps(m) for m in stored)  # synthetic: never stored


async def test_a_failing_extension_is_reported_once_and_the_session_goes_on(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    extension = write(
        dirs["tmp"] / "flaky.py",
        """
        def setup(api):
            @api.on("prompt")
            def broken(editor):
                raise KeyError("missing")

            @api.on("tool_call")
            def also_broken(context):
                raise RuntimeError("guard crashed")
        """,
    )
    script(monkeypatch, dirs["tmp"], [call("ls"), text("one"), text("two")])
    core = start_session(
        SessionOptions(extension_paths=(extension,)),
        cwd=dirs["project"],
        settings=Settings(),
        ask=None,
        session=SessionChoice(persist=False),
    )
    notices: list[str] = []
    errors: list[tuple[str, str, str]] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    core.subscribe(
        lambda e: (
            errors.append((e["extensionPath"], e["event"], e["error"]))
            if e["type"] == "extension_error"
            else None
        )
    )
    try:
        await core.prompt("first")
        await core.prompt("second")
        messages = list(core.messages)
    finally:
        await core.close()
    assert notices == ["extension flaky failed in prompt: KeyError: 'missing' (reported once)"]
    # every failure, as pi 1.6's extension_error: the path, what it handled, the error (the
    # prompt hook runs before each of the three model calls)
    prompt_failed = (str(extension), "prompt", "KeyError: 'missing'")
    assert errors == [
        prompt_failed,
        (str(extension), "tool_call", "RuntimeError: guard crashed"),
        prompt_failed,
        prompt_failed,
    ]
    result = next(m for m in messages if m["role"] == "toolResult")
    assert result["isError"] and "the extension flaky failed" in block_text(
        result["content"][0]
    )  # fails closed
    assert [
        m["content"][0]["text"]
        for m in messages
        if m["role"] == "assistant" and m["content"][0]["type"] == "text"
    ] == ["one", "two"]


async def test_a_hook_returning_what_tether_does_not_read_is_reported_and_the_run_goes_on(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook's ``42`` (or pi's ``{"block": True}``) was ignored without a word: the guard let
    the call through and nobody knew the extension was broken. Each is reported naming the
    extension, the hook and what it returned; a guard's call is blocked (it fails closed, as a
    guard that raised does) and the run goes on."""
    extension = write(
        dirs["tmp"] / "sloppy.py",
        """
        def setup(api):
            api.on("before_run")(lambda context: 42)
            calls = []

            @api.on("tool_call")
            def guard(context):
                calls.append(context)
                return {"block": True} if len(calls) == 1 else None

            api.on("tool_result")(lambda context: "changed")
        """,
    )
    script(monkeypatch, dirs["tmp"], [call("ls"), call("ls"), text("done")])
    core = start_with_extensions(dirs["project"], extension, persist=False)
    heard: list[Any] = []
    core.subscribe(lambda e: heard.append(e) if e["type"] in ("notice", "extension_error") else None)
    try:
        await core.prompt("go")
        messages = list(core.messages)
    finally:
        await core.close()
    notices = [e["message"] for e in heard if e["type"] == "notice"]
    errors = [(e["event"], e["error"]) for e in heard if e["type"] == "extension_error"]
    assert errors == [
        ("before_run", "TypeError: returned 42, not a BeforeRunResult or None"),
        ("tool_call", "TypeError: returned {'block': True}, not a BeforeToolCallResult or None"),
        ("tool_result", "TypeError: returned 'changed', not an AfterToolCallResult or None"),
    ]
    assert notices == [
        "extension sloppy failed in before_run: TypeError: returned 42, not a BeforeRunResult or None "
        "(reported once)"
    ]
    blocked, ran = [m for m in messages if m["role"] == "toolResult"]
    assert blocked["isError"] and "the extension sloppy gave no answer" in block_text(blocked["content"][0])
    assert not ran["isError"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"][0] == {
        "type": "text",
        "text": "done",
    }


async def test_commands_dialogs_and_providers(dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    extension = write(
        dirs["tmp"] / "ask.py",
        """
        def setup(api):
            @api.command("deploy", description="Deploy somewhere")
            async def deploy(args, ctx):
                target = await ctx.ui.select("Where to?", ["staging", "production"])
                if target is None:
                    return "deploy cancelled"
                note = await ctx.ui.input("Release note")
                if not await ctx.ui.confirm("Deploy?", f"{args} to {target}"):
                    return "not deployed"
                await ctx.send(f"deploy {args} to {target}: {note}")
                return f"deployed {args} to {target}"
        """,
    )
    options = SessionOptions(
        model="echo/echo-1",
        extension_paths=(extension, EXAMPLES / "echo_provider.py", EXAMPLES / "todo_command.py"),
    )
    (dirs["project"] / "app.py").write_text("x = 1  # FIXME: one\n")
    core = start_session(
        options, cwd=dirs["project"], settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    answers = Answers(select="staging", text="first cut")
    notices: list[tuple[str, str | None]] = []
    core.subscribe(
        lambda e: notices.append((e["message"], e.get("command"))) if e["type"] == "notice" else None
    )
    try:
        assert core.model["provider"] == "echo"
        assert core.resources is not None and core.resources.extensions is not None
        core.resources.extensions.ui = answers
        await core.submit("/deploy v2")
        reply = core.last_assistant()
        await core.submit("/todos")
        said: list[str] = []
        headless = HeadlessUI(said.append)  # print mode: nobody to ask
        assert not await headless.confirm("Anyone?") and await headless.select("Which?", ["a"]) is None
        assert said == [
            "Anyone?: nobody can answer here, taken as no",
            "Which?: nobody can answer here, nothing selected",
        ]
        core.resources.extensions.ui = Answers(select=None)
        await core.submit("/deploy v3")
        with pytest.raises(LookupError, match="no model 'nope'"):
            core.set_model("echo/nope")
    finally:
        await core.close()
    assert answers.asked == [
        ("select", "Where to?|staging,production"),
        ("input", "Release note"),
        ("confirm", "Deploy?|v2 to staging"),
    ]
    assert reply is not None and block_text(reply["content"][0]) == "echo: deploy v2 to staging: first cut"
    assert notices == [
        ("deployed v2 to staging", "deploy"),
        ("app.py:1: x = 1  # FIXME: one", "todos"),
        ("deploy cancelled", "deploy"),
    ]


GUARD = """
from tether.agent import BeforeToolCallResult

def setup(api):
    @api.on("tool_call")
    def guard(context):
        # one generic guard for every tool: context.args is a dict for @tool tools too
        if type(context.args) is not dict:
            raise TypeError(f"args of {context.tool_call['name']} are a {type(context.args).__name__}")
        path = context.args.get("path")
        if path == "secret.txt":
            return BeforeToolCallResult(block=True, reason="secret.txt is off limits")
        if path == "a.txt" and context.tool_call["name"] == "count_words":
            context.args["path"] = "b.txt"
        if context.args.get("min_length") == 99:
            context.args["min_length"] = "not a number"

    @api.on("tool_result")
    def look(context):
        if type(context.args) is not dict:
            raise TypeError(f"result args of {context.tool_call['name']} are a {type(context.args).__name__}")
"""


async def test_hooks_see_a_dict_of_arguments_for_every_kind_of_tool(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = dirs["project"]
    (project / "a.txt").write_text("one two")
    (project / "b.txt").write_text("one two three four")
    guard = write(dirs["tmp"] / "guard.py", GUARD)
    calls = [
        call("count_words", path="a.txt"),
        call("count_words", path="secret.txt"),
        call("count_words", path="a.txt", min_length=99),
        call("read", path="a.txt"),
    ]
    script(monkeypatch, dirs["tmp"], [*calls, text("done")])
    options = SessionOptions(extension_paths=(EXAMPLES / "word_count.py", guard))
    core = start_session(
        options, cwd=project, settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    notices: list[str] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    try:
        await core.prompt("count")
        messages = list(core.messages)
    finally:
        await core.close()
    counted, secret, invalid, read = [m for m in messages if m["role"] == "toolResult"]
    assert not counted["isError"] and "4" in block_text(counted["content"][0])  # the guard's b.txt
    assert secret["isError"] and block_text(secret["content"][0]) == "secret.txt is off limits"
    assert invalid["isError"] and "changed the arguments into invalid ones" in block_text(
        invalid["content"][0]
    )
    assert not read["isError"]
    assert notices == []  # neither hook ever saw anything but a dict


LIFECYCLE = """
import json
import os
from pathlib import Path

LOG = Path(__file__).with_suffix(".log")

def log(*parts):
    with LOG.open("a") as f:
        f.write(json.dumps(parts) + "\\n")

def setup(api):
    @api.on("session_start")
    def started(event):
        log("session_start", api.get_active_tools())

    @api.on("turn_end")
    def turn(event):
        api.append_entry("lifecycle.turn", {"role": event["message"]["role"]})

    @api.on("tool_execution_start")
    async def tool_started(event):
        log("tool", event["toolName"])

    @api.on("agent_end")
    def ended(event):
        if api.get_session_name() is None:
            api.set_session_name("named by an extension")

    @api.on("session_info_changed")
    def renamed(event):
        log("renamed", event["name"])

    @api.command("solo")
    def solo(args, ctx):
        api.set_active_tools(["read"])
        return ",".join(api.get_active_tools())

    @api.command("all-tools")
    def all_tools(args, ctx):
        api.set_active_tools(api.get_all_tools())
        return str(len(api.get_active_tools()))

    @api.command("think")
    def think(args, ctx):
        return api.set_thinking_level(args)

    @api.command("again")
    async def again(args, ctx):
        await ctx.wait_for_idle()  # the agent's run: none now (the command itself is not one)
        api.send_user_message("said by the extension")  # runs once this command has ended
        return "sent"

    @api.on("session_shutdown")
    def shutdown(event):
        log("session_shutdown")
"""


async def test_lifecycle_events_state_entries_session_name_tools_thinking_and_messages(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = dirs["project"]
    (project / "a.txt").write_text("alpha")
    extension = write(dirs["tmp"] / "lifecycle.py", LIFECYCLE)
    script(
        monkeypatch,
        dirs["tmp"],
        [call("read", path="a.txt"), text("read it"), text("answered the extension")],
    )
    options = SessionOptions(extension_paths=(extension,))
    core = start_session(options, cwd=project, settings=Settings(), ask=None, session=SessionChoice())
    answers: list[str] = []
    appended: list[dict[str, Any]] = []
    core.subscribe(lambda e: answers.append(e["message"]) if e["type"] == "notice" else None)
    core.subscribe(lambda e: appended.append(dict(e["entry"])) if e["type"] == "entry_appended" else None)
    try:
        await core.prompt("read a.txt")
        await core.submit("/solo")
        sent_tools = [t.name for t in core.agent.tools]
        await core.submit("/all-tools")
        await core.submit("/think low")
        await core.submit("/again")
        for _ in range(1000):  # the message's run starts once the command's has ended
            if not core.is_running and "said by the extension" in json.dumps(core.messages):
                break
            await asyncio.sleep(0.01)
        await core.wait_for_idle()
        assert core.session is not None
        stored = list(core.session.entries())
        title = core.session.title
        messages = list(core.messages)
    finally:
        await core.close()
    log = [json.loads(line) for line in (dirs["tmp"] / "lifecycle.log").read_text().splitlines()]
    assert log[0][0] == "session_start" and "read" in log[0][1] and "bash" in log[0][1]
    assert ["tool", "read"] in log and ["renamed", "named by an extension"] in log
    assert log[-1] == ["session_shutdown"]
    assert sent_tools == ["read"]
    # the scripted model has no reasoning: the level asked for is clamped to "off"
    assert answers[0] == "read" and int(answers[1]) > 1 and answers[2] == "off" and answers[3] == "sent"
    turns = [e["data"] for e in stored if e["type"] == "custom" and e["customType"] == "lifecycle.turn"]
    assert turns and all(t == {"role": "assistant"} for t in turns)
    # each announced as pi 1.6 announces it (entry_appended, the entry in pi's shape), and only those
    ids = [e["id"] for e in stored if e["type"] == "custom" and e["customType"] == "lifecycle.turn"]
    assert [(e["id"], e["type"], e["customType"], e["data"]) for e in appended] == [
        (i, "custom", "lifecycle.turn", t) for i, t in zip(ids, turns, strict=True)
    ]
    assert title == "named by an extension"
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users[-1] in ("said by the extension", [{"type": "text", "text": "said by the extension"}])
    assert (
        messages[-1]["role"] == "assistant"
        and block_text(as_assistant(messages[-1])["content"][0]) == "answered the extension"
    )


STALLED = """
import asyncio

def setup(api):
    async def forever(*args):
        await asyncio.Event().wait()

    for event in ("before_run", "prompt", "tool_call", "tool_result"):
        api.on(event)(forever)
"""


async def test_a_hook_of_a_run_that_never_answers_is_cut_off_and_reported(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``before_run``, ``prompt``, ``tool_call`` or ``tool_result`` hook awaiting what never
    comes held the run (and ``tether -p``) for good; past the hooks' time limit each counts as
    failed, as a raising hook does: skipped, and the call a stalled guard was checking blocked."""
    extension = write(dirs["tmp"] / "stalled.py", STALLED)
    script(monkeypatch, dirs["tmp"], [call("ls", path="."), text("done")])
    options = SessionOptions(extension_paths=(extension,))
    core = start_session(options, cwd=dirs["project"], settings=Settings(), ask=None, session=SessionChoice())
    errors: list[str] = []
    core.subscribe(lambda e: errors.append(e["event"]) if e["type"] == "extension_error" else None)
    assert core.resources is not None and core.resources.extensions is not None
    core.resources.extensions.hook_time_limit = 0.2
    try:
        added = await asyncio.wait_for(core.prompt("list"), 30)
    finally:
        await asyncio.wait_for(core.close(), 30)  # bounded: without the limit it waited for the hook
    [result] = [m for m in added if m["role"] == "toolResult"]
    assert result["isError"] and "stalled failed while checking this call" in block_text(result["content"][0])
    assert added[-1]["role"] == "assistant" and added[-1]["content"] == [{"type": "text", "text": "done"}]
    assert errors[:3] == ["before_run", "prompt", "tool_call"]


SLOW_BEFORE_RUN = """
import asyncio
import os

def setup(api):
    @api.on("before_run")
    async def think_it_over(context):
        os.environ["TETHER_TEST_HOOK_ENTERED"] = "1"
        await asyncio.sleep(0.5)
"""


async def test_an_abort_while_a_before_run_hook_runs_aborts_the_run(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's run does not exist yet while ``before_run`` hooks run: an abort then still
    ends the run that follows them as aborted, the prompt recorded, instead of being lost."""
    monkeypatch.delenv("TETHER_TEST_HOOK_ENTERED", raising=False)
    extension = write(dirs["tmp"] / "slow.py", SLOW_BEFORE_RUN)
    script(monkeypatch, dirs["tmp"], [text("an answer nobody wanted")])
    options = SessionOptions(extension_paths=(extension,))
    core = start_session(options, cwd=dirs["project"], settings=Settings(), ask=None, session=SessionChoice())
    try:
        run = asyncio.ensure_future(core.prompt("go"))
        async with asyncio.timeout(30):
            while "TETHER_TEST_HOOK_ENTERED" not in os.environ:
                await asyncio.sleep(0.01)
            core.abort()
            added = await run
    finally:
        await asyncio.wait_for(core.close(), 30)
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert as_assistant(added[-1])["stopReason"] == "aborted"


# -- tools no provider would take; a failure before anyone listens ---------------------------


async def test_tools_no_provider_would_take_are_left_out_one_line_each(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool with a broken schema or a name providers refuse went into every request (a
    provider fails the whole request on it), and a second tool of a taken name silently
    replaced the first: each is left out with one line, the extension's good tool stays."""
    extension = write(
        dirs["tmp"] / "sloppy.py",
        """
        from tether.agent.tool import AgentTool, AgentToolResult

        async def run(call_id, params, signal, update):
            return AgentToolResult(content=[{"type": "text", "text": "ran"}])

        def tool(name, parameters):
            return AgentTool(name=name, label=name, description="d", parameters=parameters, execute=run)

        def setup(api):
            api.register_tool(tool("good", {"type": "object", "properties": {}}))
            api.register_tool(tool("weird", {"type": "object", "properties": {"a": {"type": "strng"}}}))
            api.register_tool(tool("not_object", {"type": "string"}))
            api.register_tool(tool("two words", {"type": "object"}))
            api.register_tool(tool("good", {"type": "object", "properties": {"b": {"type": "string"}}}))
        """,
    )
    script(monkeypatch, dirs["tmp"], [call("good"), text("done")])
    core, tools, result = await prompt_once(extension, dirs["project"])
    assert core.notice is not None
    lines = [line for line in core.notice.splitlines() if "sloppy" in line]
    origin = f"extension sloppy ({extension})"
    assert lines == [
        f"{origin}: tool 'weird' left out: parameters.properties.a.type 'strng' is not a JSON type",
        f"{origin}: tool 'not_object' left out: its parameters schema must have type 'object', not 'string'",
        f"{origin}: tool 'two words' left out: the name 'two words' is not 1-64 letters, digits, '_' or '-'",
        f"{origin}: tool 'good' left out: the name is taken by a tool of extension sloppy",
    ]
    assert "good" in tools and not {"weird", "not_object", "two words"} & set(tools)
    assert not result["isError"] and block_text(result["content"][0]) == "ran"


async def test_an_extensions_tool_replaces_the_built_in_one_of_its_name(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the extensions guide says (and pi does): the model was sent both ``read`` tools, which a
    provider refuses, and the built-in one kept its place."""
    extension = write(
        dirs["tmp"] / "own_read.py",
        """
        from tether.agent.tool import AgentTool, AgentToolResult

        async def run(call_id, params, signal, update):
            return AgentToolResult(content=[{"type": "text", "text": "the extension's read"}])

        def setup(api):
            parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
            api.register_tool(AgentTool(name="read", label="read", description="d", parameters=parameters, execute=run))
        """,
    )
    script(monkeypatch, dirs["tmp"], [call("read", path="a"), text("done")])
    _, tools, result = await prompt_once(extension, dirs["project"])
    assert tools.count("read") == 1 and tools[0] == "read"
    assert block_text(result["content"][0]) == "the extension's read"


async def test_a_session_start_hook_failing_before_anyone_listens_is_still_told(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``session_start`` runs while the session is made, before a front end subscribes; its
    failure used up the extension's one line unheard, so no later failure was told either."""
    extension = write(
        dirs["tmp"] / "early.py",
        """
        def setup(api):
            @api.on("session_start")
            def started(event):
                raise RuntimeError("no config yet")
        """,
    )
    script(monkeypatch, dirs["tmp"], [text("done")])
    core = start_session(
        SessionOptions(extension_paths=(extension,)),
        cwd=dirs["project"],
        settings=Settings(),
        ask=None,
        session=SessionChoice(persist=False),
    )
    await core.close()
    assert core.notice is not None
    assert (
        "extension early failed in session_start: RuntimeError: no config yet (reported once)" in core.notice
    )
