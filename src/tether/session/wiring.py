"""The pieces that connect a ``Session`` to a run of the agent (used by ``AgentSession``).

- ``record_settings``: execution settings that differ from the session's become entries;
- ``request_view``: before each model call, compact at ``context_window - reserve_tokens``,
  then let the prompt hooks edit a transient copy of the request;
- ``recover_from_overflow``: after a run that failed with a context overflow, move the failed
  reply onto an abandoned branch and compact, so the caller can continue once.

Each finished message is appended by ``AgentSession._store_message_end`` itself: it runs for
every message, and reaching a function here costs an import statement each time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from operator import is_
from typing import cast

from tether.ai.abort import AbortSignal
from tether.ai.types import StreamFn
from tether.session.budget import CompactionSettings, is_context_overflow, should_compact
from tether.session.context import SessionContext
from tether.session.prompt import PromptHook, run_prompt_hooks
from tether.session.session import Session
from tether.wire import AgentMessage, ModelInfo
from tether.wire.model import MODEL_DESCRIPTION


def record_settings(
    session: Session,
    *,
    model: ModelInfo | None,
    thinking_level: str | None = None,
    service_tier: str | None = None,
    system_prompt: str | None = None,
) -> None:
    """Append a settings entry for each value that differs from the session's current one. A
    model differs by provider or id, or by what it is under the same id (``models.json`` raised
    its ``contextWindow``): the session's descriptor is what a resume falls back to once the id
    is no longer listed, so it follows the model as it runs (pi stores no descriptor at all).

    Every pass of a run asks (``agent_start``), and the answer is nearly always the last one's:
    when the session's settings and the values given are those of the last call (the model as
    its ``repr``, so a change inside the same dict counts), nothing is compared again. The
    comparison walked the model's descriptor twice (~300 bytecodes a stored message, P6)."""
    ctx = session.context
    given = (repr(model), thinking_level, service_tier, system_prompt)
    last = session.settings_checked
    if last is not None and last[0] is ctx and last[1] is ctx.model and last[2] == _held(ctx, given):
        return
    if model is not None and (
        ctx.model is None
        or (ctx.model.provider, ctx.model.model_id) != (model["provider"], model["id"])
        or (ctx.model.info is not None and _described(ctx.model.info) != _described(model))
    ):
        session.set_model(model)
    if thinking_level is not None and thinking_level != ctx.thinking_level:
        session.set_thinking_level(thinking_level)
    if service_tier != ctx.service_tier and not (service_tier is None and ctx.service_tier is None):
        session.set_service_tier(service_tier)
    if (system_prompt or None) != (ctx.system_prompt or None):
        session.set_system_prompt(system_prompt or "")
    ctx = session.context
    session.settings_checked = (ctx, ctx.model, _held(ctx, given))


def _held(ctx: SessionContext, given: tuple[str, str | None, str | None, str | None]) -> tuple[object, ...]:
    """What ``record_settings`` compared: the session's settings (but its model, compared by
    identity) and the values it was given."""
    return (ctx.thinking_level, ctx.service_tier, ctx.system_prompt, *given)


def _described(model: ModelInfo) -> list[object]:
    """What describes ``model``, as JSON holds it: a live model may hold tuples (an embedder's
    ``"input": ("text", "image")``), which its stored form reads back as lists."""
    return [_as_json(model.get(key)) for key in MODEL_DESCRIPTION]


