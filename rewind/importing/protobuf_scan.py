"""Counting what an OTLP protobuf message holds before protobuf builds it.

Parsing turns every nested message into an object, and an empty message costs two
bytes on the wire: a megabyte of ``0a 00`` is half a million ``ResourceSpans``. The
scan walks the wire format (tags and lengths only; strings are skipped, never copied)
through the messages of a trace export, counts spans and items against the import's
``Budget`` and stops at the first one over it, so only a message that fits is parsed.
"""

from __future__ import annotations

from .limits import Budget

#: Per message type: field number -> the message type that field holds. Only fields that
#: nest messages are listed; every other field is skipped by its wire type.
_SCHEMA: dict[str, dict[int, str]] = {
    "request": {1: "resource_spans"},
    "resource_spans": {1: "resource", 2: "scope_spans"},
    "resource": {1: "key_value"},
    "scope_spans": {1: "scope", 2: "span"},
    "scope": {3: "key_value"},
    "span": {9: "key_value", 11: "event", 13: "link", 15: "status"},
    "event": {3: "key_value"},
    "link": {4: "key_value"},
    "status": {},
    "key_value": {2: "any_value"},
    "any_value": {5: "array_value", 6: "kvlist_value"},
    "array_value": {1: "any_value"},
    "kvlist_value": {1: "key_value"},
}
#: protobuf's own recursion limit: a message nested deeper does not parse.
MAX_NESTING = 100


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= end or shift > 63:
            raise WireError("bad varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def check_fits(frame: bytes, budget: Budget) -> None:
    """Raise ``TelemetryError`` when ``frame`` holds more than ``budget`` has left.

    A frame too short to hold that many messages (two bytes each at least) is not walked.
    """
    spans_left = budget.max_spans - budget.spans
    items_left = budget.items_left
    if len(frame) // 2 <= min(spans_left, items_left):
        return
    spans = items = 0
    stack: list[tuple[int, dict[int, str]]] = [(len(frame), _SCHEMA["request"])]
    position = 0
    while stack:
        end, fields = stack[-1]
        if position >= end:
            if position > end:
                raise WireError("a nested message runs past its parent")
            stack.pop()
            continue
        tag, position = _varint(frame, position, end)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            _, position = _varint(frame, position, end)
        elif wire_type == 1:
            position += 8
        elif wire_type == 5:
            position += 4
        elif wire_type == 2:
            size, position = _varint(frame, position, end)
            kind = fields.get(number)
            if kind is None:
                position += size
            else:
                items += 1
                if kind == "span":
                    spans += 1
                    if spans > spans_left:
                        budget.spend_spans(spans)
                if items > items_left:
                    budget.spend_items(items)
                if len(stack) >= MAX_NESTING:
                    raise WireError("nested too deeply")
                if position + size > end:
                    raise WireError("a nested message runs past its parent")
                stack.append((position + size, _SCHEMA[kind]))
        else:
            raise WireError(f"wire type {wire_type}")
        if number == 0:
            raise WireError("field number 0")
    if position != len(frame):
        raise WireError("trailing bytes")
