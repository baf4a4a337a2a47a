"""The trace file: a versioned JSON-lines header, then one event per line.

A recording appends one line per finished call and flushes it, so a process killed
at any moment leaves every completed call on disk. A torn final line (the write the
kill interrupted) is tolerated; corruption anywhere else is a ``TraceFormatError``
that names the file and line.

Two format versions exist. v1 keeps every payload inline. v2 (written by
``record(..., externalize=N)``) may replace big payload leaves with markers that
name a content-addressed file in ``<trace>.blobs/`` (see ``rewind.blobs``); readers
put the original values back, so events look the same whichever version they came
from. A reader that only knows v1 refuses a v2 file with "newer format, upgrade".

``Trace.open`` keeps a small skeleton per event (seq, kind, name, fingerprint,
timing and the line's place in the file) and reads bodies back on demand, so replay
memory follows the number of events rather than their size. ``Trace.load`` parses
everything up front. Gzip archives (``rewind compact``) have no random access, so
both load them eagerly.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import operator
import os
import re
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping
from json.decoder import JSONDecodeError
from pathlib import Path
from typing import Any

from rewind.data import gc_pause as _gc_pause
from rewind.data import safe_read as _safe
from rewind.data.canonical import ensure_jsonable, exact_loads, fast_dumps, within_depth
from rewind.errors import TraceFormatError, TraceWriteError

from . import blobs as _blobs
from .trace_file import LineFile

FORMAT_NAME = "agent-rewind"
#: The version of a trace whose payloads are all inline (what ``record`` writes by default).
FORMAT_VERSION = 1
#: The version of a trace that may keep payload leaves in ``<trace>.blobs/``.
BLOBS_FORMAT_VERSION = 2
SUPPORTED_VERSIONS = frozenset({1, 2})
KINDS = ("llm", "tool", "memory")

PathLike = str | os.PathLike[str]

# The writer always puts the skeleton fields first, in this order, so a reader can
# index a line without parsing its (possibly megabytes of) body.
# (The name's string is the unrolled ``"(?:[^"\\]|\\.)*"``: the same strings, matched
# without an alternation per character.)
_SKELETON = re.compile(
    rb'\{"seq":(\d+),"kind":"(\w+)","name":("[^"\\]*(?:\\.[^"\\]*)*"),'
    rb'"fingerprint":"([0-9a-f]*)","ts":([-+.0-9eE]+),"duration_ms":([-+.0-9eE]+),'
    rb'"ok":(true|false),"live":(true|false)[,}]'
)
_SKELETON_KEYS = ("seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live")

# Reading a served event's response should not cost reading its request, which the
# writer puts last: a body is first read this far, and the rest only when needed.
_HEAD_PREFIX = 64 * 1024
_WINDOW = 256 * 1024
_REQUEST_KEY = '"request":'
_REQUEST_FIELD = b',"request":'
# scan_once is set per instance by JSONDecoder.__init__; typeshed does not declare it.
_scan_value: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class _LineSource:
    """Random access to the lines of one trace file, for lazily loaded events."""

    def __init__(self, path: str, fd: int | None = None) -> None:
        """Reads ``path`` through ``fd`` when given (the source then owns and closes it)."""
        self.path = path
        self.blobs: _blobs.BlobStore | None = None
        self._window: tuple[int, bytes] | None = None
        self._fd = fd if fd is not None else os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, os.close, self._fd)

    def read(self, offset: int, length: int) -> bytes:
        # Replay reads events in file order, mostly: one read-ahead window serves the
        # next few small lines from memory instead of a system call each. Lines as big
        # as the window are read on their own and never kept.
        window = self._window
        if window is not None:
            start, data = window
            if start <= offset and offset + length <= start + len(data):
                return data[offset - start : offset - start + length]
        if length >= _WINDOW:
            return self._pread(offset, length)
        data = self._pread(offset, _WINDOW)
        self._window = (offset, data)
        return data[:length]

    def _pread(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self._fd, length, offset)
        with self._lock:  # pragma: no cover - platforms without pread
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, length)

    def line_number(self, offset: int) -> int:
        """The 1-based line that starts at ``offset``."""
        count, position = 1, 0
        while position < offset:
            chunk = self.read(position, min(1 << 20, offset - position))
            if not chunk:
                break
            count += chunk.count(b"\n")
            position += len(chunk)
        return count

    def close(self) -> None:
        self._finalizer()


class Event:
    """One recorded step: an LLM, tool or memory call and its outcome.

    ``request``, ``response`` and ``error`` are JSON data. On an event from
    ``Trace.open`` they are read from the file when first touched and not kept, so
    holding many events costs little memory; ``hydrated()`` gives a copy that keeps
    what it reads (what a call being served holds).
    """

    __slots__ = (
        "seq",
        "kind",
        "name",
        "fingerprint",
        "ts",
        "duration_ms",
        "ok",
        "live",
        "_body",
        "_head",
        "_source",
        "_offset",
        "_length",
        "_keep",
        "_request_text",
    )

    def __init__(
        self,
        seq: int,
        kind: str,
        name: str,
        fingerprint: str,
        request: Any = None,
        response: Any = None,
        error: Mapping[str, Any] | None = None,
        *,
        duration_ms: float = 0.0,
        ts: float = 0.0,
        live: bool = True,
        extra: Mapping[str, Any] | None = None,
        request_text: str | None = None,
    ) -> None:
        """``request_text``, when given, is the request's canonical JSON: it stands in
        for ``request`` (parsed only if read) and goes into the trace line as it is."""
        self.seq = seq
        self.kind = kind
        self.name = name
        self.fingerprint = fingerprint
        self.ts = ts
        self.duration_ms = duration_ms
        self.ok = error is None
        self.live = live
        body: dict[str, Any] = {"error": dict(error)} if error is not None else {"response": response}
        if extra:
            body.update(extra)
        self._request_text = request_text
        if request_text is None:
            body["request"] = request
        self._body: dict[str, Any] | None = body
        self._head: dict[str, Any] | None = None
        # Where a lazily loaded body lives (the source is None for bodies in memory).
        # Plain slots rather than a tuple: a skeleton is what Trace.open keeps per step.
        self._source: _LineSource | None = None
        self._offset = 0
        self._length = 0
        self._keep = True

    # -- body ---------------------------------------------------------------
    @property
    def body(self) -> dict[str, Any]:
        """Everything but the skeleton: request, response or error, and extras."""
        if self._body is not None:
            if self._request_text is not None:
                self._body["request"] = json.loads(self._request_text)
                self._request_text = None
            return self._body
        assert self._source is not None
        body = _read_body(self._source, self._offset, self._length)
        if self._keep:
            if self._head is not None:
                body.update(self._head)  # keep handing out the objects already handed out
                self._head = None
            self._body = body
        return body

    def _head_body(self) -> dict[str, Any]:
        """The body without the request (all of it, when it is in memory anyway)."""
        if self._body is not None:
            return self._body  # the request may still be text: readers of the head skip it
        if self._head is not None:
            return self._head
        assert self._source is not None
        if self._length <= _HEAD_PREFIX:
            # A small line is read whole: one orjson parse of all of it costs less than
            # the standard library's parse of the part before the request.
            body = _read_exact_body(self._source, self._offset, self._length)
            if body is not None:
                if self._keep:
                    self._body = body
                return body
        head = _read_head(self._source, self._offset, self._length)
        if self._keep:
            self._head = head
        return head

    @property
    def request(self) -> Any:
        return self.body.get("request")

    @property
    def response(self) -> Any:
        return self._head_body().get("response")

    @property
    def error(self) -> dict[str, Any] | None:
        return self._head_body().get("error")

    def head(self) -> dict[str, Any]:
        """The body without the request (response or error and extras), read once: a reader
        taking several fields from it reads the line once. Do not modify it."""
        return self._head_body()

    def get(self, key: str, default: Any = None) -> Any:
        """An extra body field written by an instrumentor (e.g. ``"stream"``)."""
        if key == "request":
            return self.body.get(key, default)
        return self._head_body().get(key, default)

    def stored_line(self) -> bytes | None:
        """The event's line as the file holds it (blob markers unresolved), or ``None`` for
        an event whose body is in memory. Lets a reader that bounds what it copies (the HTML
        report) pass a small line on as it is instead of parsing and re-encoding it."""
        if self._source is None or self._body is not None:
            return None
        return self._source.read(self._offset, self._length)

    def materialize(self) -> Event:
        """Pin the body in memory (a lazily loaded event stops touching its file)."""
        if self._body is None:
            self._keep = True
            self._body = self.body
            self._source = None
        return self

    def hydrated(self, request_text: str | None = None) -> Event:
        """This event for one consumer: a lazily loaded event is copied, and the copy
        keeps whatever it reads, so a served step parses its line once. Events already
        in memory are returned as they are.

        ``request_text`` is the canonical JSON of the request being answered (a strict
        replay's call): when the line ends with exactly that request, only the part
        before it is parsed, and the request is that text."""
        if self._source is None:
            return self
        clone = Event.__new__(Event)
        clone.seq, clone.kind, clone.name, clone.fingerprint = self.seq, self.kind, self.name, self.fingerprint
        clone.ts, clone.duration_ms, clone.ok, clone.live = self.ts, self.duration_ms, self.ok, self.live
        clone._body = None
        clone._head = None
        clone._source, clone._offset, clone._length = self._source, self._offset, self._length
        clone._keep = True
        clone._request_text = None
        if request_text is not None and self._length <= _HEAD_PREFIX:
            head = _read_head_before(self._source, self._offset, self._length, request_text)
            if head is not None:
                clone._body, clone._request_text = head, request_text
        return clone

    # -- (de)serialization ----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        head = self._head_dict()
        body = self.body
        for key in ("response", "error"):
            if key in body:
                head[key] = body[key]
        for key, value in body.items():
            if key not in head and key != "request":
                head[key] = value
        head["request"] = body.get("request")
        return head

    def to_line(self) -> bytes:
        text = self._request_text
        if text is None or self._body is None:
            return _dumps_line(self.to_dict())
        # The request is already canonical JSON text: encode the rest and splice it in,
        # instead of parsing it back only to encode it again.
        head = self._head_dict()
        for key, value in self._body.items():
            head[key] = value
        prefix = _dumps_line(head)
        return prefix[:-1] + b',"request":' + text.encode("utf-8", "surrogatepass") + b"}"

    def _head_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "ts": self.ts,
            "duration_ms": self.duration_ms,
            "ok": self.ok,
            "live": self.live,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        body = {k: v for k, v in data.items() if k not in _SKELETON_KEYS}
        error = body.pop("error", None)
        response = body.pop("response", None)
        request = body.pop("request", None)
        event = cls(
            int(data["seq"]),
            str(data["kind"]),
            str(data["name"]),
            str(data.get("fingerprint", "")),
            request,
            response,
            error,
            duration_ms=float(data.get("duration_ms") or 0.0),
            ts=float(data.get("ts") or 0.0),
            live=bool(data.get("live", True)),
            extra=body,
        )
        if "ok" in data and error is None and not data["ok"]:
            event.ok = False
        return event

    def copy(self, **changes: Any) -> Event:
        data = self.to_dict()
        data.update(changes)
        return Event.from_dict(data)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (inside a DivergenceError crossing a process pool, say) as its data:
        # a lazily loaded event's file handle and lock stay in this process.
        return (Event.from_dict, (self.to_dict(),))

    def __repr__(self) -> str:
        outcome = "ok" if self.ok else "error"
        return f"Event(seq={self.seq}, kind={self.kind!r}, name={self.name!r}, {outcome})"


def _dumps_line(data: Mapping[str, Any]) -> bytes:
    fast = fast_dumps(data)
    if fast is not None:
        return fast
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


# -- reading bodies on demand --------------------------------------------------------


class _Incomplete(Exception):
    """The prefix read so far ends before the part of the body we need."""


def _read_body(source: _LineSource, offset: int, length: int) -> dict[str, Any]:
    raw = source.read(offset, length)
    try:
        parsed = _body_fields(raw)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    if source.blobs is not None and _blobs.BLOB_MARKER in raw:
        parsed = _restore_fields(parsed, source.blobs, None)
    return parsed


def _read_head_before(source: _LineSource, offset: int, length: int, request_text: str) -> dict[str, Any] | None:
    """The body of a line that ends with ``"request":<request_text>}``, but the request
    (parsed from the bytes before it, exactly as ``_read_exact_body`` would), or ``None``."""
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
        _check_fields(body)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    if source.blobs is not None and _blobs.BLOB_MARKER in fields:
        body = _restore_fields(body, source.blobs, None)
    return body


#: Keys a body read without its skeleton and request must not hold.
_NOT_IN_BODY = frozenset((*_SKELETON_KEYS, "request"))


def _body_start(raw: bytes) -> int:
    """Where the fields after the skeleton start in the line of a lazily loaded event, or -1.

    Its line matched ``_SKELETON`` when the trace was opened, so no pattern runs again:
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


