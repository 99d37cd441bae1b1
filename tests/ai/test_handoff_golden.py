"""Handoff over real answers: each recorded stream's answer, replayed to every other API.

``golden/`` holds the request bodies (made by ``handoff_golden.py``, reviewed); these tests check
that we still produce them byte for byte, and check the handoff rules on every body directly, so a
regenerated golden file that broke a rule would still fail here."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from handoff_golden import APIS, build, dump, golden_path, recorded_answer, source_model, targets_for
from streamcheck import fixture_paths

from narrowing import is_json_array, is_json_object
from reference_paths import FIXTURE_STREAMS
from tether.ai.handoff import is_same_model

PATHS = fixture_paths(APIS, [FIXTURE_STREAMS])  # the golden files cover the reference recordings
ID_RULES = {
    "anthropic-messages": re.compile(r"[A-Za-z0-9_-]{1,64}"),
    "openai-responses": re.compile(r"[A-Za-z0-9_-]{1,64}"),  # the call_id part sent as call_id
    "openai-completions": re.compile(r"[A-Za-z0-9_-]{1,40}"),
    "mistral": re.compile(r"[A-Za-z0-9]{9}"),
}


@pytest.fixture(scope="module")
def built() -> dict[Path, dict[str, Any]]:
    import asyncio

    async def all_of() -> dict[Path, dict[str, Any]]:
        return {path: await build(path) for path in PATHS}

    return asyncio.run(all_of())


def test_one_golden_file_per_fixture() -> None:
    assert len(PATHS) == 40
    assert all(golden_path(p).exists() for p in PATHS)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_request_bodies_match_the_golden_file(path: Path, built: dict[Path, dict[str, Any]]) -> None:
    assert dump(built[path]) == golden_path(path).read_text(encoding="utf-8")


# -- the rules, on every body ---------------------------------------------------------------------


def opaque_payloads(block: Mapping[str, object]) -> list[str]:
    """The provider-issued opaque strings a block carries (what must not leak to another model)."""
    out: list[str] = []
    for key in ("thinkingSignature", "textSignature", "thoughtSignature"):
        value = block.get(key)
        if not isinstance(value, str) or len(value) < 20:
            continue  # chat-completions "signatures" name a field (reasoning_content), not data
        try:
            parsed = json.loads(value)
        except ValueError:
            out.append(value)
            continue
        if is_json_object(parsed) and parsed.get("encrypted_content"):
            out.append(parsed["encrypted_content"])
        elif (is_json_object(parsed) and parsed.get("v") == 1) or (
            is_json_object(parsed) and parsed.get("id")
        ):
            out.append(parsed["id"])
    return out


def calls_and_results(api: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, id) in request order: kind ``call`` or ``result``; Gemini (no ids) uses names."""
    seq: list[tuple[str, str]] = []
    if api == "anthropic-messages":
        for message in body["messages"]:
            for block in message["content"] if is_json_array(message["content"]) else ():
                if block["type"] == "tool_use":
                    seq.append(("call", block["id"]))
                elif block["type"] == "tool_result":
                    seq.append(("result", block["tool_use_id"]))
    elif api == "openai-responses":
        for item in body["input"]:
            if item.get("type") == "function_call":
                seq.append(("call", item["call_id"]))
            elif item.get("type") == "function_call_output":
                seq.append(("result", item["call_id"]))
    elif api == "openai-completions":
        for message in body["messages"]:
            seq += [("call", call["id"]) for call in message.get("tool_calls") or ()]
            if message["role"] == "tool":
                seq.append(("result", message["tool_call_id"]))
    else:
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    seq.append(("call", part["functionCall"]["name"]))
                elif "functionResponse" in part:
                    seq.append(("result", part["functionResponse"]["name"]))
    return seq


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_handoff_rules_hold_on_every_body(path: Path, built: dict[Path, dict[str, Any]]) -> None:
    answer, expected_model = await recorded_answer(path)
    source = source_model(expected_model, path.parent.name)
    failed = answer["stopReason"] in ("error", "aborted")
    for name, target in targets_for(source).items():
        body = built[path]["requests"][name]["body"]
        text = json.dumps(body, ensure_ascii=False)
        same = is_same_model(answer, target)
        for block in answer["content"]:
            for payload in opaque_payloads(block):
                if failed or not same:
                    assert payload not in text, f"{name}: a signature of another model leaked"
                else:
                    assert payload in text, f"{name}: the model's own signature was not replayed"
        thinking = [
            b["thinking"]
            for b in answer["content"]
            if b["type"] == "thinking" and not b.get("redacted") and b["thinking"].strip()
        ]
        if not same:
            texts = [b["text"] for b in answer["content"] if b["type"] == "text"]
            for thought in thinking:
                # Another model's thinking is not sent (pi 1.6: it would read as visible reply).
                if not any(thought in t for t in texts):
                    assert json.dumps(thought, ensure_ascii=False)[1:-1] not in text, name
        if failed:
            assert "result of" not in text, "a failed turn's tool calls were replayed"
        seq = calls_and_results(target["api"], body)
        calls = [i for kind, i in seq if kind == "call"]
        results = [i for kind, i in seq if kind == "result"]
        assert sorted(calls) == sorted(results), f"{name}: every call answered exactly once"
        for index, (kind, call_id) in enumerate(seq):
            if kind == "result":
                assert ("call", call_id) in seq[:index], f"{name}: result before its call"
        rule = ID_RULES.get("mistral" if target["provider"] == "mistral" else target["api"])
        if rule is not None and not same:
            assert all(rule.fullmatch(i) for i in calls), f"{name}: ids the API rejects: {calls}"
