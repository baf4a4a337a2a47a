"""A step's body as its trace file stores it, reduced to a short key for equality.

Two steps whose stored bodies are the same bytes (everything after the skeleton's
``"live"`` field: request, response or error, extras) and whose ``ok`` flags agree
carry the same payloads, so ``rewind diff`` can call them equal without parsing,
masking or hashing either one. The converse does not hold (two runs differ in ids and
timestamps that the diff masks), so a key only ever proves equality: steps whose keys
differ are compared the slow way.

Only lines whose payloads are all inline give a key: a v2 trace may replace payload
leaves with blob markers, and events held in memory (gzip archives, eager loads) have
no stored line.
"""

from __future__ import annotations

import hashlib

from rewind.storage.trace import Event, Trace

# The writer ends the skeleton with the live flag; a name's quotes are escaped, so the
# first occurrence of this field is the skeleton's.
_LIVE_FIELD = b',"live":'


def keys_available(trace: Trace) -> bool:
    """Whether ``trace``'s stored lines hold their payloads inline (format v1)."""
    return trace.version == 1


def body_key(event: Event, *, with_fingerprint: bool = False) -> bytes | None:
    """A digest of ``event``'s stored body and outcome flag, or ``None`` when the event
    has no stored line in the writer's layout.

    ``with_fingerprint`` folds the skeleton's fingerprint in, for comparisons that
    decide request equality by fingerprint (``rewind diff --exact``).
    """
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
    digest = hashlib.blake2b(digest_size=20)
    digest.update(b"1" if event.ok else b"0")
    if with_fingerprint:
        digest.update(event.fingerprint.encode("ascii", "backslashreplace"))
        digest.update(b"\0")
    digest.update(line[start:].rstrip(b"\r\n"))
    return digest.digest()


__all__ = ["body_key", "keys_available"]