def _read_exact_body(source: _LineSource, offset: int, length: int) -> dict[str, Any] | None:
    """The whole body of a line in the writer's exact spelling (see ``exact_loads``), or
    ``None``: the caller then reads it the strict way, the head alone first."""
    raw = source.read(offset, length)
    if source.blobs is not None and _blobs.BLOB_MARKER in raw:
        # Reading a response must not need the request's blobs (a missing one fails only
        # the read that needs it): lines with blobs keep the head-first read.
        return None
    if _SKELETON.match(raw) is None:
        return None
    body = exact_loads(raw, max_depth=_safe.MAX_DEPTH)
    if body is None:
        return None
    for key in _SKELETON_KEYS:
        del body[key]
    try:
        _check_fields(body)
    except ValueError as exc:
        raise _corrupt(source, offset, exc) from None
    return body


def _exact_fields(raw: bytes) -> dict[str, Any] | None:
    """The body of a line whose skeleton matched, when ``exact_loads`` takes it (keys once
    each, nothing after the object: it checked both); depth and error record checked here."""
    fast = exact_loads(raw, max_depth=_safe.MAX_DEPTH)  # deeper: None, and the strict reader says why
    if fast is None:
        return None
    for key in _SKELETON_KEYS:
        del fast[key]
    return _check_fields(fast)


