"""Differential: pi 1.6.0 and tether, each in ``--mode json``, on the same faux OpenAI-compatible
server playing the same replies, scenario by scenario. What is compared:

- the event streams, as skeletons (``pi16_parity.comparable``: frame types in order, keys, JSON
  types; what differs on purpose is named there and in docs/rpc.md);
- the model requests: the conversation each agent sends (roles, contents, tool calls and their
  results, in order; the system prompt's role but not its text, since each agent has its own),
  so a transcript reaches the model the same way from both;
- the exit status.

The last scenario continues a session pi wrote with one model on another model, in pi and (after
importing pi's file) in tether: the request must be pi's, the other model's thinking left out.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
from pi16_parity import (
    SPLIT_TURN_SUMMARY,
    Agent,
    bash_call,
    bash_calls,
    comparable,
    failure,
    faux_openai,
    json_mode,
    pi_agent,
    tether_agent,
    text,
    thinking_text,
)

from narrowing import is_json_object
from pi_packages import PI_16, installed

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "text": ([text("Hello ", "there")], ["hi"]),
    "tool_call": ([bash_call("echo tool-ran", "call_1"), text("all ", "done")], ["run a tool"]),
    "two_prompts": ([text("one"), text("two")], ["first", "second"]),
    "model_error": ([failure(400, "faux refuses")], ["this fails"]),
    "parallel_tools": (
        [bash_calls(("echo a", "call_1"), ("echo b", "call_2")), text("both ran")],
        ["run two tools"],
    ),
    "thinking": ([thinking_text("let me think", "the ", "answer")], ["think first"]),
}


def _conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's messages in one form: the system prompt by its role only, text parts joined
    (pi sends a lone text part as a string), keys neither side needs sorted away."""
    out: list[dict[str, Any]] = []
    for message in request["messages"]:
        role = message["role"]
        if role in ("system", "developer"):
            out.append({"role": role})
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                part.get("text", "") for part in cast(list[Any], content) if is_json_object(part)
            )
        item: dict[str, Any] = {"role": role, "content": content or None}
        for key in ("tool_call_id", "reasoning_content"):
            if message.get(key):
                item[key] = message[key]
        if message.get("tool_calls"):
            item["tool_calls"] = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
                for c in message["tool_calls"]
            ]
        out.append(item)
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_tether_sends_and_streams_what_pi16_does(tmp_path: Path, scenario: str) -> None:
    pi = installed(PI_16)
    replies, prompts = SCENARIOS[scenario]
    with faux_openai(replies) as faux:
        theirs = json_mode(pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi"), *prompts)
        pi_requests = list(faux.requests)
    with faux_openai(replies) as faux:
        ours = json_mode(tether_agent(faux.base_url, tmp_path / "tether"), *prompts)
        tether_requests = list(faux.requests)
    _same_stream(theirs, ours)
    assert [_conversation(r) for r in tether_requests] == [_conversation(r) for r in pi_requests]


def _by_call(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Concurrent tool calls interleave their events as the processes happen to finish: each run
    of ``tool_execution_*`` events is put in one order, the starts (in call order), then each
    call's updates and end. That every call started before any ended is checked apart."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for frame in [*frames, {"type": "end"}]:
        if str(frame.get("type")).startswith("tool_execution_"):
            run.append(frame)
            continue
        starts = [f for f in run if f["type"] == "tool_execution_start"]
        out.extend(starts)
        for start in starts:
            call = start["toolCallId"]
            out.extend(f for f in run if f["type"] != "tool_execution_start" and f["toolCallId"] == call)
        run = []
        out.append(frame)
    return out[:-1]


def _started_together(frames: list[dict[str, Any]]) -> bool:
    kinds = [f["type"] for f in frames if f["type"] in ("tool_execution_start", "tool_execution_end")]
    return kinds[: kinds.count("tool_execution_start")] == ["tool_execution_start"] * kinds.count(
        "tool_execution_start"
    )


def _same_stream(theirs: list[dict[str, Any]], ours: list[dict[str, Any]]) -> None:
    assert _started_together(ours) == _started_together(theirs)  # tool calls as (un)concurrent as pi's
    theirs, ours = _by_call(theirs), _by_call(ours)
    a, b = comparable(theirs, "pi"), comparable(ours, "tether")
    if a == b:
        return
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    pytest.fail(
        f"event {at} differs from pi 1.6's ({len(a)} events from pi, {len(b)} from tether)\n"
        f"pi types:     {[f.get('type') for f in theirs]}\n"
        f"tether types: {[f.get('type') for f in ours]}\n"
        f"pi:     {json.dumps(a[at : at + 1])[:1500]}\ntether: {json.dumps(b[at : at + 1])[:1500]}"
    )


def test_a_pi_session_continued_on_another_model_sends_pis_request(tmp_path: Path) -> None:
    """pi writes a session on faux-1 whose reply has thinking; both continue it on faux-2."""
    pi = installed(PI_16)
    first = [thinking_text("private reasoning of faux-1", "Visible ", "answer")]
    with faux_openai(first) as faux:
        agent = pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi")
        json_mode(agent, "first question")
    (session_file,) = (tmp_path / "pi" / "pi-sessions").glob("*.jsonl")
    original = session_file.read_bytes()

    follow = [text("continued")]
    with faux_openai(follow) as faux:
        pi_continue = pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi2")
        argv = [a if a != "faux-1" else "faux-2" for a in pi_continue.argv]
        pi_continue = Agent("pi", argv, pi_continue.env, pi_continue.cwd)
        json_mode(pi_continue, "second question", args=("--session", str(session_file)))
        (pi_request,) = faux.requests
    session_file.write_bytes(original)
    with faux_openai(follow) as faux:
        ours = tether_agent(faux.base_url, tmp_path / "tether")
        imported = subprocess.run(
            [*ours.argv[: ours.argv.index("--mode")], "sessions", "import", str(session_file)],
            cwd=ours.cwd,
            env=ours.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert imported.returncode == 0, imported.stderr
        session_id = imported.stdout.split()[0]
        argv = [a if a != "faux-1" else "faux-2" for a in ours.argv]
        json_mode(
            Agent("tether", argv, ours.env, ours.cwd), "second question", args=("--session", session_id)
        )
        (tether_request,) = faux.requests
    conversation = _conversation(pi_request)
    assert _conversation(tether_request) == conversation
    assert "private reasoning" not in json.dumps(tether_request)  # another model's thinking
    assert conversation[0] == {"role": "system"}  # not developer: the host is not OpenAI's


# -- over RPC: the events a JSON-mode run does not show ---------------------------------------------

PI_EXTENSION = """
export default function (pi) {
  pi.on("agent_start", () => {
    throw new Error("boom");
  });
  pi.registerCommand("note", {
    description: "store a note",
    handler: async (args) => {
      pi.appendEntry("demo.note", { args });
    },
  });
}
"""
TETHER_EXTENSION = """
def setup(api):
    @api.on("agent_start")
    def boom(event):
        raise RuntimeError("boom")

    @api.command("note", description="store a note")
    def note(args, ctx):
        api.append_entry("demo.note", {"args": args})
"""


async def _rpc_steps(agent: Agent, steps: list[tuple[str, dict[str, Any], bool]]) -> list[dict[str, Any]]:
    """Send each ``(command, params, runs)``; when ``runs``, wait for the run it starts to settle.
    Every frame from the first command on."""
    driver = await agent.start()
    try:
        since = driver.mark()
        for kind, params, runs in steps:
            at = driver.mark()
            await driver.command(kind, **params)
            if runs:
                await driver.settled(at)
        return driver.frames[since:]
    finally:
        await driver.close()


def _with_extension(agent: Agent, path: Path) -> Agent:
    return Agent(agent.name, [*agent.argv, "-e", str(path)], agent.env, agent.cwd)


async def test_a_summary_retried_and_an_extensions_error_and_entry_are_pi16s(tmp_path: Path) -> None:
    """Over RPC: a compaction whose summary call fails once with a 503 and is retried
    (``summarization_retry_*`` between ``compaction_start`` and ``compaction_end``); an extension
    whose ``agent_start`` hook throws (``extension_error``, every run) and whose command stores an
    entry (``entry_appended``, the command answered ``handled``); replies that begin ``pending``.
    Frames compared as the other scenarios are (``stopReason``, ``reason``, ``source`` and every
    ``type`` by value); the summary's retry resends the failed request unchanged on both sides."""
    pi = installed(PI_16)
    (tmp_path / "ext").mkdir()
    pi_ext = tmp_path / "ext" / "boom.ts"
    pi_ext.write_text(PI_EXTENSION)
    tether_ext = tmp_path / "ext" / "boom.py"
    tether_ext.write_text(TETHER_EXTENSION)
    steps: list[tuple[str, dict[str, Any], bool]] = [
        ("prompt", {"message": "first"}, True),
        ("prompt", {"message": "second"}, True),
        ("compact", {}, False),
        ("prompt", {"message": "/note kept"}, False),
        ("get_entries", {}, False),
    ]
    replies = [text("one"), text("two"), failure(503, "Service Unavailable"), text("SUMMARY: a talk")]
    with faux_openai([*replies, SPLIT_TURN_SUMMARY]) as faux:
        agent = _with_extension(pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi"), pi_ext)
        theirs = await _rpc_steps(agent, steps)
        pi_requests = list(faux.requests)
    with faux_openai(replies) as faux:
        agent = _with_extension(tether_agent(faux.base_url, tmp_path / "tether"), tether_ext)
        ours = await _rpc_steps(agent, steps)
        tether_requests = list(faux.requests)

    kinds = {f["type"] for f in ours}
    assert {"extension_error", "summarization_retry_scheduled", "entry_appended"} <= kinds
    reply = next(f for f in ours if f["type"] == "message_start" and f["message"]["role"] == "assistant")
    assert reply["message"]["stopReason"] == "pending"
    # get_entries differs by pi's system-prompt entry and its split-turn compaction: its own check
    _same_stream(_without_entries(theirs), _without_entries(ours))
    entries = {a: _custom_entries(frames) for a, frames in (("pi", theirs), ("tether", ours))}
    assert entries["pi"] == entries["tether"] == [{"customType": "demo.note", "data": {"args": "kept"}}]
    # the two replies' requests are the same conversation; the summary's retry repeats its request
    assert [_conversation(r) for r in tether_requests[:2]] == [_conversation(r) for r in pi_requests[:2]]
    assert tether_requests[2] == tether_requests[3] and pi_requests[2] == pi_requests[3]


def _without_entries(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f.get("command") != "get_entries"]


def _custom_entries(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (listed,) = [f for f in frames if f.get("command") == "get_entries"]
    return [
        {"customType": e["customType"], "data": e["data"]}
        for e in listed["data"]["entries"]
        if e["type"] == "custom" and e["customType"] != "tether.system_prompt_change"
    ]


def _json_run(agent: Agent, extension: Path, prompt: str) -> tuple[list[dict[str, Any]], str]:
    """One ``--mode json`` run with ``extension`` loaded: its stdout lines and its stderr."""
    at = agent.argv.index("--mode") + 1
    argv = [*agent.argv[:at], "json", *agent.argv[at + 1 :], "-e", str(extension), prompt]
    done = subprocess.run(argv, cwd=agent.cwd, env=agent.env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, f"{agent.name} --mode json failed: {done.stderr.decode()[-2000:]}"
    lines = [json.loads(line) for line in done.stdout.split(b"\n") if line.strip()]
    return lines, done.stderr.decode()


def test_an_extensions_error_in_json_mode_is_a_stderr_line_as_in_pi16(tmp_path: Path) -> None:
    """JSON mode keeps the stream to the session's events: pi 1.6 writes an extension's failure
    to stderr (``Extension error (PATH): ERROR``), and so does tether; the streams match."""
    pi = installed(PI_16)
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "boom.ts").write_text(PI_EXTENSION)
    (tmp_path / "ext" / "boom.py").write_text(TETHER_EXTENSION)
    with faux_openai([text("hello")]) as faux:
        agent = pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi")
        theirs, pi_err = _json_run(agent, tmp_path / "ext" / "boom.ts", "hi")
    with faux_openai([text("hello")]) as faux:
        agent = tether_agent(faux.base_url, tmp_path / "tether")
        ours, tether_err = _json_run(agent, tmp_path / "ext" / "boom.py", "hi")
    _same_stream(theirs, ours)
    assert "extension_error" not in {f["type"] for f in ours}
    for err, suffix in ((pi_err, "ts"), (tether_err, "py")):
        assert re.search(rf"Extension error \(\S*boom\.{suffix}\): .*boom", err), err
