"""Helpers shared by the provider tests: fixtures, the README's comparison rule, stream invariants."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from reference_paths import FIXTURE_STREAMS
from tether.ai import StreamOptions, stream
from tether.testing.loopback import LoopbackServer, Reply
from tether.testing.replay import REPLAY_CONTEXT, base_path, fixture_reply, normalize_event, normalize_message
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

ROOT = Path(__file__).resolve().parents[2]
# The 40 reference recordings (reference/fixtures), and ours (tests/fixtures/README.md): same
# format, same rule.
OWN_STREAMS = ROOT / "tests" / "fixtures" / "streams"
# Real streams edited in one well-defined way each (scripts/mutate_stream_fixtures.py), with the
# reference's results: the branches the recordings leave untested.
MUTATED_STREAMS = ROOT / "tests" / "fixtures" / "mutated"
STREAMS = (FIXTURE_STREAMS, OWN_STREAMS, MUTATED_STREAMS)
APIS = ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai")


def fixture_paths(apis: Sequence[str] = APIS, roots: Sequence[Path] = STREAMS) -> list[Path]:
    return [
        p
        for root in roots
        for api in apis
        for p in sorted((root / api).glob("*.json"))
        if not p.name.endswith(".expected.json")
    ]


def fixture_id(path: Path) -> str:
    """``reference/<api>/<name>``, ``own/<api>/<name>`` or ``mutated/<api>/<name>``: fixture
    names are unique per API only."""
    if path.is_relative_to(MUTATED_STREAMS):
        origin = "mutated"
    else:
        origin = "own" if path.is_relative_to(OWN_STREAMS) else "reference"
    return f"{origin}/{path.parent.name}/{path.stem}"


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fixture, expected) for a fixture file."""
    return json.loads(path.read_text()), json.loads(path.with_name(path.stem + ".expected.json").read_text())


# Allowed alternatives from reference/fixtures/README.md: fixture -> fields where either result passes.
# Keyed by `fixture_id`.
ALLOWED: dict[str, set[str]] = {
    "reference/openai-responses/openai-reasoning-summary": {"deltas0"},
    "reference/openai-responses/openrouter-reasoning-text-done-marker": {"events0", "signed0"},
    "reference/openai-completions/openrouter-error-chunk": {"usage"},
    "reference/google-generative-ai/code-execution-parts": {"usage_input"},
}

# Our own deviations from the reference: fixture -> {field key (as in ALLOWED): why}. Relaxed in
# `compare` exactly like the allowed alternatives. Empty: every field of the 20 fixtures matches
# the reference or one of the README's allowed alternatives. We take the reference's side of
# every alternative except the late reasoning item of openrouter-reasoning-text-done-marker, whose
# block we still close and sign (the last tests of providers/test_provider_fixtures.py pin each
# choice).
DEVIATIONS: dict[str, dict[str, str]] = {}


def _blocks(events: list[dict[str, Any]]) -> tuple[dict[int, list[str]], dict[int, str]]:
    sequence: dict[int, list[str]] = {}
    text: dict[int, str] = {}
    for event in events:
        index = event.get("contentIndex")
        if index is None:
            continue
        kind = event["type"]
        seen = sequence.setdefault(index, [])
        if not (kind.endswith("_delta") and seen and seen[-1] == kind):
            seen.append(kind)
        if kind.endswith("_delta"):
            text[index] = text.get(index, "") + event.get("delta", "")
    return sequence, text


def multibyte_cuts(body: str, limit: int = 30) -> list[int]:
    """Byte offsets inside each of the first ``limit`` multi-byte UTF-8 characters of ``body``:
    cutting the body there splits those characters across network reads."""
    cuts: list[int] = []
    offset = 0
    for char in body:
        size = len(char.encode())
        if size > 1 and limit > 0:
            cuts.extend(range(offset + 1, offset + size))
            limit -= 1
        offset += size
    return cuts


def _json_or_text(text: str) -> object:
    """The JSON value of complete tool-call arguments; the text itself when the stream ended
    inside them (an error mid-call), which must then match exactly."""
    try:
        return json.loads(text or "null")
    except json.JSONDecodeError:
        return ("partial", text)


