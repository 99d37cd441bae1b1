"""The stream contract for a steps source (``of_steps``) and the consumer's ``forward`` path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Generator
from typing import Any

import pytest

from tether.ai.abort import AbortController, AbortSignal
from tether.ai.event_stream import WAIT, AssistantMessageEventStream, error_event, new_assistant_message
from tether.testing.scripted import SCRIPTED_MODEL
from tether.wire import AssistantMessage, AssistantMessageEvent, AssistantStreamingEvent, TextContent

Step = AssistantMessageEvent | None


class Source:
    """A steps source that says how far it got and whether its ``finally`` ran. ``building``:
    one that builds its message and returns instead of yielding a terminal event (``of_steps``'s
    ``message``, the scripted model's way)."""

    def __init__(
        self, *, fail: bool = False, terminal: bool = True, after: bool = False, building: bool = False
    ) -> None:
        self.fail, self.terminal, self.after, self.building = fail, terminal, after, building
        self.finished = False
        self.yielded = 0
        self.message = new_assistant_message(SCRIPTED_MODEL)

    def stream(self, signal: AbortSignal | None = None) -> AssistantMessageEventStream:
        message = self.message if self.building else None
        return AssistantMessageEventStream.of_steps(SCRIPTED_MODEL, self.steps(), signal, message=message)

    def steps(self) -> Generator[Step]:
        message = self.message
        try:
            yield WAIT
            yield {"type": "start", "partial": message}
            text: TextContent = {"type": "text", "text": ""}
            message["content"].append(text)
            yield {"type": "text_start", "contentIndex": 0, "partial": message}
            for chunk in ("a", "b", "c"):
                yield WAIT
                self.yielded += 1
                if self.fail and chunk == "b":
                    raise ValueError("boom")
                text["text"] += chunk
                yield {"type": "text_delta", "contentIndex": 0, "delta": chunk, "partial": message}
            yield WAIT
            if self.building:
                return  # the message is final as it is: ``stop``
            if self.terminal:
                yield {"type": "done", "reason": "stop", "message": message}
            if self.after:
                yield {"type": "text_delta", "contentIndex": 0, "delta": "late", "partial": message}
        finally:
            self.finished = True


async def read_with_forward(stream: AssistantMessageEventStream) -> tuple[list[str], AssistantMessage]:
    seen: list[str] = []

    def handle(event: AssistantStreamingEvent, partial: AssistantMessage) -> None:
        assert partial is event["partial"]  # read by the stream once, handed over with the event
        seen.append(event["type"])

    return seen, await stream.forward(handle)


async def read_with_async_for(stream: AssistantMessageEventStream) -> tuple[list[str], AssistantMessage]:
    seen = [event["type"] async for event in stream]
    return seen[:-1], await stream.result()


@pytest.mark.parametrize("building", [False, True])
@pytest.mark.parametrize("read", [read_with_forward, read_with_async_for])
async def test_a_steps_source_is_read_to_its_end(read: Any, building: bool) -> None:
    source = Source(after=True, building=building)
    seen, final = await read(source.stream())
    assert seen == ["start", "text_start", "text_delta", "text_delta", "text_delta"]
    assert final["content"] == [{"type": "text", "text": "abc"}]
    assert final["stopReason"] == "stop"
    assert source.finished  # nothing after the terminal event was served, and its finally ran


@pytest.mark.parametrize("building", [False, True])
@pytest.mark.parametrize("read", [read_with_forward, read_with_async_for])
async def test_a_steps_source_that_raises_ends_with_an_error_message(read: Any, building: bool) -> None:
    source = Source(fail=True, building=building)
    seen, final = await read(source.stream())
    assert seen == ["start", "text_start", "text_delta"]
    assert (final["stopReason"], final.get("errorMessage")) == ("error", "ValueError: boom")
    assert final["content"] == [{"type": "text", "text": "a"}]  # the partial content so far


@pytest.mark.parametrize("read", [read_with_forward, read_with_async_for])
async def test_a_steps_source_without_a_terminal_event_ends_with_an_error(read: Any) -> None:
    seen, final = await read(
        AssistantMessageEventStream.of_steps(SCRIPTED_MODEL, Source(terminal=False).steps())
    )
    assert len(seen) == 5
    assert (final["stopReason"], final.get("errorMessage")) == ("error", "Stream ended without a final event")


@pytest.mark.parametrize("building", [False, True])
async def test_an_abort_while_forward_waits_ends_the_stream_as_aborted(building: bool) -> None:
    controller = AbortController()
    source = Source(building=building)
    stream = source.stream(controller.signal)

    def handle(event: AssistantStreamingEvent, partial: AssistantMessage) -> None:
        if event["type"] == "text_delta":  # the source waits next: the abort must cut in there
            asyncio.get_running_loop().call_soon(controller.abort)

    final = await stream.forward(handle)
    assert (final["stopReason"], final.get("errorMessage")) == ("aborted", "Request was aborted")
    assert source.yielded == 1 and source.finished  # interrupted at its wait, and closed


@pytest.mark.parametrize("building", [False, True])
async def test_what_the_handler_raises_propagates_and_aclose_ends_as_aborted(building: bool) -> None:
    source = Source(building=building)
    stream = source.stream()

    async def fail(event: AssistantStreamingEvent, partial: AssistantMessage) -> None:
        if event["type"] == "text_start":
            raise LookupError("listener")

    with pytest.raises(LookupError):
        await stream.forward(fail)
    await stream.aclose()
    assert source.finished
    assert (await stream.result())["stopReason"] == "aborted"


@pytest.mark.parametrize("building", [False, True])
async def test_a_handler_that_closes_the_stream_is_handed_nothing_more(building: bool) -> None:
    """``aclose`` from inside ``handle`` closes the source, which ends the reading: the stream
    checks for it nowhere else."""
    source = Source(building=building)
    stream = source.stream()
    seen: list[str] = []

    async def close_at_text_start(event: AssistantStreamingEvent, partial: AssistantMessage) -> None:
        seen.append(event["type"])
        if event["type"] == "text_start":
            await stream.aclose()

    final = await stream.forward(close_at_text_start)
    assert seen == ["start", "text_start"]
    assert source.finished and source.yielded == 0
    assert final["stopReason"] == "aborted"


@pytest.mark.parametrize("building", [False, True])
async def test_cancelling_the_reader_closes_the_source_and_reraises(building: bool) -> None:
    source = Source(building=building)
    stream = source.stream()
    task = asyncio.ensure_future(stream.forward(lambda event, partial: None))
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.finished
    assert (await stream.result())["stopReason"] == "aborted"


async def test_forward_reads_an_asynchronous_source_too() -> None:
    async def events() -> AsyncIterator[AssistantMessageEvent | list[AssistantMessageEvent]]:
        message = new_assistant_message(SCRIPTED_MODEL)
        yield {"type": "start", "partial": message}
        yield [{"type": "text_start", "contentIndex": 0, "partial": message}]
        yield {"type": "done", "reason": "stop", "message": message}

    seen, final = await read_with_forward(AssistantMessageEventStream(SCRIPTED_MODEL, events()))
    assert seen == ["start", "text_start"]
    assert final["stopReason"] == "stop"


@pytest.mark.parametrize("read", [read_with_forward, read_with_async_for])
async def test_an_asynchronous_source_that_fails_or_hangs_ends_with_an_error_message(read: Any) -> None:
    """Both readers await the source in a ``try`` of their own and share what its failure makes
    of the stream: a provider's exception is ``error`` with the content so far, an abort of a
    source stuck in a wait is ``aborted``."""
    controller = AbortController()

    async def events(fail: bool) -> AsyncIterator[AssistantMessageEvent | list[AssistantMessageEvent]]:
        message = new_assistant_message(SCRIPTED_MODEL)
        message["content"].append({"type": "text", "text": "so far"})
        yield [
            {"type": "start", "partial": message},
            {"type": "text_start", "contentIndex": 0, "partial": message},
        ]
        if fail:
            raise ValueError("boom")
        asyncio.get_running_loop().call_soon(controller.abort)
        await asyncio.Event().wait()
        yield {"type": "done", "reason": "stop", "message": message}

    seen, final = await read(AssistantMessageEventStream(SCRIPTED_MODEL, events(True)))
    assert seen == ["start", "text_start"]
    assert (final["stopReason"], final.get("errorMessage")) == ("error", "ValueError: boom")
    assert final["content"] == [{"type": "text", "text": "so far"}]
    stream = AssistantMessageEventStream(SCRIPTED_MODEL, events(False), controller.signal)
    seen, final = await asyncio.wait_for(read(stream), 5)
    assert seen == ["start", "text_start"]
    assert (final["stopReason"], final["content"]) == ("aborted", [{"type": "text", "text": "so far"}])


async def test_an_event_without_its_fields_ends_the_stream_with_an_error() -> None:
    """A provider bug, not the consumer's: ``forward`` raises only what the consumer raised."""
    message = new_assistant_message(SCRIPTED_MODEL)
    broken: Any = {"type": "text_start", "contentIndex": 0}  # no partial

    def steps() -> Generator[Step]:
        yield {"type": "start", "partial": message}
        yield broken

    async def events() -> AsyncIterator[AssistantMessageEvent | list[AssistantMessageEvent]]:
        yield {"type": "start", "partial": message}
        yield broken

    for stream in (
        AssistantMessageEventStream.of_steps(SCRIPTED_MODEL, steps()),
        AssistantMessageEventStream(SCRIPTED_MODEL, events()),
    ):
        seen, final = await read_with_forward(stream)
        assert seen == ["start"]
        assert (final["stopReason"], final.get("errorMessage")) == ("error", "KeyError: 'partial'")


class Later:
    """An awaitable that is neither a coroutine nor a future: it suspends once, then ends."""

    def __init__(self, log: list[str], text: str) -> None:
        self.log, self.text = log, text

    def __await__(self) -> Generator[None]:
        yield None
        self.log.append(self.text)


@pytest.mark.parametrize("building", [False, True])
@pytest.mark.parametrize("kind", ["coroutine", "future", "awaitable"])
async def test_what_the_handler_returns_is_awaited_before_the_next_event(kind: str, building: bool) -> None:
    """``pump`` (the loop's path) and ``forward`` await the handler's answer whatever it is: the
    next event is served only after it ended, even when it suspends the reader."""
    log: list[str] = []

    async def later(text: str) -> None:
        await asyncio.sleep(0)
        log.append(text)

    def handle(event: AssistantStreamingEvent, partial: AssistantMessage) -> Awaitable[object]:
        log.append(event["type"])
        done = f"{event['type']} handled"
        if kind == "coroutine":
            return later(done)
        if kind == "future":
            future = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(lambda: (log.append(done), future.set_result(None)))
            return future
        return Later(log, done)

    for read in ("pump", "forward"):
        log.clear()
        stream = Source(building=building).stream()
        final = await (stream.pump(handle) if read == "pump" else stream.forward(handle))
        assert final["stopReason"] == "stop"
        kinds = ["start", "text_start", "text_delta", "text_delta", "text_delta"]
        assert log == [entry for kind_ in kinds for entry in (kind_, f"{kind_} handled")], read


class FailsToAwait:
    """An awaitable that is neither a coroutine nor a future, and fails with a ``TypeError``."""

    def __init__(self) -> None:
        self.awaited = 0

    def __await__(self) -> Generator[None]:
        self.awaited += 1
        raise TypeError("listener")
        yield  # a generator all the same


@pytest.mark.parametrize("building", [False, True])
@pytest.mark.parametrize("kind", ["coroutine", "future", "awaitable"])
async def test_a_type_error_of_the_handlers_awaitable_propagates_unchanged(kind: str, building: bool) -> None:
    """The reader of a source that builds its message hands ``yield from`` whatever the handler
    returns, and awaits by ``__await__`` only what ``yield from`` cannot take: a ``TypeError``
    raised by the awaitable itself is the consumer's, and nothing is awaited twice."""
    awaitable = FailsToAwait()

    async def fails() -> None:
        raise TypeError("listener")

    def handle(event: AssistantStreamingEvent, partial: AssistantMessage) -> Awaitable[object]:
        if kind == "coroutine":
            return fails()
        if kind == "future":
            future = asyncio.get_running_loop().create_future()
            future.set_exception(TypeError("listener"))
            return future
        return awaitable

    source = Source(building=building)
    stream = source.stream()
    with pytest.raises(TypeError, match=r"^listener$"):
        await stream.forward(handle)
    assert source.yielded == 0 and awaitable.awaited == (1 if kind == "awaitable" else 0)
    await stream.aclose()
    assert (await stream.result())["stopReason"] == "aborted"


@pytest.mark.parametrize("failed", [False, True])
async def test_a_source_that_builds_its_message_ends_with_the_event_its_message_says(failed: bool) -> None:
    """Its terminal event is made from the message when it returns: ``error`` when the message
    says what failed, else ``done`` (a stop reason ``error`` alone is a misbehaving provider's
    ``done``, as the scripted model plays it); both readers end with that message itself."""

    def steps(message: AssistantMessage) -> Generator[Step]:
        yield {"type": "start", "partial": message}
        yield WAIT
        if failed:
            error_event(message, "429 rate limited")
        else:
            message["stopReason"] = "error"

    message = new_assistant_message(SCRIPTED_MODEL)
    stream = AssistantMessageEventStream.of_steps(SCRIPTED_MODEL, steps(message), message=message)
    events = [event async for event in stream]
    assert [event["type"] for event in events] == ["start", "error" if failed else "done"]
    terminal = events[-1]
    assert terminal["type"] == "done" or terminal["type"] == "error"
    assert (terminal["reason"], await stream.result()) == ("error", message)
    message = new_assistant_message(SCRIPTED_MODEL)
    stream = AssistantMessageEventStream.of_steps(SCRIPTED_MODEL, steps(message), message=message)
    seen, final = await read_with_forward(stream)
    assert (seen, final) == (["start"], message)
    assert final.get("errorMessage") == ("429 rate limited" if failed else None)
