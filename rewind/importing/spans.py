"""The neutral span model every telemetry reader produces and every mapper reads.

Readers (OTLP JSON, OTLP protobuf, Phoenix) differ in how they spell a span; mappers
(rewind, GenAI semconv, OpenInference, OpenLLMetry) differ in which attributes carry a
call. Between them sits this model: ids as lowercase hex, times in nanoseconds,
attributes as plain Python values (arrays as lists, key-value lists as dicts), span
events and log records that belong to the span attached to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpanEvent:
    """A span event, or a log record correlated to the span (``log`` true)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    log: bool = False


@dataclass
class SpanRecord:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status_code: str = "UNSET"
    status_message: str = ""
    kind: str = "INTERNAL"
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    #: Attributes the producing SDK dropped (its attribute count limit).
    dropped_attributes: int = 0

    @property
    def service(self) -> str | None:
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None

    @property
    def duration_ms(self) -> float:
        return round(max(0, self.end_ns - self.start_ns) / 1e6, 3)

    def where(self) -> str:
        """How a report names this span."""
        return f"span {self.span_id} {self.name!r} (trace {self.trace_id})"


def depths(spans: list[SpanRecord]) -> dict[str, int]:
    """Each span's number of ancestors present, in one pass over every parent link.

    Each chain is walked once and its depths remembered, so a chain thousands deep costs
    its length, not its length squared. A parent missing from the run ends a chain; a
    cycle (hostile telemetry) is cut where the walk meets itself.
    """
    by_id = {span.span_id: span for span in spans}
    depth: dict[str, int] = {}
    for span in spans:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = span.span_id
        while node is not None and node in by_id and node not in depth and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = by_id[node].parent_id
        level = depth[node] + 1 if node is not None and node in depth else 0
        for known in reversed(path):
            depth[known] = level
            level += 1
    return depth


def causal_order(spans: list[SpanRecord], depth: dict[str, int] | None = None) -> list[SpanRecord]:
    """Spans by start time, a parent before its children when they start in the same instant."""
    depth = depths(spans) if depth is None else depth
    return sorted(spans, key=lambda s: (s.start_ns, depth[s.span_id], s.end_ns, s.span_id))
