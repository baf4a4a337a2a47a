"""A step's body as its trace file stores it: equality without parsing.

Two steps whose stored bodies are the same bytes (everything after the skeleton's
``"live"`` field: request, response or error, extras) and whose ``ok`` flags agree
carry the same payloads, so ``rewind diff`` can call them equal without parsing,
masking or hashing either one. The converse does not hold (two runs differ in ids and
timestamps that the diff masks), so stored bytes only ever prove equality: steps whose
bytes differ are compared the slow way.

Only lines whose payloads are all inline count: a v2 trace may replace payload leaves
with blob markers, and events held in memory (gzip archives, eager loads) have no
stored line.
"""

from __future__ import annotations

import hashlib

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


__all__ = ["bodies_stored", "body_key", "same_stored", "stored_body"]
