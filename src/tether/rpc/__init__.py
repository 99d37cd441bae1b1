"""tether.rpc: the RPC protocol of ``tether --mode rpc`` — its typed frames and a Python client.

The protocol is pi's (one JSON object per line on stdin/stdout; see ``docs/rpc.md``); this
package depends only on ``tether.wire``, so a host application can drive tether without the agent
runtime's dependencies being imported.
"""

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
