"""``tether -p`` and ``tether --mode json`` end to end, in a subprocess, with the scripted model."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply

from tether.session.events import SESSION_EVENT_TYPES
from tether.wire import decode_message

pytestmark = pytest.mark.subprocess


def test_print_mode_prints_only_the_final_answer(cli: CliEnv) -> None:
    script = cli.script("s", [text_reply("Hello", ", world")])
    done = cli.run("-p", "say hello", "--no-session", script=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, world\n"
    assert "Traceback" not in done.stderr


def test_prompt_from_stdin(cli: CliEnv) -> None:
    script = cli.script("s", [text_reply("from stdin")])
    done = cli.run("-p", "--no-session", script=script, stdin="what is on stdin?\n")
    assert (done.returncode, done.stdout) == (0, "from stdin\n"), done.stderr


def test_piped_text_comes_before_the_prompt_as_in_pi(cli: CliEnv) -> None:
    """``cat README | tether -p "Summarize"``: one user message, the piped text first."""
    readme = "# Project\n\nIt does things.\n"
    for args in (["-p", "Summarize"], ["--mode", "json", "Summarize"]):
        script = cli.script("s", [text_reply("summary")])
        done = cli.run(*args, "--no-session", script=script, stdin=readme)
        assert done.returncode == 0, done.stderr
    users = [e["message"] for e in json_lines(done.stdout) if e["type"] == "message_start"]
    assert [m["content"] for m in users if m["role"] == "user"] == [
        "# Project\n\nIt does things.\n\nSummarize"
    ]
    empty = cli.run("-p", "Summarize", "--no-session", script=cli.script("e", [text_reply("ok")]), stdin="\n")
    assert (empty.returncode, empty.stdout) == (0, "ok\n"), empty.stderr


def test_model_error_exits_1_with_the_providers_text_on_stderr(cli: CliEnv) -> None:
    error = "invalid_request_error: max_tokens: must be positive"  # not transient: no retry
    script = cli.script("s", [{"content": [{"type": "text", "chunks": ["partial"]}], "error": error}])
    done = cli.run("-p", "hi", "--no-session", script=script)
    assert done.returncode == 1
    assert done.stdout == ""
    assert error in done.stderr
    assert "Traceback" not in done.stderr


def test_print_mode_retries_a_transient_error_as_every_mode_does(cli: CliEnv) -> None:
    """The retry policy lives in the core: print mode backs off and retries like RPC does."""
    (cli.home / "config").mkdir(exist_ok=True)
    (cli.home / "config" / "settings.json").write_text('{"retry": {"maxRetries": 2, "baseDelayMs": 10}}')
    failed = {"content": [{"type": "text", "chunks": ["partial"]}], "error": "429 rate limited"}
    script = cli.script("s", [failed, failed, text_reply("third time lucky")])
    done = cli.run("-p", "hi", "--no-session", script=script)
    assert (done.returncode, done.stdout) == (0, "third time lucky\n"), done.stderr
    gave_up = cli.run("-p", "hi", "--no-session", script=cli.script("t", [failed, failed, failed]))
    assert gave_up.returncode == 1 and "429 rate limited" in gave_up.stderr


def test_tool_call_then_answer_uses_the_real_read_tool(cli: CliEnv) -> None:
    (cli.project / "notes.txt").write_text("alpha\nbeta\n")
    script = cli.script(
        "s", [tool_reply("read", {"path": "notes.txt"}), text_reply("It says alpha and beta.")]
    )
    done = cli.run("--mode", "json", "read notes.txt", "--no-session", script=script)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert len(ends) == 1 and ends[0]["toolName"] == "read" and ends[0]["isError"] is False
    result_text = "".join(block["text"] for block in ends[0]["result"]["content"])
    assert "alpha" in result_text and "beta" in result_text
    finals = [
        e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert finals[-1]["content"][0]["text"] == "It says alpha and beta."


def test_json_mode_emits_every_event_as_a_decodable_line(cli: CliEnv) -> None:
    script = cli.script(
        "s", [{"content": [{"type": "thinking", "chunks": ["hm"]}, {"type": "text", "chunks": ["a", "b"]}]}]
    )
    done = cli.run("--mode", "json", "go", "--no-session", script=script)
    assert done.returncode == 0, done.stderr
    header, *events = json_lines(done.stdout)
    assert header == {
        "type": "session",
        "version": 3,
        "id": None,
        "timestamp": header["timestamp"],
        "cwd": str(cli.project.resolve()),
        "model": "scripted/s",
        "thinkingLevel": header["thinkingLevel"],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["timestamp"])
    kinds = [e["type"] for e in events]
    assert set(kinds) <= set(SESSION_EVENT_TYPES)  # nothing outside the one vocabulary
    assert kinds[0] == "agent_start" and kinds[-2:] == ["agent_end", "agent_settled"]
    assert events[-1] == {"type": "agent_settled", "aborted": False}
    assert kinds.count("turn_start") == kinds.count("turn_end") == 1
    assert all(
        list(e) == ["type", "usage", "assistantMessageEvent"] and "partial" not in e["assistantMessageEvent"]
        for e in events
        if e["type"] == "message_update"
    )  # pi 1.x's delta-only frame
    updates = [e["assistantMessageEvent"] for e in events if e["type"] == "message_update"]
    assert [u["delta"] for u in updates if u["type"].endswith("_delta")] == ["hm", "a", "b"]
    for event in events:
        if "message" in event:
            message = event["message"]
            if event["type"] == "message_start" and message["role"] == "assistant":
                # pi 1.6's reply in progress: no stop reason yet (not one of the wire's)
                assert message["stopReason"] == "pending"
                message = {**message, "stopReason": "stop"}
            decode_message(message)  # every message is otherwise a valid wire message
    user = next(e["message"] for e in events if e["type"] == "message_start")
    assert (user["role"], user["content"]) == ("user", "go")


def test_bash_needs_approval_without_a_person_and_runs_with_yes(cli: CliEnv) -> None:
    replies = [tool_reply("bash", {"command": "echo tether-was-here"}), text_reply("done")]
    off = ("--sandbox", "off")
    refused = cli.run("--mode", "json", "run it", "--no-session", *off, script=cli.script("a", replies))
    end = next(e for e in json_lines(refused.stdout) if e["type"] == "tool_execution_end")
    assert end["isError"] is True
    assert "--yes" in end["result"]["content"][0]["text"]
    allowed = cli.run(
        "--mode", "json", "run it", "--no-session", "--yes", *off, script=cli.script("b", replies)
    )
    end = next(e for e in json_lines(allowed.stdout) if e["type"] == "tool_execution_end")
    assert end["isError"] is False
    assert "tether-was-here" in end["result"]["content"][0]["text"]


def test_sandboxed_bash_runs_without_asking_and_escalation_asks(cli: CliEnv) -> None:
    folder = Path(tempfile.mkdtemp(prefix="tether-sandbox-test-", dir=Path.home()))  # not under /tmp
    outside = folder / "outside.txt"
    try:
        _sandboxed_and_escalated(cli, outside)
    finally:
        shutil.rmtree(folder)


def _sandboxed_and_escalated(cli: CliEnv, outside: Path) -> None:
    write = f"echo escaped > {outside}"
    replies = [
        tool_reply("bash", {"command": "echo tether-was-here"}),
        tool_reply("bash", {"command": write}),
        tool_reply("bash", {"command": write, "escalate": True, "justification": "the test asks"}),
        text_reply("done"),
    ]
    run = cli.run("--mode", "json", "run it", "--no-session", script=cli.script("a", replies))
    ends = [e for e in json_lines(run.stdout) if e["type"] == "tool_execution_end"]
    texts = [e["result"]["content"][0]["text"] for e in ends]
    assert [e["isError"] for e in ends] == [False, True, True]
    assert "tether-was-here" in texts[0]
    assert "Read-only file system" in texts[1] and "escalate" in texts[1]
    assert "OUTSIDE the sandbox" in texts[2] and "--yes" in texts[2]
    assert not outside.exists()
    approved = cli.run("--mode", "json", "run it", "--no-session", "--yes", script=cli.script("b", replies))
    ends = [e for e in json_lines(approved.stdout) if e["type"] == "tool_execution_end"]
    assert [e["isError"] for e in ends] == [False, True, False]
    assert outside.read_text() == "escaped\n"


def test_tools_option_limits_the_tools(cli: CliEnv) -> None:
    script = cli.script("s", [tool_reply("bash", {"command": "true"}), text_reply("ok")])
    done = cli.run("--mode", "json", "x", "--no-session", "--tools", "read,ls", "--yes", script=script)
    end = next(e for e in json_lines(done.stdout) if e["type"] == "tool_execution_end")
    assert end["isError"] is True
    assert "bash" in end["result"]["content"][0]["text"]


def test_user_mistakes_are_one_line_not_a_traceback(cli: CliEnv) -> None:
    done = cli.run("-p", "hi", "--no-session", "--model", "nosuchprovider/nosuchmodel")
    assert done.returncode == 1
    assert done.stderr.startswith("tether: ") and "nosuch" in done.stderr
    assert "Traceback" not in done.stderr
    settings = cli.home / "config" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"thinking": "hgih"}')
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("x")]))
    assert done.returncode == 1
    assert str(settings) in done.stderr and '"thinking"' in done.stderr
    assert "Traceback" not in done.stderr


def test_version_and_help(cli: CliEnv) -> None:
    from tether import __version__

    assert cli.run("--version").stdout == f"tether {__version__}\n"
    help_text = cli.run("--help").stdout
    for option in ("--model", "--thinking", "--continue", "--resume", "--session", "--no-session", "--tools"):
        assert option in help_text
    assert "models" in cli.run("models", "--help").stdout


def test_no_prompt_is_a_usage_error(cli: CliEnv) -> None:
    done = cli.run("-p", "--no-session", script=cli.script("s", [text_reply("x")]), stdin="")
    assert done.returncode == 2
    assert "no prompt" in done.stderr and done.stdout == ""


def test_json_mode_runs_each_positional_prompt_in_turn_as_pi_does(cli: CliEnv) -> None:
    script = cli.script("s", [text_reply("first answer"), text_reply("second answer")])
    done = cli.run("--mode", "json", "--no-session", "one", "two", script=script)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)[1:]
    users = [
        e["message"]["content"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "user"
    ]
    assert users == ["one", "two"]
    assert [e["type"] for e in events].count("agent_settled") == 2
    replies = [
        e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert [r["content"][0]["text"] for r in replies] == ["first answer", "second answer"]


def test_print_mode_runs_each_positional_prompt_and_prints_the_last_answer(cli: CliEnv) -> None:
    script = cli.script("s", [text_reply("first answer"), text_reply("second answer")])
    done = cli.run("-p", "--no-session", "one", "two", script=script)
    assert (done.returncode, done.stdout) == (0, "second answer\n"), done.stderr


def test_json_mode_exits_0_on_a_model_error_which_the_stream_reports(cli: CliEnv) -> None:
    error = "invalid_request_error: max_tokens: must be positive"  # not transient: no retry
    script = cli.script("s", [{"content": [{"type": "text", "chunks": ["partial"]}], "error": error}])
    done = cli.run("--mode", "json", "--no-session", "hi", script=script)
    assert done.returncode == 0, done.stderr
    end = [e for e in json_lines(done.stdout) if e["type"] == "message_end"][-1]
    assert (end["message"]["stopReason"], end["message"]["errorMessage"]) == ("error", error)
    assert error in done.stderr


def test_json_mode_sends_pi_16s_pending_stop_reason_and_tool_durations(cli: CliEnv) -> None:
    script = cli.script("s", [tool_reply("ls", {"path": "."}), text_reply("listed")])
    done = cli.run("--mode", "json", "--no-session", "list", script=script)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    starts = [
        e["message"] for e in events if e["type"] == "message_start" and e["message"]["role"] == "assistant"
    ]
    assert [m["stopReason"] for m in starts] == ["pending", "pending"]
    ends = [
        e["message"]["stopReason"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert ends == ["toolUse", "stop"]
    (tool_end,) = [e for e in events if e["type"] == "tool_execution_end"]
    assert isinstance(tool_end["durationMs"], int) and tool_end["durationMs"] >= 0


def test_bash_calls_of_one_turn_run_concurrently_as_in_pi(cli: CliEnv) -> None:
    """The first call waits (up to 10 s) for a file the second one makes: one after the other it
    would give up before the second started."""
    waits = "for i in $(seq 200); do [ -f flag ] && break; sleep 0.05; done; [ -f flag ] && echo saw-flag"
    both = {
        "content": [
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": waits}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch flag"}},
        ]
    }
    done = cli.run(
        "--mode", "json", "--no-session", "--yes", "go", script=cli.script("s", [both, text_reply("ok")])
    )
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    ends = {e["toolCallId"]: e for e in events if e["type"] == "tool_execution_end"}
    assert "saw-flag" in ends["c1"]["result"]["content"][0]["text"]
    kinds = [(e["type"], e.get("toolCallId")) for e in events if e["type"].startswith("tool_execution_")]
    assert kinds.index(("tool_execution_start", "c2")) < kinds.index(("tool_execution_end", "c1"))
