"""``rewind export``: a trace file as OpenTelemetry spans, for any OTLP backend.

The writer beside the importer's readers: each step becomes one span in rewind's own
attribute layout (``rewind.kind``/``name``/``seq``, the GenAI operation, usage and
content attributes) carrying the step's whole trace line and its sha256
(``rewind.event``), all under one ``invoke_agent`` span for the run. So the run shows up
in the team's backend as a live recording would, and ``rewind import`` of what was sent
rebuilds every step byte for byte (the ``rewind`` mapper proves each line by its digest).

Spans are made by the OpenTelemetry SDK itself (a private ``TracerProvider`` with no
attribute length limit, ids drawn from the trace's header so exporting twice sends the
same ids) and encoded by OpenTelemetry's own OTLP encoder: written as OTLP JSON lines
(the Collector ``file`` exporter's format, one ``ExportTraceServiceRequest`` per line)
or sent over OTLP/HTTP, protobuf through ``opentelemetry-exporter-otlp-proto-http``
(which honours the ``OTEL_EXPORTER_OTLP_*`` headers, certificates and compression) or
JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import random
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from rewind.engine import content_capture
from rewind.engine.core import OPERATIONS
from rewind.engine.telemetry import RUN_OPERATION, legacy_attributes, usage_attributes
from rewind.storage.trace import Event, Trace

from .errors import TelemetryError

#: The service.name exported spans carry unless told otherwise.
SERVICE = "rewind-export"
#: Spans per ``ExportTraceServiceRequest`` (a line of the file, a request sent).
BATCH = 100
PROTOCOLS = ("http/protobuf", "http/json")
_TRACES_PATH = "/v1/traces"
_IDS = {"traceId", "spanId", "parentSpanId"}


@dataclass
class ExportReport:
    source: str
    trace_id: str
    spans: int
    steps: int
    output: str | None = None
    endpoint: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _SeededIds(IdGenerator):
    """Ids drawn from the trace's header: the same file exports with the same ids."""

    def __init__(self, seed: bytes) -> None:
        self._random = random.Random(seed)

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1


def trace_spans(trace: Trace, *, name: str, service: str = SERVICE) -> list[ReadableSpan]:
    """The run as finished SDK spans: one ``invoke_agent`` span, one child per step."""
    seed = hashlib.sha256(json.dumps(trace.header, sort_keys=True, default=str).encode()).digest()
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service}),
        id_generator=_SeededIds(seed),
        # The whole line must arrive, whatever OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT says.
        span_limits=SpanLimits(max_attribute_length=SpanLimits.UNSET, max_span_attributes=SpanLimits.UNSET),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    from rewind._version import __version__

    tracer = provider.get_tracer("rewind", __version__)
    times = list(_step_times(trace))
    start = min((t[0] for t in times), default=_created_ns(trace))
    end = max((t[1] for t in times), default=start)
    run = tracer.start_span(
        RUN_OPERATION,
        kind=trace_api.SpanKind.INTERNAL,
        start_time=start,
        attributes={"gen_ai.operation.name": RUN_OPERATION, "rewind.mode": "record", "rewind.trace": name},
    )
    parent = trace_api.set_span_in_context(run)
    for event, (step_start, step_end) in zip(trace.events, times):
        operation = OPERATIONS.get(event.kind, event.kind)
        attrs = _step_attributes(event, operation)
        model = attrs.get("gen_ai.request.model")
        span = tracer.start_span(
            f"{operation} {model if isinstance(model, str) else event.name}",
            context=parent,
            kind=trace_api.SpanKind.CLIENT,
            start_time=step_start,
            attributes=attrs,
        )
        if not event.ok:
            error = event.error or {}
            kind = error.get("type") or error.get("qualname") or "error"
            span.set_attribute("error.type", str(kind))
            span.set_status(trace_api.StatusCode.ERROR, str(error.get("message") or "")[:1000])
        span.end(end_time=step_end)
    run.end(end_time=end)
    provider.shutdown()
    return list(memory.get_finished_spans())


def _step_attributes(event: Event, operation: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "rewind.kind": event.kind,
        "rewind.name": event.name,
        "rewind.seq": event.seq,
        "rewind.fingerprint": event.fingerprint,
        "rewind.mode": "record",
    }
    request = event.request
    if event.kind == "tool":
        attrs["gen_ai.tool.name"] = event.name
    elif event.kind == "llm" and isinstance(request, dict) and isinstance(request.get("model"), str):
        attrs["gen_ai.request.model"] = request["model"]
    attrs.update(content_capture.input_attributes(event.kind, operation, request))
    if event.ok:
        attrs.update(usage_attributes(event.response))
        attrs.update(content_capture.output_attributes(event.kind, event.response))
    attrs.update(content_capture.event_attributes(event))
    attrs.update(legacy_attributes(attrs))  # REWIND_GENAI_LEGACY_ATTRIBUTES, as live spans
    return attrs


def _created_ns(trace: Trace) -> int:
    created = trace.header.get("created_ts")
    return int(float(created) * 1e9) if isinstance(created, (int, float)) else 0


