"""One llama-cpp-python server (SmolLM2-135M) for the whole session, and a user's ``models.json``
pointing the ``llama.cpp`` provider at it.

The server tests skip, saying what to install, when the server or the model is missing, except
under ``make test`` (``TETHER_REQUIRE_LOCAL=1``), where a missing install is a failure: CI must
not go green by skipping them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.ai.models import find_model
from tether.ai.providers.local import default_model_path
from tether.testing.llama_server import INSTALL_HINT, LlamaServer, llama_server, server_available
from tether.wire import ModelInfo


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    gguf = default_model_path()
    if not server_available() or gguf is None:
        if os.environ.get("TETHER_REQUIRE_LOCAL"):
            pytest.fail(f"TETHER_REQUIRE_LOCAL is set but the local server tests {INSTALL_HINT}")
        pytest.skip(INSTALL_HINT)
    with llama_server(gguf, tmp_path_factory.mktemp("llama-server") / "server.log") as running:
        yield running


@pytest.fixture
def model(server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelInfo:
    """The served model as a user defines it: the shipped ``llama.cpp`` provider moved to the
    server's port in ``models.json``, no key (``tests/ai/conftest.py`` clears the key variables)."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    config = tmp_path / "home" / "config"
    config.mkdir(parents=True)
    entry = {"id": server.model_id, "contextWindow": server.context_window, "maxTokens": 256}
    providers = {"llama.cpp": {"baseUrl": server.base_url, "models": [entry]}}
    (config / "models.json").write_text(json.dumps({"providers": providers}))
    return find_model(f"llama.cpp/{server.model_id}")
