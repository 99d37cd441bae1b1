"""``LlmFilter`` gives what ``default_convert_to_llm`` gives, whatever happens to the transcript."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tether.agent.llm_filter import LlmFilter
from tether.agent.types import default_convert_to_llm
from tether.wire import AgentMessage

ROLES = ["user", "assistant", "toolResult", "custom"]


def message(role: str, n: int) -> AgentMessage:
    # the filter reads only the role: a bare message of any role, whose fields no one type has
    return {"role": role, "content": f"m{n}", "timestamp": n}  # type: ignore[return-value]


def check(llm_filter: LlmFilter, messages: list[AgentMessage]) -> None:
    got = llm_filter(messages)
    expected = default_convert_to_llm(messages)
    assert got == expected
    assert all(a is b for a, b in zip(got, expected, strict=True)), "not the transcript's own objects"
    assert got is not messages


# One step between two calls: what the loop does (append, replace the streaming tail) and what a
# hook might do to the transcript it was handed (rewrite, copy, drop, insert, reorder).
STEP = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(ROLES)),
    st.tuples(st.just("replace_last"), st.sampled_from(ROLES)),
    st.tuples(st.just("replace_at"), st.sampled_from(ROLES), st.integers(0, 50)),
    st.tuples(st.just("equal_copy_at"), st.integers(0, 50)),
    st.tuples(st.just("delete_at"), st.integers(0, 50)),
    st.tuples(st.just("insert_at"), st.sampled_from(ROLES), st.integers(0, 50)),
    st.tuples(st.just("new_list")),
    st.tuples(st.just("reverse")),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(ROLES), max_size=8), st.lists(st.lists(STEP, max_size=4), max_size=12))
def test_matches_the_default_after_any_changes(
    start: list[str], rounds: list[list[tuple[object, ...]]]
) -> None:
    counter = iter(range(10_000))
    messages = [message(role, next(counter)) for role in start]
    llm_filter = LlmFilter()
    check(llm_filter, messages)
    for steps in rounds:
        for step in steps:
            kind = step[0]
            if kind == "append":
                messages.append(message(str(step[1]), next(counter)))
            elif not messages:
                continue
            elif kind == "replace_last":
                messages[-1] = message(str(step[1]), next(counter))
            elif kind == "replace_at":
                messages[int(str(step[2])) % len(messages)] = message(str(step[1]), next(counter))
            elif kind == "equal_copy_at":
                index = int(str(step[1])) % len(messages)
                messages[index] = messages[index].copy()
            elif kind == "delete_at":
                del messages[int(str(step[1])) % len(messages)]
            elif kind == "insert_at":
                messages.insert(int(str(step[2])) % len(messages), message(str(step[1]), next(counter)))
            elif kind == "new_list":
                messages = list(messages)
            elif kind == "reverse":
                messages.reverse()
        check(llm_filter, messages)


def test_a_message_without_a_role_raises_and_leaves_the_filter_usable() -> None:
    llm_filter = LlmFilter()
    messages = [message("user", 0), message("custom", 1)]
    check(llm_filter, messages)
    broken: AgentMessage = {"content": "no role"}  # type: ignore[typeddict-item]  # ill-formed on purpose
    messages.append(broken)
    with pytest.raises(KeyError):
        llm_filter(messages)
    messages[-1] = message("assistant", 2)
    check(llm_filter, messages)
    messages.append(message("toolResult", 3))
    check(llm_filter, messages)


RESULT_CHANGES = st.sampled_from(["pop", "append", "replace_first", "clear", "reverse", "none"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(ROLES), max_size=8), st.lists(st.tuples(RESULT_CHANGES, st.sampled_from(ROLES)))
)
def test_a_caller_changing_the_returned_list_changes_nothing(
    start: list[str], rounds: list[tuple[str, str]]
) -> None:
    """The filter may keep the list it returned as its memory of the transcript: whatever the
    caller (a stream function) does to that list, the next answers stay the default's."""
    counter = iter(range(10_000))
    messages = [message(role, next(counter)) for role in start]
    llm_filter = LlmFilter()
    for change, role in rounds:
        returned = llm_filter(messages)
        if change == "pop" and returned:
            returned.pop()
        elif change == "append":  # a caller may put any message there: the ignores say so
            returned.append(message(role, next(counter)))  # type: ignore[arg-type]
        elif change == "replace_first" and returned:
            returned[0] = message(role, next(counter))  # type: ignore[assignment]
        elif change == "clear":
            returned.clear()
        elif change == "reverse":
            returned.reverse()
        messages.append(message(role, next(counter)))
        check(llm_filter, messages)


# What the loop does to its own transcript between two calls when no hook is handed it.
GROWTH = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(ROLES)),
    st.tuples(st.just("replace_new"), st.sampled_from(ROLES)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(ROLES), max_size=8), st.lists(st.lists(GROWTH, max_size=5), max_size=12))
def test_a_private_filter_matches_the_default_while_the_list_only_grows(
    start: list[str], rounds: list[list[tuple[str, str]]]
) -> None:
    """Private: no prefix check. Appending, and replacing what was appended since the last call
    (the streaming message by its final form), keep it exact; its answers are still copies."""
    counter = iter(range(10_000))
    messages = [message(role, next(counter)) for role in start]
    llm_filter = LlmFilter(private=True)
    check(llm_filter, messages)
    for steps in rounds:
        known = len(messages)
        for kind, role in steps:
            if kind == "append" or len(messages) == known:
                messages.append(message(role, next(counter)))
            else:
                messages[-1] = message(role, next(counter))
        returned = llm_filter(messages)
        assert returned == default_convert_to_llm(messages)
        returned.clear()  # the caller (a stream function) owns the answer
        check(llm_filter, messages)
