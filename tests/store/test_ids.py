from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tether.store import ids
from tether.store.ids import IdGenerator, decode, encode, timestamp_ms


def test_ids_sort_in_creation_order_within_one_millisecond() -> None:
    gen = IdGenerator(clock_ns=lambda: 1_700_000_000_000 * 1_000_000)
    ids = [gen.new() for _ in range(1000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 1000
    assert {timestamp_ms(i) for i in ids} == {1_700_000_000_000}


def test_clock_going_backwards_never_goes_backwards() -> None:
    times = iter([5_000, 4_000, 3_000, 6_000])
    gen = IdGenerator(clock_ns=lambda: next(times) * 1_000_000)
    ids = [gen.new() for _ in range(4)]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert timestamp_ms(ids[-1]) == 6_000


def test_floor_from_a_faster_clock_is_respected() -> None:
    other = IdGenerator(clock_ns=lambda: 9_000_000 * 1_000_000).new()
    mine = IdGenerator(clock_ns=lambda: 1_000 * 1_000_000).new(floor=other)
    assert mine > other


@settings(max_examples=60)
@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_encode_decode_round_trip(value: int) -> None:
    text = encode(value)
    assert len(text) == 26
    assert decode(text) == value


@pytest.mark.parametrize("bad", ["", "short", "I" * 26, "8" + "Z" * 25])
def test_decode_rejects_non_ids(bad: str) -> None:
    with pytest.raises(ValueError, match="not an id"):
        decode(bad)


def test_encode_spells_ulid_text() -> None:
    """The top character holds the value's top 3 bits; each next one 5 bits (ULID's layout)."""
    assert encode(0) == "0" * 26
    assert encode((1 << 128) - 1) == "7" + "Z" * 25
    assert encode(1 << 125) == "1" + "0" * 25
    assert encode(31 | (10 << 5)) == "0" * 24 + "AZ"


@pytest.mark.parametrize("start", [0, 1020, (1 << 20) - 3, (1 << 79) - 3])
def test_ids_of_one_millisecond_are_the_encoded_count_across_every_carry(
    start: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next id of a millisecond re-spells only its last two characters when no carry leaves
    them: each id is still exactly ``encode`` of its value, carries into the earlier characters
    included, and a floor above the last id (another process's) still counts from the floor."""
    monkeypatch.setattr(ids, "_random_start", lambda: start)
    ms = 1_700_000_000_000
    gen = IdGenerator(clock_ns=lambda: ms * 1_000_000)
    base = ms << 80 | start
    assert [gen.new() for _ in range(6)] == [encode(base + i) for i in range(6)]
    floor = encode(base + 2000)
    assert gen.new(floor=floor) == encode(base + 2001)
    assert gen.new() == encode(base + 2002)
