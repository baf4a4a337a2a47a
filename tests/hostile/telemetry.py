"""Hostile telemetry files for ``rewind import``, built byte by byte (no SDK needed).

Each function writes one file into ``folder`` and returns its path. The OTLP spans are
spelled by hand in OTLP/JSON and in protobuf wire format, so a file can say what no
well-behaved producer would: millions of empty messages, a parent chain thousands deep,
numbers past every range, two runs claiming the same steps.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "1bf7651916cd43dd8448eb211c80319d"


# -- protobuf bombs ----------------------------------------------------------------


def zero_bytes_gzip(folder: Path, size: int = 4 << 20) -> Path:
    """``size`` zero bytes, gzip: a few KB on disk, one empty message per byte to a naive reader."""
    path = folder / "zeros.pb.gz"
    path.write_bytes(gzip.compress(b"\0" * size, 9))
    return path


def _len_field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2]) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def empty_spans_protobuf(folder: Path, count: int = 8_000_000) -> Path:
    """One export holding ``count`` empty spans (two bytes each), gzip: tens of KB on disk."""
    spans = b"\x12\x00" * count  # ScopeSpans.spans (field 2), each an empty Span
    request = _len_field(1, _len_field(2, spans))  # ResourceSpans.scope_spans, request.resource_spans
    path = folder / "empty-spans.pb.gz"
    path.write_bytes(gzip.compress(request, 9))
    return path


def empty_attributes_json(folder: Path, count: int = 3_000_000) -> Path:
    """One span with ``count`` empty attributes in OTLP/JSON (3 bytes each)."""
    attributes = "[" + ",".join(["{}"] * count) + "]"
    span = f'{{"traceId":"{TRACE_A}","spanId":"00f067aa0ba902b7","name":"x","attributes":{attributes}}}'
    path = folder / "empty-attributes.json"
    path.write_text(f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{span}]}}]}}]}}\n')
    return path


# -- OTLP/JSON spans ---------------------------------------------------------------


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        wrapped: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        wrapped = {"intValue": str(value)}
    else:
        wrapped = {"stringValue": value}
    return {"key": key, "value": wrapped}


def span(
    span_id: str,
    *,
    trace_id: str = TRACE_A,
    parent: str | None = None,
    start: Any = 1_700_000_000_000_000_000,
    attributes: dict[str, Any] | None = None,
    raw_attributes: list[dict[str, Any]] | None = None,
    name: str = "step",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": start,
        "endTimeUnixNano": start if not isinstance(start, int) else start + 1_000_000,
        "attributes": [_attr(k, v) for k, v in (attributes or {}).items()] + list(raw_attributes or []),
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def request(spans: Iterable[dict[str, Any]]) -> dict[str, Any]:
    resource = {"attributes": [_attr("service.name", "hostile")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def write_json(folder: Path, name: str, spans: Iterable[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_text(json.dumps(request(spans)) + "\n")
    return path


def span_id(number: int) -> str:
    return f"{number + 1:016x}"


def tool_attributes(seq: int | None, *, value: str = "v") -> dict[str, Any]:
    """A rewind tool step carrying its whole trace line (``rewind.event``) and its digest."""
    line = {
        "seq": seq,
        "kind": "tool",
        "name": "lookup",
        "fingerprint": "f" * 16,
        "ts": 1_700_000_000.0,
        "duration_ms": 1.0,
        "ok": True,
        "live": True,
        "request": {"args": [value], "kwargs": {}},
        "response": value.upper(),
    }
    text = json.dumps(line)
    attrs: dict[str, Any] = {
        "rewind.kind": "tool",
        "rewind.name": "lookup",
        "rewind.event": text,
        "rewind.event.sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    if seq is not None:
        attrs["rewind.seq"] = seq
    return attrs


def deep_chain(folder: Path, depth: int) -> Path:
    """``depth`` spans, each the parent of the next, all starting in the same instant."""
    spans = [
        span(span_id(i), parent=span_id(i - 1) if i else None, attributes={"gen_ai.operation.name": "chat"})
        for i in range(depth)
    ]
    return write_json(folder, f"chain-{depth}.json", spans)


def two_recorded_runs(folder: Path) -> Path:
    """Two runs of two tool steps each, both numbered 0 and 1 (``--trace-id all`` joins them)."""
    spans = [
        span(span_id(n), trace_id=trace, start=1_700_000_000_000_000_000 + n * 10**9, attributes=tool_attributes(seq))
        for n, (trace, seq) in enumerate([(TRACE_A, 0), (TRACE_A, 1), (TRACE_B, 0), (TRACE_B, 1)])
    ]
    return write_json(folder, "two-runs.json", spans)


def huge_seq(folder: Path) -> Path:
    """A step numbered 10**30, past the 64-bit seq every trace reader accepts."""
    spans = [span(span_id(0), attributes=tool_attributes(10**30)), span(span_id(1), attributes=tool_attributes(1))]
    return write_json(folder, "huge-seq.json", spans)


def huge_numbers(folder: Path, where: str) -> Path:
    """A tool step whose start time or integer attribute is ``1e400`` or 400 nines."""
    attrs = tool_attributes(0)
    if where == "start_float":
        spans = [span(span_id(0), start=1e400, attributes=attrs)]
    elif where == "start_digits":
        spans = [span(span_id(0), start="9" * 400, attributes=attrs)]
    else:
        number = {"intValue": 1e400} if where == "int_float" else {"intValue": "9" * 400}
        spans = [span(span_id(0), attributes=attrs, raw_attributes=[{"key": "n", "value": number}])]
    path = folder / f"huge-{where}.json"
    # json.dumps writes float('inf') as Infinity; 1e400 is what a hostile file spells.
    path.write_text(json.dumps(request(spans)).replace("Infinity", "1e400") + "\n")
    return path
