"""Provider tests: no real network, no user keys leaking in.

Applies to the subfolders too (``providers/``, ``models/``, ``local/``). pytest puts this folder on
``sys.path`` when it loads this file (no ``__init__``: "prepend" import mode), so tests there import
the helpers ``streamcheck`` and ``faultkit`` by name.
"""

from __future__ import annotations

import pytest

from tether.ai.key_names import ENV_VARS


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
