"""OTLP export for the ``tether`` command, set up from the standard ``OTEL_*`` variables.

The command exports when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the per-signal
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``/``..._METRICS_ENDPOINT``) is set and the ``otel`` extra is
installed: traces and metrics go over OTLP/HTTP (protobuf), and everything recorded is flushed
when the command exits. The exporters read the rest of the standard variables themselves
(headers, timeout, compression, certificates); ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``
name the resource (``service.name`` defaults to ``tether``), ``OTEL_SDK_DISABLED=true`` or
``OTEL_{TRACES,METRICS}_EXPORTER=none`` turn a signal off, and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` records message content.

Without an endpoint this module imports nothing: the check is a look at the environment.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from tether._version import __version__
from tether.telemetry import instrument, uninstrument

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SUPPORTED_PROTOCOL = "http/protobuf"
PROTOCOLS = (
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
)


def start_from_env(err: TextIO = sys.stderr) -> Callable[[], None] | None:
    """Export this process's runs when an OTLP endpoint is configured.

    Returns the function that flushes and shuts the exporters down (call it at exit), or
    ``None`` when nothing is exported. A configuration tether cannot honour (no SDK installed,
    another protocol) is one line on ``err``; the command then runs without telemetry."""
    environ = os.environ
    traces = _wanted(environ, TRACES_ENDPOINT, "OTEL_TRACES_EXPORTER")
    metrics = _wanted(environ, METRICS_ENDPOINT, "OTEL_METRICS_EXPORTER")
    if not (traces or metrics) or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    for variable in PROTOCOLS:
        protocol = environ.get(variable, SUPPORTED_PROTOCOL).strip()
        if protocol != SUPPORTED_PROTOCOL:
            err.write(
                f"tether: {variable}={protocol} is not supported (only {SUPPORTED_PROTOCOL}); not exporting\n"
            )
            return None
    try:
        resource = _resource()
        tracer_provider = _tracer_provider(resource) if traces else None
        meter_provider = _meter_provider(resource) if metrics else None
    except ImportError as exc:
        err.write(
            f"tether: an OTLP endpoint is set but the OpenTelemetry SDK is missing ({exc.name}); "
            "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http (tether's otel extra) "
            "to export traces and metrics\n"
        )
        return None
    capture = environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
    instrument(tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=capture)

    def shutdown() -> None:
        uninstrument()
        if tracer_provider is not None:
            tracer_provider.shutdown()
        if meter_provider is not None:
            meter_provider.shutdown()

    return shutdown


def _wanted(environ: Mapping[str, str], endpoint: str, exporter: str) -> bool:
    configured = bool(environ.get(ENDPOINT) or environ.get(endpoint))
    return configured and environ.get(exporter, "otlp").strip().lower() != "none"


def _resource() -> Resource:
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.version": __version__})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "tether"}))
    return resource


def _tracer_provider(resource: Resource) -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _meter_provider(resource: Resource) -> MeterProvider:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
    )
