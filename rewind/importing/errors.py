"""The one error telemetry import raises when it cannot read its source at all."""

from __future__ import annotations

from rewind.errors import RewindError


class TelemetryError(RewindError):
    """The source could not be read as telemetry (missing, not OTLP, unreachable, no spans).

    Partial telemetry never raises: what could not be used is listed in the import report.
    """