def relaxed(name: str) -> set[str]:
    """The fields (keys of ``ALLOWED``) where fixture ``name`` may take either alternative."""
    allowed = ALLOWED.get(name, set()) | set(DEVIATIONS.get(name, {}))
    if name.startswith("mutated/"):
        # A variant keeps the allowed alternatives of the stream it was made from.
        api, stem = name.removeprefix("mutated/").split("/", 1)
        source = stem.split("--", 1)[0]
        allowed |= ALLOWED.get(f"reference/{api}/{source}", set()) | ALLOWED.get(f"own/{api}/{source}", set())
    return allowed


def compare(got: dict[str, Any], want: dict[str, Any], name: str) -> list[str]:
    """Problems between a normalized result and an expected file, by the README rule."""
    allowed = relaxed(name)
    problems: list[str] = []
    events, wanted = got["events"], want["events"]
    if events[0]["type"] != "start" and wanted[0]["type"] == "start":
        problems.append("first event is not start")
    terminal = [e for e in events if e["type"] in ("done", "error")]
    if len(terminal) != 1 or events[-1] is not terminal[0]:
        problems.append("not exactly one terminal event, last")
    elif terminal[0]["reason"] != wanted[-1]["reason"]:
        problems.append(f"reason {terminal[0]['reason']} != {wanted[-1]['reason']}")
    got_seq, got_text = _blocks(events)
    want_seq, want_text = _blocks(wanted)
    if "events0" in allowed:
        got_seq = {i: [t for t in s if t != "thinking_end"] for i, s in got_seq.items()}
        want_seq = {i: [t for t in s if t != "thinking_end"] for i, s in want_seq.items()}
    if got_seq != want_seq:
        problems.append(f"per-block events {got_seq} != {want_seq}")
    for index, expected_text in want_text.items():
        actual = got_text.get(index, "")
        if want_seq[index][0] == "toolcall_start":
            if _json_or_text(actual) != _json_or_text(expected_text):
                problems.append(f"block {index}: tool-call delta JSON differs")
        elif actual != expected_text and not (
            index == 0 and "deltas0" in allowed and actual + "\n\n" == expected_text
        ):
            problems.append(f"block {index}: delta text differs")
    message, expected = got["message"], want["message"]
    for key in (
        "role",
        "api",
        "provider",
        "model",
        "stopReason",
        "errorMessage",
        "responseId",
        "responseModel",
    ):
        if key == "responseModel" and key not in expected:
            continue
        if message.get(key) != expected.get(key):
            problems.append(f"message.{key}: {message.get(key)!r} != {expected.get(key)!r}")
    content, expected_content = message["content"], expected["content"]
    if len(content) != len(expected_content):
        problems.append(f"{len(content)} blocks, want {len(expected_content)}")
    for index, (block, want_block) in enumerate(zip(content, expected_content, strict=False)):
        for key in ("type", "text", "thinking", "signed", "redacted", "name", "arguments"):
            if key == "signed" and index == 0 and "signed0" in allowed:
                continue
            if block.get(key) != want_block.get(key):
                problems.append(f"content[{index}].{key} differs")
        if want_block["type"] == "toolCall":
            ids = [b.get("id") for b in content if b["type"] == "toolCall"]
            if want_block["id"] == "<generated>":
                if not block.get("id") or ids.count(block.get("id")) > 1:
                    problems.append(f"content[{index}].id empty or not unique")
            elif block.get("id") != want_block["id"]:
                problems.append(f"content[{index}].id differs")
    if "usage" not in allowed:
        usage, want_usage = message["usage"], expected["usage"]
        for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
            if not (key == "input" and "usage_input" in allowed) and usage[key] != want_usage[key]:
                problems.append(f"usage.{key} {usage[key]} != {want_usage[key]}")
        if "usage_input" not in allowed:
            for key, value in want_usage["cost"].items():
                if not math.isclose(usage["cost"][key], value, rel_tol=0, abs_tol=1e-12):
                    problems.append(f"usage.cost.{key} {usage['cost'][key]} != {value}")
    return problems