def _decode(raw: bytes) -> str:
    # UnicodeDecodeError is a ValueError: a line that is not UTF-8 is a corrupt line.
    return raw.decode("utf-8", "surrogatepass")


def _body_fields(raw: bytes, match: re.Match[bytes] | None = None) -> dict[str, Any]:
    """Every field of an event line but the skeleton, checked strictly: each key once
    (a skeleton key included), nothing after the object, nesting within ``MAX_DEPTH``.

    ``match`` is the line's skeleton match, when the caller has it already."""
    if match is None:
        match = _SKELETON.match(raw)
    if match is None:
        data = _safe.strict_object(_decode(raw), _scan_value)
        for key in _SKELETON_KEYS:
            data.pop(key, None)
        return _check_fields(data)
    end = match.end()
    if raw[end - 1] == 0x7D:  # "}": a skeleton-only line
        if end != len(raw):
            raise ValueError(f"extra data after the event at column {end + 1}")
        return {}
    fast = _exact_fields(raw)
    if fast is not None:
        return fast
    text = _decode(raw[end:])
    try:
        body, stop = _safe.scan_fields(text, 0, _scan_value, into={}, reserved=_SKELETON_KEYS, column=end)
    except (IndexError, StopIteration):
        raise ValueError("the event line ends early") from None
    except JSONDecodeError as exc:
        raise _safe.json_error(exc, end) from None
    if stop != len(text):
        raise ValueError(f"extra data after the event at column {end + stop + 1}")
    if _safe.maybe_deep(raw, _safe.MAX_DEPTH) and _safe.too_deep(body, _safe.MAX_DEPTH):
        raise _safe.depth_error()
    return _check_fields(body)


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


