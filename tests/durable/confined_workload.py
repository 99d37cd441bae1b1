"""The workload of ``test_durable_sandbox.py``: a scripted model that runs the shell commands in
``TETHER_TEST_COMMANDS`` (a JSON list) with the real ``bash`` tool, in one batch, then says
"done". Used by ``tether worker --setup confined_workload:setup`` processes; the run keeps the
coding tools its settings give it, so ``bash`` is confined as the worker confines it."""

from __future__ import annotations

import json
import os
from typing import Any

from tether.ai.types import Context, SimpleStreamOptions
from tether.session.agent_session import AgentSession
from tether.testing import ScriptedModel, reply, text, tool_call
from tether.wire import ModelInfo


def stream(model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None) -> Any:
    if any(m["role"] == "assistant" for m in context["messages"]):
        script = reply(text("done"))
    else:
        commands = json.loads(os.environ["TETHER_TEST_COMMANDS"])
        script = reply(*(tool_call("bash", {"command": c}, id=f"call-{i}") for i, c in enumerate(commands)))
    return ScriptedModel([script], model)(model, context, options)


def setup(core: AgentSession) -> None:
    """``--setup confined_workload:setup``: the scripted model; the tools stay the settings'."""
    core.agent.stream_fn = stream
