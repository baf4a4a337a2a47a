"""How much telemetry one import may decode: spans and items, counted as they are decoded.

A telemetry file or a Phoenix answer is data from anywhere. Its size says little about
what decoding it costs (a kilobyte of gzip holds millions of empty protobuf messages,
each a Python object), so every reader counts what it decodes against one budget and
stops with a ``TelemetryError`` naming the limit, before memory or time run away:

* spans (``REWIND_IMPORT_MAX_SPANS``, default 200,000);
* items: messages, attributes, events, array and map entries
  (``REWIND_IMPORT_MAX_ITEMS``, default 2,000,000).

What one budget covers is its ``scope``: a whole source (a Phoenix project, a protobuf
dump, a single-document JSON file, all read whole: "one import"), or, for an OTLP JSON
lines file read line by line, each line as it is decoded ("one line") and, separately,
the spans the import keeps ("one run"). Memory then follows the largest line and the
run imported, not the file, so the bounds hold against hostile input while a file of
many runs, or one long run, imports with the defaults.
"""

from __future__ import annotations

import os

from .errors import TelemetryError

SPANS_ENV = "REWIND_IMPORT_MAX_SPANS"
ITEMS_ENV = "REWIND_IMPORT_MAX_ITEMS"
MAX_SPANS = 200_000
MAX_ITEMS = 2_000_000


class Budget:
    """What is left of one import's budget; ``spend_*`` raises once it runs out."""

    def __init__(
        self, source: str, *, max_spans: int | None = None, max_items: int | None = None, scope: str = "one import"
    ) -> None:
        self.source = source
        self.scope = scope
        self.max_spans = max_spans if max_spans is not None else _limit(SPANS_ENV, MAX_SPANS)
        self.max_items = max_items if max_items is not None else _limit(ITEMS_ENV, MAX_ITEMS)
        self.spans = 0
        self.items = 0

    def restart(self, source: str) -> None:
        """Nothing spent yet, for the next document (``source`` names it in errors)."""
        self.source = source
        self.spans = 0
        self.items = 0

    def spend_spans(self, count: int = 1) -> None:
        self.spans += count
        if self.spans > self.max_spans:
            raise TelemetryError(
                f"{self.source}: more than {self.max_spans:,} spans; {self.scope} reads at most that many "
                f"(pick one run at the source, or raise {SPANS_ENV})"
            )

    def spend_items(self, count: int = 1) -> None:
        self.items += count
        if self.items > self.max_items:
            raise TelemetryError(
                f"{self.source}: more than {self.max_items:,} messages, attributes and events; {self.scope} "
                f"decodes at most that many (a file built to exhaust memory looks like this; raise {ITEMS_ENV} "
                "if it is real telemetry)"
            )

    @property
    def items_left(self) -> int:
        return self.max_items - self.items


def _limit(env: str, default: int) -> int:
    raw = (os.environ.get(env) or "").strip().replace("_", "")
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise TelemetryError(
            f"{env}={os.environ[env]!r} is not a positive whole number; unset it or set e.g. {default}"
        )
    return int(raw)
