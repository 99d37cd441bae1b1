"""OpenTelemetry for agent runs: GenAI spans and metrics, off (and free) until switched on.

Switch it on for every run of the process::

    from tether import telemetry
    telemetry.instrument(tracer_provider=my_tracer_provider, meter_provider=my_meter_provider)

or for one agent: ``Agent(..., instrumentation=Instrumentation(...))`` (the same object works on
``AgentLoopConfig.instrumentation``). A run then records an ``invoke_agent`` span, a ``chat``
span per model call and an ``execute_tool`` span per tool call, plus the GenAI client metrics
and tether's cost counter (``docs/observability.md`` shows a whole trace).

Nothing here imports OpenTelemetry: with nothing switched on, a run checks one global and
records nothing, and ``opentelemetry`` is never loaded. It loads when the first instrumented
run starts. ``tether.telemetry.otlp`` sets up the SDK from the standard ``OTEL_*`` variables
(what the ``tether`` command does when an OTLP endpoint is configured).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from tether.ai.types import SimpleStreamOptions, StreamFn
    from tether.telemetry.spans import Recorder, RunTrace
    from tether.wire import ModelInfo

DEFAULT_AGENT_NAME = "tether"


class Instrumentation:
    """Where a run's spans and metrics go, and what they may contain.

    ``tracer_provider``/``meter_provider``: ``None`` uses OpenTelemetry's global providers (what
    the application, or ``opentelemetry-instrument``, set up). ``capture_content`` records the
    messages, system prompt, tool definitions, tool arguments and tool results (the conventions'
    opt-in attributes): off by default, since they hold whatever users, models and tools wrote.
    ``agent_name`` names the ``invoke_agent`` span.
    """

    __slots__ = ("_recorder", "agent_name", "capture_content", "meter_provider", "tracer_provider")

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        agent_name: str = DEFAULT_AGENT_NAME,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.capture_content = capture_content
        self.agent_name = agent_name
        self._recorder: Recorder | None = None

    def start_run(self, model: ModelInfo, options: SimpleStreamOptions, tools: Mapping[str, str]) -> RunTrace:
        """Open the ``invoke_agent`` span of a run (``tools``: each tool's description by name).

        The tracer, meter and instruments are made by the first run (importing OpenTelemetry)."""
        from tether.telemetry.spans import RunTrace

        return RunTrace(self._recorder_once(), model, options, tools)

    def traced(self, stream_fn: StreamFn, purpose: str) -> StreamFn:
        """``stream_fn`` with a ``chat`` span per call, for the model calls a session makes
        outside the agent loop (``purpose``: ``compaction`` or ``branch_summary``); the span's
        parent is the current span, a run's ``invoke_agent`` when the run compacts."""
        from tether.telemetry.spans import traced_calls

        return traced_calls(self._recorder_once(), stream_fn, purpose)

    def _recorder_once(self) -> Recorder:
        """The tracer, meter and instruments, made by the first use (importing OpenTelemetry)."""
        from tether.telemetry.spans import Recorder

        if self._recorder is None:
            self._recorder = Recorder(
                self.tracer_provider, self.meter_provider, self.capture_content, self.agent_name
            )
        return self._recorder


_instrumentation: Instrumentation | None = None


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
    agent_name: str = DEFAULT_AGENT_NAME,
) -> Instrumentation:
    """Record every run that has no ``Instrumentation`` of its own; returns the one it uses."""
    global _instrumentation
    _instrumentation = Instrumentation(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        agent_name=agent_name,
    )
    return _instrumentation


def uninstrument() -> None:
    """Stop recording the runs that have no ``Instrumentation`` of their own."""
    global _instrumentation
    _instrumentation = None


def instrumentation_for(own: Instrumentation | None) -> Instrumentation | None:
    """What a run records with: its own instrumentation, else the global one, else nothing."""
    return own if own is not None else _instrumentation


__all__ = ["DEFAULT_AGENT_NAME", "Instrumentation", "instrument", "instrumentation_for", "uninstrument"]
