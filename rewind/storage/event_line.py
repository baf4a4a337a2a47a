"""The event line format: the skeleton every line starts with, and its body fields.

The writer puts the skeleton fields first, in a fixed order (``SKELETON``), so a reader
indexes a line without parsing its body, and the request last, so a reader takes the
response without the request (``read_head``). Everything here reads a line as untrusted
data: each key once, nesting within ``safe_read.MAX_DEPTH``, the records readers take
fields from by name of the right types (``check_fields``); a line that breaks any of it
raises ``ValueError`` (or, read from a ``LineSource``, a ``TraceFormatError`` naming the
line). Blob markers are put back when the source has a blob store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import JSONDecodeError
from typing import Any

from rewind.data import safe_read as _safe
from rewind.data.canonical import exact_loads
from rewind.errors import TraceFormatError

from . import blobs as _blobs
from .line_source import LineSource

KINDS = ("llm", "tool", "memory")
#: Steps are numbered from 0; a seq must fit a signed 64-bit integer.
MAX_SEQ = 1 << 63

# The writer always puts the skeleton fields first, in this order, so a reader can
# index a line without parsing its (possibly megabytes of) body.
# (The name's string is the unrolled ``"(?:[^"\\]|\\.)*"``: the same strings, matched
# without an alternation per character.)
SKELETON = re.compile(
    rb'\{"seq":(\d+),"kind":"(\w+)","name":("[^"\\]*(?:\\.[^"\\]*)*"),'
    rb'"fingerprint":"([0-9a-f]*)","ts":([-+.0-9eE]+),"duration_ms":([-+.0-9eE]+),'
    rb'"ok":(true|false),"live":(true|false)[,}]'
)
SKELETON_KEYS = ("seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live")

# Reading a served event's response should not cost reading its request, which the
# writer puts last: a body is first read this far, and the rest only when needed.
HEAD_PREFIX = 64 * 1024
_REQUEST_KEY = '"request":'
_REQUEST_FIELD = b',"request":'
# scan_once is set per instance by JSONDecoder.__init__; typeshed does not declare it.
scan_value: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class _Incomplete(Exception):
    """The prefix read so far ends before the part of the body we need."""


def read_body(source: LineSource, offset: int, length: int) -> dict[str, Any]:
    """Every body field of the line at ``offset``, blobs restored, checked strictly."""
    raw = source.read(offset, length)
    try:
        parsed = body_fields(raw)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    if source.blobs is not None and _blobs.BLOB_MARKER in raw:
        parsed = restore_fields(parsed, source.blobs, None)
    return parsed


def read_head_before(source: LineSource, offset: int, length: int, request_text: str) -> dict[str, Any] | None:
    """The body of a line that ends with ``"request":<request_text>}``, but the request
    (parsed from the bytes before it, exactly as ``read_exact_body`` would), or ``None``."""
    raw = source.read(offset, length)
    text = request_text.encode("utf-8", "surrogatepass")
    cut = len(raw) - len(text) - 1  # where the request starts, if the line ends with it
    if raw[-1:] != b"}" or not raw.startswith(text, cut) or not raw.endswith(_REQUEST_FIELD, 0, cut):
        return None
    start, end = _body_start(raw), cut - len(_REQUEST_FIELD)
    if start < 0 or start == end:  # not a skeleton's end, or a second comma before the request
        return None
    fields = b"{" + raw[start:end] + b"}"  # "{}" when the request follows the skeleton
    # The request is the caller's own text: only what the file adds needs bounding.
    body = exact_loads(fields, max_depth=_safe.MAX_DEPTH)
    # Each key once (exact_loads checked that), and none of the skeleton's again.
    if body is None or not _NOT_IN_BODY.isdisjoint(body):
        return None
    try:
        check_fields(body)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    if source.blobs is not None and _blobs.BLOB_MARKER in fields:
        body = restore_fields(body, source.blobs, None)
    return body


#: Keys a body read without its skeleton and request must not hold.
_NOT_IN_BODY = frozenset((*SKELETON_KEYS, "request"))


def _body_start(raw: bytes) -> int:
    """Where the fields after the skeleton start in the line of a lazily loaded event, or -1.

    Its line matched ``SKELETON`` when the trace was opened, so no pattern runs again:
    the skeleton ends at its first ``,"live":`` (a name's quotes are escaped, so none of
    its text can read so), with the value and the comma after it. A line that no longer
    reads so (the file changed since) is -1, and the caller reads it the strict way."""
    at = raw.find(b',"live":')
    if at < 0 or not raw.startswith(b'{"seq":'):
        return -1
    if raw.startswith(b"true,", at + 8):
        return at + 13
    if raw.startswith(b"false,", at + 8):
        return at + 14
    return -1


def read_exact_body(source: LineSource, offset: int, length: int) -> dict[str, Any] | None:
    """The whole body of a line in the writer's exact spelling (see ``exact_loads``), or
    ``None``: the caller then reads it the strict way, the head alone first."""
    raw = source.read(offset, length)
    if source.blobs is not None and _blobs.BLOB_MARKER in raw:
        # Reading a response must not need the request's blobs (a missing one fails only
        # the read that needs it): lines with blobs keep the head-first read.
        return None
    if SKELETON.match(raw) is None:
        return None
    body = exact_loads(raw, max_depth=_safe.MAX_DEPTH)
    if body is None:
        return None
    for key in SKELETON_KEYS:
        del body[key]
    try:
        check_fields(body)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    return body


def _exact_fields(raw: bytes) -> dict[str, Any] | None:
    """The body of a line whose skeleton matched, when ``exact_loads`` takes it (keys once
    each, nothing after the object: it checked both); depth and error record checked here."""
    fast = exact_loads(raw, max_depth=_safe.MAX_DEPTH)  # deeper: None, and the strict reader says why
    if fast is None:
        return None
    for key in SKELETON_KEYS:
        del fast[key]
    return check_fields(fast)


def decode_line(raw: bytes) -> str:
    # UnicodeDecodeError is a ValueError: a line that is not UTF-8 is a corrupt line.
    return raw.decode("utf-8", "surrogatepass")


def body_fields(raw: bytes, match: re.Match[bytes] | None = None) -> dict[str, Any]:
    """Every field of an event line but the skeleton, checked strictly: each key once
    (a skeleton key included), nothing after the object, nesting within ``MAX_DEPTH``.

    ``match`` is the line's skeleton match, when the caller has it already."""
    if match is None:
        match = SKELETON.match(raw)
    if match is None:
        data = _safe.strict_object(decode_line(raw), scan_value)
        for key in SKELETON_KEYS:
            data.pop(key, None)
        return check_fields(data)
    end = match.end()
    if raw[end - 1] == 0x7D:  # "}": a skeleton-only line
        if end != len(raw):
            raise ValueError(f"extra data after the event at column {end + 1}")
        return {}
    fast = _exact_fields(raw)
    if fast is not None:
        return fast
    text = decode_line(raw[end:])
    try:
        body, stop = _safe.scan_fields(text, 0, scan_value, into={}, reserved=SKELETON_KEYS, column=end)
    except (IndexError, StopIteration):
        raise ValueError("the event line ends early") from None
    except JSONDecodeError as exc:
        raise _safe.json_error(exc, end) from None
    if stop != len(text):
        raise ValueError(f"extra data after the event at column {end + stop + 1}")
    if _safe.maybe_deep(raw, _safe.MAX_DEPTH) and _safe.too_deep(body, _safe.MAX_DEPTH):
        raise _safe.depth_error()
    return check_fields(body)


