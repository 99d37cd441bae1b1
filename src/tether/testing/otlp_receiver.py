"""A minimal OTLP/HTTP receiver on 127.0.0.1: accepts exports and keeps their bodies.

For tests and benchmarks of the ``tether`` command's OTLP export: point
``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``receiver.url`` and read ``receiver.requests`` afterwards.
It answers every POST with 200 and an empty protobuf body (an export response with no partial
success), which is what an OTLP/HTTP exporter expects of a collector. Decoding the protobuf
payloads is left to the caller (``opentelemetry-proto``), so this module needs nothing but the
standard library. It serves from a thread, so the process it runs in can block on a subprocess.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


@dataclass(frozen=True, slots=True)
class OtlpRequest:
    path: str
    """``/v1/traces``, ``/v1/metrics`` or ``/v1/logs``."""
    content_type: str
    body: bytes
    """The payload, decompressed when it was sent gzipped."""


class OtlpReceiver:
    """``with OtlpReceiver() as receiver: ... receiver.url ... receiver.requests``."""

    def __init__(self) -> None:
        self.requests: list[OtlpRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def bodies(self, path: str) -> list[bytes]:
        """The payloads received on ``path`` so far, in arrival order."""
        with self._lock:
            return [request.body for request in self.requests if request.path == path]

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                request = OtlpRequest(self.path, self.headers.get("content-type") or "", body)
                with receiver._lock:
                    receiver.requests.append(request)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the default handler writes a line per request to stderr."""

        return Handler
