"""A real OTLP/HTTP trace receiver on loopback, for tests that send spans somewhere.

It decodes what it is sent as a collector would (protobuf ``ExportTraceServiceRequest``
or OTLP/JSON, gzip when the request says so), keeps each request with its headers, and
answers with an empty ``ExportTraceServiceResponse``; ``status`` makes it refuse.
"""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    path: str
    content_type: str
    headers: dict[str, str]
    body: bytes  # as sent, decompressed

    def request(self) -> ExportTraceServiceRequest | dict[str, Any]:
        if self.content_type == "application/x-protobuf":
            return ExportTraceServiceRequest.FromString(self.body)
        return json.loads(self.body)


class OTLPReceiver:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[Received] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                content_type = (self.headers.get("Content-Type") or "").split(";")[0]
                item = Received(self.path, content_type, {k.lower(): v for k, v in self.headers.items()}, body)
                item.request()  # what a collector cannot decode is a failed test, not a stored body
                receiver.received.append(item)
                protobuf = content_type == "application/x-protobuf"
                answer = ExportTraceServiceResponse().SerializeToString() if protobuf else b"{}"
                self.send_response(receiver.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
