"""The RPC protocol's events are the session's vocabulary: it forwards every event an
``AgentSession`` emits but ``notice`` (shown through the extension UI instead), adds only its own
``bash_execution_update``, and the six events it declares in their own wire form name every key
the in-process declaration names. (Each frame the server writes is checked against the schema
built from these declarations by ``rpc_support.CheckedClient``.)"""

from __future__ import annotations

from typing import get_args, get_type_hints

from tether.rpc import protocol
from tether.session.events import SESSION_EVENT_TYPES, SessionEvent
from tether.wire.records import type_tags


def keys_by_type(union: object) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    for member in get_args(union):
        for kind in type_tags(member):
            keys.setdefault(kind, set()).update(member.__annotations__)
    return keys


def test_the_rpc_events_are_the_session_vocabulary_without_notice_plus_its_own() -> None:
    assert set(protocol.EVENT_TYPES) - set(SESSION_EVENT_TYPES) == protocol.RPC_ONLY_EVENT_TYPES
    assert set(protocol.EVENT_TYPES) == (set(SESSION_EVENT_TYPES) - {"notice"}) | {"bash_execution_update"}


def test_a_wire_form_names_every_key_of_the_event_it_carries() -> None:
    session = keys_by_type(SessionEvent)
    wire = keys_by_type(get_args(protocol.Event)[0])
    missing = {(kind, key) for kind, keys in session.items() if kind in wire for key in keys - wire[kind]}
    assert missing == set()


def test_the_shared_events_are_the_same_classes() -> None:
    """Declared once: the loop, the session and the protocol name the classes of wire.events."""
    from tether.agent import types as agent_types
    from tether.session import events as session_events
    from tether.wire import events

    for name in ("AgentStartEvent", "TurnEndEvent", "MessageEndEvent", "ToolExecutionStartEvent"):
        assert getattr(protocol, name) is getattr(agent_types, name) is getattr(events, name)
    for name in (
        "AgentSettledEvent",
        "QueueUpdateEvent",
        "CompactionStartEvent",
        "SessionInfoChangedEvent",
        "EntryAppendedEvent",
        "ExtensionErrorEvent",
        "SummarizationRetryScheduledEvent",
        "SummarizationRetryAttemptStartEvent",
        "SummarizationRetryFinishedEvent",
    ):
        assert getattr(protocol, name) is getattr(session_events, name) is getattr(events, name)


def test_message_start_on_the_wire_is_the_loops_or_a_pending_reply() -> None:
    """The one wire form that widens its in-process event: a reply that has just begun."""
    from tether.wire import events

    wire_form = get_type_hints(protocol.MessageStartEvent)["message"]
    assert get_args(wire_form) == (
        *get_args(get_type_hints(events.MessageStartEvent)["message"]),
        protocol.PendingReply,
    )
