"""Which run to import: the trace asked for, else the only one holding GenAI steps.

A run is a trace. ``choose_trace`` chooses among spans already read; the streamed reader
of OTLP JSON lines (``streamed``) chooses from per-trace summaries (``TraceSummary``)
gathered in a first pass and keeps only the chosen run's spans. Both decide by the same
rules (``decide``) and say what went wrong in the same words (the ``*_error`` helpers):
which one read the file is invisible to the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import TelemetryError
from .mappers import mapper_for
from .spans import SpanRecord

#: How many of a file's trace ids an error about a missing one lists.
KNOWN_SHOWN = 10


@dataclass
class TraceSummary:
    """What choosing needs of one trace: when it started, its services, its GenAI spans."""

    first_start: int
    services: set[str] = field(default_factory=set)
    steps: int = 0

    def add(self, span: SpanRecord) -> None:
        self.first_start = min(self.first_start, span.start_ns)
        self.services.add(span.service or "?")


def every_trace(trace_id: str | None) -> bool:
    """Whether ``--trace-id`` asks for every trace (one run spread over several)."""
    return trace_id is not None and trace_id.strip().lower() in ("all", "*")


def wanted_traces(trace_id: str) -> set[str]:
    """The trace ids of ``--trace-id ID,ID``, lowercase."""
    return {part.strip().lower() for part in trace_id.split(",") if part.strip()}


def no_service_error(source: str, service: str) -> TelemetryError:
    return TelemetryError(f"{source}: no spans from service {service!r}")


def missing_error(source: str, missing: set[str], known: list[str]) -> TelemetryError:
    """``known``: the smallest trace ids present, sorted (at most ``KNOWN_SHOWN``)."""
    shown = ", ".join(known[:KNOWN_SHOWN])
    return TelemetryError(f"{source}: no spans in trace {', '.join(sorted(missing))} (traces here: {shown or 'none'})")


def decide(summaries: dict[str, TraceSummary], any_span: bool, source: str) -> set[str] | None:
    """The trace ids to import, or ``None`` for every span (no trace holds a GenAI step).

    ``summaries`` is in the order each trace first appeared. Raises when there is no span
    at all, or when several traces hold GenAI steps (listed, oldest first).
    """
    with_steps = {tid: summary for tid, summary in summaries.items() if summary.steps}
    if len(with_steps) == 1:
        return set(with_steps)
    if not with_steps:
        if not any_span:
            raise TelemetryError(f"{source}: no spans found")
        return None  # nothing mappable anywhere: the report lists what was seen
    lines = [
        f"{tid} ({summary.steps} GenAI spans; {', '.join(sorted(summary.services))})"
        for tid, summary in sorted(with_steps.items(), key=lambda kv: kv[1].first_start)
    ]
    raise TelemetryError(
        f"{source} holds {len(with_steps)} traces with GenAI spans; pass --trace-id ID (trace_id=) to pick one, "
        "several as ID,ID, or --trace-id all when they are one run whose calls no span enclosed: " + "; ".join(lines)
    )


def choose_trace(spans: list[SpanRecord], trace_id: str | None, service: str | None, source: str) -> list[SpanRecord]:
    """The spans of one run: the one asked for, else the only one holding GenAI steps."""
    if service is not None:
        spans = [s for s in spans if s.service == service]
        if not spans:
            raise no_service_error(source, service)
    if every_trace(trace_id):
        return spans  # one run spread over several traces (no span enclosed its calls)
    if trace_id is not None:
        wanted = wanted_traces(trace_id)
        chosen = [s for s in spans if s.trace_id in wanted]
        missing = wanted - {s.trace_id for s in chosen}
        if missing:
            raise missing_error(source, missing, sorted({s.trace_id for s in spans}))
        return chosen
    summaries: dict[str, TraceSummary] = {}
    for span in spans:
        summary = summaries.setdefault(span.trace_id, TraceSummary(span.start_ns))
        summary.add(span)
        if mapper_for(span):
            summary.steps += 1
    chosen_ids = decide(summaries, bool(spans), source)
    return spans if chosen_ids is None else [s for s in spans if s.trace_id in chosen_ids]
