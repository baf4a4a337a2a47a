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

These readers hold the whole file; ``import_telemetry`` reads an OTLP JSON lines file a
line at a time instead (``otlp_lines``, ``streamed``), through the same ``add_request``.

What a file may cost is bounded by what it decodes, not by its size (``limits``): every
span, attribute, event and array entry is counted, a protobuf message is counted before
it is parsed (``protobuf_scan``), and a JSON document before it is parsed by its
brackets. Numbers out of range (a time of ``1e400``) read as absent, never as a crash.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from rewind.data.safe_read import ARCHIVE_ENV, MAX_ARCHIVE_BYTES, archive_too_big, limit, open_regular

from .errors import TelemetryError
from .limits import Budget
from .protobuf_scan import WireError, check_fits
from .spans import SpanEvent, SpanRecord

_GZIP_MAGIC = b"\x1f\x8b"
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
#: Times are unsigned 64-bit nanoseconds; OTLP integers are signed 64-bit.
_MAX_U64 = (1 << 64) - 1
_I64 = (-(1 << 63), (1 << 63) - 1)
#: A JSON document may hold this many brackets per item of the budget (a span's attribute
#: is two: its KeyValue and its AnyValue); more means it was built to exhaust memory.
_BRACKETS_PER_ITEM = 4


class Collected:
    """Spans and the log records that name a span, as one reader found them.

    This one keeps every span and log record (the readers that hold a whole file). A
    reader asks ``admit``/``admit_log`` before it decodes a span or a log record, and
    hands over what it decoded with what it cost (``items``): a subclass keeps only one
    run, or only a summary (``streamed``).
    """

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget if budget is not None else Budget("telemetry")
        self.spans: list[SpanRecord] = []
        self.logs: dict[str, list[SpanEvent]] = {}
        self.skipped: list[str] = []

    def admit(self, trace_id: str, service: str | None) -> bool:
        """Whether to decode a span of ``trace_id`` from ``service`` (its ids are valid)."""
        return True

    def admit_log(self, trace_id: str | None) -> bool:
        """Whether to decode a log record naming a span, of ``trace_id`` (``None``: it names none)."""
        return True

    def add_span(self, span: SpanRecord, items: int) -> None:
        self.spans.append(span)

    def add_log(self, span_id: str, trace_id: str | None, record: SpanEvent, items: int) -> None:
        self.logs.setdefault(span_id, []).append(record)

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
    collected = Collected(Budget(path))
    try:
        add_document(collected, 0, parse_json(data, collected.budget))
    except RecursionError:
        raise TelemetryError(f"{path}: JSON nested too deeply to be OTLP") from None
    except ValueError:
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                document = parse_json(line, collected.budget)
            except (ValueError, RecursionError) as exc:
                collected.skipped.append(f"{path}:{number}: not JSON ({exc}); line skipped")
                continue
            add_document(collected, number, document)
    return collected