def _as_json(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return [_as_json(each) for each in cast("list[object]", value)]
    if isinstance(value, dict):
        return {key: _as_json(each) for key, each in cast("dict[str, object]", value).items()}
    return value


_SESSION_MADE = frozenset({"compactionSummary", "branchSummary"})
"""Roles of the messages only a session's context makes, afresh at each rebuild. The transcript a
run started with holds the ones of that time; once a compaction during the run rebuilt the
context, the session no longer knows those objects, and taken for messages of the run it did not
record they went after the newest messages of every later request: a stale summary after the
prompt. Unknown, they are simply stale: the session's context has what replaced them."""


async def request_view(
    session: Session,
    messages: Sequence[AgentMessage],
    *,
    model: ModelInfo,
    summarizer: Callable[[], StreamFn],
    hooks: Sequence[PromptHook],
    compaction: CompactionSettings,
    signal: AbortSignal | None,
    on_due: Callable[[], Awaitable[None]] | None = None,
) -> tuple[list[AgentMessage], bool]:
    """The messages for one model call, and whether a compaction ran first.

    The base is the session's context (so a compaction applies at once) followed by any message
    of the run the session does not hold; the hooks then edit a transient copy of it. ``on_due``
    is awaited first when the context is due for compaction (before it is tried). ``summarizer``
    makes the summary's model call, only then: making it (retries, tracing, the API key) cost
    more than the rest of this, before every model call of every stored session.
    """
    request = ready_request(session, messages, model=model, compaction=compaction)
    compacted = False
    if request is None:  # due for compaction: the run's unrecorded messages follow its result
        from tether.session.compaction import CompactionError, compact  # the summariser, when due

        unrecorded = _unrecorded(session, messages)
        if on_due is not None:
            await on_due()
        try:
            await compact(session, model, summarizer(), settings=compaction, signal=signal)
            compacted = True
        except CompactionError:
            pass  # too little to compact: a real overflow comes back as an error and is retried
        request = [*session.messages, *unrecorded]
    if not hooks:  # the usual case: no copy to edit, no ids to look up
        return request, compacted
    edited = await run_prompt_hooks(hooks, request, session.message_ids(request), model=model)
    return edited, compacted


def ready_request(
    session: Session, messages: Sequence[AgentMessage], *, model: ModelInfo, compaction: CompactionSettings
) -> list[AgentMessage] | None:
    """``request_view``'s answer without hooks when nothing is to be awaited first: ``None`` when
    the context is due for compaction (``request_view`` compacts it then)."""
    unrecorded = _unrecorded(session, messages)
    if should_compact(session.context.tokens.plus(unrecorded), model.get("contextWindow"), compaction):
        return None
    return [*session.messages, *unrecorded]


def _unrecorded(session: Session, messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """The messages of ``messages`` the session does not hold (summaries it made aside).

    A run's transcript is nearly always the session's context itself, the same objects in the
    same order (each message is recorded as it ends), with nothing after them: then none is
    unrecorded, and only what follows the context need be looked up. Compared by identity in
    C (``map(is_, ...)``), that costs the transcript's length in a few instructions a message,
    where looking up every message's id cost ~140 bytecodes a stored message at P6 and grew
    with the transcript, before every model call. A context message is known by definition,
    so the answer is the one the lookup of the whole transcript gives."""
    context = session.messages
    start = len(context)
    if len(messages) < start or not all(map(is_, messages, context)):
        start = 0
    tail = messages[start:] if start else messages
    if not tail:
        return []
    ids = session.message_ids(tail)
    return [m for m, i in zip(tail, ids, strict=True) if i is None and m["role"] not in _SESSION_MADE]


async def recover_from_overflow(
    session: Session,
    added: Sequence[AgentMessage],
    *,
    model: ModelInfo,
    stream_fn: StreamFn,
    compaction: CompactionSettings,
    signal: AbortSignal | None,
) -> bool:
    """True when the run ended in a context overflow and the session is now compacted without
    the failed reply, ready to continue; False (nothing changed) otherwise."""
    last = added[-1] if added else None
    if last is None or last["role"] != "assistant" or not is_context_overflow(last):
        return False
    failed = session.message_id(last)
    if failed is None:
        return False
    from tether.session.compaction import CompactionError, compact

    session.branch(session.entry(failed)["parentId"])
    recovered = False
    try:
        await compact(session, model, stream_fn, settings=compaction, signal=signal)
        recovered = True
    except CompactionError:
        pass
    finally:
        if not recovered:  # nothing to gain, or aborted: keep the error where the user sees it
            session.branch(failed)
    return recovered
