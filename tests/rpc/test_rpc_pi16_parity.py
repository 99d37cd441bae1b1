"""tether's RPC frames have pi 1.6.0's shapes: the same conversation, driven the same way, against
real ``pi --mode rpc`` (Node 22 from npm) and ``tether --mode rpc``, both on one faux
OpenAI-compatible server (``pi16_parity``). Every step's frames — responses and events, in order —
must have the same skeleton: the same frame types in the same order, the same keys, the same JSON
types. What differs on purpose is left out by name in ``pi16_parity.comparable`` (and said in
docs/rpc.md); anything else fails here with both sides' frames.

The steps cover what a pi 1.6 client does: commands on an idle agent (a compaction with nothing
to compact, queueing and clearing), a prompt with streamed deltas, a tool call with steering,
follow-ups, a queued prompt, ``clear_queue`` and an unqueued prompt refused; abort during a tool;
state, messages, entries (with and without ``since``, and an unknown cursor), tree, fork messages,
last text, stats, commands, thinking levels and models; model and thinking commands with their
events, an unknown model; queue modes, auto compaction and retry switches; ``bash`` with its
streamed output; ``compact`` and the stats after it; ``export_html``; an automatic retry of a
broken stream; a model error with an idle ``abort``; session name, ``fork``, ``clone``,
``new_session``, ``switch_session``; a line that is not JSON and an unknown command.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pi16_parity import (
    REPLIES,
    SPLIT_TURN_SUMMARY,
    TETHER_ADDITIONS,
    Agent,
    abort_during_tool,
    bash_call,
    comparable,
    conversation,
    counted,
    faux_openai,
    json_mode,
    pi_agent,
    tether_agent,
    text,
)

from pi_packages import PI_16, installed

pytestmark = [pytest.mark.node, pytest.mark.subprocess]


async def _converse(
    make: Callable[[str, Path], Agent], root: Path, replies: list[dict[str, Any]]
) -> tuple[dict[str, list[dict[str, Any]]], int]:
    with faux_openai(replies) as faux:
        agent: Agent = make(faux.base_url, root)
        driver = await agent.start()
        try:
            steps = await conversation(driver)
        finally:
            await driver.close()
        return steps, len(faux.requests)


async def test_tether_answers_every_command_with_pi16s_frames(tmp_path: Path) -> None:
    pi = installed(PI_16)
    pi_steps, pi_calls = await _converse(
        lambda url, root: pi_agent(pi.node, pi.package, url, root), tmp_path / "pi", REPLIES
    )
    tether_replies = [r for r in REPLIES if r is not SPLIT_TURN_SUMMARY]
    tether_steps, tether_calls = await _converse(tether_agent, tmp_path / "tether", tether_replies)
    assert list(tether_steps) == list(pi_steps)
    for step, pi_frames in pi_steps.items():
        theirs, ours = comparable(pi_frames, "pi"), comparable(tether_steps[step], "tether")
        if theirs != ours:
            at = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b), None)
            at = min(len(theirs), len(ours)) if at is None else at
            pi_counted, tether_counted = counted(pi_frames, "pi"), counted(tether_steps[step], "tether")
            pytest.fail(
                f"step {step!r}: frame {at} differs from pi 1.6's "
                f"({len(theirs)} frames from pi, {len(ours)} from tether; counted frames)\n"
                f"pi:     {json.dumps(pi_counted[at : at + 3])[:1500]}\n"
                f"tether: {json.dumps(tether_counted[at : at + 3])[:1500]}\n"
                f"skeletons:\n  pi:     {json.dumps(theirs[at : at + 1])[:1500]}\n"
                f"  tether: {json.dumps(ours[at : at + 1])[:1500]}"
            )
    assert (pi_calls, tether_calls) == (len(REPLIES), len(tether_replies))  # every reply was asked for
    # what each step is about, beyond shapes
    prompt = tether_steps["prompt"]
    deltas = [f["assistantMessageEvent"].get("delta") for f in prompt if f["type"] == "message_update"]
    assert "".join(d for d in deltas if d) == "Hello there"
    assert [f for f in prompt if f["type"] not in TETHER_ADDITIONS][-1] == {
        "type": "agent_settled",
        "aborted": False,
    }
    assert [f for f in tether_steps["abort"] if f["type"] == "agent_settled"] == [
        {"type": "agent_settled", "aborted": True}
    ]
    last_text = [f for f in tether_steps["queries"] if f.get("command") == "get_last_assistant_text"]
    assert last_text[0]["data"] == {"text": "followed up"}  # the aborted turn's empty reply skipped
    changed = [f for f in tether_steps["model_thinking"] if f["type"] == "thinking_level_changed"]
    assert changed == [{"type": "thinking_level_changed", "level": lv} for lv in ("high", "off")]
    bash = tether_steps["bash"]
    assert bash[0] == {"type": "bash_execution_update", "id": bash[1]["id"], "delta": "hi\n"}


async def test_pis_untimed_reply_after_an_abort_is_taken_as_timed(tmp_path: Path) -> None:
    """pi 1.6 times the reply that an abort during a tool makes of the next turn's request, but
    leaves it untimed when a millisecond ticks between two of its clock reads (``_timed`` in
    pi16_parity): the parity test's ``abort`` step failed so in CI, "frame 17 differs", the
    skeletons parting on ``durationMs`` alone. Here pi's ``Date.now()`` ticks at every read (a
    preloaded script), so pi leaves it untimed each time; the step keeps tether's shape."""
    pi = installed(PI_16)
    ticking = tmp_path / "ticking_clock.cjs"
    ticking.write_text(
        "const now = Date.now;\nlet last = 0;\nDate.now = () => (last = Math.max(now(), last + 1));\n"
    )

    async def abort_step(agent: Agent) -> list[dict[str, Any]]:
        driver = await agent.start()
        try:
            return await abort_during_tool(driver)
        finally:
            await driver.close()

    with faux_openai([bash_call("sleep 30", "call_1")]) as faux:
        agent = pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi")
        agent.env["NODE_OPTIONS"] = f"--require {ticking}"
        theirs = await abort_step(agent)
    with faux_openai([bash_call("sleep 30", "call_1")]) as faux:
        ours = await abort_step(tether_agent(faux.base_url, tmp_path / "tether"))
    replies = [
        f["message"] for f in theirs if f["type"] == "message_end" and f["message"]["role"] == "assistant"
    ]
    assert [m["stopReason"] for m in replies] == ["toolUse", "aborted"]
    assert "durationMs" not in replies[1]  # pi's rare way, every time
    assert comparable(ours, "tether") == comparable(theirs, "pi")


def test_tether_json_mode_writes_pi16s_lines(tmp_path: Path) -> None:
    """``--mode json`` with a tool call: header, then the same events with the same shapes, so a
    consumer written for pi 1.6 (deltas only in ``message_update``) reads tether's the same way."""
    pi = installed(PI_16)
    replies = [bash_call("echo tool-ran", "call_1"), text("all ", "done")]
    with faux_openai(replies) as faux:
        theirs = json_mode(pi_agent(pi.node, pi.package, faux.base_url, tmp_path / "pi"), "run a tool")
    with faux_openai(replies) as faux:
        ours = json_mode(tether_agent(faux.base_url, tmp_path / "tether"), "run a tool")
    assert comparable(ours, "tether") == comparable(theirs, "pi")
    assert ours[0]["type"] == "session" and ours[-1] == {"type": "agent_settled", "aborted": False}
    updates = [f["assistantMessageEvent"] for f in ours if f["type"] == "message_update"]
    assert "".join(u["delta"] for u in updates if u["type"] == "text_delta") == "all done"
