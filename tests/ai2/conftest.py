"""Provider tests of issue 7: share the fixture comparison helpers of ``tests/ai`` and keep user
keys out of the environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether.ai.keys import ENV_VARS

# `streamcheck` (the README's comparison rule and the stream invariants) lives with the core tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
