"""Cross-provider handoff: make a transcript written by any model replayable on ``target``.

Every provider runs ``transform_messages`` on the context before it builds a request, so a
conversation can switch model (or provider, or API) at any turn. The rules, and why:

- *Same model* means same provider, API and model id. Only then are provider-issued opaque data
  (thinking signatures, encrypted reasoning, redacted thinking, text signatures, Gemini
  ``thoughtSignature``) meaningful; the model needs them back verbatim to continue its own
  reasoning, so they are kept, including a thinking block that is empty but signed (OpenAI's
  encrypted reasoning has no visible text).
- From another model, thinking is dropped, as pi 1.6 drops it: signatures and encrypted
  reasoning are only valid for the model that produced them, and readable thinking sent as plain
  text makes the new model treat it as part of the visible reply (it glued onto the reply with no
  separator, and the model went on from it). Signatures of what is kept (text, tool calls) are
  removed, because the target would reject (or, worse, misread) another model's signature.
- Tool-call ids are rewritten to what the target API accepts, and the same rewrite is applied to
  the matching tool results. Ids that already fit are kept; the rest are sanitised, and hashed
  when they are too long or would collide, so the mapping is deterministic and a longer history
  rewrites its prefix exactly as before (prompt caches stay warm).
- Assistant turns that ended in ``error``/``aborted`` are incomplete (half a reasoning item, a
  tool call without arguments): they are dropped, as are tool results that no longer answer a
  kept tool call. A tool call left without a result before the next user or assistant message
  (or at the end) gets a synthetic error result ``No result provided``: every API rejects a
  dangling call.
- Images go to a model without image input as a short text placeholder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import cast

from tether.wire import (
    AssistantContent,
    AssistantMessage,
    Message,
    ModelInfo,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

NO_RESULT_TEXT = "No result provided"
USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"

_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_same_model(message: AssistantMessage, target: ModelInfo) -> bool:
    """True when ``message`` was produced by ``target``: same provider, API and model id."""
    return (
        message["provider"] == target["provider"]
        and message["api"] == target["api"]
        and message["model"] == target["id"]
    )


def transform_messages(messages: Sequence[Message], target: ModelInfo) -> list[Message]:
    """Return a copy of ``messages`` that ``target``'s API accepts (see the module docstring).

    Pure: the input is not modified, and the output depends only on the input and ``target``.
    A message that needs no change (a user turn, the target's own assistant turn with nothing
    to drop, a tool result answering it) is the input's own object in the new list: every request
    converts the whole conversation, and a copy of each turn was most of this function's cost.
    """
    vision = "image" in target["input"]
    own = (target["provider"], target["api"], target["id"])
    out: list[Message] = []
    used_ids: set[str] = set()
    pending: list[ToolCall] = []  # tool calls of the last kept assistant message
    answered: set[str] = set()  # of those, the ones a result answered
    id_map: dict[str, str] = {}  # original -> rewritten id, for the last kept assistant message
    for message in messages:
        if message["role"] == "user":
            if pending:
                _close_pending(out, pending, answered)
                pending = []  # answered is read only against pending: reset with the next calls
            out.append(message if vision else _user_without_images(message))
        elif message["role"] == "assistant":
            if pending:
                _close_pending(out, pending, answered)
                pending = []
            if message["stopReason"] in ("error", "aborted"):
                continue
            id_map = {}
            if (message["provider"], message["api"], message["model"]) == own:
                converted, pending = _own_assistant(message, used_ids)
            else:
                converted = _assistant_for(message, target, used_ids, id_map)
                pending = [b for b in converted["content"] if b["type"] == "toolCall"]
            answered = set()
            out.append(converted)
        else:
            original = message["toolCallId"]
            call_id = id_map.get(original, original) if id_map else original
            if call_id in answered:
                continue  # answers a call already answered: every API rejects it
            for call in pending:
                if call["id"] == call_id:
                    break
            else:
                continue  # answers nothing that is still open
            answered.add(call_id)
            result = message
            if call_id != original:
                result = cast(ToolResultMessage, {**message, "toolCallId": call_id})
            out.append(result if vision else _result_without_images(result))
    if pending:
        _close_pending(out, pending, answered)
    return out


# -- assistant messages ----------------------------------------------------------------------------


def _own_assistant(message: AssistantMessage, used_ids: set[str]) -> tuple[AssistantMessage, list[ToolCall]]:
    """The target's own assistant turn: every block kept (its ids noted as used) but unsigned
    empty thinking, the message itself when nothing is dropped; and its tool calls, found in the
    same pass (every request converts every turn)."""
    keep = True
    calls: list[ToolCall] = []
    for block in message["content"]:
        if block["type"] == "toolCall":
            used_ids.add(block["id"])
            calls.append(block)
        elif block["type"] == "thinking" and not _keep_same_model_block(block):
            keep = False
    if keep:
        return message, calls
    return {**message, "content": [b for b in message["content"] if _keep_same_model_block(b)]}, calls


def _assistant_for(
    message: AssistantMessage, target: ModelInfo, used_ids: set[str], id_map: dict[str, str]
) -> AssistantMessage:
    """Another model's assistant turn (the target's own goes through ``_own_assistant``)."""
    content: list[AssistantContent] = []
    for block in message["content"]:
        if block["type"] == "toolCall":
            content.append(_tool_call_for(block, message, target, used_ids, id_map))
        else:
            converted = _foreign_block(block, message, target)
            if converted is not None:
                content.append(converted)
    return {**message, "content": content}


def _keep_same_model_block(block: AssistantContent) -> bool:
    if block["type"] != "thinking":
        return True
    # Signed (even empty) thinking must go back; unsigned empty thinking carries nothing.
    return (
        bool(block.get("thinkingSignature"))
        or block.get("redacted") is True
        or bool(block["thinking"].strip())
    )


def _foreign_block(
    block: AssistantContent, message: AssistantMessage, target: ModelInfo
) -> AssistantContent | None:
    if block["type"] == "text":
        return {"type": "text", "text": block["text"]}
    if block["type"] in ("thinking", "redactedThinking"):
        return None
    if block["type"] == "anthropicServerTool":
        # Server-tool blocks mean something only to the API that ran the tool.
        return (
            block if message["api"] == target["api"] and message["provider"] == target["provider"] else None
        )
    return block


def _tool_call_for(
    call: ToolCall,
    message: AssistantMessage,
    target: ModelInfo,
    used_ids: set[str],
    id_map: dict[str, str],
) -> ToolCall:
    new_id = _unique_id(call["id"], message, target, used_ids)
    id_map[call["id"]] = new_id
    foreign: ToolCall = cast(ToolCall, {k: v for k, v in call.items() if k != "thoughtSignature"})
    foreign["id"] = new_id
    return foreign


# -- synthetic results ---------------------------------------------------------------------------


def _close_pending(out: list[Message], pending: list[ToolCall], answered: set[str]) -> None:
    """Append an error result for every pending tool call that got none."""
    if not pending:
        return
    stamp = _last_timestamp(out)
    for call in pending:
        if call["id"] not in answered:
            synthetic: ToolResultMessage = {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                "isError": True,
                "timestamp": stamp,
            }
            out.append(synthetic)


def _last_timestamp(out: list[Message]) -> int | float:
    # The assistant turn's own time keeps the function pure (no clock) and the order plausible.
    return out[-1]["timestamp"] if out else 0


# -- tool-call ids --------------------------------------------------------------------------------


def _unique_id(original: str, source: AssistantMessage, target: ModelInfo, used: set[str]) -> str:
    attempt = 0
    while True:
        candidate = target_tool_call_id(original, source, target, attempt)
        if candidate not in used:
            used.add(candidate)
            return candidate
        attempt += 1


def target_tool_call_id(original: str, source: AssistantMessage, target: ModelInfo, attempt: int = 0) -> str:
    """The id ``target``'s API accepts for a tool call that ``source`` (another model) made.

    ``attempt > 0`` asks for a different id of the same shape (used to resolve collisions).
    Responses ids have the form ``call_id|item_id``; other APIs get the call part only.
    """
    call_part, _, item_part = original.partition("|")
    salt = f"{original}#{attempt}" if attempt else original
    api = target["api"]
    if api == "openai-responses":
        call = _fit(call_part, 64, salt if attempt else None)
        same_api = source["api"] == api and source["provider"] == target["provider"]
        if same_api and item_part.startswith("fc") and not attempt:
            item = _fit(item_part, 64, None)
        else:
            item = "fc_" + _hash36(salt, 24)
        return f"{call}|{item}"
    if api == "openai-completions" and _is_mistral(target):
        compact = _NOT_ALNUM.sub("", call_part)
        return compact if len(compact) == 9 and not attempt else _hash36(salt, 9)
    if api == "openai-completions":
        return _fit(call_part, 40, salt if attempt else None)
    return _fit(call_part, 64, salt if attempt else None)


def _is_mistral(target: ModelInfo) -> bool:
    return target["provider"] == "mistral" or "mistral.ai" in target["baseUrl"]


def _fit(text: str, limit: int, salt: str | None) -> str:
    """``text`` with characters outside ``[A-Za-z0-9_-]`` replaced, at most ``limit`` long.

    Too long (or a ``salt`` given): a prefix plus a hash of the whole, so distinct long ids that
    share a prefix stay distinct.
    """
    clean = _NOT_ID_CHAR.sub("_", text) or "call"
    if len(clean) <= limit and salt is None:
        return clean
    digest = _hash36(salt if salt is not None else text, 12)
    return clean[: limit - len(digest) - 1] + "_" + digest


def _hash36(text: str, length: int) -> str:
    """``length`` base-36 digits of ``text``'s hash. ``surrogatepass``: an id a server escaped
    with half a surrogate pair in it is text UTF-8 cannot encode, and every later request of the
    conversation failed to be built ("surrogates not allowed")."""
    number = int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), "big"
    )
    chars: list[str] = []
    for _ in range(length):
        number, digit = divmod(number, 36)
        chars.append(_BASE36[digit])
    return "".join(chars)


# -- images -----------------------------------------------------------------------------------------


def _user_without_images(message: UserMessage) -> UserMessage:
    content = message["content"]
    if isinstance(content, str):
        return message
    for block in content:  # a loop, not any() over a generator: every request, every turn
        if block["type"] == "image":
            return {**message, "content": _replace_images(content, USER_IMAGE_PLACEHOLDER)}
    return message


def _result_without_images(message: ToolResultMessage) -> ToolResultMessage:
    for block in message["content"]:
        if block["type"] == "image":
            return {**message, "content": _replace_images(message["content"], TOOL_IMAGE_PLACEHOLDER)}
    return message


def _replace_images(content: list[UserContent], placeholder: str) -> list[UserContent]:
    """Each run of images becomes one placeholder text block."""
    out: list[UserContent] = []
    for block in content:
        if block["type"] == "image":
            last = out[-1] if out else None
            if not (last is not None and last["type"] == "text" and last["text"] == placeholder):
                text: TextContent = {"type": "text", "text": placeholder}
                out.append(text)
        else:
            out.append(block)
    return out


__all__ = [
    "NO_RESULT_TEXT",
    "TOOL_IMAGE_PLACEHOLDER",
    "USER_IMAGE_PLACEHOLDER",
    "is_same_model",
    "target_tool_call_id",
    "transform_messages",
]
