"""The one schema bundle ``tether schema`` prints: the wire ``$defs`` plus the RPC protocol.

Every frame, command parameter set and command result of ``tether.rpc.protocol`` becomes a
``$defs`` entry next to seed 000's definitions, and an ``x-rpc`` section tells a code generator
how they fit: which command answers with which result, and which definitions are the unions of
frames each side writes. ``schema.json`` next to this module is the committed copy (a test fails
when it is stale; ``make schema`` rewrites it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether.rpc import protocol as p
from tether.wire.schema import Registry, build_bundle

COMMITTED = Path(__file__).with_name("schema.json")

_FRAMES: dict[str, object] = {
    "ReadyFrame": p.ReadyFrame,
    "ResponseFrame": p.ResponseFrame,
    "PromptResultFrame": p.PromptResultFrame,
    "ExtensionUiRequest": p.ExtensionUiRequest,
    "ToolResultPayload": p.ToolResultPayload,
    "AgentStartEvent": p.AgentStartEvent,
    "AgentEndEvent": p.AgentEndEvent,
    "AgentSettledEvent": p.AgentSettledEvent,
    "TurnStartEvent": p.TurnStartEvent,
    "TurnEndEvent": p.TurnEndEvent,
    "PendingReply": p.PendingReply,
    "MessageStartEvent": p.MessageStartEvent,
    "AssistantEventDelta": p.AssistantEventDelta,
    "MessageUpdateEvent": p.MessageUpdateEvent,
    "MessageEndEvent": p.MessageEndEvent,
    "ToolExecutionStartEvent": p.ToolExecutionStartEvent,
    "ToolExecutionUpdateEvent": p.ToolExecutionUpdateEvent,
    "ToolExecutionEndEvent": p.ToolExecutionEndEvent,
    "QueueUpdateEvent": p.QueueUpdateEvent,
    "CompactionReason": p.CompactionReason,
    "CompactionStartEvent": p.CompactionStartEvent,
    "CompactionEndEvent": p.CompactionEndEvent,
    "AutoRetryStartEvent": p.AutoRetryStartEvent,
    "AutoRetryEndEvent": p.AutoRetryEndEvent,
    "ThinkingLevelChangedEvent": p.ThinkingLevelChangedEvent,
    "SessionInfoChangedEvent": p.SessionInfoChangedEvent,
    "SummarizationRetryScheduledEvent": p.SummarizationRetryScheduledEvent,
    "SummarizationRetryAttemptStartEvent": p.SummarizationRetryAttemptStartEvent,
    "SummarizationRetryFinishedEvent": p.SummarizationRetryFinishedEvent,
    "EntryAppendedEvent": p.EntryAppendedEvent,
    "ExtensionErrorEvent": p.ExtensionErrorEvent,
    "BashExecutionUpdateEvent": p.BashExecutionUpdateEvent,
    "Event": p.Event,
    "ServerFrame": p.ServerFrame,
}

_SHARED: dict[str, object] = {
    "RequestId": p.RequestId,
    "QueueMode": p.QueueMode,
    "ThinkingChoice": p.ThinkingChoice,
    "StreamingBehavior": p.StreamingBehavior,
    "MessageUpdateMode": p.MessageUpdateMode,
    "PromptStatus": p.PromptStatus,
    "PromptDisposition": p.PromptDisposition,
}

_RESULTS: dict[str, object] = {
    "PromptAccepted": p.PromptAccepted,
    "QueuedAccepted": p.QueuedAccepted,
    "ClearedQueue": p.ClearedQueue,
    "EntriesResult": p.EntriesResult,
    "TreeNode": p.TreeNode,
    "TreeResult": p.TreeResult,
    "CancelledResult": p.CancelledResult,
    "SessionState": p.SessionState,
    "MessagesResult": p.MessagesResult,
    "CycleModelResult": p.CycleModelResult,
    "ModelsResult": p.ModelsResult,
    "ThinkingLevelResult": p.ThinkingLevelResult,
    "ThinkingLevelsResult": p.ThinkingLevelsResult,
    "CompactionResult": p.CompactionResult,
    "BashResult": p.BashResult,
    "TokenTotals": p.TokenTotals,
    "ContextUsage": p.ContextUsage,
    "SessionStats": p.SessionStats,
    "PathResult": p.PathResult,
    "ForkResult": p.ForkResult,
    "ForkMessage": p.ForkMessage,
    "ForkMessagesResult": p.ForkMessagesResult,
    "LastAssistantTextResult": p.LastAssistantTextResult,
    "CommandSourceInfo": p.CommandSourceInfo,
    "SlashCommandInfo": p.SlashCommandInfo,
    "CommandsResult": p.CommandsResult,
    "EventFilter": p.EventFilter,
}


def _name_of(tp: object) -> str:
    name = getattr(tp, "__name__", None)
    assert isinstance(name, str)
    return name


_COMMANDS: dict[str, object] = {_name_of(params): params for params, _ in p.COMMANDS.values()}

RPC_DEFS = Registry("rpcDefs", {**_SHARED, **_COMMANDS, **_RESULTS, **_FRAMES})


def rpc_section() -> dict[str, Any]:
    """``x-rpc``: the protocol version, each command's params and result, the frame unions."""
    commands: dict[str, Any] = {}
    for name, (params, result) in p.COMMANDS.items():
        entry: dict[str, Any] = {"params": _ref(params), "result": _ref(result) if result else None}
        if name in p.NULLABLE_RESULTS:
            entry["resultNullable"] = True
        commands[name] = entry
    return {
        "protocolVersion": p.PROTOCOL_VERSION,
        "framing": "JSON Lines: one UTF-8 JSON object per line, records split on LF only",
        "commands": commands,
        "clientFrames": [c["params"] for c in commands.values()],
        "serverFrames": "#/$defs/ServerFrame",
        "events": "#/$defs/Event",
        "eventTypes": list(p.EVENT_TYPES),
    }


def _ref(tp: object) -> str:
    return f"#/$defs/{_name_of(tp)}"


def build() -> dict[str, Any]:
    bundle = build_bundle(RPC_DEFS, sections={"x-rpc": rpc_section()})
    bundle["title"] = "tether wire types and RPC protocol"
    return bundle


def bundle_json() -> str:
    """The bundle as stable, indented JSON text (what ``tether schema`` prints)."""
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


__all__ = ["COMMITTED", "RPC_DEFS", "build", "bundle_json", "rpc_section"]
