"""Lowering the 11 transcript roles to what a model request carries.

Two steps, because only the second depends on the provider:

1. ``convert_to_llm(messages)`` maps every role to ``user``/``assistant``/``toolResult`` or
   ``developer`` (host-authored context): shell and Python runs become user messages that
   describe the run; file mentions, custom and hook messages become developer messages (user
   messages when they carry images, which developer turns cannot); branch and compaction
   summaries become user messages behind a fixed preamble; steering prompts get a fixed
   envelope. Every rendering depends only on the message itself, never on its position, so a
   message's bytes are the same in every request and prompt caches keep hitting.
2. ``to_provider_messages(messages, model)`` decides what a ``developer`` message is for this
   model. ``tether.wire.Message`` (what ``Context.messages`` holds) has no developer role, so by
   default a developer message becomes a ``user`` message with the same content and
   timestamp. A model whose descriptor sets ``compat.supportsDeveloperRole`` keeps the
   ``developer`` role, and its provider must send it as its own developer/system role.

``lower_for(model)`` is the ``convert_to_llm`` callable the agent loop takes: it does both steps
itself, in one pass over the transcript.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from tether.wire import AgentMessage, DeveloperMessage, Message, ModelInfo

LlmMessage = Message | DeveloperMessage
"""Output of the first step: the provider roles plus ``developer``."""

STEERING_PREFIX = "[The user sent this message while you were working. Take it into account.]\n"
COMPACTION_PREFIX = (
    "The conversation before this point was compacted into the following summary:\n\n<summary>\n"
)
BRANCH_PREFIX = (
    "The user explored another branch of this conversation and came back. "
    "Summary of that branch:\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"


def convert_to_llm(messages: Sequence[AgentMessage]) -> list[LlmMessage]:
    """Lower transcript messages (any role) to provider roles plus ``developer``."""
    out: list[LlmMessage] = []
    for message in messages:
        lowered = lower_message(message)
        if lowered is not None:
            out.append(lowered)
    return out


_AS_THEY_ARE = frozenset(("user", "assistant", "toolResult"))
"""The roles a model takes as they are, a user message unless it was steered: ``lower_message``'s
rule, and ``lower_for``'s test for a message it keeps without a call."""


def lower_message(message: AgentMessage) -> LlmMessage | None:
    """One message's lowering; ``None`` when it is not for the model."""
    m: Any = message  # read as a plain dict; typed ``Any`` rather than ``cast`` (a call per message)
    role = m.get("role")
    if role in _AS_THEY_ARE:
        return _steering(m) if role == "user" and m.get("steering") else m
    if role == "developer":
        return m
    if role == "bashExecution":
        if m.get("excludeFromContext"):
            return None
        text = _execution_text("The user ran a shell command.", "command", m.get("command", ""), m)
        images = cast(list[Any], m.get("images") or [])
        content: Any = [{"type": "text", "text": text}, *images] if images else text
        return _user(content, m)
    if role == "pythonExecution":
        if m.get("excludeFromContext"):
            return None
        return _user(_execution_text("The user ran Python code.", "code", m.get("code", ""), m), m)
    if role in ("custom", "hookMessage"):
        content = m.get("content", "")
        return _user(content, m) if _has_image(content) else _developer(content, m)
    if role == "fileMention":
        return _file_mention(m)
    if role == "branchSummary":
        return _user(BRANCH_PREFIX + str(m.get("summary", "")) + SUMMARY_SUFFIX, m)
    if role == "compactionSummary":
        return _user(COMPACTION_PREFIX + str(m.get("summary", "")) + SUMMARY_SUFFIX, m)
    return None  # a role from a newer writer: not ours to show the model


def supports_developer_role(model: ModelInfo | None) -> bool:
    compat: dict[str, Any] = (model.get("compat") or {}) if model is not None else {}
    return compat.get("supportsDeveloperRole") is True


def to_provider_messages(messages: Sequence[LlmMessage], model: ModelInfo | None) -> list[Message]:
    """Map ``developer`` messages to what ``model`` accepts (see the module docstring)."""
    if supports_developer_role(model):
        return cast(list[Message], list(messages))
    out: list[Message] = []
    for message in messages:
        if message["role"] == "developer":
            out.append(_developer_as_user(message))
        else:
            out.append(message)
    return out


_SESSION_ROLES = frozenset((
    *_AS_THEY_ARE, "developer", "bashExecution", "pythonExecution", "custom", "hookMessage",
    "fileMention", "branchSummary", "compactionSummary",
))  # fmt: skip
"""The transcript roles ``lower_message`` knows: ``lower_after`` passes any other to the agent's hook."""


def lower_for(
    model: ModelInfo | Callable[[], ModelInfo | None] | None, *, others: bool = False
) -> Callable[[list[AgentMessage]], list[Message]]:
    """A ``convert_to_llm`` for the agent loop: both steps, for a fixed or current model.
    ``others``: a message of a role not the session's is kept as it is (for the agent's own
    ``convert_to_llm``, ``lower_after``), not dropped."""

    def convert(messages: list[AgentMessage]) -> list[Message]:
        # Both steps in one pass, a message the model takes as it is (almost all of them) kept
        # without a call: the loop converts the whole transcript before every model call.
        developer = supports_developer_role(model() if callable(model) else model)
        out: list[Message] = []
        for message in messages:
            m: Any = message
            role = m.get("role")
            if (role in _AS_THEY_ARE and not m.get("steering")) or (others and role not in _SESSION_ROLES):
                out.append(m)
                continue
            lowered: Any = lower_message(m)
            if lowered is None:
                continue
            if lowered["role"] == "developer" and not developer:
                lowered = _developer_as_user(lowered)
            out.append(lowered)
        return out

    return convert


