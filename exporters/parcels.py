"""The side channel that carries full event payloads from a call to the exporter.

Span attributes are subject to the SDK's limits (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``,
the attribute count limit) before any exporter sees them, so a payload placed there
could arrive truncated. The interception core instead parks the finished event here,
keyed by span id, and ``RewindSpanExporter`` takes it out when the span arrives.
Dict ``setdefault``/``pop`` are atomic under the GIL, which is all the locking needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rewind.storage.trace import Event

    from .session import Session


class Parcel(NamedTuple):
    session: Session
    event: Event


PARCELS: dict[int, Parcel] = {}
