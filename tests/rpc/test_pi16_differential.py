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
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pi16_parity import (
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
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
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
