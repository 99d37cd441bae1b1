"""Property: whatever sequence of operations a session goes through, the context kept
incrementally in memory equals the one rebuilt from the database, before and after reopening
(on each backend: every example is a new session of the test's store)."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings, strategies as st

from session_helpers import MODEL, assistant, call, result, text, user
from tether.session import BranchError, Session, SessionManager, build_context, pending_tool_calls

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(max_size=8)),
        st.tuples(st.just("assistant"), st.text(max_size=8)),
        st.tuples(st.just("tool_turn"), st.integers(1, 3)),
        st.tuples(st.just("branch"), st.integers(0, 10_000)),
        st.tuples(st.just("compact"), st.integers(0, 10_000)),
        st.tuples(st.just("setting"), st.sampled_from(["low", "high", "flex", "prompt A"])),
        st.tuples(st.just("label"), st.integers(0, 10_000)),
        st.tuples(st.just("reopen"), st.just(0)),
    ),
    max_size=30,
)


def _apply(manager: SessionManager, s: Session, op: str, arg: object) -> Session:
    ids = [e["id"] for e in s.entries()]
    path = [e["id"] for e in s.path()]
    if op == "user":
        s.append_message(user(str(arg)))
    elif op == "assistant":
        s.append_message(assistant(text(str(arg))))
    elif op == "tool_turn":
        n = int(str(arg))
        s.append_message(assistant(*[call(f"c{i}") for i in range(n)]))
        for i in range(n):
            s.append_message(result(f"c{i}", "out"))
    elif op == "branch" and ids:
        with contextlib.suppress(BranchError):  # a stranded tool batch: refused, tested elsewhere
            s.branch(ids[int(str(arg)) % len(ids)])
    elif op == "compact" and path:
        s.append_compaction("summary", path[int(str(arg)) % len(path)], 10)
    elif op == "setting":
        {"low": s.set_thinking_level, "high": s.set_thinking_level, "flex": s.set_service_tier}.get(
            str(arg), s.set_system_prompt
        )(str(arg))
    elif op == "label" and ids:
        s.label(ids[int(str(arg)) % len(ids)], "mark")
    elif op == "reopen":
        s.close()
        return manager.open(s.id)
    return s


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_incremental_context_equals_rebuilt_context(
    manager: SessionManager, ops: list[tuple[str, object]]
) -> None:
    s = manager.create("/p", model=MODEL)
    for op, arg in ops:
        s = _apply(manager, s, op, arg)
        rebuilt = build_context(s.path_nodes())
        assert s.context == rebuilt
    live = s.context
    s.close()
    reopened = manager.open(s.id, readonly=True)
    assert reopened.context == live
    assert reopened.leaf_id == s.leaf_id
    assert reopened.labels() == s.labels()
    assert pending_tool_calls(reopened.path_nodes()) == {}  # branching never strands a call
