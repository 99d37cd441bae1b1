"""The example extensions (``examples/extensions/``) in print and JSON mode, run as a user runs
them: ``tether -e FILE -p ...`` in a child process with an isolated home and the scripted model;
also ``tether extensions list``, ``--no-extensions``, and skills and templates from the CLI."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply, tool_results

pytestmark = pytest.mark.subprocess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"


def example(name: str) -> str:
    return str(EXAMPLES / f"{name}.py")


def test_tool_with_parameters(cli: CliEnv) -> None:
    (cli.project / "notes.txt").write_text("a bb ccc dddd eeeee")
    script = cli.script(
        "s", [tool_reply("count_words", {"path": "notes.txt", "min_length": 3}), text_reply("ok")]
    )
    done = cli.run("-e", example("word_count"), "--mode", "json", "--no-session", "count", script=script)
    assert done.returncode == 0, done.stderr
    (result,) = tool_results(done.stdout)
    assert result["content"] == [{"type": "text", "text": "notes.txt: 3 words of at least 3 letters"}]
    bad = cli.script(
        "b", [tool_reply("count_words", {"path": "notes.txt", "min_length": 0}), text_reply("ok")]
    )
    done = cli.run("-e", example("word_count"), "--mode", "json", "--no-session", "count", script=bad)
    (result,) = tool_results(done.stdout)
    assert result["isError"] and "min_length" in json.dumps(result["content"])


def test_slash_command(cli: CliEnv) -> None:
    (cli.project / "app.py").write_text("x = 1\n# TODO: rename x\n")
    unused = cli.script("unused", [])  # the command answers alone: the model is never asked
    done = cli.run("-e", example("todo_command"), "-p", "--no-session", "/todos", script=unused)
    assert (done.returncode, done.stdout) == (0, "app.py:2: # TODO: rename x\n"), done.stderr
    script = cli.script("s", [text_reply("renamed")])
    done = cli.run("-e", example("todo_command"), "-p", "--no-session", "/todos fix", script=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "asked the agent to fix app.py:2\nrenamed\n"


def test_rm_guard_says_no_when_nobody_can_answer(cli: CliEnv) -> None:
    (cli.project / "build").mkdir()
    script = cli.script("s", [tool_reply("bash", {"command": "rm -rf build"}), text_reply("could not")])
    done = cli.run(
        "-e", example("rm_guard"), "--yes", "--mode", "json", "--no-session", "clean", script=script
    )
    assert done.returncode == 0, done.stderr
    (result,) = tool_results(done.stdout)
    assert result["isError"] and result["content"] == [
        {"type": "text", "text": "The user did not allow `rm -rf build`."}
    ]
    notices = [e["message"] for e in json_lines(done.stdout) if e["type"] == "notice"]
    assert notices == ["Allow dangerous command?: nobody can answer here, taken as no"]
    assert (cli.project / "build").is_dir()
    safe = cli.script("t", [tool_reply("bash", {"command": "echo fine"}), text_reply("ok")])
    done = cli.run("-e", example("rm_guard"), "--yes", "-p", "--no-session", "say", script=safe)
    assert done.returncode == 0 and "nobody can answer" not in done.stderr


def test_date_hook_reaches_the_model_and_is_not_stored(cli: CliEnv) -> None:
    args = ("-e", example("date_hook"), "-e", example("echo_provider"), "--model", "echo/echo-1", "-p")
    done = cli.run(*args, "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"echo: (Today's date: {datetime.date.today().isoformat()})\n"
    session_id = cli.run("sessions").stdout.splitlines()[1].split()[0]
    exported = cli.run("sessions", "export", session_id, "-o", str(cli.home / "s.jsonl"))
    assert exported.returncode == 0, exported.stderr
    entries = json_lines((cli.home / "s.jsonl").read_text())
    users = [e["message"]["content"] for e in entries if e.get("message", {}).get("role") == "user"]
    assert users == ["hello"]  # the date went to the model only


def test_custom_provider(cli: CliEnv) -> None:
    done = cli.run("-e", example("echo_provider"), "--model", "echo/echo-1", "-p", "--no-session", "hi there")
    assert (done.returncode, done.stdout) == (0, "echo: hi there\n"), done.stderr
    done = cli.run("-e", example("echo_provider"), "--model", "echo/nope", "-p", "--no-session", "hi")
    assert done.returncode == 1
    assert (
        done.stderr.strip() == "tether: the extension provider echo has no model 'nope' (it has: echo/echo-1)"
    )


def test_extensions_list_and_no_extensions(cli: CliEnv) -> None:
    folder = cli.home / "config" / "extensions"
    folder.mkdir(parents=True)
    (folder / "hello.py").write_text(
        "def setup(api):\n    api.register_command('hello', lambda a, c: 'hello ' + a)\n"
    )
    (folder / "broken.py").write_text("def setup(api):\n    raise ValueError('bad config')\n")
    done = cli.run("extensions", "list", "-e", example("rm_guard"))
    assert done.returncode == 1
    assert done.stdout == (
        f"hello  {folder / 'hello.py'}\n  commands   /hello\nrm_guard  {example('rm_guard')}\n  hooks      tool_call (1)\n"
    )
    assert (
        done.stderr
        == f"tether: extension broken ({folder / 'broken.py'}) failed to load: ValueError: bad config\n"
    )

    done = cli.run("-p", "--no-session", "/hello you", script=cli.script("unused", []))
    assert done.stdout == "hello you\n"
    assert "extension broken" in done.stderr  # reported, and the rest still works
    script = cli.script("s", [text_reply("the model got it")])
    done = cli.run("-p", "--no-session", "--no-extensions", "/hello you", script=script)
    assert (done.returncode, done.stdout) == (0, "the model got it\n")


def test_untrusted_project_extension_never_runs(cli: CliEnv) -> None:
    marker = cli.home / "ran"
    folder = cli.project / ".tether" / "extensions"
    folder.mkdir(parents=True)
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef setup(api): pass\n")
    script = cli.script("s", [text_reply("ok")])
    done = cli.run("-p", "--no-session", "hi", script=script)
    assert done.returncode == 0 and not marker.exists()
    assert f"{folder}: ignored: the project is not trusted" in done.stderr


def test_templates_and_skills_from_the_cli(cli: CliEnv) -> None:
    prompts = cli.home / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "shout.md").write_text("---\ndescription: Say it loud\n---\nSay $1 loudly, $ARGUMENTS")
    skill = cli.project / ".claude" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy things\n---\nSort the imports.\n")
    broken = cli.project / ".agents" / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname broken\n---\n")
    args = ("-e", example("echo_provider"), "--model", "echo/echo-1", "-p", "--no-session")
    done = cli.run(*args, "/shout hello world")
    assert done.stdout == "echo: Say hello loudly, hello world\n", done.stderr
    assert f"{broken}: invalid front matter (line 2: expected `key: value`" in done.stderr
    done = cli.run(*args, "/skill:tidy now")
    assert done.stdout.startswith('echo: <skill name="tidy"') and done.stdout.endswith("</skill>\n\nnow\n")


def test_a_run_an_extension_stops_exits_1_with_the_reason(cli: CliEnv) -> None:
    stopper = cli.home / "stopper.py"
    stopper.write_text(
        "from tether.session import BeforeRunResult\n\n"
        "def setup(api):\n"
        "    @api.on('before_run')\n"
        "    def stop(context):\n"
        "        if 'password' in context.text:\n"
        "            return BeforeRunResult(block=True, reason='no passwords in prompts')\n"
        "    api.register_command('quiet', lambda args, ctx: None)\n"
    )
    script = cli.script("s", [text_reply("fine")])
    done = cli.run("-e", str(stopper), "-p", "--no-session", "my password is x", script=script)
    assert (done.returncode, done.stdout) == (1, "")
    assert "run stopped: no passwords in prompts" in done.stderr
    done = cli.run("-e", str(stopper), "-p", "--no-session", "/quiet", script=script)
    assert (done.returncode, done.stdout) == (0, "")  # a command with nothing to say
    done = cli.run("-e", str(stopper), "-p", "--no-session", "hello", script=script)
    assert (done.returncode, done.stdout) == (0, "fine\n")


def test_the_model_reads_a_user_skill_outside_the_workspace_and_writes_nothing_there(cli: CliEnv) -> None:
    """The system prompt tells the model where a skill's files are; the reading tools may use
    those folders wherever they are, the writing ones may not, nor may anything read beside them."""
    skill = cli.home / "config" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nRun make ship.\n")
    (skill / "steps.md").write_text("1. make ship\n")
    secret = cli.home / "config" / "private.txt"
    secret.write_text("not a skill\n")
    calls = [
        tool_reply("read", {"path": str(skill / "SKILL.md")}, "c1"),
        tool_reply("ls", {"path": str(skill)}, "c2"),
        tool_reply("grep", {"pattern": "make", "path": str(skill)}, "c3"),
        tool_reply("write", {"path": str(skill / "SKILL.md"), "content": "owned"}, "c4"),
        tool_reply("read", {"path": str(secret)}, "c5"),
        text_reply("done"),
    ]
    script = cli.script("s", calls)
    done = cli.run("--mode", "json", "--no-session", "--yes", "deploy please", script=script)
    assert done.returncode == 0, done.stderr
    read, listed, found, write, outside = tool_results(done.stdout)
    assert not read["isError"] and "Run make ship." in json.dumps(read["content"])
    assert not listed["isError"] and "steps.md" in json.dumps(listed["content"])
    assert not found["isError"] and "1. make ship" in json.dumps(found["content"])
    assert write["isError"] and "outside the workspace" in json.dumps(write["content"])
    assert outside["isError"] and "outside the workspace" in json.dumps(outside["content"])
    assert (skill / "SKILL.md").read_text().endswith("Run make ship.\n")


@pytest.mark.parametrize(
    ("off", "why"),
    [((), "no extension is loaded"), (("--no-extensions",), "extensions are off (--no-extensions)")],
)
def test_a_flag_with_no_extension_to_take_it_says_why(cli: CliEnv, off: tuple[str, ...], why: str) -> None:
    """With no extension anywhere the note blamed ``--no-extensions``, which was not given."""
    done = cli.run(
        "-p", "hi", "--no-session", "--flag", "plan", *off, script=cli.script("s", [text_reply("ok")])
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert f"note: --flag: {why}; flags ignored\n" in done.stderr