def _step_times(trace: Trace) -> Iterator[tuple[int, int]]:
    """Each step's start and end in ns: its ``ts`` when recorded, else one after the other."""
    cursor = _created_ns(trace)
    for event in trace.events:
        start = int(event.ts * 1e9) if event.ts else cursor
        end = start + int(max(0.0, event.duration_ms) * 1e6)
        cursor = max(cursor, end)
        yield start, end


# -- encoding --------------------------------------------------------------------------


def _batches(spans: Sequence[ReadableSpan]) -> Iterator[Sequence[ReadableSpan]]:
    for i in range(0, len(spans), BATCH):
        yield spans[i : i + BATCH]


_NEEDS = "rewind export needs OpenTelemetry's OTLP exporter (pip install opentelemetry-exporter-otlp-proto-http)"


def json_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` in OTLP/JSON (hex ids, as the Collector writes it)."""
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    except ImportError:
        raise TelemetryError(_NEEDS) from None
    return _hex_ids(MessageToDict(encode_spans(spans)))


def _hex_ids(value: Any) -> Any:
    """protobuf's generic JSON spells ids in base64; OTLP/JSON spells them in hex."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else _hex_ids(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def write_jsonl(spans: Sequence[ReadableSpan], path: str) -> None:
    """OTLP JSON lines, written whole or not at all (a temporary file renamed into place)."""
    data = "".join(json.dumps(json_request(batch), ensure_ascii=False) + "\n" for batch in _batches(spans))
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise TelemetryError(f"{path}: cannot write ({exc.strerror or exc})") from None


# -- sending ---------------------------------------------------------------------------


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: a bare ``http://host:port`` gets ``/v1/traces``."""
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise TelemetryError(f"{endpoint}: not an http:// or https:// URL")
    if parsed.path in ("", "/"):
        return urllib.parse.urlunsplit(parsed._replace(path=_TRACES_PATH))
    return endpoint


def send(
    spans: Sequence[ReadableSpan],
    endpoint: str,
    *,
    protocol: str = "http/protobuf",
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> None:
    """POST the spans to an OTLP/HTTP receiver; ``TelemetryError`` saying why when it refuses."""
    url = traces_url(endpoint)
    if protocol not in PROTOCOLS:
        raise TelemetryError(f"unknown protocol {protocol!r}: use one of {', '.join(PROTOCOLS)}")
    for batch in _batches(spans):
        if protocol == "http/json":
            _post_json(url, json_request(batch), headers or {}, timeout)
        else:
            _post_protobuf(url, batch, headers, timeout)


def _post_protobuf(url: str, batch: Sequence[ReadableSpan], headers: dict[str, str] | None, timeout: float) -> None:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise TelemetryError(_NEEDS) from None
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=url, headers=headers or None, timeout=timeout)
    with _exporter_messages() as messages:
        result = exporter.export(batch)
    exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        reason = "; ".join(messages[-2:]) or "the exporter gave no reason"
        raise TelemetryError(f"{url}: the OTLP/HTTP export failed ({reason})")


@contextmanager
def _exporter_messages() -> Iterator[list[str]]:
    """What the OTLP exporter logs while it sends (its only way of saying why it failed)."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage()[:300])

    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # said once, in our error, not also on stderr
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _post_json(url: str, document: dict[str, Any], headers: dict[str, str], timeout: float) -> None:
    body = json.dumps(document, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(
        url, data=body, method="POST", headers={**headers, "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace").strip()
        raise TelemetryError(f"{url}: the receiver answered HTTP {exc.code} {detail}".rstrip()) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TelemetryError(f"{url}: cannot send ({reason})") from None


# -- the command's work ------------------------------------------------------------------


def export_trace(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    endpoint: str | None = None,
    protocol: str = "http/protobuf",
    headers: dict[str, str] | None = None,
    service: str = SERVICE,
    timeout: float = 10.0,
) -> ExportReport:
    """Send the trace at ``source`` to ``output`` (OTLP JSON lines) and/or ``endpoint`` (OTLP/HTTP).

    Raises ``TraceFormatError`` when ``source`` is not a readable trace and
    ``TelemetryError`` when the spans cannot be written or sent.
    """
    if output is None and endpoint is None:
        raise TelemetryError("nowhere to export to: give an output file or an endpoint")
    text = os.fspath(source)
    trace = Trace.load(text)
    if endpoint is not None:
        traces_url(endpoint)  # a bad URL is said before anything is built
    spans = trace_spans(trace, name=os.path.basename(text), service=service)
    context = spans[0].context
    report = ExportReport(
        source=text, trace_id=format(context.trace_id, "032x") if context else "", spans=len(spans), steps=len(trace)
    )
    if output is not None:
        write_jsonl(spans, os.fspath(output))
        report.output = os.fspath(output)
    if endpoint is not None:
        send(spans, endpoint, protocol=protocol, headers=headers, timeout=timeout)
        report.endpoint = traces_url(endpoint)
    return report
