"""pi 1.6.0's events and message fields, read from pi's own type declarations in the installed npm
packages, against what tether sends: the complete difference is ``NOT_SENT`` below, each with its
reason, and docs/rpc.md ("pi 1.6's events and fields") says the same.

- Events: ``AgentEvent`` (pi-agent-core), ``AgentSessionEvent`` (pi-coding-agent's core, with
  ``parentToolCallId`` on the tool events) and the frames RPC mode writes itself
  (``extension_error``), against the RPC protocol's event frames.
- Message fields: pi-ai's ``AssistantMessage``, ``ToolResultMessage``, ``UserMessage``,
  ``Usage``, ``TextContent``, ``ThinkingContent`` and ``ToolCall``, against seed 000's
  declarations plus the fields the session stamps (``tether.session.message_stamps``) and the ones
  two providers add (``responseModel``, OpenAI-compatible; ``redacted``, Anthropic).

A field or event pi adds in a later version fails here until it is sent or named; one named
here that tether sends fails too (the list stays the true difference).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from pi_packages import PI_16, installed
from tether import wire
from tether.rpc import protocol
from tether.session.message_stamps import MessageStamps
from tether.wire.records import type_tags

pytestmark = pytest.mark.node

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rpc.md"

NOT_SENT: dict[tuple[str, str], str] = {
    ("tool_execution_start", "parentToolCallId"): "tether's tools cannot call other tools",
    ("tool_execution_update", "parentToolCallId"): "tether's tools cannot call other tools",
    ("tool_execution_end", "parentToolCallId"): "tether's tools cannot call other tools",
    ("AssistantMessage", "providerThinkingLevel"): "the provider-native effort is not recorded",
    ("AssistantMessage", "diagnostics"): "tether's providers report none",
    ("AssistantMessage", "deferred"): "tether has no deferred (batch) replies",
    ("AssistantMessage", "rawStopReason"): "the provider's own finish reason is not kept",
    ("AssistantMessage", "endTurn"): "not recorded (pi keeps it for debugging only)",
    ("ToolResultMessage", "usage"): "tether's tools make no model calls of their own",
    ("ToolResultMessage", "nestedCalls"): "tether's tools cannot call other tools",
    ("Usage", "cacheWrite1h"): "the 1-hour cache-write split is not kept",
    ("Usage", "reasoning"): "named reasoningTokens in seed 000",
    ("ToolCall", "namespace"): "OpenAI Responses namespaces are not used",
    ("ToolCall", "argumentsError"): "tether keeps what parses of the arguments; validation judges it",
}
"""(event or message type, field) -> why tether does not send it. An event name alone, with
field ``""``, would be an event tether never sends: there is none."""


def _members(block: str) -> list[str]:
    """The ``{ ... }`` object types of a union, flat ones only (pi's event types are)."""
    return re.findall(r"\{([^{}]*)\}", block)


def _fields(body: str) -> set[str]:
    return set(re.findall(r"(?:^|;|\n)\s*(?:readonly\s+)?(\w+)\??:", body))


def _declaration(text: str, start: str, end: str) -> str:
    at = text.index(start)
    return text[at : text.index(end, at) + len(end)]


def pi_events() -> dict[str, set[str]]:
    """Event type -> its fields (``type`` included), as pi 1.6 declares and sends them."""
    pi = installed(PI_16)
    modules = pi.package.parent
    core = (modules / "pi-agent-core" / "dist" / "types.d.ts").read_text()
    session = (pi.package / "dist" / "core" / "agent-session.d.ts").read_text()
    rpc = (pi.package / "dist" / "modes" / "rpc" / "rpc-mode.js").read_text()
    events: dict[str, set[str]] = {}
    for block in (
        _declaration(core, "export type AgentEvent =", "};\n"),
        _declaration(session, "export type AgentSessionEvent =", "};\n"),
    ):
        for member in _members(block):
            kind = re.search(r'type: "(\w+)"', member)
            if kind is not None:
                events.setdefault(kind.group(1), set()).update(_fields(member))
    assert "WithParentToolCallId<Exclude<AgentEvent" in session  # the tool events gain the field
    for kind in ("tool_execution_start", "tool_execution_update", "tool_execution_end"):
        events[kind].add("parentToolCallId")
    for kind, keys in re.findall(r'output\(\{ type: "(\w+)", ([^}]*)\}\)', rpc):
        events.setdefault(kind, {"type"}).update(re.findall(r"(\w+):", keys))
    return events


def pi_messages() -> dict[str, set[str]]:
    """Message and block type -> its top-level fields, as pi-ai 1.6 declares them."""
    pi = installed(PI_16)
    types = (pi.package.parent / "pi-ai" / "dist" / "types.d.ts").read_text()
    found: dict[str, set[str]] = {}
    for name in ("AssistantMessage", "UserMessage", "Usage", "TextContent", "ThinkingContent", "ToolCall"):
        body = _declaration(types, f"export interface {name} {{", "\n}\n")
        found[name] = set(re.findall(r"\n    (\w+)\??:", body))
    body = _declaration(types, "export type ToolResultMessage<", "} : never;")
    found["ToolResultMessage"] = set(re.findall(r"\n    (\w+)\??:", body))
    return found


def tether_events() -> dict[str, set[str]]:
    """Frame type -> its fields, for every frame the RPC server writes (events, extension UI)."""
    events: dict[str, set[str]] = {}
    for member in get_args(get_args(protocol.ServerFrame)[0]):
        for kind in type_tags(member):
            events.setdefault(kind, set()).update(member.__required_keys__ | member.__optional_keys__)
    return events


def tether_messages() -> dict[str, set[str]]:
    stamped = MessageStamps.__optional_keys__
    declared = {
        name: set(getattr(wire, name).__required_keys__ | getattr(wire, name).__optional_keys__)
        for name in ("AssistantMessage", "UserMessage", "Usage", "TextContent", "ThinkingContent", "ToolCall")
    }
    declared["ToolResultMessage"] = set(
        wire.ToolResultMessage.__required_keys__ | wire.ToolResultMessage.__optional_keys__
    )
    declared["AssistantMessage"] |= stamped
    declared["AssistantMessage"] |= {"responseModel"}  # openai_completions: a response naming another model
    declared["ThinkingContent"] |= {"redacted"}  # anthropic_messages: a redacted_thinking block
    declared["ToolResultMessage"] |= {"durationMs"}
    return declared


def _difference(pi: dict[str, set[str]], ours: dict[str, set[str]]) -> dict[tuple[str, str], None]:
    missing: dict[tuple[str, str], None] = {}
    for kind, fields in sorted(pi.items()):
        if kind not in ours:
            missing[(kind, "")] = None
            continue
        for field in sorted(fields - ours[kind]):
            missing[(kind, field)] = None
    return missing


def test_every_event_and_field_pi16_sends_is_sent_or_named_with_its_reason() -> None:
    events = pi_events()
    assert {"agent_start", "entry_appended", "summarization_retry_finished", "extension_error"} <= set(events)
    assert events["tool_execution_end"] >= {"toolCallId", "durationMs", "parentToolCallId"}  # parsed whole
    messages = pi_messages()
    assert messages["AssistantMessage"] >= {"stopReason", "durationMs", "thinkingLevel"}
    difference = _difference(events, tether_events()) | _difference(messages, tether_messages())
    assert sorted(difference) == sorted(NOT_SENT)


def test_tether_sends_no_event_pi16_does_not() -> None:
    """But its two additions (docs/rpc.md) and ``response``, which pi writes without ``output({
    type: ...})`` (its own helpers build it)."""
    assert set(tether_events()) - set(pi_events()) == {"ready", "prompt_result", "response"}


def test_the_rpc_documentation_names_each_difference() -> None:
    """The fields not sent in their table; every event the protocol sends in "Events"."""
    text = DOCS.read_text()
    table = text[text.index("### pi 1.6's events and fields") :]
    for kind, field in NOT_SENT:
        assert f"`{field}`" in table, f"docs/rpc.md does not name {kind}.{field}"
    events = text[text.index("## Events") : text.index("## Additions")]
    for kind in protocol.EVENT_TYPES:
        assert f"`{kind}" in events, f"docs/rpc.md's Events do not describe {kind}"


def test_the_parser_reads_what_pi_writes() -> None:
    """The regular expressions above against a piece of pi's declaration style."""
    sample = '{\n    type: "queue_update";\n    steering: readonly string[];\n    followUp?: string;\n}'
    (member,) = _members(sample)
    assert _fields(member) == {"type", "steering", "followUp"}
