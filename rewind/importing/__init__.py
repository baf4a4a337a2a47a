"""Replay from the telemetry you already have: ``rewind import`` and ``rewind check``.

Two independent axes:

* readers, one per source, produce neutral spans (``spans.SpanRecord``): OTLP JSON
  (the Collector ``file`` exporter; gzip too) and OTLP protobuf files (``otlp``), a
  running Arize Phoenix over its HTTP API (``phoenix``); an OTLP JSON lines file is read
  a line at a time (``otlp_lines``), keeping only the run imported (``streamed``);
* mappers, one per attribute layout, turn a span into a step (``mappers``): rewind's
  own spans, the GenAI semantic conventions, OpenInference, OpenLLMetry.

``choice`` picks the run (the trace asked for, else the only one with GenAI steps);
``build`` orders the steps causally and rebuilds each model call in its provider's wire
shape (``wire``), so the SDK instrumentors revive it as real SDK objects;
``TelemetryMatcher`` replays it comparing what telemetry carries; ``check`` says, per
step, whether a trace can be replayed and why not. ``content_refs`` puts back content a
GenAI completion hook left in external storage before the mappers read the spans.

``export`` is the writer beside the readers: a trace as spans in rewind's own layout,
written as OTLP JSON lines or sent over OTLP/HTTP (``rewind export``).

Above inspection and the instrumentors: may import the engine, matching, storage, data.
"""

from __future__ import annotations

import os

from . import content_refs
from .build import ImportReport, StepReport, build
from .check import CheckReport, StepCheck, check_trace
from .choice import choose_trace
from .errors import TelemetryError
from .matcher import TelemetryMatcher
from .spans import SpanRecord


def read_spans(
    source: str, *, project: str = "default", headers: dict[str, str] | None = None
) -> tuple[list[SpanRecord], list[str]]:
    """Every span of ``source`` (a file path, or a Phoenix ``http(s)://`` URL) and reader notes."""
    if source.startswith(("http://", "https://")):
        from .phoenix import read_phoenix

        return read_phoenix(source, project, headers=headers), []
    from .otlp import read_file

    if not os.path.exists(source):
        raise TelemetryError(f"{source}: no such file")
    collected = read_file(os.fspath(source))
    return collected.spans, collected.skipped


def limit_from_environment() -> int | None:
    """The attribute length limit in this environment, when set (the producers' likely one)."""
    for name in ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"):
        raw = os.environ.get(name, "").strip()
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
    return None


def import_telemetry(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    trace_id: str | None = None,
    service: str | None = None,
    project: str = "default",
    attribute_limit: int | None = None,
    content_root: str | None = None,
) -> ImportReport:
    """Rebuild one run from telemetry as a rewind trace written to ``output``.

    ``source`` is an OTLP JSON file (one ``ExportTraceServiceRequest`` per line, as the
    Collector's ``file`` exporter writes it; ``.gz`` too), an OTLP protobuf dump, or the
    URL of a running Arize Phoenix (``project`` names its project). ``trace_id`` picks
    the run when the source holds several; ``service`` keeps the spans of one
    ``service.name``. ``attribute_limit`` is the attribute length limit the producers
    ran with, when known: text exactly that long is reported truncated (default:
    ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` when set). ``content_root`` (a folder or an
    ``http(s)://`` URL) is where content a completion hook uploaded now lives; references
    that cannot be read are reported as missing content.

    Returns the report (per step: layout, problems, replayable). Raises
    ``TelemetryError`` when the source cannot be read or holds no spans at all.
    """
    text = os.fspath(source)
    chosen, notes = _read_run(text, trace_id, service, project)
    notes.extend(content_refs.resolve(chosen, content_root))
    if attribute_limit is None:
        attribute_limit = limit_from_environment()
    trace, report = build(chosen, source=text, attribute_limit=attribute_limit)
    del chosen  # the run's spans: the trace holds all that is written, and memory peaks below
    report.notes[:0] = notes
    if output is not None:
        destination = os.fspath(output)
        trace.dump(destination)
        del trace
        _check_written(destination)
        report.output = destination
    return report


def _read_run(
    source: str, trace_id: str | None, service: str | None, project: str
) -> tuple[list[SpanRecord], list[str]]:
    """The spans of the run to import, and the reader's notes."""
    if source.startswith(("http://", "https://")):
        spans, notes = read_spans(source, project=project)
        return choose_trace(spans, trace_id, service, source), notes
    from .streamed import read_run

    return read_run(source, trace_id, service)  # a JSON lines file: only the run is kept


def _check_written(path: str) -> None:
    """Read the written trace back: an import never leaves a file no reader can open."""
    from rewind.errors import TraceFormatError
    from rewind.storage.trace import Trace

    try:
        Trace.load(path)
    except TraceFormatError as exc:
        os.unlink(path)
        raise TelemetryError(f"the imported trace would not be readable ({exc}); nothing was written") from None


__all__ = [
    "CheckReport",
    "ImportReport",
    "SpanRecord",
    "StepCheck",
    "StepReport",
    "TelemetryError",
    "TelemetryMatcher",
    "check_trace",
    "import_telemetry",
    "read_spans",
]
