"""Every recorded stream of the four provider APIs (the reference recordings, ours, and the mutated
variants), replayed from loopback, matches the reference's result by the README rule, also when
the body arrives in random pieces. The README's allowed alternatives (``streamcheck.ALLOWED``)
are the only relaxations; the tests at the end pin which side of each we take."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from streamcheck import (
    APIS,
    MUTATED_STREAMS,
    OWN_STREAMS,
    compare,
    fixture_id,
    fixture_paths,
    key_problems,
    load,
    multibyte_cuts,
    normalized,
    run_fixture,
)

from narrowing import as_thinking, error_text
from reference_paths import FIXTURE_STREAMS
from tether.ai import StreamOptions, stream
from tether.testing import replay as replay_cli
from tether.testing.loopback import LoopbackServer, Reply
from tether.testing.replay import REPLAY_CONTEXT, base_path
from tether.wire import ModelInfo

PATHS = fixture_paths()
PATHS_BY_API = {api: fixture_paths([api]) for api in APIS}
# The random-split properties draw from one API's fixtures at a time, so every API gets its share.
each_api = pytest.mark.parametrize("api", APIS)
RANDOM = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def by_name(api: str, name: str) -> Path:
    return next(p for p in PATHS if fixture_id(p) == f"reference/{api}/{name}")


@each_api
def test_all_fixtures_are_present(api: str) -> None:
    assert len(fixture_paths([api], [FIXTURE_STREAMS])) == 10
    assert len(fixture_paths([api], [OWN_STREAMS])) >= 1
    assert len(fixture_paths([api], [MUTATED_STREAMS])) >= 1


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
    # Exactly the normalized form: the keys the reference writes, per event and per message.
    assert key_problems(printed, expected, fixture_id(path)) == []


def test_replay_cli_without_model_derives_one(capsys: pytest.CaptureFixture[str]) -> None:
    path = by_name("openai-completions", "openrouter-cached-usage")
    assert replay_cli.main([str(path)]) == 0
    message = json.loads(capsys.readouterr().out)["message"]
    assert (message["provider"], message["model"]) == ("openrouter", "google/gemini-2.0-flash-exp:free")
    assert message["usage"]["cost"]["total"] == 0  # derived models are free


def test_replay_cli_rejects_a_non_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert replay_cli.main([str(bad)]) == 2
    assert "not a fixture" in capsys.readouterr().err


@each_api
@RANDOM
@given(data=st.data(), cuts=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=12))
async def test_random_byte_splits_give_the_same_result(
    api: str, data: st.DataObject, cuts: list[int]
) -> None:
    path = data.draw(st.sampled_from(PATHS_BY_API[api]), label="fixture")
    fixture, expected = load(path)
    size = len(fixture["response"]["body"].encode())
    events, final = await run_fixture(fixture, expected["model"], [c % size for c in cuts], delay=0.0005)
    assert compare(normalized(events, final), expected, fixture_id(path)) == []


@each_api
@RANDOM
@given(data=st.data(), fraction=st.floats(0, 1))
async def test_a_body_cut_anywhere_ends_in_one_terminal_event(
    api: str, data: st.DataObject, fraction: float
) -> None:
    path = data.draw(st.sampled_from(PATHS_BY_API[api]), label="fixture")
    fixture, expected = load(path)
    body = fixture["response"]["body"].encode()
    cut = int(len(body) * fraction)
    reply = Reply(body, truncate_after=cut, chunks=[cut // 2], delay=0.001)
    async with LoopbackServer([reply]) as server:
        spec = dict(expected["model"], baseUrl=server.url + base_path(fixture))
        events_stream = stream(
            cast(ModelInfo, spec), REPLAY_CONTEXT, StreamOptions(api_key="k", max_retries=0)
        )
        events = [event async for event in events_stream]
        final = await events_stream.result()
    assert [e["type"] for e in events].count("done") + [e["type"] for e in events].count("error") == 1
    if cut < end_of_last_event(body):  # an event the answer needs did not arrive whole
        assert final["stopReason"] == "error" and final.get("errorMessage")


def end_of_last_event(body: bytes) -> int:
    """Where the body's last event with data is dispatched: after the first byte of the blank
    line that ends it (a CR or an LF alone ends a line). Only comments (``: keep-alive``) and line
    breaks follow it; a cut among them loses no event."""
    position = body.rfind(b"\ndata:") + 1  # 0: the body's first line, or no data line at all
    while position < len(body):
        breaks = [i for i in (body.find(b"\r", position), body.find(b"\n", position)) if i >= 0]
        end = min(breaks, default=len(body))
        if end == position:  # the blank line
            return position + 1
        position = end + (2 if body[end : end + 2] == b"\r\n" else 1)
    return len(body)


# -- the alternatives we chose (README table) and other reference details, pinned ----------------


async def test_error_chunk_usage_is_the_references() -> None:
    """The error chunk ends the answer before its own usage is read, as in pi-ai."""
    fixture, expected = load(by_name("openai-completions", "openrouter-error-chunk"))
    _, final = await run_fixture(fixture, expected["model"])
    usage = final["usage"]
    assert (usage["input"], usage["output"], usage["totalTokens"]) == (0, 0, 0)
    assert error_text(final) == "Token limit reached"


async def test_reasoning_summary_deltas_are_the_references() -> None:
    """Every finished summary part streams ``\\n\\n`` (as pi-ai); the final thinking joins the parts."""
    fixture, expected = load(by_name("openai-responses", "openai-reasoning-summary"))
    events, final = await run_fixture(fixture, expected["model"])
    deltas = "".join(e["delta"] for e in events if e["type"] == "thinking_delta")
    thinking = as_thinking(final["content"][0])
    assert "thinkingSignature" in thinking, thinking
    summary = json.loads(thinking["thinkingSignature"])["summary"]
    assert len(summary) == 4
    assert thinking["thinking"] == "\n\n".join(part["text"] for part in summary)
    assert deltas == thinking["thinking"] + "\n\n"


async def test_late_reasoning_item_done_still_closes_and_signs_its_block() -> None:
    fixture, expected = load(by_name("openai-responses", "openrouter-reasoning-text-done-marker"))
    events, final = await run_fixture(fixture, expected["model"])
    kinds = [(e["type"], e.get("contentIndex")) for e in events]
    assert kinds.index(("thinking_end", 0)) > kinds.index(("text_end", 1))
    thinking = as_thinking(final["content"][0])
    assert "thinkingSignature" in thinking, thinking
    item = json.loads(thinking["thinkingSignature"])
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
    assert reasoning["type"] == "thinking" and "thinkingSignature" in reasoning, reasoning
    assert text["type"] == "text" and "textSignature" in text, text
    assert call["type"] == "toolCall", call
    assert json.loads(reasoning["thinkingSignature"])["encrypted_content"].startswith("gAAAA")
    assert json.loads(text["textSignature"]) == {
        "v": 1,
        "id": "msg_0fabc13af1ee0049006a691dfebdc881a1ae18d027c313d8ce",
        "phase": "commentary",
    }
    assert call["id"].startswith("call_LabG58Uhrq9kZvR52BYKjToD|fc_")
    assert final["usage"]["totalTokens"] == 132
