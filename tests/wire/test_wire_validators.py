"""The pydantic-core schemas shipped in ``validators.json``: current, and used."""

from __future__ import annotations

import subprocess
import sys
from typing import cast

import pytest

from tether.wire import WireError
from tether.wire.codec import COMPILED_CODECS, COMPILED_FILE, Codec, compiled_json
from tether.wire.messages import AgentMessage, UserMessage


def test_committed_validators_are_current() -> None:
    assert COMPILED_FILE.read_text(encoding="utf-8") == compiled_json(), (
        "src/tether/wire/validators.json is stale: run `make schema` and commit it"
    )


def test_every_compiled_codec_has_a_distinct_name() -> None:
    names = [codec.compiled for codec in COMPILED_CODECS]
    assert None not in names and len(set(names)) == len(names)


@pytest.mark.subprocess
def test_decoding_a_message_does_not_import_pydantic() -> None:
    """The point of the file: a session stores its first message without pydantic's schema
    generation (pydantic-core alone validates)."""
    script = (
        "import sys\n"
        "from tether.wire import decode_message\n"
        "decode_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "print('pydantic' in sys.modules, 'pydantic_core' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_an_unknown_compiled_name_falls_back_to_generating_the_schema() -> None:
    codec: Codec[AgentMessage] = Codec(AgentMessage, "message", compiled="NOT_IN_THE_FILE")
    assert (
        cast(UserMessage, codec.decode({"role": "user", "content": "hi", "timestamp": 1}))["content"] == "hi"
    )
    with pytest.raises(WireError, match=r"message\.role: unknown message role 'robot'"):
        codec.decode({"role": "robot"})
