"""Provider tests: small retry delays, no real network, no user keys leaking in."""

from __future__ import annotations

import pytest

from tether.ai.keys import ENV_VARS


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
