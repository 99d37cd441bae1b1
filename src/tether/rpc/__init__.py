"""tether.rpc: the RPC protocol of ``tether --mode rpc`` — its typed frames, the server and a
Python client, side by side.

The protocol is pi's (one JSON object per line on stdin/stdout; see ``docs/rpc.md``). The server
(``tether.rpc.server`` over an ``AgentSession``, ``tether.rpc.mode`` on stdio) is imported only by
``tether --mode rpc``; the client and the protocol types depend only on ``tether.wire``, so a
host application drives tether without importing the agent runtime.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. The TYPE_CHECKING imports give type checkers the names.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.rpc.client import KNOWN_FRAME_TYPES, RpcClient, RpcError, ServerEvent, UnknownFrame
    from tether.rpc.jsonl import LineSplitter, encode_frame
    from tether.rpc.protocol import (
        COMMANDS,
        EVENT_TYPES,
        PROTOCOL_VERSION,
        BashResult,
        CancelledResult,
        CompactionResult,
        CycleModelResult,
        Event,
        EventFilter,
        ForkMessage,
        ForkResult,
        PromptResultFrame,
        ReadyFrame,
        ResponseFrame,
        ServerFrame,
        SessionState,
        SessionStats,
        ThinkingLevelResult,
    )

_LAZY = {
    "KNOWN_FRAME_TYPES": "tether.rpc.client",
    "RpcClient": "tether.rpc.client",
    "RpcError": "tether.rpc.client",
    "ServerEvent": "tether.rpc.client",
    "UnknownFrame": "tether.rpc.client",
    "LineSplitter": "tether.rpc.jsonl",
    "encode_frame": "tether.rpc.jsonl",
    "COMMANDS": "tether.rpc.protocol",
    "EVENT_TYPES": "tether.rpc.protocol",
    "PROTOCOL_VERSION": "tether.rpc.protocol",
    "BashResult": "tether.rpc.protocol",
    "CancelledResult": "tether.rpc.protocol",
    "CompactionResult": "tether.rpc.protocol",
    "CycleModelResult": "tether.rpc.protocol",
    "Event": "tether.rpc.protocol",
    "EventFilter": "tether.rpc.protocol",
    "ForkMessage": "tether.rpc.protocol",
    "ForkResult": "tether.rpc.protocol",
    "PromptResultFrame": "tether.rpc.protocol",
    "ReadyFrame": "tether.rpc.protocol",
    "ResponseFrame": "tether.rpc.protocol",
    "ServerFrame": "tether.rpc.protocol",
    "SessionState": "tether.rpc.protocol",
    "SessionStats": "tether.rpc.protocol",
    "ThinkingLevelResult": "tether.rpc.protocol",
}
"""Where each lazily loaded public name lives."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "COMMANDS",
    "EVENT_TYPES",
    "KNOWN_FRAME_TYPES",
    "PROTOCOL_VERSION",
    "BashResult",
    "CancelledResult",
    "CompactionResult",
    "CycleModelResult",
    "Event",
    "EventFilter",
    "ForkMessage",
    "ForkResult",
    "LineSplitter",
    "PromptResultFrame",
    "ReadyFrame",
    "ResponseFrame",
    "RpcClient",
    "RpcError",
    "ServerEvent",
    "ServerFrame",
    "SessionState",
    "SessionStats",
    "ThinkingLevelResult",
    "UnknownFrame",
    "encode_frame",
]
