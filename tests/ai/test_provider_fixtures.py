"""Every recorded openai-completions and anthropic-messages stream, replayed from loopback,
matches the reference's result (README rule), also when the body arrives in random pieces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamcheck import compare, fixture_paths, load, normalized, run_fixture

from tether.testing import replay as replay_cli

PATHS = fixture_paths()


def test_all_fixtures_are_present() -> None:
    assert len(PATHS) == 20


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_fixture_matches_reference(path: Path) -> None:
    fixture, expected = load(path)
    events, final = await run_fixture(fixture, expected["model"])
    assert compare(normalized(events, final), expected, path.stem) == []


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_replay_cli_prints_the_expected_form(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, expected = load(path)
    model_file = tmp_path / "model.json"
    model_file.write_text(json.dumps(expected["model"]))
    assert replay_cli.main([str(path), "--model", str(model_file)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"events", "message"}
    assert compare(printed, expected, path.stem) == []
    # Exactly the normalized form: same keys per event and per message as the reference writes.
    assert [sorted(e) for e in printed["events"]] == [sorted(e) for e in expected["events"]]
    keys = set(printed["message"])
    if "responseModel" not in expected["message"]:
        keys.discard("responseModel")  # allowed alternative: the model the provider reported
    assert keys == set(expected["message"])


def test_replay_cli_without_model_derives_one(capsys: pytest.CaptureFixture[str]) -> None:
    path = next(p for p in PATHS if p.stem == "openrouter-cached-usage")
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
    assert compare(normalized(events, final), expected, PATHS[index].stem) == []
