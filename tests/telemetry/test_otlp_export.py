"""``tether -p`` exports its run over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

The command runs in a subprocess with the scripted model (two parallel ``read`` calls, then an
answer) against a receiver on 127.0.0.1; the protobuf payloads it received are decoded with
``opentelemetry-proto`` and checked span by span, then the metrics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

import tether
from tether.testing.otlp_receiver import OtlpReceiver
from tether.tools.read import DESCRIPTION as READ_DESCRIPTION

SOURCES = str(Path(tether.__file__).resolve().parents[1])
"""The tether under test, for the subprocess (not whatever the environment's install points at)."""

SCRIPT = {
    "responses": [
        {
            "content": [
                {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a.txt"}},
                {"type": "toolCall", "id": "call_b", "name": "read", "arguments": {"path": "b.txt"}},
            ]
        },
        {"content": [{"type": "text", "chunks": ["alpha ", "and beta"]}]},
    ]
}


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    found: list[KeyValue] = list(pairs)
    return {pair.key: value(pair.value) for pair in found}


def tether_command(
    tmp_path: Path, extra_env: Mapping[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    script = home / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and not k.endswith("_API_KEY")}
    env.update(
        {"TETHER_HOME": str(home), "TETHER_SCRIPTED": str(script), "NO_COLOR": "1", "PYTHONPATH": SOURCES}
    )
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def session_id(tmp_path: Path) -> str:
    listing = tether_command(tmp_path, {}, "sessions")
    assert listing.returncode == 0, listing.stderr
    return listing.stdout.splitlines()[1].split()[0]


def test_a_print_run_is_exported_span_by_span(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        done = tether_command(
            tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}, "-p", "read a.txt and b.txt"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "alpha and beta\n"
        traces = receiver.bodies("/v1/traces")
        metric_bodies = receiver.bodies("/v1/metrics")
    conversation = session_id(tmp_path)
    assert all(r.content_type == "application/x-protobuf" for r in receiver.requests)

    spans: list[Span] = []
    for body in traces:
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            assert resource["service.name"] == "tether"
            assert resource["service.version"] == tether.__version__
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "tether"
                spans.extend(scope_spans.spans)
    spans.sort(key=lambda s: s.start_time_unix_nano)
    assert [s.name for s in spans] == [
        "invoke_agent tether",
        "chat script",
        "execute_tool read",
        "execute_tool read",
        "chat script",
    ]
    run, chat1, read_a, read_b, chat2 = spans
    assert len({s.trace_id for s in spans}) == 1
    assert run.parent_span_id == b""
    assert all(s.parent_span_id == run.span_id for s in spans[1:])
    assert [s.kind for s in spans] == [
        Span.SPAN_KIND_INTERNAL,
        Span.SPAN_KIND_CLIENT,
        Span.SPAN_KIND_INTERNAL,
        Span.SPAN_KIND_INTERNAL,
        Span.SPAN_KIND_CLIENT,
    ]
    assert all(s.status.code == Status.STATUS_CODE_UNSET for s in spans)

    assert attributes(run.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "tether",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "script",
        "gen_ai.conversation.id": conversation,
        "gen_ai.usage.input_tokens": 0,
        "gen_ai.usage.output_tokens": 0,
        "tether.usage.cost": 0.0,
    }
    for turn, chat, reason in ((1, chat1, "tool_call"), (2, chat2, "stop")):
        chat_attributes = attributes(chat.attributes)
        assert chat_attributes.pop("gen_ai.response.time_to_first_chunk") > 0
        assert chat_attributes == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "scripted",
            "gen_ai.request.model": "script",
            "tether.api": "scripted",
            "gen_ai.request.stream": True,
            "tether.turn": turn,
            "gen_ai.conversation.id": conversation,
            "gen_ai.response.model": "script",
            "gen_ai.response.finish_reasons": (reason,),
            "gen_ai.usage.input_tokens": 0,
            "gen_ai.usage.output_tokens": 0,
            "tether.usage.cost": 0.0,
        }
    for span, call_id in ((read_a, "call_a"), (read_b, "call_b")):
        tool_attributes = attributes(span.attributes)
        assert tool_attributes == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "read",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": READ_DESCRIPTION,
        }
    assert chat1.end_time_unix_nano <= read_a.start_time_unix_nano
    assert max(read_a.end_time_unix_nano, read_b.end_time_unix_nano) <= chat2.start_time_unix_nano
    assert run.end_time_unix_nano >= chat2.end_time_unix_nano

    metrics: dict[str, Any] = {}
    for body in metric_bodies:
        for resource_metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                metrics.update({metric.name: metric for metric in scope_metrics.metrics})
    # the scripted model reports no usage and costs nothing: durations only
    assert set(metrics) == {"gen_ai.client.operation.duration", "gen_ai.client.operation.time_to_first_chunk"}
    duration = metrics["gen_ai.client.operation.duration"]
    assert duration.unit == "s"
    [point] = duration.histogram.data_points
    assert point.count == 2
    assert attributes(point.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "script",
        "tether.api": "scripted",
        "gen_ai.response.model": "script",
    }


def test_content_capture_is_switched_on_by_its_standard_variable(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        done = tether_command(
            tmp_path,
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            },
            "-p",
            "read a.txt and b.txt",
            "--no-session",
        )
        assert done.returncode == 0, done.stderr
        assert receiver.bodies("/v1/metrics") == []  # only the traces endpoint was given
        spans = [
            span
            for body in receiver.bodies("/v1/traces")
            for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
    reads = sorted((s for s in spans if s.name == "execute_tool read"), key=lambda s: s.start_time_unix_nano)
    assert [json.loads(attributes(s.attributes)["gen_ai.tool.call.arguments"]) for s in reads] == [
        {"path": "a.txt"},
        {"path": "b.txt"},
    ]
    results = [json.loads(attributes(s.attributes)["gen_ai.tool.call.result"]) for s in reads]
    assert "alpha" in results[0] and "beta" in results[1]
    # no session: no conversation id
    assert not any("gen_ai.conversation.id" in attributes(s.attributes) for s in spans)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"),
        ({"OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_a_configuration_it_cannot_honour_runs_without_telemetry(
    tmp_path: Path, env: dict[str, str], message: str | None
) -> None:
    with OtlpReceiver() as receiver:
        done = tether_command(
            tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, **env}, "-p", "read", "--no-session"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "alpha and beta\n"
        assert receiver.requests == []
    notes = [line for line in done.stderr.splitlines() if line.startswith("tether:")]
    assert notes == ([f"tether: {message} (only http/protobuf); not exporting"] if message else [])


@pytest.mark.parametrize("bound", [None, "0.2"])
def test_a_collector_that_is_down_costs_one_line_and_a_bounded_exit(
    tmp_path: Path, bound: str | None
) -> None:
    """Nothing listens on the port: the exporters' retries would take ~10 s per signal and log a
    warning each; the run ends with its answer and one line saying what was dropped."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    if bound is not None:
        extra["TETHER_OTEL_EXIT_TIMEOUT"] = bound
    done = tether_command(tmp_path, extra, "-p", "read a.txt and b.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "alpha and beta\n"
    [line] = [line for line in done.stderr.splitlines() if not line.startswith("[tool]")]
    assert line.startswith(f"tether: telemetry not exported to http://127.0.0.1:{port} within {bound or 1} s")
    assert line.endswith("(dropped; TETHER_OTEL_EXIT_TIMEOUT sets the wait)")


def test_a_collector_urls_password_is_not_printed(tmp_path: Path) -> None:
    """The one line about a collector that is down names it without the password in its URL
    (stderr lands in CI logs)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://tenant:s3cret-token@127.0.0.1:{port}",
        "TETHER_OTEL_EXIT_TIMEOUT": "0.2",
    }
    done = tether_command(tmp_path, extra, "-p", "read a.txt and b.txt", "--no-session")
    assert done.returncode == 0, done.stderr
    assert "s3cret-token" not in done.stderr
    assert f"telemetry not exported to http://***@127.0.0.1:{port} within 0.2 s" in done.stderr


def test_a_collector_urls_key_is_not_in_the_exporters_reason(tmp_path: Path) -> None:
    """The exporter's reason for the line (a connection error) names the URL it asked for, query
    and all: the key in it is blanked out as the URL shown beside it is."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces?key=s3cret-token"}
    done = tether_command(tmp_path, extra, "-p", "read a.txt and b.txt", "--no-session")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if not line.startswith("[tool]")]
    assert line.startswith(
        f"tether: telemetry not exported to http://127.0.0.1:{port}/v1/traces?key=*** within"
    )
    assert "url: /v1/traces?key=[redacted]" in line
    assert "s3cret-token" not in done.stderr