def _check_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The records a reader takes fields from by name are objects, and those fields have
    their types: checked where the line is read, so a damaged step is a corrupt line,
    never an AttributeError deep in a replay."""
    for key, fields in _RECORD_FIELDS.items():
        record = body.get(key)
        if record is None:
            continue
        if type(record) is not dict:
            what = " (an error record)" if key == "error" else ""
            raise ValueError(f"{key} must be a JSON object{what}, not {_describe(record)}")
        for field, types in fields.items():
            value = record.get(field)
            if value is not None and type(value) not in types:
                raise ValueError(f"{key}.{field} must be {_TYPE_WORDS[types[0]]}, not {_describe(value)}")
    return body


def _read_head(source: _LineSource, offset: int, length: int) -> dict[str, Any]:
    size = min(length, _HEAD_PREFIX)
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
        head = _restore_fields(head, source.blobs, None)
    return head


def _corrupt(source: _LineSource, offset: int, exc: Exception) -> TraceFormatError:
    # Line numbers are not kept per skeleton (they cost memory on every step); on the
    # error path, count them.
    return TraceFormatError(f"corrupt event line ({exc})", path=source.path, line=source.line_number(offset))


def _parse_head(raw: bytes, *, complete: bool) -> dict[str, Any]:
    """The body fields that come before ``"request"`` on a line our writer wrote.

    Keys are checked as strictly as a full read checks them (each once, no skeleton
    key again); what follows ``"request"`` is checked when the request is read."""
    match = _SKELETON.match(raw)
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
    text = _decode(chunk)
    try:
        head, stop = _safe.scan_fields(
            text, 0, _scan_value, into={}, reserved=_SKELETON_KEYS, stop_key=_REQUEST_KEY, column=end
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
    return _check_fields(head)


def _whole_characters(chunk: bytes) -> bytes:
    """Drop a UTF-8 sequence cut in half at the end of a prefix read."""
    end = len(chunk)
    back = 0
    while back < 3 and end - back > 0 and chunk[end - back - 1] & 0xC0 == 0x80:
        back += 1
    if end - back > 0 and chunk[end - back - 1] >= 0xC0:
        return chunk[: end - back - 1]
    return chunk


def _restore_fields(body: dict[str, Any], store: _blobs.BlobStore, cache: dict[str, Any] | None) -> dict[str, Any]:
    return {key: _blobs.restore(value, store, cache) for key, value in body.items()}


# -- headers ---------------------------------------------------------------------------


def new_header(meta: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    from rewind._version import __version__

    now = time.time()
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "rewind_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "created_ts": now,
        # meta= is the user's: anything with no JSON form degrades with a warning.
        "meta": ensure_jsonable(dict(meta or {}), where="meta"),
    }
    header.update(fields)
    return header


def check_threshold(externalize: Any) -> int | None:
    """Validate an ``externalize=`` byte threshold (``None`` keeps payloads inline)."""
    if externalize is None:
        return None
    if isinstance(externalize, bool) or not isinstance(externalize, int) or externalize < 1:
        raise ValueError(f"externalize= must be a byte threshold >= 1 (or None), not {externalize!r}")
    return externalize


def _header_for(header: Mapping[str, Any], path: str, externalize: int | None) -> dict[str, Any]:
    """``header`` as written to ``path``: v2 with its blob folder when externalizing, else v1."""
    out = dict(header)
    out.pop("externalize", None)
    out.pop("blobs", None)
    if externalize is None:
        out["version"] = FORMAT_VERSION
    else:
        out["version"] = BLOBS_FORMAT_VERSION
        out["externalize"] = externalize
        out["blobs"] = os.path.basename(_blobs.blob_dir_for(path))
    return out


#: The deepest a written line may nest: what the readers accept, less the levels a blob
#: marker (and its literal escape) may add around a leaf.
_WRITE_DEPTH = _safe.MAX_DEPTH - 2


def _readable_depth(data: dict[str, Any]) -> dict[str, Any]:
    """An event's fields, with payloads nested deeper than any reader accepts cut (and warned)."""
    if not _safe.too_deep(data, _WRITE_DEPTH):
        return data
    return {key: value if key in _SKELETON_KEYS else within_depth(value, where=key) for key, value in data.items()}


