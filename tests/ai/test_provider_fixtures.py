"""Every recorded openai-completions and anthropic-messages stream, replayed from loopback,
matches the reference's result (README rule), also when the body arrives in random pieces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

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

from tether.ai import StreamOptions, stream
from tether.testing import replay as replay_cli
from tether.testing.loopback import LoopbackServer, Reply
from tether.testing.replay import REPLAY_CONTEXT, base_path
from tether.wire import ModelInfo

PATHS = fixture_paths()


def test_all_fixtures_are_present() -> None:
    assert len(fixture_paths(roots=[SHARED_STREAMS])) == 20
    assert len(fixture_paths(roots=[OWN_STREAMS])) >= 1


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
    assert set(printed) == {"events", "message"}
    assert compare(printed, expected, fixture_id(path)) == []
    # Exactly the normalized form: same keys per event and per message as the reference writes.
    assert [sorted(e) for e in printed["events"]] == [sorted(e) for e in expected["events"]]
    keys = set(printed["message"])
    if "responseModel" not in expected["message"]:
        keys.discard("responseModel")  # allowed alternative: the model the provider reported
    assert keys == set(expected["message"])


async def test_error_chunk_usage_is_the_references() -> None:
    """The error chunk ends the answer before its own usage is read, as in pi-ai."""
    path = next(p for p in PATHS if fixture_id(p) == "shared/openai-completions/openrouter-error-chunk")
    fixture, expected = load(path)
    _, final = await run_fixture(fixture, expected["model"])
    usage = final["usage"]
    assert (usage["input"], usage["output"], usage["totalTokens"]) == (0, 0, 0)
    assert final["errorMessage"] == "Token limit reached"


def test_replay_cli_without_model_derives_one(capsys: pytest.CaptureFixture[str]) -> None:
    path = next(p for p in PATHS if fixture_id(p) == "shared/openai-completions/openrouter-cached-usage")
    assert replay_cli.main([str(path)]) == 0
    message = json.loads(capsys.readouterr().out)["message"]
    assert (message["provider"], message["model"]) == ("openrouter", "google/gemini-2.0-flash-exp:free")
    assert message["usage"]["cost"]["total"] == 0  # derived models are free


def test_replay_cli_rejects_a_non_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert replay_cli.main([str(bad)]) == 2
    assert "not a fixture" in capsys.readouterr().err


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(PATHS) - 1), cuts=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=12))
async def test_random_byte_splits_give_the_same_result(index: int, cuts: list[int]) -> None:
    fixture, expected = load(PATHS[index])
    size = len(fixture["response"]["body"].encode())
    events, final = await run_fixture(fixture, expected["model"], [c % size for c in cuts], delay=0.0005)
    assert compare(normalized(events, final), expected, fixture_id(PATHS[index])) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(PATHS) - 1), fraction=st.floats(0, 1))
async def test_a_body_cut_anywhere_ends_in_one_terminal_event(index: int, fraction: float) -> None:
    fixture, expected = load(PATHS[index])
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
    if cut < len(body):
        assert final["stopReason"] == "error" and final.get("errorMessage")
