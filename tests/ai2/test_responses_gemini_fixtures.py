"""Every recorded openai-responses and google-generative-ai stream, replayed from a loopback
server, matches the reference's result by the README rule, also when the body arrives in random
pieces. The README's allowed alternatives (``streamcheck.ALLOWED``) are the only relaxations; a
test below pins which side of each we take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamcheck import (
    OWN_STREAMS,
    SHARED_STREAMS,
    compare,
    fixture_id,
    fixture_paths,
    load,
    multibyte_cuts,
    normalized,
    run_fixture,
)

from tether.testing import replay as replay_cli

APIS = ("openai-responses", "google-generative-ai")
PATHS = fixture_paths(APIS)


def by_name(api: str, name: str) -> Path:
    return next(p for p in PATHS if fixture_id(p) == f"shared/{api}/{name}")


def test_all_fixtures_are_present() -> None:
    assert len(fixture_paths(APIS, [SHARED_STREAMS])) == 20
    assert len(fixture_paths(APIS, [OWN_STREAMS])) >= 1


@pytest.mark.parametrize("path", PATHS, ids=fixture_id)
async def test_fixture_matches_reference(path: Path) -> None:
    fixture, expected = load(path)
    events, final = await run_fixture(fixture, expected["model"])
    assert compare(normalized(events, final), expected, fixture_id(path)) == []


NON_ASCII = [p for p in PATHS if not load(p)[0]["response"]["body"].isascii()]


@pytest.mark.parametrize("path", NON_ASCII, ids=fixture_id)
async def test_multibyte_characters_split_across_reads(path: Path) -> None:
    """Every 2-, 3- and 4-byte character cut between reads still decodes to the same result."""
    fixture, expected = load(path)
    cuts = multibyte_cuts(fixture["response"]["body"])
    events, final = await run_fixture(fixture, expected["model"], cuts, delay=0.0005)
    assert compare(normalized(events, final), expected, fixture_id(path)) == []


@pytest.mark.parametrize("path", PATHS, ids=fixture_id)
def test_replay_cli_prints_the_expected_form(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, expected = load(path)
    model_file = tmp_path / "model.json"
    model_file.write_text(json.dumps(expected["model"]))
    assert replay_cli.main([str(path), "--model", str(model_file)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert compare(printed, expected, fixture_id(path)) == []
    # Exactly the normalized form: each event type has the keys the reference writes for it.
    want_keys = {e["type"]: sorted(e) for e in expected["events"]}
    assert all(sorted(e) == want_keys.get(e["type"], sorted(e)) for e in printed["events"])
    keys = set(printed["message"])
    if "responseModel" not in expected["message"]:
        keys.discard("responseModel")  # allowed alternative: the model the provider reported
    assert keys == set(expected["message"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(PATHS) - 1), cuts=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=12))
async def test_random_byte_splits_give_the_same_result(index: int, cuts: list[int]) -> None:
    fixture, expected = load(PATHS[index])
    size = len(fixture["response"]["body"].encode())
    events, final = await run_fixture(fixture, expected["model"], [c % size for c in cuts], delay=0.0005)
    assert compare(normalized(events, final), expected, fixture_id(PATHS[index])) == []


# -- the corrected alternatives we chose (README table), pinned --------------------------------


async def test_reasoning_summary_deltas_are_the_references() -> None:
    """Every finished summary part streams ``\\n\\n`` (as pi-ai); the final thinking joins the parts."""
    fixture, expected = load(by_name("openai-responses", "openai-reasoning-summary"))
    events, final = await run_fixture(fixture, expected["model"])
    deltas = "".join(e["delta"] for e in events if e["type"] == "thinking_delta")  # type: ignore[typeddict-item]
    summary = json.loads(final["content"][0]["thinkingSignature"])["summary"]
    assert len(summary) == 4
    assert final["content"][0]["thinking"] == "\n\n".join(part["text"] for part in summary)
    assert deltas == final["content"][0]["thinking"] + "\n\n"


async def test_late_reasoning_item_done_still_closes_and_signs_its_block() -> None:
    fixture, expected = load(by_name("openai-responses", "openrouter-reasoning-text-done-marker"))
    events, final = await run_fixture(fixture, expected["model"])
    kinds = [(e["type"], e.get("contentIndex")) for e in events]
    assert kinds.index(("thinking_end", 0)) > kinds.index(("text_end", 1))
    item = json.loads(final["content"][0]["thinkingSignature"])
    assert (item["type"], item["id"]) == ("reasoning", "rs_tmp_2kbe7x16sax")


async def test_gemini_tool_use_prompt_tokens_stay_out_of_input_like_the_reference() -> None:
    fixture, expected = load(by_name("google-generative-ai", "code-execution-parts"))
    _, final = await run_fixture(fixture, expected["model"])
    assert final["usage"]["input"] == 147  # toolUsePromptTokenCount (360) is only in the total
    assert final["usage"]["totalTokens"] == expected["message"]["usage"]["totalTokens"]


async def test_responses_signatures_replay_the_items() -> None:
    fixture, expected = load(by_name("openai-responses", "openai-reasoning-text-and-function-call"))
    _, final = await run_fixture(fixture, expected["model"])
    reasoning, text, call = final["content"]
    assert json.loads(reasoning["thinkingSignature"])["encrypted_content"].startswith("gAAAA")
    assert json.loads(text["textSignature"]) == {
        "v": 1,
        "id": "msg_0fabc13af1ee0049006a691dfebdc881a1ae18d027c313d8ce",
        "phase": "commentary",
    }
    assert call["id"].startswith("call_LabG58Uhrq9kZvR52BYKjToD|fc_")
    assert final["usage"]["totalTokens"] == 132
