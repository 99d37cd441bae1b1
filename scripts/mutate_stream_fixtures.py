#!/usr/bin/env python3
"""Write mutated variants of the recorded provider streams, for differential testing against pi-ai.

The recorded streams (``reference/fixtures/streams`` and ``tests/fixtures/streams``) leave many
parser branches untested: other stop reasons, in-stream errors, missing or repeated usage, empty
or parallel tool calls, keep-alive comments, other event separators. Each variant written here is
one real stream edited in one well-defined way, so that it stays something a real server could
send. ``PLAN`` lists every variant as (api, source fixture, mutation); ``MUTATIONS`` holds the
edits, one small function each, with a docstring that says what it changes. A variant keeps the
fixture format (``reference/fixtures/README.md``); its ``source`` names the real fixture and the
mutation. The expected results come from the reference, never by hand::

    python scripts/mutate_stream_fixtures.py            # writes tests/fixtures/mutated/<api>/
    node "$ORACLE/oracle.mjs" --all "$PWD/tests/fixtures/mutated"

The output is deterministic: the same inputs give byte-identical files. ``--out`` writes
elsewhere (for example a scratch directory to try variants the plan leaves out).
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "reference": ROOT / "reference" / "fixtures" / "streams",
    "own": ROOT / "tests" / "fixtures" / "streams",
}
OUT = ROOT / "tests" / "fixtures" / "mutated"

Json = dict[str, Any]


# -- the body as a list of SSE events --------------------------------------------------------------


@dataclass
class Frame:
    """One SSE event: its lines without terminators (``event:``, ``data:``, ``: comment`` ...)."""

    lines: list[str]

    @property
    def event(self) -> str | None:
        return next((line[6:].strip() for line in self.lines if line.startswith("event:")), None)

    @property
    def data_text(self) -> str | None:
        found = [line[5:].removeprefix(" ") for line in self.lines if line.startswith("data:")]
        return "\n".join(found) if found else None

    @property
    def data(self) -> Json | None:
        """The JSON object in the ``data:`` line(s); None for ``[DONE]``, comments, non-objects."""
        text = self.data_text
        if text is None or text.strip() == "[DONE]":
            return None
        value = json.loads(text)
        return value if isinstance(value, dict) else None

    def with_data(self, data: Json) -> Frame:
        """This event with its data replaced (compact JSON, non-ASCII kept as is)."""
        lines = [line for line in self.lines if not line.startswith("data:")]
        return Frame([*lines, "data: " + dumps(data)])


def dumps(data: Json, ascii_only: bool = False) -> str:
    return json.dumps(data, ensure_ascii=ascii_only, separators=(",", ":"))


def data_frame(data: Json, event: str | None = None) -> Frame:
    return Frame(([f"event: {event}"] if event else []) + ["data: " + dumps(data)])


@dataclass
class Body:
    """A recorded SSE body split into events, to be joined back with the same separator."""

    frames: list[Frame]
    newline: str  # "\n" or "\r\n": the line terminator; events end with two of them

    @classmethod
    def parse(cls, text: str) -> Body:
        newline = "\r\n" if "\r\n\r\n" in text else "\n"
        chunks = [c for c in text.split(newline * 2) if c.strip()]
        return cls([Frame(chunk.split(newline)) for chunk in chunks], newline)

    def render(self) -> str:
        return "".join(self.newline.join(f.lines) + self.newline * 2 for f in self.frames)

    def datas(self) -> list[tuple[int, Json]]:
        return [(i, d) for i, f in enumerate(self.frames) if (d := f.data) is not None]


class NotApplicable(Exception):
    """The mutation has nothing to change in this stream (a mistake in ``PLAN``)."""


Mutation = Callable[[Body, Json], None]
"""Edits the body in place; may also change the fixture (its request) given as the second argument."""
MUTATIONS: dict[str, dict[str, Mutation]] = {}


def mutation(*apis: str) -> Callable[[Mutation], Mutation]:
    def register(fn: Mutation) -> Mutation:
        # m_ for every API; c_, a_, r_, g_ for one API's (completions, anthropic, responses, gemini)
        name = fn.__name__.split("_", 1)[1].replace("_", "-")
        for api in apis:
            MUTATIONS.setdefault(api, {})[name] = fn
        return fn

    return register


ALL = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")
OPENAI = ("openai-completions", "openai-responses")


def require(found: bool, what: str) -> None:
    if not found:
        raise NotApplicable(what)


# -- transport-level mutations (every API) ---------------------------------------------------------


@mutation("openai-completions", "openai-responses", "anthropic-messages")
def m_crlf(body: Body, fixture: Json) -> None:
    """Lines end with CRLF and events with a blank CRLF line (as Gemini's servers send)."""
    require(body.newline == "\n", "already CRLF")
    body.newline = "\r\n"


@mutation("google-generative-ai")
def m_lf(body: Body, fixture: Json) -> None:
    """Events separated by ``\\n\\n`` instead of Gemini's ``\\r\\n\\r\\n``."""
    require(body.newline == "\r\n", "already LF")
    body.newline = "\n"


@mutation(*ALL)
def m_keepalive_comments(body: Body, fixture: Json) -> None:
    """A ``: keep-alive`` comment event before the first event and after every other event."""
    frames: list[Frame] = [Frame([": keep-alive"])]
    for i, frame in enumerate(body.frames):
        frames.append(frame)
        if i % 2 == 1:
            frames.append(Frame([": keep-alive"]))
    body.frames = frames


@mutation(*ALL)
def m_ascii_escaped(body: Body, fixture: Json) -> None:
    """Every JSON payload re-encoded with ``\\uXXXX`` escapes for non-ASCII (surrogate pairs for emoji)."""
    require(not body.render().isascii(), "body is ASCII")
    for i, data in body.datas():
        frame = body.frames[i]
        lines = [line for line in frame.lines if not line.startswith("data:")]
        body.frames[i] = Frame([*lines, "data: " + dumps(data, ascii_only=True)])


UNICODE_SUFFIX = " — café 😀 中文"
"""Multi-byte text (2-, 3- and 4-byte UTF-8) appended to a text delta; byte-split tests cut inside it."""


def _append_to_last_text_delta(body: Body, is_text_delta: Callable[[Json], str | None]) -> None:
    """Append ``UNICODE_SUFFIX`` to the last text delta, and to every later copy of the full text.

    ``is_text_delta`` returns the key holding the delta text in a payload, or None. APIs that
    repeat the whole text later (Responses' ``*.done`` events) get it there too, so the stream
    stays self-consistent: every later string equal to the text so far becomes the new text.
    """
    deltas = [(i, data, key) for i, data in body.datas() if (key := is_text_delta(data)) is not None]
    require(bool(deltas), "no text delta")
    index, data, key = deltas[-1]
    holder = _delta_holder(data, key)
    text_so_far = "".join(str(_delta_holder(d, k)[_last_key(k)]) for _, d, k in deltas)
    holder[_last_key(key)] = str(holder[_last_key(key)]) + UNICODE_SUFFIX
    body.frames[index] = body.frames[index].with_data(data)
    for i, later in body.datas():
        if i > index and _replace_strings(later, text_so_far, text_so_far + UNICODE_SUFFIX):
            body.frames[i] = body.frames[i].with_data(later)


def _delta_holder(data: Json, key: str) -> Json:
    """The dict that holds ``key`` (``a.b.c`` paths walk nested dicts; list items by number)."""
    node: Any = data
    *path, _ = key.split(".")
    for step in path:
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def _replace_strings(node: Any, old: str, new: str) -> bool:
    changed = False
    items = (
        list(node.items())
        if isinstance(node, dict)
        else list(enumerate(node))
        if isinstance(node, list)
        else []
    )
    for key, value in items:
        if value == old:
            node[key] = new
            changed = True
        elif isinstance(value, dict | list):
            changed = _replace_strings(value, old, new) or changed
    return changed


def _last_key(key: str) -> str:
    return key.split(".")[-1]


@mutation(*ALL)
def m_unicode_text(body: Body, fixture: Json) -> None:
    """The last text delta gains 2-, 3- and 4-byte characters (and every later copy of the text)."""
    api = fixture["api"]

    def text_key(data: Json) -> str | None:
        if api == "openai-completions":
            choices = data.get("choices") or []
            content = choices[0].get("delta", {}).get("content") if choices else None
            return "choices.0.delta.content" if content else None
        if api == "anthropic-messages":
            delta = data.get("delta") or {}
            return (
                "delta.text"
                if data.get("type") == "content_block_delta" and delta.get("type") == "text_delta"
                else None
            )
        if api == "openai-responses":
            return "delta" if data.get("type") == "response.output_text.delta" else None
        parts = ((data.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []
        for n, part in enumerate(parts):
            if part.get("text") and not part.get("thought"):
                return f"candidates.0.content.parts.{n}.text"
        return None

    _append_to_last_text_delta(body, text_key)


# -- openai-completions ----------------------------------------------------------------------------


def _choice(data: Json) -> Json | None:
    choices = data.get("choices")
    return choices[0] if isinstance(choices, list) and choices else None


def _set_finish_reason(body: Body, reason: str | None) -> None:
    found = False
    for i, data in body.datas():
        choice = _choice(data)
        if choice is not None and choice.get("finish_reason"):
            choice["finish_reason"] = reason
            body.frames[i] = body.frames[i].with_data(data)
            found = True
    require(found, "no finish_reason")


@mutation("openai-completions")
def c_finish_length(body: Body, fixture: Json) -> None:
    """``finish_reason: "length"`` (max_tokens reached)."""
    _set_finish_reason(body, "length")


@mutation("openai-completions")
def c_finish_content_filter(body: Body, fixture: Json) -> None:
    """``finish_reason: "content_filter"`` (output cut by the provider's filter)."""
    _set_finish_reason(body, "content_filter")


@mutation("openai-completions")
def c_finish_function_call(body: Body, fixture: Json) -> None:
    """The legacy ``finish_reason: "function_call"`` for a tool call."""
    _set_finish_reason(body, "function_call")


@mutation("openai-completions")
def c_finish_error(body: Body, fixture: Json) -> None:
    """``finish_reason: "error"`` (OpenRouter: the upstream provider failed mid-answer)."""
    _set_finish_reason(body, "error")


@mutation("openai-completions")
def c_finish_missing(body: Body, fixture: Json) -> None:
    """No chunk carries a ``finish_reason`` (some OpenAI-compatible servers omit it)."""
    _set_finish_reason(body, None)


@mutation("openai-completions")
def c_finish_repeated(body: Body, fixture: Json) -> None:
    """The chunk with the ``finish_reason`` is sent twice."""
    index = next(
        (i for i, d in body.datas() if (c := _choice(d)) is not None and c.get("finish_reason")), None
    )
    require(index is not None, "no finish_reason")
    assert index is not None
    body.frames.insert(index + 1, body.frames[index])


def _usage_indexes(body: Body) -> list[int]:
    return [i for i, data in body.datas() if data.get("usage")]


@mutation("openai-completions")
def c_usage_missing(body: Body, fixture: Json) -> None:
    """No usage anywhere (a server that ignores ``stream_options.include_usage``)."""
    indexes = _usage_indexes(body)
    require(bool(indexes), "no usage")
    for i in reversed(indexes):
        data = body.frames[i].data or {}
        if not data.get("choices"):
            del body.frames[i]
        else:
            data["usage"] = None
            body.frames[i] = body.frames[i].with_data(data)


@mutation("openai-completions", "anthropic-messages")
def c_usage_repeated(body: Body, fixture: Json) -> None:
    """The chunk carrying usage (Anthropic: ``message_delta``) is sent twice."""
    if fixture["api"] == "anthropic-messages":
        indexes = [i for i, d in body.datas() if d.get("type") == "message_delta"]
    else:
        indexes = _usage_indexes(body)
    require(bool(indexes), "no usage")
    body.frames.insert(indexes[-1] + 1, body.frames[indexes[-1]])


def _set_prompt_details(body: Body, details: Callable[[Json], None]) -> None:
    indexes = _usage_indexes(body)
    require(bool(indexes), "no usage")
    for i in indexes:
        data = body.frames[i].data or {}
        details(data["usage"])
        body.frames[i] = body.frames[i].with_data(data)


@mutation("openai-completions")
def c_usage_cache_write(body: Body, fixture: Json) -> None:
    """Usage reports ``cached_tokens`` and ``cache_write_tokens`` (OpenRouter's prompt caching)."""

    def details(usage: Json) -> None:
        prompt = usage["prompt_tokens"]
        usage["prompt_tokens_details"] = {"cached_tokens": prompt // 2, "cache_write_tokens": prompt // 4}

    _set_prompt_details(body, details)


@mutation("openai-completions")
def c_usage_prompt_cache_hit(body: Body, fixture: Json) -> None:
    """Usage reports ``prompt_cache_hit_tokens``/``prompt_cache_miss_tokens`` (DeepSeek's shape)."""

    def details(usage: Json) -> None:
        prompt = usage["prompt_tokens"]
        usage.pop("prompt_tokens_details", None)
        usage["prompt_cache_hit_tokens"] = prompt // 2
        usage["prompt_cache_miss_tokens"] = prompt - prompt // 2

    _set_prompt_details(body, details)


@mutation("openai-completions")
def c_usage_in_choice(body: Body, fixture: Json) -> None:
    """Usage inside ``choices[0].usage`` instead of the chunk (as Moonshot sends it)."""
    indexes = _usage_indexes(body)
    require(bool(indexes), "no usage")
    for i in indexes:
        data = body.frames[i].data or {}
        usage = data.pop("usage")
        if not data.get("choices"):
            data["choices"] = [{"index": 0, "delta": {}, "finish_reason": None}]
        data["choices"][0]["usage"] = usage
        body.frames[i] = body.frames[i].with_data(data)


def _done_index(body: Body) -> int | None:
    return next((i for i, f in enumerate(body.frames) if (f.data_text or "").strip() == "[DONE]"), None)


@mutation("openai-completions", "openai-responses")
def c_no_done(body: Body, fixture: Json) -> None:
    """The final ``data: [DONE]`` is missing (the connection just ends)."""
    index = _done_index(body)
    require(index is not None, "no [DONE]")
    assert index is not None
    del body.frames[index]


@mutation("openai-responses")
def c_done_marker(body: Body, fixture: Json) -> None:
    """A ``data: [DONE]`` after the last event (as OpenRouter sends)."""
    require(_done_index(body) is None, "already has [DONE]")
    body.frames.append(Frame(["data: [DONE]"]))


def _middle_content_index(body: Body, is_content: Callable[[Json], bool]) -> int:
    found = [i for i, data in body.datas() if is_content(data)]
    require(bool(found), "no content")
    return found[len(found) // 2]


def _completions_content(data: Json) -> bool:
    choice = _choice(data)
    delta = choice.get("delta") or {} if choice else {}
    return bool(
        delta.get("content")
        or delta.get("tool_calls")
        or delta.get("reasoning_content")
        or delta.get("reasoning")
    )


@mutation("openai-completions")
def c_error_chunk(body: Body, fixture: Json) -> None:
    """Mid-answer, a chunk with a top-level ``error`` object, and the stream ends there."""
    index = _middle_content_index(body, _completions_content)
    error = {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    body.frames[index + 1 :] = [data_frame({"error": error})]


@mutation("openai-completions")
def c_error_event(body: Body, fixture: Json) -> None:
    """Mid-answer, an ``event: error`` with an ``error`` object (as Groq sends), and the stream ends."""
    index = _middle_content_index(body, _completions_content)
    error = {"message": "Service Unavailable", "type": "internal_server_error"}
    body.frames[index + 1 :] = [data_frame({"error": error}, event="error")]


def _tool_call_chunks(body: Body) -> list[tuple[int, Json]]:
    return [
        (i, d)
        for i, d in body.datas()
        if (c := _choice(d)) is not None and (c.get("delta") or {}).get("tool_calls")
    ]


@mutation("openai-completions")
def c_tool_args_empty(body: Body, fixture: Json) -> None:
    """Every tool call streams ``""`` as its arguments (a call without parameters)."""
    chunks = _tool_call_chunks(body)
    require(bool(chunks), "no tool call")
    for i, data in chunks:
        for call in data["choices"][0]["delta"]["tool_calls"]:
            if "function" in call and "arguments" in call["function"]:
                call["function"]["arguments"] = ""
        body.frames[i] = body.frames[i].with_data(data)


def mutated_id(original: str) -> str:
    """A new id of the same shape: the original with its last characters replaced."""
    return original[: max(len(original) - 6, 1)] + "Mut4nt"


@mutation("openai-completions")
def c_parallel_tool_call(body: Body, fixture: Json) -> None:
    """The tool calls are streamed again as further parallel calls (next indexes, new ids)."""
    chunks = _tool_call_chunks(body)
    require(bool(chunks), "no tool call")
    indexes = {call.get("index", 0) for _, d in chunks for call in d["choices"][0]["delta"]["tool_calls"]}
    shift = max(indexes) + 1
    copies: list[Frame] = []
    for _, data in chunks:
        twin = copy.deepcopy(data)
        for call in twin["choices"][0]["delta"]["tool_calls"]:
            call["index"] = call.get("index", 0) + shift
            if call.get("id"):
                call["id"] = mutated_id(call["id"])
        copies.append(body.frames[0].with_data(twin))
    last = chunks[-1][0]
    body.frames[last + 1 : last + 1] = copies


@mutation("openai-completions")
def c_refusal(body: Body, fixture: Json) -> None:
    """The answer comes as ``delta.refusal`` with ``content: null`` (an OpenAI refusal)."""
    found = False
    for i, data in body.datas():
        choice = _choice(data)
        delta = choice.get("delta") if choice else None
        if delta and delta.get("content") is not None:
            delta["refusal"], delta["content"] = delta["content"], None
            body.frames[i] = body.frames[i].with_data(data)
            found = True
    require(found, "no content")


@mutation("openai-completions")
def c_empty_chunks(body: Body, fixture: Json) -> None:
    """Chunks with an empty ``delta``, with ``choices: []`` and no usage, and with an unknown delta field."""
    index = _middle_content_index(body, _completions_content)
    template = body.frames[index].data or {}
    empty_delta = {
        **template,
        "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}],
    }
    no_choices = {**template, "choices": [], "usage": None}
    unknown = {
        **template,
        "choices": [{"index": 0, "delta": {"annotations": [], "audio": None}, "finish_reason": None}],
    }
    body.frames[index + 1 : index + 1] = [
        data_frame(empty_delta),
        data_frame(no_choices),
        data_frame(unknown),
    ]


# -- anthropic-messages ----------------------------------------------------------------------------


def _anthropic_indexes(body: Body, kind: str) -> list[int]:
    return [i for i, data in body.datas() if data.get("type") == kind]


def _set_stop_reason(body: Body, reason: str, stop_sequence: str | None = None) -> None:
    indexes = _anthropic_indexes(body, "message_delta")
    require(bool(indexes), "no message_delta")
    for i in indexes:
        data = body.frames[i].data or {}
        data["delta"]["stop_reason"] = reason
        data["delta"]["stop_sequence"] = stop_sequence
        body.frames[i] = body.frames[i].with_data(data)


@mutation("anthropic-messages")
def a_stop_max_tokens(body: Body, fixture: Json) -> None:
    """``stop_reason: "max_tokens"``."""
    _set_stop_reason(body, "max_tokens")


@mutation("anthropic-messages")
def a_stop_refusal(body: Body, fixture: Json) -> None:
    """``stop_reason: "refusal"`` (the streaming classifier stopped the answer)."""
    _set_stop_reason(body, "refusal")


@mutation("anthropic-messages")
def a_stop_pause_turn(body: Body, fixture: Json) -> None:
    """``stop_reason: "pause_turn"`` (a long server-tool turn paused, to be resubmitted)."""
    _set_stop_reason(body, "pause_turn")


@mutation("anthropic-messages")
def a_stop_sequence(body: Body, fixture: Json) -> None:
    """``stop_reason: "stop_sequence"`` with the matched ``stop_sequence``."""
    _set_stop_reason(body, "stop_sequence", "\n\nHuman:")


@mutation("anthropic-messages")
def a_stop_sensitive(body: Body, fixture: Json) -> None:
    """``stop_reason: "sensitive"`` (stopped by a safety filter)."""
    _set_stop_reason(body, "sensitive")


@mutation("anthropic-messages")
def a_stop_context_window(body: Body, fixture: Json) -> None:
    """``stop_reason: "model_context_window_exceeded"`` (a newer value than the reference knows)."""
    _set_stop_reason(body, "model_context_window_exceeded")


def _anthropic_content(data: Json) -> bool:
    return data.get("type") == "content_block_delta"


@mutation("anthropic-messages")
def a_error_event(body: Body, fixture: Json) -> None:
    """Mid-answer, ``event: error`` with an ``overloaded_error``, and the stream ends there."""
    index = _middle_content_index(body, _anthropic_content)
    error = {
        "type": "error",
        "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_011CMutatedOverloaded0001",
    }
    body.frames[index + 1 :] = [data_frame(error, event="error")]


@mutation("anthropic-messages")
def a_no_message_stop(body: Body, fixture: Json) -> None:
    """The final ``message_stop`` is missing (the connection ends after ``message_delta``)."""
    indexes = _anthropic_indexes(body, "message_stop")
    require(bool(indexes), "no message_stop")
    del body.frames[indexes[-1]]


@mutation("anthropic-messages")
def a_cut_mid_block(body: Body, fixture: Json) -> None:
    """The connection ends cleanly in the middle of a content block (no error, no ``message_stop``)."""
    index = _middle_content_index(body, _anthropic_content)
    del body.frames[index + 1 :]


def _block_frames(body: Body, block_type: str) -> list[tuple[int, list[int]]]:
    """(block index, frame indexes from its start to its stop) for each block of ``block_type``."""
    found: list[tuple[int, list[int]]] = []
    for i, data in body.datas():
        if data.get("type") == "content_block_start" and data["content_block"].get("type") == block_type:
            block = data["index"]
            frames = [
                j
                for j, d in body.datas()
                if j >= i
                and d.get("index") == block
                and d.get("type") in ("content_block_start", "content_block_delta", "content_block_stop")
            ]
            found.append((block, frames))
    return found


@mutation("anthropic-messages")
def a_tool_input_empty(body: Body, fixture: Json) -> None:
    """Each ``tool_use`` streams one empty ``input_json_delta`` (a tool without parameters)."""
    blocks = _block_frames(body, "tool_use")
    require(bool(blocks), "no tool_use")
    drop: set[int] = set()
    for _, frames in blocks:
        deltas = [j for j in frames if (body.frames[j].data or {}).get("type") == "content_block_delta"]
        require(bool(deltas), "tool_use without deltas")
        data = body.frames[deltas[0]].data or {}
        data["delta"]["partial_json"] = ""
        body.frames[deltas[0]] = body.frames[deltas[0]].with_data(data)
        drop.update(deltas[1:])
    body.frames = [f for j, f in enumerate(body.frames) if j not in drop]


def _shift_block_indexes(body: Body, at_least: int) -> None:
    for i, data in body.datas():
        if isinstance(data.get("index"), int) and data["index"] >= at_least:
            data["index"] += 1
            body.frames[i] = body.frames[i].with_data(data)


@mutation("anthropic-messages")
def a_parallel_tool_use(body: Body, fixture: Json) -> None:
    """The last ``tool_use`` block is sent again right after it as a second call (new id, next index)."""
    blocks = _block_frames(body, "tool_use")
    require(bool(blocks), "no tool_use")
    block, frames = blocks[-1]
    _shift_block_indexes(body, block + 1)
    twins: list[Frame] = []
    for j in frames:
        data = copy.deepcopy(body.frames[j].data or {})
        data["index"] = block + 1
        if data["type"] == "content_block_start":
            data["content_block"]["id"] = mutated_id(data["content_block"]["id"])
        twins.append(body.frames[j].with_data(data))
    body.frames[frames[-1] + 1 : frames[-1] + 1] = twins


@mutation("anthropic-messages")
def a_usage_output_only(body: Body, fixture: Json) -> None:
    """``message_delta`` usage carries only ``output_tokens`` (the API's older shape, and proxies')."""
    indexes = _anthropic_indexes(body, "message_delta")
    require(bool(indexes), "no message_delta")
    for i in indexes:
        data = body.frames[i].data or {}
        data["usage"] = {"output_tokens": data["usage"]["output_tokens"]}
        body.frames[i] = body.frames[i].with_data(data)


@mutation("anthropic-messages")
def a_usage_cache(body: Body, fixture: Json) -> None:
    """Non-zero cache read and cache write tokens in ``message_start`` and ``message_delta``."""
    found = False
    for i, data in body.datas():
        usage = data["message"]["usage"] if data.get("type") == "message_start" else data.get("usage")
        if data.get("type") in ("message_start", "message_delta") and usage is not None:
            usage["cache_read_input_tokens"] = 1536
            usage["cache_creation_input_tokens"] = 212
            body.frames[i] = body.frames[i].with_data(data)
            found = True
    require(found, "no usage")


@mutation("anthropic-messages")
def a_unknown_events(body: Body, fixture: Json) -> None:
    """An event of an unknown type after ``message_start``, and a content block of an unknown type
    (with a delta of an unknown type) before ``message_delta``."""
    start = _anthropic_indexes(body, "message_start")
    delta = _anthropic_indexes(body, "message_delta")
    require(bool(start and delta), "no message_start/message_delta")
    blocks = [d["index"] for _, d in body.datas() if d.get("type") == "content_block_start"]
    block = max(blocks, default=-1) + 1
    unknown_block = [
        data_frame(
            {
                "type": "content_block_start",
                "index": block,
                "content_block": {"type": "future_block", "payload": {"x": 1}},
            },
            "content_block_start",
        ),
        data_frame(
            {"type": "content_block_delta", "index": block, "delta": {"type": "future_delta", "value": "…"}},
            "content_block_delta",
        ),
        data_frame({"type": "content_block_stop", "index": block}, "content_block_stop"),
    ]
    body.frames[delta[-1] : delta[-1]] = unknown_block
    body.frames.insert(start[0] + 1, data_frame({"type": "future_event", "detail": {}}, "future_event"))


# -- openai-responses ------------------------------------------------------------------------------


def _responses_indexes(body: Body, kind: str) -> list[int]:
    return [i for i, data in body.datas() if data.get("type") == kind]


def _completed(body: Body) -> tuple[int, Json]:
    indexes = _responses_indexes(body, "response.completed")
    require(bool(indexes), "no response.completed")
    return indexes[-1], body.frames[indexes[-1]].data or {}


def _replace_completed(body: Body, kind: str, response_changes: Json) -> None:
    index, data = _completed(body)
    data["type"] = kind
    data["response"].update(response_changes)
    body.frames[index] = Frame([f"event: {kind}", "data: " + dumps(data)])


@mutation("openai-responses")
def r_incomplete_max_tokens(body: Body, fixture: Json) -> None:
    """``response.incomplete`` (``max_output_tokens``) instead of ``response.completed``."""
    _replace_completed(
        body,
        "response.incomplete",
        {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    )


@mutation("openai-responses")
def r_failed(body: Body, fixture: Json) -> None:
    """``response.failed`` with a ``server_error`` instead of ``response.completed``."""
    _replace_completed(
        body,
        "response.failed",
        {
            "status": "failed",
            "error": {"code": "server_error", "message": "The model failed to generate a response."},
            "usage": None,
        },
    )


@mutation("openai-responses")
def r_no_completed(body: Body, fixture: Json) -> None:
    """The stream ends without ``response.completed`` (connection closed after the last item)."""
    index, _ = _completed(body)
    del body.frames[index:]


def _responses_content(data: Json) -> bool:
    return str(data.get("type", "")).endswith(".delta")


@mutation("openai-responses")
def r_error_event(body: Body, fixture: Json) -> None:
    """Mid-answer, an ``error`` event (``server_error``), and the stream ends there."""
    index = _middle_content_index(body, _responses_content)
    sequence = (body.frames[index].data or {}).get("sequence_number")
    error: Json = {
        "type": "error",
        "code": "server_error",
        "message": "The server had an error while processing your request.",
        "param": None,
    }
    if sequence is not None:
        error["sequence_number"] = sequence + 1
    body.frames[index + 1 :] = [data_frame(error, "error")]


@mutation("openai-responses")
def r_usage_missing(body: Body, fixture: Json) -> None:
    """``response.completed`` carries ``usage: null``."""
    index, data = _completed(body)
    data["response"]["usage"] = None
    body.frames[index] = body.frames[index].with_data(data)


def _service_tier(body: Body, tier: str) -> None:
    index, data = _completed(body)
    data["response"]["service_tier"] = tier
    body.frames[index] = body.frames[index].with_data(data)


@mutation("openai-responses")
def r_service_tier_flex(body: Body, fixture: Json) -> None:
    """``response.completed`` reports ``service_tier: "flex"`` (half price)."""
    _service_tier(body, "flex")


@mutation("openai-responses")
def r_service_tier_priority(body: Body, fixture: Json) -> None:
    """``response.completed`` reports ``service_tier: "priority"`` (double price)."""
    _service_tier(body, "priority")


def _function_call_ids(body: Body) -> list[str]:
    return [
        d["item"]["id"]
        for i, d in body.datas()
        if d.get("type") == "response.output_item.added" and d["item"].get("type") == "function_call"
    ]


@mutation("openai-responses")
def r_function_args_empty(body: Body, fixture: Json) -> None:
    """Each function call streams no argument deltas; its arguments are ``"{}"`` (no parameters)."""
    ids = _function_call_ids(body)
    require(bool(ids), "no function_call")
    drop = {
        i
        for i, d in body.datas()
        if d.get("type") == "response.function_call_arguments.delta" and d.get("item_id") in ids
    }
    body.frames = [f for j, f in enumerate(body.frames) if j not in drop]
    for i, data in body.datas():
        if _set_function_arguments(data, ids, "{}"):
            body.frames[i] = body.frames[i].with_data(data)


def _set_function_arguments(node: Any, ids: list[str], arguments: str) -> bool:
    """Set ``arguments`` on every function call item (or arguments event) of ``ids`` under node."""
    changed = False
    if isinstance(node, dict):
        if node.get("type") == "response.function_call_arguments.done" and node.get("item_id") in ids:
            node["arguments"] = arguments
            changed = True
        if node.get("type") == "function_call" and node.get("id") in ids and node.get("arguments"):
            node["arguments"] = arguments
            changed = True
        for value in list(node.values()):
            changed = _set_function_arguments(value, ids, arguments) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _set_function_arguments(value, ids, arguments) or changed
    return changed


@mutation("openai-responses")
def r_parallel_function_call(body: Body, fixture: Json) -> None:
    """The last function call item is streamed again as a second call (next output_index, new ids)."""
    ids = _function_call_ids(body)
    require(bool(ids), "no function_call")
    item_id = ids[-1]
    frames = [
        i
        for i, d in body.datas()
        if d.get("item_id") == item_id or (d.get("item") or {}).get("id") == item_id
    ]
    output_index = (body.frames[frames[0]].data or {})["output_index"]
    twins: list[Frame] = []
    for j in frames:
        data = copy.deepcopy(body.frames[j].data or {})
        data["output_index"] = output_index + 1
        if "item_id" in data:
            data["item_id"] = mutated_id(item_id)
        if "item" in data:
            data["item"]["id"] = mutated_id(item_id)
            data["item"]["call_id"] = mutated_id(data["item"]["call_id"])
        twins.append(body.frames[j].with_data(data))
    after = frames[-1] + 1
    for i, data in body.datas():
        if i >= after and isinstance(data.get("output_index"), int) and data["output_index"] > output_index:
            data["output_index"] += 1
            body.frames[i] = body.frames[i].with_data(data)
    index, completed = _completed(body)
    output = completed["response"]["output"]
    position = next(n for n, item in enumerate(output) if item.get("id") == item_id)
    twin = copy.deepcopy(output[position])
    twin["id"], twin["call_id"] = mutated_id(item_id), mutated_id(twin["call_id"])
    output.insert(position + 1, twin)
    body.frames[index] = body.frames[index].with_data(completed)
    body.frames[after:after] = twins
    _renumber_sequence(body)


def _renumber_sequence(body: Body) -> None:
    """Keep ``sequence_number`` increasing by one after events were inserted or removed."""
    numbered = [(i, d) for i, d in body.datas() if isinstance(d.get("sequence_number"), int)]
    if not numbered:
        return
    first = numbered[0][1]["sequence_number"]
    for n, (i, data) in enumerate(numbered):
        if data["sequence_number"] != first + n:
            data["sequence_number"] = first + n
            body.frames[i] = body.frames[i].with_data(data)


@mutation("openai-responses")
def r_refusal(body: Body, fixture: Json) -> None:
    """The message's output_text part is a ``refusal`` part (``response.refusal.delta``/``.done``)."""
    found = False
    for i, data in body.datas():
        kind = data.get("type")
        if kind == "response.output_text.delta":
            data["type"] = "response.refusal.delta"
        elif kind == "response.output_text.done":
            data["type"] = "response.refusal.done"
            data["refusal"] = data.pop("text")
            data.pop("logprobs", None)
        elif kind in ("response.output_text.annotation.added",):
            raise NotApplicable("annotations")
        if _to_refusal_parts(data):
            found = True
        if data.get("type") != kind or found:
            lines = [line for line in body.frames[i].lines if not line.startswith(("data:", "event:"))]
            body.frames[i] = Frame([f"event: {data['type']}", *lines, "data: " + dumps(data)])
    require(found, "no output_text")


def _to_refusal_parts(node: Any) -> bool:
    changed = False
    if isinstance(node, dict):
        if node.get("type") == "output_text":
            text = node.get("text", "")
            node.clear()
            node.update({"type": "refusal", "refusal": text})
            return True
        for value in list(node.values()):
            changed = _to_refusal_parts(value) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _to_refusal_parts(value) or changed
    return changed


@mutation("openai-responses")
def r_unknown_item(body: Body, fixture: Json) -> None:
    """A ``web_search_call`` item (added, progress, done) before the first item: no block for it."""
    added = _responses_indexes(body, "response.output_item.added")
    require(bool(added), "no output item")
    first = added[0]
    item = {
        "type": "web_search_call",
        "id": "ws_0mutated0000000000000000000000000001",
        "status": "in_progress",
    }
    done_item = {**item, "status": "completed", "action": {"type": "search", "query": "capital of France"}}
    inserted = [
        data_frame(
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            "response.output_item.added",
        ),
        data_frame(
            {"type": "response.web_search_call.in_progress", "output_index": 0, "item_id": item["id"]},
            "response.web_search_call.in_progress",
        ),
        data_frame(
            {"type": "response.output_item.done", "output_index": 0, "item": done_item},
            "response.output_item.done",
        ),
    ]
    for i, data in body.datas():
        if i >= first and isinstance(data.get("output_index"), int):
            data["output_index"] += 1
            body.frames[i] = body.frames[i].with_data(data)
    body.frames[first:first] = inserted
    _renumber_sequence(body)


@mutation("openai-responses")
def r_unknown_events(body: Body, fixture: Json) -> None:
    """Events of unknown types after ``response.created`` and before ``response.completed``."""
    created = _responses_indexes(body, "response.created")
    index, _ = _completed(body)
    require(bool(created), "no response.created")
    body.frames.insert(
        index,
        data_frame({"type": "response.future_event.done", "detail": {"n": 1}}, "response.future_event.done"),
    )
    body.frames.insert(
        created[0] + 1,
        data_frame({"type": "response.future_event.added", "item_id": "x"}, "response.future_event.added"),
    )


# -- google-generative-ai --------------------------------------------------------------------------


def _candidate(data: Json) -> Json | None:
    candidates = data.get("candidates")
    return candidates[0] if isinstance(candidates, list) and candidates else None


def _set_gemini_finish(body: Body, reason: str | None) -> None:
    found = False
    for i, data in body.datas():
        candidate = _candidate(data)
        if candidate is not None and candidate.get("finishReason"):
            if reason is None:
                del candidate["finishReason"]
            else:
                candidate["finishReason"] = reason
            body.frames[i] = body.frames[i].with_data(data)
            found = True
    require(found, "no finishReason")


@mutation("google-generative-ai")
def g_finish_max_tokens(body: Body, fixture: Json) -> None:
    """``finishReason: "MAX_TOKENS"``."""
    _set_gemini_finish(body, "MAX_TOKENS")


@mutation("google-generative-ai")
def g_finish_safety(body: Body, fixture: Json) -> None:
    """``finishReason: "SAFETY"``."""
    _set_gemini_finish(body, "SAFETY")


@mutation("google-generative-ai")
def g_finish_recitation(body: Body, fixture: Json) -> None:
    """``finishReason: "RECITATION"``."""
    _set_gemini_finish(body, "RECITATION")


@mutation("google-generative-ai")
def g_finish_malformed_function_call(body: Body, fixture: Json) -> None:
    """``finishReason: "MALFORMED_FUNCTION_CALL"``."""
    _set_gemini_finish(body, "MALFORMED_FUNCTION_CALL")


@mutation("google-generative-ai")
def g_finish_missing(body: Body, fixture: Json) -> None:
    """No chunk carries a ``finishReason``."""
    _set_gemini_finish(body, None)


@mutation("google-generative-ai")
def g_prompt_blocked(body: Body, fixture: Json) -> None:
    """The prompt is blocked: one chunk with ``promptFeedback.blockReason`` and no candidates."""
    datas = body.datas()
    require(bool(datas), "no chunk")
    first = datas[0][1]
    blocked: Json = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
    usage = first.get("usageMetadata") or {}
    blocked["usageMetadata"] = {k: usage[k] for k in ("promptTokenCount", "totalTokenCount") if k in usage}
    blocked.update({k: first[k] for k in ("modelVersion", "responseId") if k in first})
    body.frames = [data_frame(blocked)]


@mutation("google-generative-ai")
def g_usage_missing(body: Body, fixture: Json) -> None:
    """No chunk carries ``usageMetadata``."""
    found = False
    for i, data in body.datas():
        if data.pop("usageMetadata", None) is not None:
            body.frames[i] = body.frames[i].with_data(data)
            found = True
    require(found, "no usageMetadata")


@mutation("google-generative-ai")
def g_usage_cached(body: Body, fixture: Json) -> None:
    """The last ``usageMetadata`` reports ``cachedContentTokenCount`` (implicit caching)."""
    indexes = [i for i, d in body.datas() if d.get("usageMetadata")]
    require(bool(indexes), "no usageMetadata")
    data = body.frames[indexes[-1]].data or {}
    usage = data["usageMetadata"]
    usage["cachedContentTokenCount"] = usage.get("promptTokenCount", 0) // 2
    usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage["cachedContentTokenCount"]}]
    body.frames[indexes[-1]] = body.frames[indexes[-1]].with_data(data)


def _function_call_parts(body: Body) -> list[tuple[int, Json, int]]:
    """(frame index, payload, part number) for each ``functionCall`` part."""
    found: list[tuple[int, Json, int]] = []
    for i, data in body.datas():
        candidate = _candidate(data)
        for n, part in enumerate(((candidate or {}).get("content") or {}).get("parts") or []):
            if "functionCall" in part:
                found.append((i, data, n))
    return found


@mutation("google-generative-ai")
def g_function_call_no_args(body: Body, fixture: Json) -> None:
    """``functionCall`` parts without ``args`` (a function without parameters)."""
    parts = _function_call_parts(body)
    require(bool(parts), "no functionCall")
    for i, data, n in parts:
        (_candidate(data) or {})["content"]["parts"][n]["functionCall"].pop("args", None)
        body.frames[i] = body.frames[i].with_data(data)


@mutation("google-generative-ai")
def g_parallel_function_calls(body: Body, fixture: Json) -> None:
    """Each ``functionCall`` part is followed by a second call in the same chunk (same name and
    id, other arguments, no signature): parallel calls."""
    parts = _function_call_parts(body)
    require(bool(parts), "no functionCall")
    for i, data, n in reversed(parts):
        part_list = (_candidate(data) or {})["content"]["parts"]
        call = copy.deepcopy(part_list[n]["functionCall"])
        call["args"] = {"country": "Japan"} if "country" in (call.get("args") or {}) else {"extra": True}
        part_list.insert(n + 1, {"functionCall": call})
        body.frames[i] = body.frames[i].with_data(data)


@mutation("google-generative-ai")
def g_unknown_parts(body: Body, fixture: Json) -> None:
    """The first chunk starts with parts of kinds the reference has no block for (``inlineData``,
    ``fileData``)."""
    for i, data in body.datas():
        candidate = _candidate(data)
        parts = ((candidate or {}).get("content") or {}).get("parts")
        if parts:
            parts[0:0] = [
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "text/plain", "fileUri": "gs://bucket/notes.txt"}},
            ]
            body.frames[i] = body.frames[i].with_data(data)
            return
    raise NotApplicable("no parts")


@mutation("google-generative-ai")
def g_error_chunk(body: Body, fixture: Json) -> None:
    """After the first chunk, a ``data:`` chunk with an ``error`` object (HTTP 503), and the stream ends."""
    datas = body.datas()
    require(len(datas) >= 1, "no chunk")
    error = {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }
    body.frames[datas[0][0] + 1 :] = [data_frame(error)]


# -- the plan --------------------------------------------------------------------------------------

# -- response ids: empty, missing, late (some OpenAI-compatible servers send "id": "") ---------------


def _set_everywhere(body: Body, holder: Callable[[Json], Json | None], key: str, value: str | None) -> None:
    """Set (or with ``None`` remove) ``key`` in the dict ``holder`` finds in every event's data."""
    found = False
    for i, data in body.datas():
        target = holder(data)
        if target is None or key not in target:
            continue
        if value is None:
            del target[key]
        else:
            target[key] = value
        body.frames[i] = body.frames[i].with_data(data)
        found = True
    require(found, f"no {key}")


def _top(data: Json) -> Json:
    return data


def _response(data: Json) -> Json | None:
    response = data.get("response")
    return response if isinstance(response, dict) else None


def _message(data: Json) -> Json | None:
    message = data.get("message")
    return message if data.get("type") == "message_start" and isinstance(message, dict) else None


@mutation("openai-completions")
def c_id_empty(body: Body, fixture: Json) -> None:
    """Every chunk's ``id`` is ``""``."""
    _set_everywhere(body, _top, "id", "")


@mutation("openai-completions")
def c_id_missing(body: Body, fixture: Json) -> None:
    """No chunk carries an ``id``."""
    _set_everywhere(body, _top, "id", None)


@mutation("openai-completions")
def c_id_late(body: Body, fixture: Json) -> None:
    """The first chunk's ``id`` is ``""``; the later chunks carry the real one."""
    datas = [(i, d) for i, d in body.datas() if "id" in d]
    require(len(datas) > 1, "fewer than two chunks with an id")
    index, data = datas[0]
    data["id"] = ""
    body.frames[index] = body.frames[index].with_data(data)


@mutation("anthropic-messages")
def a_id_empty(body: Body, fixture: Json) -> None:
    """``message_start`` carries ``"id": ""``."""
    _set_everywhere(body, _message, "id", "")


@mutation("anthropic-messages")
def a_id_missing(body: Body, fixture: Json) -> None:
    """``message_start``'s message has no ``id``."""
    _set_everywhere(body, _message, "id", None)


@mutation("openai-responses")
def r_id_empty(body: Body, fixture: Json) -> None:
    """Every event's ``response.id`` is ``""``."""
    _set_everywhere(body, _response, "id", "")


@mutation("openai-responses")
def r_id_missing(body: Body, fixture: Json) -> None:
    """No event's ``response`` carries an ``id``."""
    _set_everywhere(body, _response, "id", None)


@mutation("google-generative-ai")
def g_id_empty(body: Body, fixture: Json) -> None:
    """Every chunk's ``responseId`` is ``""``."""
    _set_everywhere(body, _top, "responseId", "")


@mutation("google-generative-ai")
def g_id_late(body: Body, fixture: Json) -> None:
    """The first chunk's ``responseId`` is ``""``; the later chunks carry the real one."""
    datas = [(i, d) for i, d in body.datas() if "responseId" in d]
    require(len(datas) > 1, "fewer than two chunks with a responseId")
    index, data = datas[0]
    data["responseId"] = ""
    body.frames[index] = body.frames[index].with_data(data)


PLAN_TABLE = """
openai-completions reference/openai-text            finish-length finish-content-filter finish-error finish-missing finish-repeated
openai-completions reference/openai-text            usage-missing usage-repeated usage-in-choice no-done crlf
openai-completions reference/openai-text            keepalive-comments error-chunk error-event refusal empty-chunks unicode-text
openai-completions reference/openai-tool-call       finish-length finish-function-call finish-missing tool-args-empty parallel-tool-call
openai-completions reference/openai-parallel-tool-calls parallel-tool-call usage-repeated
openai-completions reference/groq-reasoning-tool-call  finish-length tool-args-empty parallel-tool-call error-chunk no-done
openai-completions reference/openrouter-reasoning   finish-length error-event crlf
openai-completions own/openrouter-encrypted-reasoning ascii-escaped
openai-completions own/openai-tool-call-strict      finish-content-filter usage-missing keepalive-comments usage-cache-write
openai-completions own/openrouter-advisor-server-tool finish-length finish-repeated finish-error usage-cache-write
openai-completions reference/openrouter-cached-usage  usage-cache-write usage-prompt-cache-hit
anthropic-messages reference/text                   stop-max-tokens stop-pause-turn stop-sequence
anthropic-messages reference/text                   error-event no-message-stop usage-output-only usage-cache usage-repeated
anthropic-messages reference/text                   crlf keepalive-comments unknown-events unicode-text
anthropic-messages reference/thinking-signed        stop-max-tokens error-event cut-mid-block unknown-events
anthropic-messages own/tool-use-single-json-delta   stop-max-tokens tool-input-empty parallel-tool-use usage-cache
anthropic-messages own/client-tool-use-text-editor  tool-input-empty parallel-tool-use error-event cut-mid-block
anthropic-messages own/thinking-then-tool-use       parallel-tool-use crlf
anthropic-messages own/text-emoji-after-tool-result ascii-escaped
anthropic-messages reference/redacted-thinking      stop-max-tokens keepalive-comments
openai-responses   reference/openai-text            failed error-event usage-missing
openai-responses   reference/openai-text            service-tier-flex service-tier-priority refusal unknown-events unknown-item
openai-responses   reference/openai-text            done-marker crlf keepalive-comments unicode-text
openai-responses   reference/openai-function-call   function-args-empty parallel-function-call failed service-tier-flex unknown-item
openai-responses   reference/openai-reasoning-encrypted-function-call parallel-function-call function-args-empty error-event
openai-responses   reference/deepseek-reasoning-text   failed error-event usage-missing crlf
openai-responses   reference/openrouter-reasoning-text-done-marker no-done
openai-responses   own/openai-background-queued     refusal keepalive-comments
openai-responses   reference/deepseek-text-cached   ascii-escaped unicode-text
google-generative-ai reference/text                 finish-max-tokens
google-generative-ai reference/text                 usage-missing usage-cached lf keepalive-comments
google-generative-ai reference/text                 unknown-parts unicode-text
google-generative-ai reference/function-call        finish-max-tokens finish-malformed-function-call function-call-no-args parallel-function-calls
google-generative-ai reference/function-call-native-output parallel-function-calls function-call-no-args usage-cached
google-generative-ai reference/thinking-signed      finish-max-tokens lf
google-generative-ai own/vertex-signature-only-parts usage-missing finish-max-tokens keepalive-comments
google-generative-ai reference/usage-every-chunk    finish-max-tokens
google-generative-ai reference/text-after-tool-result  ascii-escaped
google-generative-ai reference/function-call-thought-signature finish-max-tokens lf usage-missing
google-generative-ai reference/text-after-signed-function-call unicode-text keepalive-comments
google-generative-ai reference/thinking-signed      unknown-parts usage-cached
google-generative-ai own/url-context-thoughts-tokens finish-max-tokens usage-cached
openai-completions reference/openai-text            id-empty id-missing id-late
openai-completions reference/openai-tool-call       id-empty
anthropic-messages reference/text                   id-empty id-missing
openai-responses   reference/openai-text            id-empty id-missing
google-generative-ai reference/text                 id-empty id-late
google-generative-ai reference/function-call        id-empty
"""
"""api, origin/fixture, then the mutations applied to it (each gives one variant)."""

HELD_BACK_TABLE = """
anthropic-messages reference/text                   stop-context-window
anthropic-messages reference/text                   stop-refusal stop-sensitive
anthropic-messages own/thinking-then-tool-use       stop-refusal
openai-responses   reference/openai-text            incomplete-max-tokens no-completed
openai-responses   reference/deepseek-reasoning-text   incomplete-max-tokens
google-generative-ai reference/text                 finish-safety finish-recitation finish-missing prompt-blocked error-chunk
google-generative-ai reference/thinking-signed      error-chunk
"""
"""Variants where tether deliberately differs from pi-ai, so they are not in the committed set
(``--held-back`` writes them, to re-check with the oracle). Why, per mutation:

- ``stop-context-window``: pi-ai fails with "Unhandled stop reason" before reading that event's
  usage; the answer simply hit the context limit, so tether reports ``length`` with the usage.
- ``stop-refusal``/``stop-sensitive``: pi-ai's message is "An unknown error occurred"; tether
  names the stop reason.
- ``incomplete-max-tokens``: pi-ai ignores ``response.incomplete`` (stop, zero usage); tether
  reports ``length`` with its usage (decided).
- ``no-completed``: pi-ai reports ``stop`` for a stream cut before ``response.completed``;
  tether reports ``error`` (decided).
- ``finish-safety``/``finish-recitation``: same events, but tether's message names the
  finishReason where pi-ai says "An unknown error occurred" (decided).
- ``finish-missing``: a Gemini stream without any finishReason is cut short; pi-ai reports
  ``stop``, tether ``error`` (decided).
- ``prompt-blocked``: pi-ai reports ``stop`` with no content; tether ``error`` naming the
  ``blockReason`` (decided).
- ``error-chunk``: pi-ai ignores a ``data:`` chunk carrying an ``error`` object (its SDK only
  checks whole unframed JSON reads) and reports ``stop``; tether ends with that error.
"""


def plan(table: str = PLAN_TABLE) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for line in table.strip().splitlines():
        api, source, *names = line.split()
        rows.extend((api, source, name) for name in names)
    return rows


def variant(api: str, source: str, name: str) -> tuple[str, Json]:
    """(file stem, fixture) of one variant."""
    origin, stem = source.split("/", 1)
    path = SOURCES[origin] / api / f"{stem}.json"
    fixture = json.loads(path.read_text())
    body = Body.parse(fixture["response"]["body"])
    fn = MUTATIONS[api][name]
    fn(body, fixture)
    text = body.render()
    if text == fixture["response"]["body"]:
        raise NotApplicable(f"{name} changed nothing in {source}")
    out = dict(fixture)
    summary = " ".join((fn.__doc__ or name).split())
    out["source"] = f"{origin}/{api}/{stem} ({fixture['source']}), mutation {name}: {summary}"
    out["response"] = {**fixture["response"], "body": text}
    return f"{stem}--{name}", out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT, help="output directory (default: %(default)s)")
    parser.add_argument("--only", help="only variants whose name contains this text")
    parser.add_argument("--held-back", action="store_true", help="write HELD_BACK_TABLE's variants instead")
    args = parser.parse_args(argv)
    table = HELD_BACK_TABLE if args.held_back else PLAN_TABLE
    rows = [r for r in plan(table) if not args.only or args.only in f"{r[1]}--{r[2]}"]
    if args.out.exists() and not args.only:
        for api_dir in args.out.iterdir():
            if api_dir.is_dir():
                shutil.rmtree(api_dir)
    failures = 0
    for api, source, name in rows:
        try:
            stem, fixture = variant(api, source, name)
        except (NotApplicable, KeyError) as exc:
            print(f"cannot apply {name} to {api}/{source}: {exc}", file=sys.stderr)
            failures += 1
            continue
        target = args.out / api / f"{stem}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows) - failures} variants to {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