#: The records beside ``response`` that readers and replay take fields from by name, with
#: the types of those fields: ``None`` (or absent) is always allowed.
_RECORD_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "error": {},
    "stream": {"chunks": (list,), "truncated": (bool,)},
    "http": {"headers": (dict,), "status_code": (int,)},
    "mcp": {"type": (str,)},
    "litellm": {},
}

_TYPE_WORDS = {list: "a JSON array", bool: "true or false", dict: "a JSON object", int: "an integer", str: "a string"}


def check_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The records a reader takes fields from by name are objects, and those fields have
    their types: checked where the line is read, so a damaged step is a corrupt line,
    never an AttributeError deep in a replay."""
    for key, fields in _RECORD_FIELDS.items():
        record = body.get(key)
        if record is None:
            continue
        if type(record) is not dict:
            what = " (an error record)" if key == "error" else ""
            raise ValueError(f"{key} must be a JSON object{what}, not {describe(record)}")
        for field, types in fields.items():
            value = record.get(field)
            if value is not None and type(value) not in types:
                raise ValueError(f"{key}.{field} must be {_TYPE_WORDS[types[0]]}, not {describe(value)}")
    return body


def read_head(source: LineSource, offset: int, length: int) -> dict[str, Any]:
    """The body fields before the request of the line at ``offset`` (its first
    ``HEAD_PREFIX`` bytes when they hold them), blobs restored."""
    size = min(length, HEAD_PREFIX)
    raw = source.read(offset, size)
    try:
        try:
            head = _parse_head(raw, complete=size == length)
        except _Incomplete:
            raw = source.read(offset, length)
            head = _parse_head(raw, complete=True)
    except (ValueError, _Incomplete) as exc:
        raise _corrupt(source, offset, exc) from None
    if source.blobs is not None and _blobs.BLOB_MARKER in raw:
        head = restore_fields(head, source.blobs, None)
    return head


def _corrupt(source: LineSource, offset: int, exc: Exception) -> TraceFormatError:
    # Line numbers are not kept per skeleton (they cost memory on every step); on the
    # error path, count them.
    return TraceFormatError(f"corrupt event line ({exc})", path=source.path, line=source.line_number(offset))


def _parse_head(raw: bytes, *, complete: bool) -> dict[str, Any]:
    """The body fields that come before ``"request"`` on a line our writer wrote.

    Keys are checked as strictly as a full read checks them (each once, no skeleton
    key again); what follows ``"request"`` is checked when the request is read."""
    match = SKELETON.match(raw)
    if match is None:
        if not complete:
            raise _Incomplete
        raise ValueError("the event skeleton is damaged")
    end = match.end()
    if raw[end - 1] == 0x7D:  # "}": a skeleton-only line
        if complete and end != len(raw):
            raise ValueError(f"extra data after the event at column {end + 1}")
        return {}
    chunk = raw[end:]
    if not complete:
        chunk = _whole_characters(chunk)
    text = decode_line(chunk)
    try:
        head, stop = _safe.scan_fields(
            text, 0, scan_value, into={}, reserved=SKELETON_KEYS, stop_key=_REQUEST_KEY, column=end
        )
    except (IndexError, StopIteration, JSONDecodeError) as exc:
        if not complete:
            raise _Incomplete from None
        if isinstance(exc, JSONDecodeError):
            raise _safe.json_error(exc, end) from None
        raise ValueError("the event line ends early") from None
    if not text.startswith(_REQUEST_KEY, stop):
        if not complete:
            raise _Incomplete  # the object closed inside the prefix: check the whole line
        if stop != len(text):
            raise ValueError(f"extra data after the event at column {end + stop + 1}")
    brackets = text.count("{", 0, stop) + text.count("[", 0, stop)
    if brackets > _safe.MAX_DEPTH and _safe.too_deep(head, _safe.MAX_DEPTH):
        raise _safe.depth_error()
    return check_fields(head)


def _whole_characters(chunk: bytes) -> bytes:
    """Drop a UTF-8 sequence cut in half at the end of a prefix read."""
    end = len(chunk)
    back = 0
    while back < 3 and end - back > 0 and chunk[end - back - 1] & 0xC0 == 0x80:
        back += 1
    if end - back > 0 and chunk[end - back - 1] >= 0xC0:
        return chunk[: end - back - 1]
    return chunk


def restore_fields(body: dict[str, Any], store: _blobs.BlobStore, cache: dict[str, Any] | None) -> dict[str, Any]:
    """``body`` with its blob markers replaced by the values ``store`` holds."""
    return {key: _blobs.restore(value, store, cache) for key, value in body.items()}


def describe(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message (never a huge repr)."""
    if isinstance(value, (bool, float)) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**12 else "a huge integer"
    if isinstance(value, str):
        return repr(value[:40]) + ("…" if len(value) > 40 else "")
    return f"a JSON {type(value).__name__}"
