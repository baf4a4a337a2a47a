"""rewind's own spans (``rewind.kind``, ``rewind.name``, ``rewind.seq``, ``rewind.fingerprint``).

With content capture on, each step span also carries the step's whole trace line
(``rewind.event``) and its sha256 (``rewind.event.sha256``): the import rebuilds the step
exactly as the recorder wrote it and proves it (a line cut by an attribute length limit
fails its digest and is reported truncated, never served). Without them the GenAI content
attributes are read like any GenAI span, under rewind's own step name.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rewind.data.canonical import canonical_json, text_fingerprint
from rewind.importing.model import CONTENT_TRUNCATED, DIGEST_MISMATCH, UNREADABLE, Draft
from rewind.importing.spans import SpanRecord
from rewind.storage.trace import check_line_fields

from . import genai

LAYOUT = "rewind"
EVENT = "rewind.event"
DIGEST = "rewind.event.sha256"


def claims(span: SpanRecord) -> bool:
    return "rewind.kind" in span.attributes and "rewind.name" in span.attributes


def map_span(span: SpanRecord) -> Draft | None:
    attrs = span.attributes
    kind = str(attrs["rewind.kind"])
    draft = _whole_line(span)
    if draft is None:
        if kind == "llm":
            draft = genai.map_span(span, LAYOUT) or Draft(span, LAYOUT, "llm")
        elif kind == "tool":
            draft = genai.tool_draft(span, LAYOUT)
        else:
            draft = Draft(span, LAYOUT, kind)
            draft.problem(
                "content_missing", f"a {kind} step's content is only on spans as rewind.event (capture was off)"
            )
        draft.kind = kind
        draft.name = str(attrs["rewind.name"])
        fingerprint = attrs.get("rewind.fingerprint")
        if isinstance(fingerprint, str):
            draft.extra["fingerprint"] = fingerprint
    seq = attrs.get("rewind.seq")
    if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0:
        draft.seq = seq
    return draft


def _whole_line(span: SpanRecord) -> Draft | None:
    attrs = span.attributes
    text = attrs.get(EVENT)
    if not isinstance(text, str):
        return None
    kind, name = str(attrs["rewind.kind"]), str(attrs["rewind.name"])
    draft = Draft(span, LAYOUT, kind, name=name)
    digest = attrs.get(DIGEST)
    actual = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(digest, str) and digest != actual:
        draft.problem(
            DIGEST_MISMATCH if _parses(text) else CONTENT_TRUNCATED,
            f"rewind.event ({len(text)} characters) does not match its sha256: an attribute length limit "
            "cut it, or a processor changed it; raise OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT on the recorders",
        )
        return draft
    try:
        event = json.loads(text)
    except ValueError:
        draft.problem(CONTENT_TRUNCATED, f"rewind.event is not valid JSON ({len(text)} characters): cut short")
        return draft
    if not isinstance(event, dict) or not isinstance(event.get("seq"), int):
        draft.problem(CONTENT_TRUNCATED, "rewind.event is not an event line")
        return draft
    try:
        check_line_fields({**event, "seq": 0})  # the seq is checked (and renumbered) by the build
    except (ValueError, KeyError, TypeError) as exc:
        draft.problem(UNREADABLE, f"rewind.event is not a trace line rewind can read ({exc})")
        return draft
    draft.event = event
    return draft


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def fingerprint_of(request: Any) -> str:
    return text_fingerprint(canonical_json(request))
