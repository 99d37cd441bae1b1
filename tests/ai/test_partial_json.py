"""Streamed tool arguments: always an object, exact at the end, and a bounded number of parses."""

from __future__ import annotations

import json
from typing import Any

import jiter
import pytest
from hypothesis import given, settings, strategies as st

from tether.ai import partial_json
from tether.ai.partial_json import PartialJson, parse_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=10), json_values, max_size=5), cuts=st.lists(st.integers(0, 400))
)
def test_any_delta_split_ends_exact_and_is_always_an_object(value: dict[str, Any], cuts: list[int]) -> None:
    text = json.dumps(value)
    points = sorted({c % (len(text) + 1) for c in cuts})
    parsed = PartialJson()
    for start, end in zip([0, *points], [*points, len(text)], strict=True):
        assert isinstance(parsed.add(text[start:end]), dict)
    assert parsed.finish() == value


def test_trailing_strings_show_while_streaming() -> None:
    parsed = PartialJson()
    for char in '{"path": "a.py", "content": "print(1)':
        parsed.add(char)
    assert parsed.value == {"path": "a.py", "content": "print(1)"}


def test_invalid_json_keeps_the_best_prefix() -> None:
    assert parse_arguments('{"a": 1,, "b": 2}') == {}  # not a prefix of any valid JSON
    assert parse_arguments('{"a": 1, "b": [1, 2') == {"a": 1, "b": [1, 2]}
    assert parse_arguments("[1, 2]") == {}  # arguments are an object or nothing
    assert parse_arguments("") == {}


def test_parse_count_grows_logarithmically_not_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0, "bytes": 0}
    real = jiter.from_json

    def counting(data: bytes, **kwargs: Any) -> Any:
        calls["n"] += 1
        calls["bytes"] += len(data)
        return real(data, **kwargs)

    monkeypatch.setattr(partial_json.jiter, "from_json", counting)
    text = json.dumps({"content": "x" * 200_000})
    parsed = PartialJson()
    for char in text:
        parsed.add(char)
    parsed.finish()
    # Every delta below EAGER_LIMIT, then one parse per 1/GROWTH of growth: far fewer than deltas,
    # and total bytes parsed a constant multiple of the text (linear, not quadratic).
    assert calls["n"] < partial_json.EAGER_LIMIT + 200
    eager = partial_json.EAGER_LIMIT
    assert calls["bytes"] <= eager * eager / 2 + (partial_json.GROWTH + 2) * len(text)


def test_a_surrogate_pair_cut_between_deltas_is_its_character_again() -> None:
    """A server's JSON escapes may cut an emoji's UTF-16 pair between two deltas (``"\\ud83d"``,
    then ``"\\ude00"``): decoded one event at a time, each half is a lone surrogate, which UTF-8
    cannot encode, and the parse raised UnicodeEncodeError: the whole reply failed. Joined, the
    halves are the emoji; a half that stays alone is U+FFFD."""
    arguments = PartialJson()
    arguments.add('{"path": "a.md", "text": "smile \ud83d')
    arguments.add('\ude00 and \udc80"}')
    assert arguments.finish() == {"path": "a.md", "text": "smile \U0001f600 and \ufffd"}
    assert parse_arguments('{"q": "\ud83d"}') == {"q": "\ufffd"}


def test_an_escape_of_half_a_surrogate_pair_keeps_the_whole_argument() -> None:
    """``"\\udc80"`` is valid JSON (Python's ``json`` reads it) that jiter refuses: the complete
    arguments fell back to the last prefix parsed, so a ``write`` got its text cut where the
    escape began, silently (the reply ended ``toolUse``, no error)."""
    arguments = PartialJson()
    for delta in ['{"path": "a.md", "text": "abc ', "more ", "\\udc80 def", ' ghi"}']:
        arguments.add(delta)
    assert arguments.finish() == {"path": "a.md", "text": "abc more \udc80 def ghi"}