def _event_fields(data: dict[str, Any], store: _blobs.BlobStore | None, threshold: int | None) -> dict[str, Any]:
    if store is None or threshold is None:
        return data
    return {
        key: value if key in _SKELETON_KEYS else _blobs.externalize(value, store, threshold)
        for key, value in data.items()
    }


class Trace:
    """A recorded run: a header and its events, sorted by ``seq``."""

    def __init__(
        self,
        events: list[Event] | None = None,
        *,
        header: Mapping[str, Any] | None = None,
        path: PathLike | None = None,
    ) -> None:
        self.header: dict[str, Any] = dict(header) if header is not None else new_header()
        self.events: list[Event] = list(events or [])
        self.path: str | None = os.fspath(path) if path is not None else None
        #: True when the file ended in a torn line (the recording process was killed mid-write).
        self.torn_tail = False

    @property
    def meta(self) -> dict[str, Any]:
        return self.header.setdefault("meta", {})

    @property
    def version(self) -> int:
        return int(self.header.get("version", FORMAT_VERSION))

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, index: int) -> Event:
        return self.events[index]

    def __repr__(self) -> str:
        return f"Trace({self.path or '<memory>'}, {len(self.events)} events, v{self.version})"

    # -- reading ------------------------------------------------------------
    @classmethod
    def load(cls, path: PathLike) -> Trace:
        """Read a whole trace into memory, every body parsed and every blob read."""
        return _read(os.fspath(path), lazy=False)

    @classmethod
    def open(cls, path: PathLike) -> Trace:
        """Open a trace lazily: skeletons in memory, bodies read from disk on access.

        Gzip archives have no random access and are loaded eagerly.
        """
        return _read(os.fspath(path), lazy=True)

    # -- writing ------------------------------------------------------------
    def dump(self, path: PathLike, *, externalize: int | None = None) -> None:
        """Write this trace to ``path`` (gzip-compressed when it ends in ``.gz``).

        Payloads are written inline (format v1), whatever file the trace came from;
        ``externalize`` (a byte threshold) writes v2 instead, with every payload leaf
        of that size or more stored once under ``<path>.blobs/``. To archive a trace
        file as it is, blobs and all, use ``rewind.archive.compact``.
        """
        target = os.fspath(path)
        threshold = check_threshold(externalize)
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        store = _blobs.BlobStore(_blobs.blob_dir_for(target), trace_path=target) if threshold else None
        if store is not None:
            store.ensure_dir()
        header = _header_for(self.header, target, threshold)
        lines = [_dumps_line(header)]
        lines.extend(_dumps_line(_event_fields(event.to_dict(), store, threshold)) for event in self.events)
        payload = b"\n".join(lines) + b"\n"
        tmp = f"{target}.tmp-{os.getpid()}"
        opener = gzip.open if target.endswith(".gz") else open
        try:
            with opener(tmp, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)  # a failed write (disk full) leaves the target as it was, and no orphan
            raise


def _check_header(raw: bytes, path: str) -> dict[str, Any]:
    header: Any
    try:
        header = _safe.strict_object(_decode(raw), _scan_value, what="the header")
    except ValueError as exc:
        if b'"format"' in raw and FORMAT_NAME.encode() in raw:
            raise TraceFormatError(f"the header is damaged ({exc})", path=path, line=1) from None
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise TraceFormatError("not a rewind trace (the first line is not an agent-rewind header)", path=path, line=1)
    version = header.get("version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(f"header has an invalid format version {_describe(version)}", path=path, line=1)
    if version not in SUPPORTED_VERSIONS:
        newest = max(SUPPORTED_VERSIONS)
        if version > newest:
            raise TraceFormatError(
                f"written in trace format v{version}, newer than this rewind reads (v{newest}); "
                "upgrade agent-rewind-otel to read it",
                path=path,
                line=1,
            )
        raise TraceFormatError(f"trace format v{version} is not supported", path=path, line=1)
    threshold = header.get("externalize")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1):
        raise TraceFormatError(f"header has an invalid externalize threshold {_describe(threshold)}", path=path, line=1)
    return header


