"""The pydantic-core schemas shipped in ``validators.json``: current, and used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether.wire import WireError
from tether.wire.codec import COMPILED_CODECS, COMPILED_FILE, Codec, compiled_json
from tether.wire.messages import AgentMessage


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
    generation (pydantic-core's extension alone validates, without the package's ``core_schema``)."""
    script = (
        "import sys\n"
        "from tether.wire import decode_message\n"
        "decode_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "print(*(name in sys.modules for name in ('pydantic', 'pydantic_core', 'pydantic_core._pydantic_core')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "True"]


def test_pydantic_imported_after_a_decode_shares_the_loaded_extension() -> None:
    """The extension loaded on its own is the one ``import pydantic_core`` then wraps (a second
    load of a PyO3 extension fails), and pydantic works on top of it."""
    script = (
        "from tether.wire import decode_message, dumps\n"
        "from tether.wire.codec import _core\n"
        "decode_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "import pydantic_core, pydantic\n"
        "print(pydantic_core.SchemaValidator is _core().SchemaValidator, pydantic.TypeAdapter(int).validate_python('3'))\n"
        "print(dumps({'a': [1, 'é']}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["True 3", '{"a":[1,"é"]}']


def test_an_unknown_compiled_name_falls_back_to_generating_the_schema() -> None:
    codec: Codec[AgentMessage] = Codec(AgentMessage, "message", compiled="NOT_IN_THE_FILE")
    assert codec.decode({"role": "user", "content": "hi", "timestamp": 1})["content"] == "hi"
    with pytest.raises(WireError, match=r"message\.role: unknown message role 'robot'"):
        codec.decode({"role": "robot"})
