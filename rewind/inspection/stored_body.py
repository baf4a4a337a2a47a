"""A step's body as its trace file stores it: equality without parsing.

Two steps whose stored bodies are the same bytes (everything after the skeleton's
``"live"`` field: request, response or error, extras) and whose ``ok`` flags agree
carry the same payloads, so ``rewind diff`` can call them equal without parsing,
masking or hashing either one. The converse does not hold (two runs differ in ids and
timestamps that the diff masks), so stored bytes only ever prove equality: steps whose
bytes differ are compared the slow way.

Steps whose bodies differ are cut in two where the writer put the request, last
(``stored_parts``): a part that is the same bytes on both sides is the same payload
without being parsed, and only the parts that differ are parsed (``parse_head``,
``parse_request``) and compared. The cut is taken at the body's last ``,"request":``
and holds only when the head parses as a list of whole fields; the parsers are as
strict as the trace reader (each key once, nesting bounded, records typed) and give
``None`` for anything they do not take, so the caller reads the event the usual way,
which parses it (or says which line is corrupt) as before.

Only lines whose payloads are all inline count: a v2 trace may replace payload leaves
with blob markers, and events held in memory (gzip archives, eager loads) have no
stored line.
"""

from __future__ import annotations

import hashlib
from typing import Any

from rewind.data.canonical import exact_loads
from rewind.data.safe_read import MAX_DEPTH
from rewind.storage.event_line import SKELETON_KEYS, check_fields
from rewind.storage.trace import Event, Trace

# The writer ends the skeleton with the live flag; a name's quotes are escaped, so the
# first occurrence of this field is the skeleton's.
_LIVE_FIELD = b',"live":'


def bodies_stored(trace: Trace) -> bool:
    """Whether ``trace``'s stored lines hold their payloads inline (format v1)."""
    return trace.version == 1


def stored_body(event: Event) -> bytes | None:
    """The bytes of ``event``'s line after its skeleton, or ``None`` when the event has
    no stored line in the writer's layout."""
    line = event.stored_line()
    if line is None:
        return None
    start = line.find(_LIVE_FIELD)
    if start < 0:
        return None
    start += len(_LIVE_FIELD)
    if line.startswith(b"true", start):
        start += 4
    elif line.startswith(b"false", start):
        start += 5
    else:
        return None
    return line[start:].rstrip(b"\r\n")


def same_stored(a: Event, b: Event, *, by_fingerprint: bool = False) -> bool:
    """Whether ``a`` and ``b`` are provably the same step: same outcome flag (and
    fingerprint, when ``by_fingerprint``) and the same stored body bytes."""
    if a.ok != b.ok or (by_fingerprint and a.fingerprint != b.fingerprint):
        return False
    body_a = stored_body(a)
    return body_a is not None and body_a == stored_body(b)


def body_key(event: Event, *, with_fingerprint: bool = False) -> bytes | None:
    """A short digest of what ``same_stored`` compares, for grouping many steps at once;
    ``None`` when the event has no stored body."""
    body = stored_body(event)
    if body is None:
        return None
    digest = hashlib.blake2b(body, digest_size=20)
    digest.update(b"1" if event.ok else b"0")
    if with_fingerprint:
        digest.update(event.fingerprint.encode("ascii", "backslashreplace"))
    return digest.digest()


_REQUEST_FIELD = b',"request":'
#: Keys a head must not hold: the skeleton's (they are on the line already) and the request.
_NOT_IN_HEAD = frozenset((*SKELETON_KEYS, "request"))


def stored_parts(body: bytes) -> tuple[bytes, bytes] | None:
    """A stored body (``stored_body``) cut where its request starts: the fields before it
    (``b""`` or ``b',"response":…'``) and the request's bytes; ``None`` when the body
    holds no ``,"request":`` before its closing brace.

    The cut is at the first such field; one nested in the response (a key named
    ``request`` inside it) leaves the head with an object open, which ``parse_head``
    refuses: only a head that parses proves the cut. A request is last in the writer's
    layout; a field after it stays in the request's part, which then compares by bytes
    or does not parse as one object (``parse_request``)."""
    if not body.endswith(b"}"):
        return None
    at = body.find(_REQUEST_FIELD)
    if at < 0:
        return None
    return body[:at], body[at + len(_REQUEST_FIELD) : -1]


def parse_head(head: bytes) -> dict[str, Any] | None:
    """The fields of a head from ``stored_parts`` (response or error, extras), read as
    strictly as the trace reader reads a line, or ``None`` when this reader does not take
    them: not whole fields (the cut was not the request's), not in the writer's exact
    spelling, or not what a line may hold. The caller then reads the event itself."""
    if head and not head.startswith(b","):
        return None
    fields = exact_loads(b"{" + head[1:] + b"}", max_depth=MAX_DEPTH)
    if fields is None or not _NOT_IN_HEAD.isdisjoint(fields):
        return None
    try:
        return check_fields(fields)
    except ValueError:  # a damaged record: the event's own read says which line
        return None


def parse_request(request: bytes) -> dict[str, Any] | None:
    """The request object of a part from ``stored_parts``, or ``None`` when it is not one
    whole object in the writer's exact spelling (within the line's nesting bound: the
    request is one level inside the line)."""
    return exact_loads(request, max_depth=MAX_DEPTH - 1)


__all__ = [
    "bodies_stored",
    "body_key",
    "parse_head",
    "parse_request",
    "same_stored",
    "stored_body",
    "stored_parts",
]
