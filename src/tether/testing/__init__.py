"""tether.testing: a scripted model for tests and demos, a provider answered in process
(``MockProvider``, for the model-call path's ``http_client``), and the agent-loop conformance
runner."""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.testing.loopback import Reply as Reply
    from tether.testing.mock_http import MockProvider as MockProvider
    from tether.testing.scripted import (
        NO_RESPONSE_LEFT as NO_RESPONSE_LEFT,
        SCRIPTED_MODEL as SCRIPTED_MODEL,
        ScriptedBlock as ScriptedBlock,
        ScriptedModel as ScriptedModel,
        ScriptedRequest as ScriptedRequest,
        ScriptedResponse as ScriptedResponse,
        TextBlock as TextBlock,
        ThinkingBlock as ThinkingBlock,
        ToolCallBlock as ToolCallBlock,
        canonical_json as canonical_json,
        reply as reply,
        text as text,
        thinking as thinking,
        tool_call as tool_call,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
