"""Prompt hooks: the editor's operations, and the guarantee that nothing leaks into storage."""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import pytest

from narrowing import content_of
from session_helpers import MODEL, assistant, call, result, text, user
from tether.session import PromptEditError, PromptEditor, SessionManager, run_prompt_hooks
from tether.session.prompt import PromptPart


def _session(manager: SessionManager) -> tuple[Any, list[str]]:
    s = manager.create("/p", model=MODEL)
    ids = [
        s.append_message(user("first")),
        s.append_message(assistant(text("thinking aloud"), call("c1", path="a", opts={"deep": [1, 2]}))),
        s.append_message(result("c1", "file A")),
        s.append_message(assistant(text("answer"))),
        s.append_message(user("second", attribution="user")),
    ]
    return s, ids


def test_editor_operations(manager: SessionManager) -> None:
    s, ids = _session(manager)
    editor = PromptEditor(s.messages, s.message_ids(s.messages), model=MODEL, now=42)
    editor.append({"role": "user", "parts": [text("appended")]})
    editor.prepend({"role": "assistant", "parts": [text("prepended")]})
    editor.insert_after(ids[2], {"role": "user", "parts": [text("after result")]})
    editor.insert_before(ids[0], {"role": "user", "parts": [text("before first")]})
    editor.append_to("last-user", [text("tail of last user")])
    editor.append_to("last-assistant", [text("tail of last assistant")])
    out = editor.result()
    contents = [(m["role"], content_of(m)) for m in out]
    assert contents[0] == ("assistant", [text("prepended")])
    assert contents[1] == ("user", [text("before first")])
    assert contents[2] == ("user", "first")
    assert contents[4][0] == "toolResult"
    assert contents[5] == ("user", [text("after result")])
    assert contents[6] == ("assistant", [text("answer"), text("tail of last assistant")])
    assert contents[7] == ("user", "second")
    assert contents[8] == ("user", [text("appended"), text("tail of last user")])
    built = out[8]
    assert built["timestamp"] == 42 and built.get("synthetic") is True
    assert out[0]["provider"] == "test"  # type: ignore[typeddict-item]
    # Messages the editor did not touch are passed through as they are (no copy cost).
    assert out[2] is s.messages[0]
    # And the editor knows ids only for stored messages.
    assert editor.message_ids()[2] == ids[0] and editor.message_ids()[0] is None


def test_editor_errors_are_clear(manager: SessionManager) -> None:
    s, _ = _session(manager)
    editor = PromptEditor(s.messages, s.message_ids(s.messages))
    with pytest.raises(PromptEditError, match="no message with id 'nope'"):
        editor.insert_after("nope", {"role": "user", "parts": [text("x")]})
    with pytest.raises(
        PromptEditError, match=r"parts\[0\]: a user message takes image or text parts, got 'toolCall'"
    ):
        editor.append({"role": "user", "parts": [call("x")]})  # type: ignore[list-item]
    with pytest.raises(PromptEditError, match="role must be"):
        editor.append({"role": "system", "parts": [text("x")]})  # type: ignore[typeddict-item]
    with pytest.raises(PromptEditError, match="no assistant message"):
        PromptEditor([user("only")]).append_to("last-assistant", [text("x")])


def _vandalize(value: Any, depth: int = 0) -> None:
    """Mutate every dict and list reachable from ``value`` in place (discriminators aside)."""
    if isinstance(value, dict):
        d = cast(dict[str, Any], value)
        for key in list(d):
            child = d[key]
            if key in ("role", "type"):
                continue
            if isinstance(child, str):
                d[key] = child + " [hacked]"
            elif isinstance(child, int | float) and not isinstance(child, bool):
                d[key] = child + 1
            else:
                _vandalize(child, depth + 1)
        d["injected"] = {"depth": depth}
    elif isinstance(value, list):
        items = cast(list[Any], value)
        for i, child in enumerate(items):
            if isinstance(child, str):
                items[i] = child + " [hacked]"
            else:
                _vandalize(child, depth + 1)
        items.append({"type": "text", "text": "injected"})


async def test_hooks_cannot_leak_into_storage_or_the_live_context(manager: SessionManager) -> None:
    s, ids = _session(manager)
    stored_before = json.dumps(s.entries(), sort_keys=True)
    live_before = copy.deepcopy(s.messages)
    kept_parts: list[PromptPart] = [text("kept")]

    def hook(editor: PromptEditor) -> None:
        for message in editor.messages:  # in-place edits of everything the hook can reach
            _vandalize(message)
        _vandalize(editor.messages[1:3])
        editor.append_to("last-user", kept_parts)
        _vandalize(editor.messages[-1])
        editor.insert_after(ids[0], {"role": "user", "parts": kept_parts})

    async def async_hook(editor: PromptEditor) -> None:
        editor.append({"role": "assistant", "parts": [text("async")]})

    request = await run_prompt_hooks([hook, async_hook], s.messages, s.message_ids(s.messages), model=MODEL)
    assert len(request) == len(live_before) + 2
    assert content_of(request[-1]) == [text("async")]
    _vandalize(kept_parts)  # the hook's own objects, mutated after handing them over
    _vandalize(request)  # the edited request itself, as a sloppy provider might

    assert s.messages == live_before
    assert json.dumps(s.entries(), sort_keys=True) == stored_before
    reopened = manager.open(s.id, readonly=True)
    assert json.dumps(reopened.entries(), sort_keys=True) == stored_before


async def test_hooks_persist_only_through_append_synthetic(manager: SessionManager) -> None:
    s, _ = _session(manager)
    count = len(s.entries())

    def hook(editor: PromptEditor) -> None:
        editor.append({"role": "user", "parts": [text("transient")]})
        s.append_synthetic({"role": "user", "parts": [text("durable")]})

    await run_prompt_hooks([hook], s.messages, s.message_ids(s.messages))
    stored = [e["message"]["content"] for e in manager.open(s.id, readonly=True).entries()[count:]]
    assert stored == [[text("durable")]]