def key_problems(got: dict[str, Any], want: dict[str, Any], name: str) -> list[str]:
    """Where a printed result's keys differ from the normalized form the reference writes.

    Event by event, each event has exactly the reference's keys. The one alternative that changes
    the number of events ("events0": a ``thinking_end`` the reference leaves out) is skipped on
    both sides, as `compare` skips it in the per-block sequences. Independently of position, every
    event also has the keys the reference writes for its type."""
    problems: list[str] = []
    if set(got) != {"events", "message"}:
        problems.append(f"top-level keys {sorted(got)}")
    events, wanted = got["events"], want["events"]
    if "events0" in relaxed(name):
        events = [e for e in events if e["type"] != "thinking_end"]
        wanted = [e for e in wanted if e["type"] != "thinking_end"]
    if [sorted(e) for e in events] != [sorted(e) for e in wanted]:
        problems.append("event keys differ from the reference's, event by event")
    by_type = {e["type"]: sorted(e) for e in want["events"]}
    for event in got["events"]:
        if sorted(event) != by_type.get(event["type"], sorted(event)):
            problems.append(f"{event['type']} keys {sorted(event)} != {by_type[event['type']]}")
    keys = set(got["message"])
    if "responseModel" not in want["message"]:
        keys.discard("responseModel")  # allowed alternative: the model the provider reported
    if keys != set(want["message"]):
        problems.append(f"message keys {sorted(keys)} != {sorted(want['message'])}")
    return problems


async def run_fixture(
    fixture: dict[str, Any],
    model: dict[str, Any],
    chunks: Sequence[int] | None = None,
    delay: float = 0.0,
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Stream ``fixture`` from loopback; raw events (with partial snapshots) and the final message."""
    reply: Reply = fixture_reply(fixture, chunks)
    reply.delay = delay
    async with LoopbackServer([reply]) as server:
        spec = dict(model)
        spec["baseUrl"] = server.url + base_path(fixture)
        events_stream = stream(
            cast(ModelInfo, spec), REPLAY_CONTEXT, StreamOptions(api_key="k", max_retries=0)
        )
        events: list[AssistantMessageEvent] = []
        snapshots: list[Any] = []
        async for event in events_stream:
            events.append(event)
            # The partial is one object mutated in place; snapshot it to check it evolves sanely.
            snapshots.append(copy.deepcopy(cast("dict[str, Any]", event).get("partial")))
        final = await events_stream.result()
    check_invariants(events, snapshots, final)
    return events, final


def normalized(events: list[AssistantMessageEvent], final: AssistantMessage) -> dict[str, Any]:
    return {"events": [normalize_event(e) for e in events], "message": normalize_message(final)}


def check_invariants(
    events: list[AssistantMessageEvent], snapshots: list[Any], final: AssistantMessage
) -> None:
    """The stream contract of issue 4, asserted on one run."""
    kinds = [e["type"] for e in events]
    terminal = [k for k in kinds if k in ("done", "error")]
    assert len(terminal) == 1 and kinds[-1] in ("done", "error"), kinds
    if kinds[0] != "start":
        assert kinds == ["error"], "only an error may come without start"
    open_blocks: dict[int, str] = {}
    closed: set[int] = set()
    for event, snapshot in zip(events[:-1], snapshots[:-1], strict=True):
        raw = cast("dict[str, Any]", event)
        kind = raw["type"]
        if kind == "start":
            continue
        index = raw["contentIndex"]
        assert 0 <= index < len(snapshot["content"]), (kind, index)
        family = kind.split("_")[0]
        if kind.endswith("_start"):
            assert index not in open_blocks and index not in closed, f"{kind} twice for {index}"
            open_blocks[index] = family
        else:
            assert open_blocks.get(index) == family, f"{kind} for block {index} not open"
            if kind.endswith("_end"):
                del open_blocks[index]
                closed.add(index)
    last = cast("dict[str, Any]", events[-1])
    message = last["message"] if last["type"] == "done" else last["error"]
    assert message is final
    if last["type"] == "done":
        assert not open_blocks, f"blocks left open at done: {open_blocks}"
    if len(events) > 1:
        # final == last partial + terminal fields
        previous = snapshots[-2]
        # Fields the closing event may set, and response metadata that arrives without an event
        # of its own (Anthropic's message_start/message_delta).
        terminal_fields = {"stopReason", "errorMessage", "errorStatus", "duration", "completedAt", "ttft"}
        terminal_fields |= {"responseId", "responseModel", "upstreamProvider", "upstreamModel"}
        assert all(cast("dict[str, Any]", e).get("partial", final) is final for e in events[:-1])
        for key in set(previous) | set(final):
            if key in terminal_fields or key in ("content", "usage"):
                continue
            assert previous.get(key) == final.get(key), key
        # Usage may be updated by the closing event (Anthropic's message_delta); content may not.
        assert previous["content"] == final["content"]
