"""tether.rpc: the RPC protocol of ``tether --mode rpc`` — its typed frames, the server and a
Python client, side by side.

The protocol is pi's (one JSON object per line on stdin/stdout; see ``docs/rpc.md``). The server
(``tether.rpc.server`` over an ``AgentSession``, ``tether.rpc.mode`` on stdio) is imported only by
``tether --mode rpc``; the client and the protocol types depend only on ``tether.wire``, so a
host application drives tether without importing the agent runtime.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.rpc.client import (
        KNOWN_FRAME_TYPES as KNOWN_FRAME_TYPES,
        RpcClient as RpcClient,
        RpcError as RpcError,
        ServerEvent as ServerEvent,
        UnknownFrame as UnknownFrame,
    )
    from tether.rpc.jsonl import LineSplitter as LineSplitter, encode_frame as encode_frame
    from tether.rpc.protocol import (
        COMMANDS as COMMANDS,
        EVENT_TYPES as EVENT_TYPES,
        PROTOCOL_VERSION as PROTOCOL_VERSION,
        BashResult as BashResult,
        CancelledResult as CancelledResult,
        CompactionResult as CompactionResult,
        CycleModelResult as CycleModelResult,
        Event as Event,
        EventFilter as EventFilter,
        ForkMessage as ForkMessage,
        ForkResult as ForkResult,
        PromptResultFrame as PromptResultFrame,
        ReadyFrame as ReadyFrame,
        ResponseFrame as ResponseFrame,
        ServerFrame as ServerFrame,
        SessionState as SessionState,
        SessionStats as SessionStats,
        ThinkingLevelResult as ThinkingLevelResult,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
