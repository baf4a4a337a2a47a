"""``RewindSpanExporter``: turns ended rewind spans into trace-file lines.

The span itself carries only what other backends should see (and may have been
truncated by the SDK's attribute limits). The full event travels beside it through
the payload channel, keyed by span id; the exporter writes that event as one flushed
JSON line. Spans that are not rewind calls are ignored, so the exporter can sit on
any processor.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from rewind.storage.trace import TraceWriter

from .parcels import PARCELS


class RewindSpanExporter(SpanExporter):
    """Writes the event behind each rewind span to a trace file, one line per span."""

    def __init__(self, writer: TraceWriter) -> None:
        self._writer = writer

    @property
    def path(self) -> str:
        return self._writer.path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            context = span.context
            if context is None:
                continue
            parcel = PARCELS.get(context.span_id)
            if parcel is None or parcel.session.writer is not self._writer:
                continue
            try:
                self._writer.write(parcel.event)
            except Exception:
                return SpanExportResult.FAILURE
            # Only a written event leaves the channel: a failed export is retried by
            # the interception core, which raises instead of losing the step.
            PARCELS.pop(context.span_id, None)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._writer.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
