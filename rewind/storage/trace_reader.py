"""Reading a trace file: the header, then every event line, into a ``ParsedTrace``.

``read_trace`` opens a file from anywhere (regular files only, gzip archives
decompressed within their limit) and reads it either eagerly (every body parsed, every
blob read) or lazily (a skeleton per event, bodies left on a ``LineSource``). A torn
final line is dropped and reported as ``torn_tail``; a bad line anywhere else, a step
recorded twice, or a damaged header is a ``TraceFormatError`` naming the file and line.
``rewind.storage.trace.Trace`` is built from what this returns.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import operator
import os
import re
import zlib
from typing import Any, NamedTuple

from rewind.data import gc_pause as _gc_pause
from rewind.data import safe_read as _safe
from rewind.data.canonical import exact_loads
from rewind.errors import TraceFormatError

from . import blobs as _blobs
from .event import Event
from .event_line import (
    KINDS,
    MAX_SEQ,
    SKELETON,
    body_fields,
    check_fields,
    decode_line,
    describe,
    restore_fields,
    scan_value,
)
from .line_source import LineSource
from .trace_header import BLOBS_FORMAT_VERSION, check_header


class ParsedTrace(NamedTuple):
    """What a trace file holds: its header, its events sorted by seq, and whether it
    ended in a torn line (the recording process was killed mid-write)."""

    header: dict[str, Any]
    events: list[Event]
    torn_tail: bool


def read_trace(path: str, *, lazy: bool) -> ParsedTrace:
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
    source = LineSource(path, fd=fd)
    try:
        with open(fd, "rb", buffering=1 << 20, closefd=False) as fh, _gc_pause.paused():
            return _parse_lines(path, fh, source=source)
    except BaseException:
        source.close()
        raise


def _parse_lines(path: str, lines: Any, *, source: LineSource | None) -> ParsedTrace:
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
            header = check_header(raw, path)
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
    return ParsedTrace(header, events, torn)


_SEQ = operator.attrgetter("seq")
#: The bytes ``bytes.strip`` removes.
_BLANK = frozenset(b" \t\n\r\x0b\x0c")


def is_torn(line: bytes) -> bool:
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
    match = SKELETON.match(line)
    if match is not None and line[-1] == 0x7D:
        event = _exact_event(line, names)
        if event is not None:
            if store is not None and _blobs.BLOB_MARKER in line:
                event._body = restore_fields(event._body, store, cache)  # type: ignore[arg-type]
            return event
    event = _lazy_event(line, None, 0, names, match) if match is not None else None
    if event is not None:
        # The writer's layout: the same skeleton a lazy open reads, and the same body a
        # lazy read parses, so Trace.load and Trace.open agree on every line.
        body = body_fields(line, match)
        if store is not None and _blobs.BLOB_MARKER in line:
            body = restore_fields(body, store, cache)
        event._body = body
        event._keep = True
        event._request_text = None
        return event
    data = _safe.strict_object(decode_line(line), scan_value)
    _check_skeleton(data)
    if store is not None and _blobs.BLOB_MARKER in line:
        data = restore_fields(data, store, cache)
    return Event.from_dict(data)


def _exact_event(line: bytes, names: dict[Any, str]) -> Event | None:
    """The event of a line in the writer's exact spelling, its skeleton taken from the one
    orjson parse of the whole line, or ``None`` (the caller reads it field by field).

    The line matched ``SKELETON``, so its first eight keys are the skeleton's, in order,
    with the value types the pattern allows; ``exact_loads`` read them exactly as the
    stdlib reader would (anything it cannot is ``None``). What the pattern cannot bound
    is checked here, as ``_lazy_event`` checks it."""
    body = exact_loads(line, max_depth=_safe.MAX_DEPTH)
    if body is None:
        return None
    event = Event.__new__(Event)
    event.seq = seq = body.pop("seq")
    if seq >= MAX_SEQ:
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
    event._body = check_fields(body)
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
    if type(seq) is not int or not 0 <= seq < MAX_SEQ:
        raise ValueError(f"seq must be an integer from 0 to 2**63-1, not {describe(seq)}")
    for key in ("kind", "name", "fingerprint"):
        if key in data and type(data[key]) is not str:
            raise ValueError(f"{key} must be a string, not {describe(data[key])}")
    for key in ("ts", "duration_ms"):
        value = data.get(key)
        if value is not None and (type(value) not in (int, float) or not math.isfinite(value)):
            raise ValueError(f"{key} must be a finite number, not {describe(value)}")
    for key in ("ok", "live"):
        if key in data and type(data[key]) is not bool:
            raise ValueError(f"{key} must be true or false, not {describe(data[key])}")
    check_fields(data)


def check_line_fields(data: dict[str, Any]) -> None:
    """Raise ``ValueError``/``KeyError`` unless ``data`` is an event line every reader accepts."""
    _check_skeleton(data)


def _lazy_event(
    line: bytes,
    source: LineSource | None,
    offset: int,
    names: dict[Any, str],
    match: re.Match[bytes] | None = None,
) -> Event | None:
    if match is None:
        match = SKELETON.match(line)
    if match is None or not line.endswith(b"}"):
        return None  # not written by our writer's fast layout: parse it fully
    seq, kind, name, fp, ts, duration, ok, live = match.groups()
    # Names repeat across a run: decode each once and share the string.
    text = names.get(name)
    if text is None:
        text = names[name] = json.loads(name)
    event = Event.__new__(Event)
    event.seq = number = int(seq)
    if number >= MAX_SEQ:
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
