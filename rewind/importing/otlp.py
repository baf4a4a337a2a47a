"""Readers for OTLP files: JSON (the Collector ``file`` exporter's format) and protobuf.

JSON: one ``ExportTraceServiceRequest`` (or ``ExportLogsServiceRequest``) object per line,
as the Collector's ``file`` exporter writes it, gzip-compressed or not; a file holding
one pretty-printed object is read too. OTLP/JSON spells trace and span ids as hex;
a dump made with protobuf's generic JSON printer spells them in base64, and both are
read (the lengths tell them apart: 32/16 hex digits against 24/12 base64 characters).

Protobuf: the Collector writes each message with a 4-byte big-endian length in front,
the OpenTelemetry file-exporter spec asks for varint-delimited messages, and a plain
``ExportTraceServiceRequest`` body (what an OTLP/HTTP receiver got) is a message with
no prefix at all; each framing is tried in turn.

Log records (the GenAI events of instrumentations that emit content as logs) are
attached to the span they name by ``spanId``.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from .._safe_read import ARCHIVE_ENV, MAX_ARCHIVE_BYTES, archive_too_big, limit, open_regular
from .errors import TelemetryError
from .spans import SpanEvent, SpanRecord

_GZIP_MAGIC = b"\x1f\x8b"
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


class Collected:
    """Spans and the log records that name a span, as one reader found them."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []
        self.logs: dict[str, list[SpanEvent]] = {}
        self.skipped: list[str] = []

    def attach_logs(self) -> list[SpanRecord]:
        for span in self.spans:
            span.events.extend(self.logs.pop(span.span_id, []))
            span.events.sort(key=lambda e: e.time_ns)
        return self.spans


def read_bytes(path: str) -> bytes:
    """The file's bytes, decompressed when gzip, bounded like every trace reader."""
    fd, size = open_regular(path, what="telemetry file")
    max_bytes = limit(ARCHIVE_ENV, MAX_ARCHIVE_BYTES)
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head != _GZIP_MAGIC:
            if size > max_bytes:
                raise TelemetryError(f"{path}: {size:,} bytes is over the {ARCHIVE_ENV} limit ({max_bytes:,})")
            return fh.read()
        out = io.BytesIO()
        try:
            with gzip.GzipFile(fileobj=fh) as stream:
                while True:
                    chunk = stream.read(1 << 20)
                    if not chunk:
                        break
                    if out.tell() + len(chunk) > max_bytes:
                        raise archive_too_big(path, max_bytes)
                    out.write(chunk)
        except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
            raise TelemetryError(f"{path}: corrupt gzip ({exc})") from None
        return out.getvalue()


def looks_like_json(data: bytes) -> bool:
    return data.lstrip()[:1] in (b"{", b"[")


# -- JSON ------------------------------------------------------------------------------


def read_json(data: bytes, path: str) -> Collected:
    collected = Collected()
    documents: list[tuple[int, Any]] = []
    try:
        documents = [(0, json.loads(data))]
    except RecursionError:
        raise TelemetryError(f"{path}: JSON nested too deeply to be OTLP") from None
    except ValueError:
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append((number, json.loads(line)))
            except (ValueError, RecursionError) as exc:
                collected.skipped.append(f"{path}:{number}: not JSON ({exc}); line skipped")
    for number, document in documents:
        for item in document if isinstance(document, list) else [document]:
            if not isinstance(item, dict):
                collected.skipped.append(f"{path}:{number}: not an OTLP object; skipped")
                continue
            add_request(collected, item)
    return collected


def add_request(collected: Collected, request: dict[str, Any]) -> None:
    """One ``ExportTraceServiceRequest``/``TracesData`` (and logs) in OTLP/JSON form."""
    for resource_spans in _list(request.get("resourceSpans") or request.get("resource_spans")):
        resource = attributes(_dict(resource_spans.get("resource")).get("attributes"))
        scopes = _list(
            resource_spans.get("scopeSpans")
            or resource_spans.get("scope_spans")
            or resource_spans.get("instrumentationLibrarySpans")
        )
        for scope_spans in scopes:
            scope = _dict(scope_spans.get("scope") or scope_spans.get("instrumentationLibrary"))
            for raw in _list(scope_spans.get("spans")):
                span = _span(raw, resource, str(scope.get("name") or ""))
                if span is None:
                    collected.skipped.append(f"a span without valid ids ({str(raw.get('name'))[:60]!r}); skipped")
                else:
                    collected.spans.append(span)
    for resource_logs in _list(request.get("resourceLogs") or request.get("resource_logs")):
        for scope_logs in _list(resource_logs.get("scopeLogs") or resource_logs.get("scope_logs")):
            for record in _list(scope_logs.get("logRecords") or scope_logs.get("log_records")):
                span_id = span_id_of(record.get("spanId") or record.get("span_id"), 8)
                if span_id is None:
                    continue  # content logged outside any span cannot be placed
                attrs = attributes(record.get("attributes"))
                name = record.get("eventName") or record.get("event_name") or attrs.get("event.name") or ""
                collected.logs.setdefault(span_id, []).append(
                    SpanEvent(
                        str(name),
                        _int(record.get("timeUnixNano") or record.get("observedTimeUnixNano")),
                        attrs,
                        body=any_value(record.get("body")),
                        log=True,
                    )
                )


