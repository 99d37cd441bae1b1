"""The SSE decoder against the standard's line rules and arbitrary chunking."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from reference_paths import FIXTURE_STREAMS
from tether.ai import sse
from tether.ai.sse import SSEDecoder, SSEEvent


def decode(chunks: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.flush()


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def test_fields_comments_and_multiline_data() -> None:
    body = b": keep-alive\nevent: ping\ndata: a\ndata:b\nid: 7\nretry: 10\n\ndata\n\n"
    # A bare "data" line is a field with an empty value: the standard dispatches that event.
    assert decode([body]) == [SSEEvent("ping", "a\nb", "7"), SSEEvent("message", "", "7")]


def test_all_three_line_endings_give_the_same_events() -> None:
    lf = b"event: x\ndata: 1\n\ndata: 2\n\n"
    expected = [SSEEvent("x", "1"), SSEEvent("message", "2")]
    assert decode([lf]) == expected
    assert decode([lf.replace(b"\n", b"\r\n")]) == expected
    assert decode([lf.replace(b"\n", b"\r")]) == expected


def test_crlf_split_between_chunks_is_one_break() -> None:
    assert decode([b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n"]) == [
        SSEEvent("message", "1"),
        SSEEvent("message", "2"),
    ]


def test_a_cut_after_a_line_break_dispatches_nothing_early() -> None:
    # An event ends at its blank line, whichever line endings the body uses and wherever the
    # chunks end: a body cut after one line's CRLF still holds a line break of that event.
    lf = b"event: x\ndata: a\ndata: b\n\ndata: 2\n\n"
    expected = [SSEEvent("x", "a\nb"), SSEEvent("message", "2")]
    for body in (lf, lf.replace(b"\n", b"\r\n"), lf.replace(b"\n", b"\r")):
        for cut in range(1, len(body)):
            assert decode([body[:cut], body[cut:]]) == expected, (body, cut)


def test_utf8_sequence_split_across_chunks() -> None:
    body = "data: héllo 👋\n\n".encode()
    cut = body.index("👋".encode()) + 2
    assert decode([body[:cut], body[cut:]]) == [SSEEvent("message", "héllo 👋")]


def test_event_without_final_blank_line_is_flushed() -> None:
    assert decode([b'data: {"a": 1}']) == [SSEEvent("message", '{"a": 1}')]


def test_event_name_resets_after_dispatch() -> None:
    assert [e.event for e in decode([b"event: error\ndata: x\n\ndata: y\n\n"])] == ["error", "message"]


def _fixture_bodies() -> list[bytes]:
    return [
        json.loads(p.read_text())["response"]["body"].encode()
        for p in sorted(FIXTURE_STREAMS.glob("*/*.json"))
        if not p.name.endswith(".expected.json")
    ]


BODIES = _fixture_bodies()


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, len(BODIES) - 1), cuts=st.lists(st.integers(0, 200_000), max_size=40))
def test_any_chunking_of_a_real_body_gives_the_same_events(index: int, cuts: list[int]) -> None:
    body = BODIES[index]
    whole = decode([body])
    assert whole, "every recorded body has events"
    assert decode(split(body, [c % (len(body) + 1) for c in cuts])) == whole


def reference(text: str) -> list[SSEEvent]:
    """The standard's line rules, one line at a time (an event still open at the end dispatched,
    as ``flush`` does)."""
    events: list[SSEEvent] = []
    data: list[str] = []
    name, last_id = "", None
    for line in text.split("\n"):
        if not line:
            if data:
                events.append(SSEEvent(name or "message", "\n".join(data), last_id))
            data, name = [], ""
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id":
            last_id = value
    if data:
        events.append(SSEEvent(name or "message", "\n".join(data), last_id))
    return events


LINES = ["data: x", "data:y", "data:  z", "data", "data: a\u00e9", "event: e", "id: 1", ": c", "", "", "retry: 5"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(LINES), max_size=30), end=st.sampled_from(["", "\n", "\n\n"]))
def test_events_of_one_data_line_and_all_others_follow_the_line_rules(lines: list[str], end: str) -> None:
    """Events of one ``data: `` line are taken whole between blank lines, any other goes through
    the line loop: whole, a line at a time and a byte at a time, the events are the standard's."""
    text = "\n".join(lines) + end
    body = text.encode()
    assert decode([body]) == reference(text)
    assert decode([line.encode() for line in re.findall(r"[^\n]*\n|[^\n]+$", text)]) == reference(text)
    assert decode([body[i : i + 1] for i in range(len(body))]) == reference(text)