def parse_json(text: bytes, budget: Budget) -> Any:
    """``json.loads``, once the document's brackets show it fits what the budget has left."""
    if len(text) // 2 > budget.items_left * _BRACKETS_PER_ITEM:
        brackets = text.count(b"{") + text.count(b"[")
        if brackets > budget.items_left * _BRACKETS_PER_ITEM:
            budget.spend_items(brackets // _BRACKETS_PER_ITEM + 1)
    return json.loads(text)


def add_document(collected: Collected, number: int, document: Any, path: str | None = None) -> None:
    """The requests of one JSON document (an object, or an array of them) of line ``number`` of ``path``."""
    path = collected.budget.source if path is None else path
    for item in document if isinstance(document, list) else [document]:
        if not isinstance(item, dict):
            collected.skipped.append(f"{path}:{number}: not an OTLP object; skipped")
            continue
        add_request(collected, item)


def add_request(collected: Collected, request: dict[str, Any]) -> None:
    """One ``ExportTraceServiceRequest``/``TracesData`` (and logs) in OTLP/JSON form."""
    budget = collected.budget
    for resource_spans in _list(request.get("resourceSpans") or request.get("resource_spans")):
        resource = attributes(_dict(resource_spans.get("resource")).get("attributes"), budget)
        service = resource.get("service.name")
        service = service if isinstance(service, str) else None
        scopes = _list(
            resource_spans.get("scopeSpans")
            or resource_spans.get("scope_spans")
            or resource_spans.get("instrumentationLibrarySpans")
        )
        for scope_spans in scopes:
            scope = _dict(scope_spans.get("scope") or scope_spans.get("instrumentationLibrary"))
            for raw in _list(scope_spans.get("spans")):
                budget.spend_spans()
                budget.spend_items()
                ids = _ids(raw)
                if ids is None:
                    collected.skipped.append(f"a span without valid ids ({str(raw.get('name'))[:60]!r}); skipped")
                elif collected.admit(ids[0], service):
                    before = budget.items
                    span = _span(raw, ids, resource, str(scope.get("name") or ""), budget)
                    collected.add_span(span, budget.items - before + 1)
    for resource_logs in _list(request.get("resourceLogs") or request.get("resource_logs")):
        for scope_logs in _list(resource_logs.get("scopeLogs") or resource_logs.get("scope_logs")):
            for record in _list(scope_logs.get("logRecords") or scope_logs.get("log_records")):
                budget.spend_items()
                span_id = span_id_of(record.get("spanId") or record.get("span_id"), 8)
                if span_id is None:
                    continue  # content logged outside any span cannot be placed
                trace_id = span_id_of(record.get("traceId") or record.get("trace_id"), 16)
                if not collected.admit_log(trace_id):
                    continue
                before = budget.items
                attrs = attributes(record.get("attributes"), budget)
                name = record.get("eventName") or record.get("event_name") or attrs.get("event.name") or ""
                event = SpanEvent(
                    str(name),
                    time_ns(record.get("timeUnixNano") or record.get("observedTimeUnixNano")),
                    attrs,
                    body=any_value(record.get("body"), budget),
                    log=True,
                )
                collected.add_log(span_id, trace_id, event, budget.items - before + 1)


def _ids(raw: dict[str, Any]) -> tuple[str, str] | None:
    """A span's trace and span ids, or ``None`` when either is missing or invalid."""
    trace_id = span_id_of(raw.get("traceId") or raw.get("trace_id"), 16)
    span_id = span_id_of(raw.get("spanId") or raw.get("span_id"), 8)
    return None if trace_id is None or span_id is None else (trace_id, span_id)


def _span(
    raw: dict[str, Any], ids: tuple[str, str], resource: dict[str, Any], scope: str, budget: Budget
) -> SpanRecord:
    trace_id, span_id = ids
    parent = span_id_of(raw.get("parentSpanId") or raw.get("parent_span_id"), 8)
    status = _dict(raw.get("status"))
    events = []
    for e in _list(raw.get("events")):
        budget.spend_items()
        events.append(
            SpanEvent(
                str(e.get("name") or ""),
                time_ns(e.get("timeUnixNano") or e.get("time_unix_nano")),
                attributes(e.get("attributes"), budget),
            )
        )
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=str(raw.get("name") or ""),
        start_ns=time_ns(raw.get("startTimeUnixNano") or raw.get("start_time_unix_nano")),
        end_ns=time_ns(raw.get("endTimeUnixNano") or raw.get("end_time_unix_nano")),
        attributes=attributes(raw.get("attributes"), budget),
        events=events,
        status_code=_enum(status.get("code"), _STATUS, "STATUS_CODE_"),
        status_message=str(status.get("message") or ""),
        kind=_enum(raw.get("kind"), _KINDS, "SPAN_KIND_"),
        resource=resource,
        scope=scope,
        dropped_attributes=max(0, _int(raw.get("droppedAttributesCount") or raw.get("dropped_attributes_count")) or 0),
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


def attributes(items: Any, budget: Budget | None = None) -> dict[str, Any]:
    """OTLP ``KeyValue`` lists as a dict of plain values (each counted against ``budget``)."""
    out: dict[str, Any] = {}
    for item in _list(items):
        if budget is not None:
            budget.spend_items()
        key = item.get("key")
        if isinstance(key, str):
            out[key] = any_value(item.get("value"), budget)
    return out


def any_value(value: Any, budget: Budget | None = None) -> Any:
    """An OTLP ``AnyValue`` (JSON form, either field spelling) as a plain value.

    An integer outside OTLP's signed 64 bits, or a double that is not finite, reads as
    ``None``: the value was not something a producer could have sent, and it would make
    the written trace unreadable.
    """
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
                number = float(value[key])
            except (TypeError, ValueError, OverflowError):
                return None
            return number if math.isfinite(number) else None
    for key in ("arrayValue", "array_value"):
        if key in value:
            values = _list(_dict(value[key]).get("values"))
            if budget is not None:
                budget.spend_items(len(values))
            return [any_value(v, budget) for v in values]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return attributes(_dict(value[key]).get("values"), budget)
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


def _int(value: Any) -> int | None:
    """An OTLP int64 (a JSON number or its decimal string); ``None`` when absent or out of range."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str) and len(value) > 24:
        return None  # no int64 needs more digits; int() of a long string costs quadratic time
    try:
        number = int(value)
    except (ValueError, OverflowError):  # "x", inf and nan (1e400 reads as inf)
        return None
    return number if _I64[0] <= number <= _I64[1] else None


def time_ns(value: Any) -> int:
    """A ``fixed64`` time in nanoseconds; 0 (unknown) when absent, negative or out of range."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        number: int | None = int(value)
    else:
        number = _int(value)
    return number if number is not None and 0 <= number <= _MAX_U64 else 0


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
        # Each framing is tried whole: a frame that does not parse means another framing.
        # Frames are parsed one at a time, each once the scan shows it fits the budget.
        collected = Collected(Budget(path))
        found = False
        try:
            for frame in frames(data):
                check_fits(frame, collected.budget)
                message = ExportTraceServiceRequest()
                message.ParseFromString(frame)
                found = found or bool(message.resource_spans)
                add_request(collected, MessageToDict(message))
                del message
        except (DecodeError, WireError, ValueError):
            continue
        if found:
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
        if size == 0:
            raise ValueError("an empty frame")  # no writer frames an empty export: not this framing
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
        if size == 0:
            raise ValueError("an empty frame")
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