def _describe(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message (never a huge repr)."""
    if isinstance(value, (bool, float)) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**12 else "a huge integer"
    if isinstance(value, str):
        return repr(value[:40]) + ("…" if len(value) > 40 else "")
    return f"a JSON {type(value).__name__}"


def _read(path: str, *, lazy: bool) -> Trace:
    try:
        # Regular files only: a FIFO, a device or a socket is refused before any read.
        fd, _size = _safe.open_regular(path)
    except FileNotFoundError:
        raise TraceFormatError("no such trace file; record one with rewind.record(path)", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError("is a directory, not a trace file", path=path) from None
    try:
        magic = os.read(fd, 2)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    # Every reader below builds objects that stay alive and hold no cycles: the
    # collector would walk them again and again and free nothing (rewind._gc_pause).
    if magic == b"\x1f\x8b":
        # Decompressed as a stream, line by line, and never past the archive limit.
        limit = _safe.limit(_safe.ARCHIVE_ENV, _safe.MAX_ARCHIVE_BYTES)
        with open(fd, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream, _gc_pause.paused():
            try:
                return _parse_lines(path, _safe.bounded_lines(stream, path, limit), source=None)
            except (OSError, EOFError, zlib.error) as exc:
                raise TraceFormatError(f"corrupt gzip archive ({exc})", path=path) from None
    if not lazy:
        with open(fd, "rb", buffering=1 << 20) as fh, _gc_pause.paused():
            return _parse_lines(path, fh, source=None)
    source = _LineSource(path, fd=fd)
    try:
        with open(fd, "rb", buffering=1 << 20, closefd=False) as fh, _gc_pause.paused():
            return _parse_lines(path, fh, source=source)
    except BaseException:
        source.close()
        raise


def _parse_lines(path: str, lines: Any, *, source: _LineSource | None) -> Trace:
    header: dict[str, Any] | None = None
    store: _blobs.BlobStore | None = None
    cache: dict[str, Any] = {}  # blob values shared across an eager load
    names: dict[Any, str] = {}
    events: list[Event] = []
    torn = False
    offset = 0
    lineno = 0
    pending_error: TraceFormatError | None = None
    for raw in lines:
        lineno += 1
        start = offset
        offset += len(raw)
        if pending_error is not None:
            # A bad line followed by more lines is corruption, not a torn tail.
            raise pending_error
        if header is None:
            if not raw.strip():
                continue
            header = _check_header(raw, path)
            if header["version"] >= BLOBS_FORMAT_VERSION:
                store = _blobs.BlobStore(_blobs.resolve_dir(path, header), trace_path=path)
                if source is not None:
                    source.blobs = store
            continue
        stripped = raw.rstrip(b"\r\n")
        # Only a line starting with whitespace can be blank: no copy of every line to see.
        if not stripped or (stripped[0] in _BLANK and not stripped.strip()):
            lineno += raw.count(b"\n", 0, len(raw) - 1)  # a run of blank lines, read as one
            continue
        complete = raw.endswith(b"\n")
        event: Event | None = None
        try:
            if source is not None and complete:
                # A final line without its newline may be a torn write: parse it whole.
                event = _lazy_event(stripped, source, start, names)
            if event is None:
                event = _eager_event(stripped, store, cache, names)
        except (ValueError, KeyError, TypeError) as exc:
            error = TraceFormatError(f"corrupt event line ({exc})", path=path, line=lineno)
            if complete:
                pending_error = error
                continue
            torn = True  # the final write of a killed recorder
            continue
        events.append(event)
    if pending_error is not None:
        # The bad line was the last one, but it ended in a newline: the recorder wrote
        # it whole, so this is corruption rather than a torn write.
        raise pending_error
    if header is None:
        raise TraceFormatError("empty file: no trace header", path=path, line=1)
    events.sort(key=_SEQ)
    if len(events) > 1:
        _check_unique_seqs(events, path)
    trace = Trace(events, header=header, path=path)
    trace.torn_tail = torn
    return trace


_SEQ = operator.attrgetter("seq")
#: The bytes ``bytes.strip`` removes.
_BLANK = frozenset(b" \t\n\r\x0b\x0c")
#: Steps are numbered from 0; a seq must fit a signed 64-bit integer.
_MAX_SEQ = 1 << 63
MAX_SEQ = _MAX_SEQ


def _is_torn(line: bytes) -> bool:
    """Whether a final line without its newline is a torn write (readers drop it)."""
    stripped = line.rstrip(b"\r\n")
    if not stripped.strip():
        return False
    try:
        _eager_event(stripped, None, {}, {})
    except (ValueError, KeyError, TypeError):
        return True
    return False


def _check_unique_seqs(events: list[Event], path: str) -> None:
    """Two lines claiming one step would make a replay serve one and silently skip the other."""
    if len(set(map(_SEQ, events))) == len(events):
        return
    twice = next(a.seq for a, b in itertools.pairwise(events) if a.seq == b.seq)  # events are sorted
    raise TraceFormatError(
        f"step {twice} is recorded on more than one line; a trace holds each step once "
        "(the file was edited or two recordings were joined): remove the extra line or re-record the run",
        path=path,
    )


def _eager_event(line: bytes, store: _blobs.BlobStore | None, cache: dict[str, Any], names: dict[Any, str]) -> Event:
    match = _SKELETON.match(line)
    if match is not None and line[-1] == 0x7D:
        event = _exact_event(line, names)
        if event is not None:
            if store is not None and _blobs.BLOB_MARKER in line:
                event._body = _restore_fields(event._body, store, cache)  # type: ignore[arg-type]
            return event
    event = _lazy_event(line, None, 0, names, match) if match is not None else None
    if event is not None:
        # The writer's layout: the same skeleton a lazy open reads, and the same body a
        # lazy read parses, so Trace.load and Trace.open agree on every line.
        body = _body_fields(line, match)
        if store is not None and _blobs.BLOB_MARKER in line:
            body = _restore_fields(body, store, cache)
        event._body = body
        event._keep = True
        event._request_text = None
        return event
    data = _safe.strict_object(_decode(line), _scan_value)
    _check_skeleton(data)
    if store is not None and _blobs.BLOB_MARKER in line:
        data = _restore_fields(data, store, cache)
    return Event.from_dict(data)


def _exact_event(line: bytes, names: dict[Any, str]) -> Event | None:
    """The event of a line in the writer's exact spelling, its skeleton taken from the one
    orjson parse of the whole line, or ``None`` (the caller reads it field by field).

    The line matched ``_SKELETON``, so its first eight keys are the skeleton's, in order,
    with the value types the pattern allows; ``exact_loads`` read them exactly as the
    stdlib reader would (anything it cannot is ``None``). What the pattern cannot bound
    is checked here, as ``_lazy_event`` checks it."""
    body = exact_loads(line, max_depth=_safe.MAX_DEPTH)
    if body is None:
        return None
    event = Event.__new__(Event)
    event.seq = seq = body.pop("seq")
    if seq >= _MAX_SEQ:
        raise ValueError("seq must be an integer from 0 to 2**63-1")
    kind = body.pop("kind")
    event.kind = _KIND_STR.get(kind) or kind
    name = body.pop("name")
    event.name = names.setdefault(name, name)  # names repeat across a run: share one string
    event.fingerprint = body.pop("fingerprint")
    event.ts = start = body.pop("ts")
    event.duration_ms = took = body.pop("duration_ms")
    if type(start) is int or type(took) is int:  # the pattern's numbers: 1 reads as an int
        event.ts, event.duration_ms = start, took = float(start), float(took)
    if start - start or took - took:  # orjson refuses 1e400 today; a reader must not take inf
        raise ValueError("ts and duration_ms must be finite numbers")
    event.ok = body.pop("ok")
    event.live = body.pop("live")
    event._body = _check_fields(body)
    event._head = None
    event._source = None
    event._offset = 0
    event._length = len(line)
    event._keep = True
    event._request_text = None
    return event


def _check_skeleton(data: dict[str, Any]) -> None:
    """The skeleton of a line in another layout, checked as strictly as the fast path's pattern."""
    for key in ("seq", "kind", "name"):
        if key not in data:
            raise KeyError(f"missing {key!r}")
    seq = data["seq"]
    if type(seq) is not int or not 0 <= seq < _MAX_SEQ:
        raise ValueError(f"seq must be an integer from 0 to 2**63-1, not {_describe(seq)}")
    for key in ("kind", "name", "fingerprint"):
        if key in data and type(data[key]) is not str:
            raise ValueError(f"{key} must be a string, not {_describe(data[key])}")
    for key in ("ts", "duration_ms"):
        value = data.get(key)
        if value is not None and (type(value) not in (int, float) or not math.isfinite(value)):
            raise ValueError(f"{key} must be a finite number, not {_describe(value)}")
    for key in ("ok", "live"):
        if key in data and type(data[key]) is not bool:
            raise ValueError(f"{key} must be true or false, not {_describe(data[key])}")
    _check_fields(data)


def check_line_fields(data: dict[str, Any]) -> None:
    """Raise ``ValueError``/``KeyError`` unless ``data`` is an event line every reader accepts."""
    _check_skeleton(data)


def _lazy_event(
    line: bytes,
    source: _LineSource | None,
    offset: int,
    names: dict[Any, str],
    match: re.Match[bytes] | None = None,
) -> Event | None:
    if match is None:
        match = _SKELETON.match(line)
    if match is None or not line.endswith(b"}"):
        return None  # not written by our writer's fast layout: parse it fully
    seq, kind, name, fp, ts, duration, ok, live = match.groups()
    # Names repeat across a run: decode each once and share the string.
    text = names.get(name)
    if text is None:
        text = names[name] = json.loads(name)
    event = Event.__new__(Event)
    event.seq = number = int(seq)
    if number >= _MAX_SEQ:
        raise ValueError("seq must be an integer from 0 to 2**63-1")
    event.kind = _text_kind(kind)
    event.name = text
    event.fingerprint = fp.decode("ascii")
    event.ts = start = float(ts)
    event.duration_ms = took = float(duration)
    if start - start or took - took:  # nan (truthy) for inf or nan: 1e400 parses as inf
        raise ValueError("ts and duration_ms must be finite numbers")
    event.ok = ok == b"true"
    event.live = live == b"true"
    event._body = None
    event._head = None
    event._source = source
    event._offset = offset
    event._length = len(line)
    event._keep = False
    event._request_text = None
    return event


_KIND_TEXT = {kind.encode(): kind for kind in KINDS}
_KIND_STR = {kind: kind for kind in KINDS}


def _text_kind(raw: bytes) -> str:
    return _KIND_TEXT.get(raw) or raw.decode("ascii")


class TraceWriter:
    """Appends events to a trace file, one flushed line each (crash-safe).

    With ``externalize`` (a byte threshold) the file is format v2 and payload leaves
    of that size or more are written once to ``<path>.blobs/`` (before the line that
    references them, so a crash never leaves a dangling reference).

    With ``release_bodies`` a written event lets go of its body and reads it back from
    the file when touched, like an event from ``Trace.open``: a long recording then
    holds a small skeleton per step in memory, not every payload it ever saw.

    The file is locked for this writer alone, and a failed write never leaves a partial
    line (``rewind._trace_file``): it raises ``TraceWriteError`` with the file ending
    after its last complete step. With ``replace_on_close`` the lines go to a temporary
    file renamed onto ``path`` by ``close(keep=True)``.
    """

    def __init__(
        self,
        path: PathLike,
        header: Mapping[str, Any],
        *,
        externalize: int | None = None,
        release_bodies: bool = False,
        replace_on_close: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.externalize = check_threshold(externalize)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.blobs: _blobs.BlobStore | None = None
        if self.externalize is not None:
            self.blobs = _blobs.BlobStore(_blobs.blob_dir_for(self.path), trace_path=self.path)
            self.blobs.ensure_dir()
        #: The header as written (v2 and its blob folder when externalizing).
        self.header = _header_for(header, self.path, self.externalize)
        self._lock = threading.Lock()
        # Unbuffered: every line goes to the OS in one write, which is the per-event
        # flush crash safety needs, without copying it through a buffer first.
        self._file = LineFile(self.path, replace_on_close=replace_on_close)
        try:
            self._file.append(_dumps_line(self.header) + b"\n")
        except OSError as exc:
            self._file.close(keep=False)
            raise TraceWriteError(
                f"{self.path}: could not write the trace header ({exc.strerror or exc}); nothing was recorded",
                path=self.path,
            ) from exc
        self._release = release_bodies
        self._reader: _LineSource | None = None

    def write(self, event: Event) -> None:
        try:
            if self.blobs is None:
                line = event.to_line()
                if _safe.maybe_deep(line, _WRITE_DEPTH):  # a bracket count rules out nearly every line
                    line = _dumps_line(_readable_depth(event.to_dict()))
                line += b"\n"
            else:
                data = _readable_depth(event.to_dict())
                line = _dumps_line(_event_fields(data, self.blobs, self.externalize)) + b"\n"
            with self._lock:
                offset = self._file.append(line)
                if self._release:
                    self._release_body(event, offset, len(line) - 1)
        except OSError as exc:
            raise self._write_error(event, exc) from exc

    def _write_error(self, event: Event, exc: OSError) -> TraceWriteError:
        what = f"step {event.seq} ({event.kind} call {event.name!r})"
        if self._file.broken is not None:
            state = f"{self._file.broken}."
        else:
            state = (
                "The partial line was removed: the file ends after its last complete step, and every "
                "step before stays readable; this step is not in it."
            )
        return TraceWriteError(
            f"{self.path}: could not write {what} ({exc.strerror or exc}). {state} "
            "Free disk space (or lift the file size limit) and record the run again to capture it.",
            path=self.path,
            step=event.seq,
        )

    def _release_body(self, event: Event, offset: int, length: int) -> None:
        if self._reader is None:
            self._reader = _LineSource(self._file.write_path)
            self._reader.blobs = self.blobs
        # The lazy location is in place before the body goes, so a concurrent reader
        # sees one or the other, never neither.
        event._source, event._offset, event._length, event._keep = self._reader, offset, length, False
        event._head = None
        event._request_text = None
        event._body = None

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self, *, keep: bool = True) -> None:
        """Close the file; with ``replace_on_close``, ``keep`` renames it onto ``path``
        (else it is discarded and ``path`` keeps what it held)."""
        with self._lock:
            self._file.close(keep=keep)
        # Released events keep reading through their own reader; it closes with them.