def test_one_byte_at_a_time() -> None:
    body = BODIES[0]
    assert decode([body[i : i + 1] for i in range(len(body))]) == decode([body])


def test_a_line_in_many_pieces_is_one_event() -> None:
    """The pieces of an unfinished line are held apart and joined once when it ends (joining
    each read to the line so far cost the square of its length: 128 MB in 64 KiB reads, 107 s)."""
    decoder = SSEDecoder()
    piece = b"x" * 1000
    assert decoder.feed(b'data: "') == []
    for _ in range(2000):
        assert decoder.feed(piece) == []
    (event,) = decoder.feed(b'"\n\n')
    assert event.data == '"' + "x" * 2_000_000 + '"'
    assert decoder.flush() == []


def test_an_endless_line_or_event_is_refused_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """One line without a break, or ``data:`` lines without the blank line, were held in memory
    however long the server kept sending them."""
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 10_000)
    endless_line = SSEDecoder()
    endless_line.feed(b"data: ")
    with pytest.raises(sse.EventTooLarge, match="grew past"):
        for _ in range(100):
            endless_line.feed(b"y" * 999)
    endless_event = SSEDecoder()
    with pytest.raises(sse.EventTooLarge):
        for _ in range(100):
            endless_event.feed(b"data: " + b"z" * 300 + b"\n")
    unfinished_head = SSEDecoder()
    unfinished_head.feed(b"data: a\n")
    with pytest.raises(sse.EventTooLarge):
        for _ in range(100):
            unfinished_head.feed(b"w" * 999)


def test_a_long_stream_of_events_cut_anywhere_stays_under_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is on one event, not on the stream: reads that end mid-event, one after the
    other, never add up to it."""
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 10_000)
    body = b"".join(b"event: e\ndata: " + str(n).encode() * 30 + b"\n\n" for n in range(3000))
    events = decode(split(body, list(range(997, len(body), 997))))
    assert len(events) == 3000


def test_a_byte_order_mark_at_the_start_is_dropped() -> None:
    """Kept, it made the first line "\\ufeffdata: ...", no field at all: the first event was lost."""
    body = b'\xef\xbb\xbfdata: {"a":1}\n\ndata: 2\n\n'
    assert decode([body]) == [SSEEvent("message", '{"a":1}'), SSEEvent("message", "2")]
    assert decode([b"", b"\xef\xbb\xbfdata: 1\n\n"]) == [SSEEvent("message", "1")]
    # Only at the start: a later one is text.
    assert decode([b"data: 1\n\n", b"\xef\xbb\xbfdata: 2\n\n"]) == [SSEEvent("message", "1")]


def test_a_cr_with_more_after_it_in_its_chunk_leaves_the_next_chunks_line_feed() -> None:
    """Only a "\\r" ending its chunk may have its "\\n" in the next: one inside the chunk had the
    next chunk's line feed dropped, joining two lines (here event "b" was lost in a comment)."""
    assert decode([b"data: a\r\r: c", b"\ndata: b\n\n"]) == [
        SSEEvent("message", "a"),
        SSEEvent("message", "b"),
    ]


def test_a_byte_order_mark_in_pieces_is_dropped_too() -> None:
    for cut in (1, 2):
        body = b"\xef\xbb\xbfdata: hi\n\n"
        assert decode([body[:cut], body[cut:]]) == [SSEEvent("message", "hi")]