def _span(raw: dict[str, Any], resource: dict[str, Any], scope: str) -> SpanRecord | None:
    trace_id = span_id_of(raw.get("traceId") or raw.get("trace_id"), 16)
    span_id = span_id_of(raw.get("spanId") or raw.get("span_id"), 8)
    if trace_id is None or span_id is None:
        return None
    parent = span_id_of(raw.get("parentSpanId") or raw.get("parent_span_id"), 8)
    status = _dict(raw.get("status"))
    events = [
        SpanEvent(
            str(e.get("name") or ""),
            _int(e.get("timeUnixNano") or e.get("time_unix_nano")),
            attributes(e.get("attributes")),
        )
        for e in _list(raw.get("events"))
    ]
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=str(raw.get("name") or ""),
        start_ns=_int(raw.get("startTimeUnixNano") or raw.get("start_time_unix_nano")),
        end_ns=_int(raw.get("endTimeUnixNano") or raw.get("end_time_unix_nano")),
        attributes=attributes(raw.get("attributes")),
        events=events,
        status_code=_enum(status.get("code"), _STATUS, "STATUS_CODE_"),
        status_message=str(status.get("message") or ""),
        kind=_enum(raw.get("kind"), _KINDS, "SPAN_KIND_"),
        resource=resource,
        scope=scope,
        dropped_attributes=_int(raw.get("droppedAttributesCount") or raw.get("dropped_attributes_count")),
    )


def span_id_of(value: Any, size: int) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex, from hex or base64; ``None`` if absent/zero."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    raw: bytes | None = None
    if len(text) == size * 2:
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raw = None
    if raw is None:
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
    if len(raw) != size or not any(raw):
        return None
    return raw.hex()


def attributes(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` lists as a dict of plain values."""
    out: dict[str, Any] = {}
    for item in _list(items):
        key = item.get("key")
        if isinstance(key, str):
            out[key] = any_value(item.get("value"))
    return out


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (JSON form, either field spelling) as a plain value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("intValue", "int_value"):
        if key in value:
            return _int(value[key])
    for key in ("doubleValue", "double_value"):
        if key in value:
            try:
                return float(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [any_value(v) for v in _list(_dict(value[key]).get("values"))]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return attributes(_dict(value[key]).get("values"))
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]  # base64 text: kept as it came
    return None


def _enum(value: Any, names: dict[int, str], prefix: str) -> str:
    if isinstance(value, int):
        return names.get(value, str(value))
    if isinstance(value, str):
        return value.removeprefix(prefix) or "UNSET"
    return names[0] if 0 in names and prefix == "STATUS_CODE_" else "INTERNAL"


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _list(value: Any) -> list[Any]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- protobuf --------------------------------------------------------------------------


def read_protobuf(data: bytes, path: str) -> Collected:
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise TelemetryError(
            f"{path}: reading OTLP protobuf needs the opentelemetry-proto package "
            "(pip install opentelemetry-exporter-otlp-proto-http)"
        ) from None
    for frames in (_fixed32_frames, _varint_frames, _whole):
        messages = []
        try:
            for frame in frames(data):
                message = ExportTraceServiceRequest()
                message.ParseFromString(frame)
                messages.append(message)
        except (DecodeError, ValueError):
            continue
        if messages and any(m.resource_spans for m in messages):
            collected = Collected()
            for message in messages:
                add_request(collected, MessageToDict(message))
            return collected
    raise TelemetryError(
        f"{path}: not OTLP protobuf (no ExportTraceServiceRequest/TracesData with spans, in any framing: "
        "4-byte length prefix, varint-delimited or one message) and not OTLP JSON"
    )


def _fixed32_frames(data: bytes) -> Iterator[bytes]:
    position = 0
    while position < len(data):
        if position + 4 > len(data):
            raise ValueError("short length prefix")
        size = int.from_bytes(data[position : position + 4], "big")
        position += 4
        if position + size > len(data):
            raise ValueError("frame past the end")
        yield data[position : position + size]
        position += size


def _varint_frames(data: bytes) -> Iterator[bytes]:
    position = 0
    while position < len(data):
        size = shift = 0
        while True:
            if position >= len(data) or shift > 63:
                raise ValueError("bad varint")
            byte = data[position]
            position += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if position + size > len(data):
            raise ValueError("frame past the end")
        yield data[position : position + size]
        position += size


def _whole(data: bytes) -> Iterable[bytes]:
    return [data]


def read_file(path: str) -> Collected:
    """Spans (and correlated logs) of an OTLP JSON or protobuf file, gzip or not."""
    data = read_bytes(path)
    if not data.strip():
        raise TelemetryError(f"{path}: empty file; no spans to import")
    collected = read_json(data, path) if looks_like_json(data) else read_protobuf(data, path)
    collected.attach_logs()
    return collected
