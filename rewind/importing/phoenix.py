"""Reading a run back from a running Arize Phoenix over its HTTP API.

Phoenix answers ``GET /v1/projects/{project}/spans`` with pages of spans (``data`` and a
``next_cursor``); each span has ``context.trace_id``/``span_id`` (hex), ``parent_id``,
ISO-8601 ``start_time``/``end_time``, ``status_code``, ``events`` and its attributes as
one flat dict (or nested, on some versions: flattened back to dotted names here). Only
loopback or hosts the user names are contacted; nothing is sent but the query.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any

from .errors import TelemetryError
from .otlp import span_id_of
from .spans import SpanEvent, SpanRecord

PAGE = 1000
MAX_SPANS = 200_000
TIMEOUT = 30.0


def read_phoenix(url: str, project: str = "default", *, headers: dict[str, str] | None = None) -> list[SpanRecord]:
    base = url.rstrip("/")
    spans: list[SpanRecord] = []
    cursor: str | None = None
    while True:
        query = {"limit": str(PAGE)}
        if cursor:
            query["cursor"] = cursor
        page_url = f"{base}/v1/projects/{urllib.parse.quote(project, safe='')}/spans?{urllib.parse.urlencode(query)}"
        page = _get(page_url, headers or {}, project)
        for raw in page.get("data") or []:
            span = _span(raw) if isinstance(raw, dict) else None
            if span is not None:
                spans.append(span)
        cursor = page.get("next_cursor")
        if not cursor or len(spans) >= MAX_SPANS:
            break
    if not spans:
        raise TelemetryError(f"{base}: Phoenix project {project!r} has no spans")
    return spans


def _get(url: str, headers: dict[str, str], project: str) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            payload = json.loads(answer.read(256 * 1024 * 1024))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise TelemetryError(f"{url}: Phoenix has no project {project!r} (pass --project NAME)") from None
        raise TelemetryError(f"{url}: Phoenix answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TelemetryError(f"{url}: cannot reach Phoenix ({reason}); is it running at that address?") from None
    except ValueError:
        raise TelemetryError(f"{url}: the answer is not JSON; is this a Phoenix server?") from None
    if not isinstance(payload, dict):
        raise TelemetryError(f"{url}: unexpected answer (not a JSON object)")
    return payload


def _span(raw: dict[str, Any]) -> SpanRecord | None:
    context = _dict(raw.get("context"))
    trace_id = span_id_of(context.get("trace_id"), 16)
    span_id = span_id_of(context.get("span_id"), 8)
    if trace_id is None or span_id is None:
        return None
    attributes = flatten(_dict(raw.get("attributes")))
    events = []
    for event in raw.get("events") or []:
        if isinstance(event, dict):
            events.append(
                SpanEvent(
                    str(event.get("name") or ""),
                    _nanos(event.get("timestamp")),
                    flatten(_dict(event.get("attributes"))),
                )
            )
    resource = {}
    project = attributes.get("openinference.project.name")
    if isinstance(project, str):
        resource["openinference.project.name"] = project
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=span_id_of(raw.get("parent_id"), 8),
        name=str(raw.get("name") or ""),
        start_ns=_nanos(raw.get("start_time")),
        end_ns=_nanos(raw.get("end_time")),
        attributes=attributes,
        events=events,
        status_code=str(raw.get("status_code") or "UNSET").upper(),
        status_message=str(raw.get("status_message") or ""),
        kind=str(raw.get("span_kind") or "INTERNAL"),
        resource=resource,
    )


def flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested attribute dicts (and lists of dicts) back to OpenTelemetry's dotted names."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(flatten(item, name + "."))
        elif isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
            for index, element in enumerate(item):
                out.update(flatten(element, f"{name}.{index}."))
        else:
            out[name] = item
    return out


def _nanos(value: Any) -> int:
    if isinstance(value, (int, float)):
        return int(value)
    if not isinstance(value, str):
        return 0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(moment.timestamp() * 1_000_000) * 1000


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
