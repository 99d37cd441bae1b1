"""Print the OpenTelemetry trace of a scripted tool-using run (the example in docs/observability.md).

The run: the scripted model reads two files and greps in parallel (one file does not exist), a
steering message arrives while the tools run, and the model answers. The spans go to an
in-memory exporter and are printed as a tree, then every attribute of each kind of span.

    PYTHONPATH=src .venv/bin/python scripts/trace_demo.py [--content]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether.agent import Agent, AgentEvent
from tether.ai.abort import AbortSignal
from tether.ai.types import SimpleStreamOptions
from tether.telemetry import Instrumentation
from tether.testing.scripted import ScriptedModel, reply, text, tool_call
from tether.testing.spans import span_tree
from tether.tools import create_coding_tools
from tether.tools.workspace import Workspace

TREE_ATTRIBUTES = (
    "gen_ai.conversation.id",
    "tether.turn",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.call.id",
    "error.type",
    "tether.message.role",
)


async def run(workspace: Path, capture_content: bool) -> InMemorySpanExporter:
    (workspace / "README.md").write_text("# demo\n\nTODO: write the docs\n")
    (workspace / "app.py").write_text("print('hi')  # TODO: greet by name\n")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(
        [
            reply(
                tool_call("read", {"path": "README.md"}, id="call_1"),
                tool_call("read", {"path": "NOTES.md"}, id="call_2"),
                tool_call("grep", {"pattern": "TODO"}, id="call_3"),
            ),
            reply(text("There are two TODOs: ", "the docs and the greeting.")),
        ]
    )
    agent = Agent(
        model=model.model,
        system_prompt="You are a careful coding agent.",
        tools=create_coding_tools(Workspace(workspace), ["read", "grep"]),
        stream_fn=model,
        options=SimpleStreamOptions(session_id="01JZ8Q6J3V0S9X2T4N5M7K8P1R"),
        instrumentation=Instrumentation(tracer_provider=provider, capture_content=capture_content),
    )

    def steer_while_tools_run(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "tool_execution_start" and event["toolCallId"] == "call_1":
            agent.steer({"role": "user", "content": "Count the TODOs too.", "timestamp": 0})

    agent.subscribe(steer_while_tools_run)
    await agent.prompt("What is left to do in this project?")
    return exporter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--content", action="store_true", help="capture message and tool content too")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        exporter = asyncio.run(run(Path(directory), options.content))
    spans = exporter.get_finished_spans()
    print(span_tree(spans, TREE_ATTRIBUTES))
    shown: set[str] = set()
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        kind = span.name.split()[0]
        if kind in shown:
            continue
        shown.add(kind)
        print(f"\n{span.name}:")
        for key, value in (span.attributes or {}).items():
            print(f"  {key} = {value!r}")


if __name__ == "__main__":
    main()
