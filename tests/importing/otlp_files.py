"""Writing finished spans (and log records) as the files `rewind import` reads.

The spans are encoded with OpenTelemetry's own OTLP encoder
(``opentelemetry-exporter-otlp-proto-common``, what the OTLP exporters send), then
written the way the Collector's ``file`` exporter stores them: OTLP/JSON (hex ids, one
``ExportTraceServiceRequest`` per line, optionally gzip) or protobuf (4-byte big-endian
length before each message; varint-delimited and a bare message are also written here,
as the other framings in use).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_IDS = {"traceId", "spanId", "parentSpanId"}


def hex_ids(value: Any) -> Any:
    """protobuf's generic JSON (base64 ids) as OTLP/JSON (hex ids)."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else hex_ids(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value


def json_line(spans: Sequence[ReadableSpan], *, base64_ids: bool = False) -> str:
    document = MessageToDict(encode_spans(spans))
    return json.dumps(document if base64_ids else hex_ids(document))


def log_line(records: Sequence[Any]) -> str:
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    return json.dumps(hex_ids(MessageToDict(encode_logs(records))))


def write_json(path: Path, spans: Sequence[ReadableSpan], *, logs: Sequence[Any] = (), batch: int = 3) -> Path:
    """One request per ``batch`` spans (a collector flushes in batches), gzip when the name ends in .gz."""
    lines = [json_line(spans[i : i + batch]) for i in range(0, len(spans), batch)]
    if logs:
        lines.append(log_line(logs))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def write_proto(path: Path, spans: Sequence[ReadableSpan], *, framing: str = "fixed32", batch: int = 3) -> Path:
    messages = [encode_spans(spans[i : i + batch]).SerializeToString() for i in range(0, len(spans), batch)]
    if framing == "whole":
        data = encode_spans(spans).SerializeToString()
    elif framing == "varint":
        data = b"".join(_varint(len(m)) + m for m in messages)
    else:
        data = b"".join(len(m).to_bytes(4, "big") + m for m in messages)
    path.write_bytes(data)
    return path


def _varint(size: int) -> bytes:
    out = bytearray()
    while True:
        byte = size & 0x7F
        size >>= 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(out)


class OTLPJsonFileExporter(SpanExporter):
    """A span exporter writing the Collector file exporter's JSON lines (for a subprocess agent)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json_line(spans) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass
