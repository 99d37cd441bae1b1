"""Helpers of the telemetry tests: an in-memory OpenTelemetry SDK and a tool that takes its time."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether.agent import AgentTool, AgentToolResult
from tether.telemetry import Instrumentation


class Otel:
    """An SDK that keeps every finished span and metric in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def instrumentation(
        self, *, capture_content: bool = False, agent_name: str = "tether"
    ) -> Instrumentation:
        return Instrumentation(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=capture_content,
            agent_name=agent_name,
        )

    def spans(self) -> list[ReadableSpan]:
        """Finished spans in start order."""
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` (one per attribute set)."""
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for found in scope.metrics
            if found.name == metric
            for point in found.data.data_points
        ]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def echo_execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    """Echo ``text`` after ``delay`` seconds; the text ``boom`` raises ``ValueError``."""
    await asyncio.sleep(params.get("delay", 0))
    if params["text"] == "boom":
        raise ValueError("boom!")
    return AgentToolResult(content=[{"type": "text", "text": params["text"]}], details={})


ECHO = AgentTool(
    name="echo",
    label="echo",
    description="Echo a text back",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string"}, "delay": {"type": "number"}},
        "required": ["text"],
    },
    execute=echo_execute,
)