OwnConvert = Callable[[list[AgentMessage]], "list[Message] | Awaitable[list[Message]]"]
"""An agent's own ``convert_to_llm`` (``Agent(convert_to_llm=...)``)."""


def lower_after(
    own: OwnConvert, model: Callable[[], ModelInfo | None]
) -> Callable[[list[AgentMessage]], list[Message] | Awaitable[list[Message]]]:
    """The session lowers its roles (summaries, shell runs, file mentions, developer messages),
    then the agent's own ``convert_to_llm`` lowers its message kinds, left as they were: a hook
    written as ``Agent`` suggests (lower mine, hand the rest to ``default_convert_to_llm``) ran
    first and dropped every session role, a compaction's summary with them. Its answer is the
    loop's to check (one that is no list is named as the hook's).

    For a model that takes the ``developer`` role, the hook sees each developer message (a file
    mention, a custom message) as a user message of the same content, and what it keeps of
    those as they came goes to the model as developer again: a hook that hands the rest to
    ``default_convert_to_llm`` (which keeps the roles every provider knows) dropped them."""
    lower = lower_for(model, others=True)

    def convert(messages: list[AgentMessage]) -> list[Message] | Awaitable[list[Message]]:
        lowered = cast(list[Any], lower(messages))
        if not supports_developer_role(model()):
            return own(lowered)
        # ``id`` of a stand-in → the stand-in (held here: no other object takes its id meanwhile)
        # and the developer message it stands in for
        stand_ins: dict[int, tuple[Any, Any]] = {}
        shown: list[Any] = []
        for message in lowered:
            if message["role"] == "developer":
                stand_in = _developer_as_user(message)
                stand_ins[id(stand_in)] = (stand_in, message)
                message = stand_in
            shown.append(message)
        answer = own(shown)
        if not stand_ins:
            return answer
        if inspect.isawaitable(answer):
            return _restored_later(answer, stand_ins)
        return _restored(answer, stand_ins)

    return convert


def _restored(answer: Any, stand_ins: dict[int, tuple[Any, Any]]) -> Any:
    """``answer`` with each developer message's stand-in (``lower_after``) the message again;
    anything but a list as it came (the loop names what the hook returned)."""
    if not isinstance(answer, list):
        return answer
    restored: list[Any] = []
    for m in cast(list[Any], answer):
        pair = stand_ins.get(id(m))
        restored.append(pair[1] if pair is not None and pair[0] is m else m)
    return restored


async def _restored_later(answer: Awaitable[Any], stand_ins: dict[int, tuple[Any, Any]]) -> Any:
    return _restored(await answer, stand_ins)


# --- renderings ---------------------------------------------------------------------------------


def _user(content: Any, source: dict[str, Any]) -> Message:
    return cast(Message, {"role": "user", "content": content, "timestamp": source.get("timestamp", 0)})


def _developer_as_user(message: Any) -> Message:
    """A developer message for a model without the role: a user message of the same content."""
    return _user(message["content"], message)


def _developer(content: Any, source: dict[str, Any]) -> DeveloperMessage:
    return cast(
        DeveloperMessage, {"role": "developer", "content": content, "timestamp": source.get("timestamp", 0)}
    )


def _steering(m: dict[str, Any]) -> Message:
    content = m.get("content", "")
    if isinstance(content, str):
        wrapped: Any = STEERING_PREFIX + content
    else:
        wrapped = [{"type": "text", "text": STEERING_PREFIX.rstrip("\n")}, *cast(list[Any], content)]
    return cast(Message, {**m, "content": wrapped})


def _execution_text(intro: str, tag: str, source: object, m: dict[str, Any]) -> str:
    output = str(m.get("output", ""))
    lines = [intro, f"<{tag}>", str(source), f"</{tag}>", "<output>", output, "</output>"]
    if m.get("cancelled"):
        lines.append("It was cancelled before it finished.")
    exit_code = m.get("exitCode")
    if isinstance(exit_code, int):
        lines.append(f"Exit status: {exit_code}")
    elif not m.get("cancelled"):
        lines.append("Exit status: unknown")
    if m.get("truncated"):
        lines.append("The output was truncated; only part of it is shown.")
    return "\n".join(lines)


def _has_image(content: object) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and cast(dict[str, Any], b).get("type") == "image"
        for b in cast(list[Any], content)
    )


def _file_mention(m: dict[str, Any]) -> LlmMessage | None:
    files = [cast(dict[str, Any], f) for f in cast(list[Any], m.get("files") or []) if isinstance(f, dict)]
    if not files:
        return None
    texts: list[str] = []
    images: list[Any] = []
    for f in files:
        path = _attr(str(f.get("path", "")))
        image = f.get("image")
        skipped = f.get("skippedReason")
        if isinstance(image, dict):
            texts.append(f'<file path="{path}" type="image" />')
            images.append(image)
        elif isinstance(skipped, str):
            size = f.get("byteSize")
            size_attr = f' bytes="{size}"' if isinstance(size, int) else ""
            texts.append(f'<file path="{path}" skipped="{_attr(skipped)}"{size_attr} />')
        else:
            texts.append(f'<file path="{path}">\n{f.get("content", "")}\n</file>')
    text = "\n".join(texts)
    if images:
        return _user([{"type": "text", "text": text}, *images], m)
    return _developer(text, m)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
