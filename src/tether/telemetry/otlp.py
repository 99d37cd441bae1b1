"""OTLP export for the ``tether`` command, set up from the standard ``OTEL_*`` variables.

The command exports when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the per-signal
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``/``..._METRICS_ENDPOINT``) is set and the ``otel`` extra is
installed: traces and metrics go over OTLP/HTTP (protobuf), and everything recorded is flushed
when the command exits. The exporters read the rest of the standard variables themselves
(headers, timeout, compression, certificates); ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``
name the resource (``service.name`` defaults to ``tether``), ``OTEL_SDK_DISABLED=true`` or
``OTEL_{TRACES,METRICS}_EXPORTER=none`` turn a signal off, and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` records message content.

The flush at exit is bounded: ``TETHER_OTEL_EXIT_TIMEOUT`` seconds (default 1). The exporters
retry a collector that is down for as long as their own timeout (10 s by default, at each of
the two signals), which would be added to every command's exit; past the bound whatever was not
sent is dropped. Their warnings (one per retry, through ``logging``) do not reach the terminal:
the first failure is one line on ``err`` at exit.

Without an endpoint this module imports nothing: the check is a look at the environment.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
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
EXIT_TIMEOUT = "TETHER_OTEL_EXIT_TIMEOUT"
DEFAULT_EXIT_TIMEOUT = 1.0
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
    bound = _exit_timeout(environ, err)
    failures = _Failures()
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
    failures.install()

    def flush() -> None:
        if tracer_provider is not None:
            tracer_provider.shutdown()
        if meter_provider is not None:
            meter_provider.shutdown()

    def shutdown() -> None:
        uninstrument()
        # a daemon thread: the interpreter's exit does not wait for an export still retrying
        flushing = threading.Thread(target=flush, name="otel flush", daemon=True)
        flushing.start()
        flushing.join(bound)
        from tether.ai.shown_url import shown_url  # a collector's URL may carry its password

        urls = [url for url in map(environ.get, (TRACES_ENDPOINT, METRICS_ENDPOINT, ENDPOINT)) if url]
        where = shown_url(urls[0] if urls else "")
        first = _without_secrets(failures.first, urls) if failures.first else None
        if flushing.is_alive():
            reason = f": {first}" if first else ""
            err.write(
                f"tether: telemetry not exported to {where} within {bound:g} s{reason} "
                f"(dropped; {EXIT_TIMEOUT} sets the wait)\n"
            )
        elif first:
            err.write(f"tether: telemetry export to {where} failed: {first}\n")

    return shutdown


class _Failures(logging.Handler):
    """Takes the OpenTelemetry SDK's log records (export retries and failures) off the terminal
    and keeps the first warning's text for the one line at exit."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first: str | None = None

    def install(self) -> None:
        logger = logging.getLogger("opentelemetry")
        logger.addHandler(self)
        logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().strip()
        if self.first is None and text:
            # "Transient error <why> encountered while exporting spans batch, retrying in 1.2s."
            self.first = (
                text.splitlines()[0].split(" encountered while", 1)[0].removeprefix("Transient error ")
            )


def _without_secrets(text: str, urls: list[str]) -> str:
    """``text`` (an exporter's warning) without the credentials in the collector's URLs: a
    connection error names the URL it asked for (``Max retries exceeded with url:
    /v1/traces?key=...``), and the line goes to stderr, which lands in CI logs."""
    from tether.ai.transport import without_secrets  # loaded only when an export failed

    for url in urls:
        text = without_secrets(text, {}, url)
    return text


def _exit_timeout(environ: Mapping[str, str], err: TextIO) -> float:
    text = environ.get(EXIT_TIMEOUT, "").strip()
    if not text:
        return DEFAULT_EXIT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        err.write(
            f"tether: {EXIT_TIMEOUT}={text} is not a number of seconds; using {DEFAULT_EXIT_TIMEOUT:g}\n"
        )
        return DEFAULT_EXIT_TIMEOUT
    return value


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

    provider = TracerProvider(resource=resource, shutdown_on_exit=False)  # shutdown() bounds it
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _meter_provider(resource: Resource) -> MeterProvider:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return MeterProvider(
        resource=resource,
        metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())],
        shutdown_on_exit=False,  # shutdown() bounds it
    )
