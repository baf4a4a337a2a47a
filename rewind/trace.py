"""The trace file: a versioned JSON-lines header, then one event per line.

A recording appends one line per finished call and flushes it, so a process killed
at any moment leaves every completed call on disk. A torn final line (the write the
kill interrupted) is tolerated; corruption anywhere else is a ``TraceFormatError``
that names the file and line.

``Trace.open`` keeps a small skeleton per event (seq, kind, name, fingerprint,
timing and the line's offset) and reads bodies back on demand, so replay memory
follows the number of events rather than their size. ``Trace.load`` parses
everything up front.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .errors import TraceFormatError

FORMAT_NAME = "agent-rewind"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})
KINDS = ("llm", "tool", "memory")

PathLike = str | os.PathLike[str]

# The writer always puts the skeleton fields first, in this order, so a reader can
# index a line without parsing its (possibly megabytes of) body.
_SKELETON = re.compile(
    rb'\{"seq":(\d+),"kind":"(\w+)","name":("(?:[^"\\]|\\.)*"),'
    rb'"fingerprint":"([0-9a-f]*)","ts":([-+.0-9eE]+),"duration_ms":([-+.0-9eE]+),'
    rb'"ok":(true|false),"live":(true|false)[,}]'
)
_SKELETON_KEYS = ("seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live")


class _LineSource:
    """Random access to the lines of one trace file, for lazily loaded events."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, os.close, self._fd)

    def read(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self._fd, length, offset)
        with self._lock:  # pragma: no cover - platforms without pread
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, length)

    def close(self) -> None:
        self._finalizer()


class Event:
    """One recorded step: an LLM, tool or memory call and its outcome.

    ``request``, ``response`` and ``error`` are JSON data. On an event from
    ``Trace.open`` they are read from the file when first touched and not kept, so
    holding many events costs little memory.
    """

    __slots__ = ("seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live", "_body", "_where")

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
    ) -> None:
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
        body["request"] = request
        self._body: dict[str, Any] | None = body
        self._where: tuple[_LineSource, int, int, int] | None = None

    # -- body ---------------------------------------------------------------
    @property
    def body(self) -> dict[str, Any]:
        """Everything but the skeleton: request, response or error, and extras."""
        if self._body is not None:
            return self._body
        assert self._where is not None
        source, offset, length, lineno = self._where
        raw = source.read(offset, length)
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise TraceFormatError(f"corrupt event line ({exc})", path=source.path, line=lineno) from None
        for key in _SKELETON_KEYS:
            parsed.pop(key, None)
        return parsed

    @property
    def request(self) -> Any:
        return self.body.get("request")

    @property
    def response(self) -> Any:
        return self.body.get("response")

    @property
    def error(self) -> dict[str, Any] | None:
        return self.body.get("error")

    def get(self, key: str, default: Any = None) -> Any:
        """An extra body field written by an instrumentor (e.g. ``"stream"``)."""
        return self.body.get(key, default)

    def materialize(self) -> Event:
        """Pin the body in memory (a lazily loaded event stops touching its file)."""
        if self._body is None:
            self._body = self.body
            self._where = None
        return self

    # -- (de)serialization ----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "seq": self.seq,
            "kind": self.kind,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "ts": self.ts,
            "duration_ms": self.duration_ms,
            "ok": self.ok,
            "live": self.live,
        }
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
        return _dumps_line(self.to_dict())

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

    def __repr__(self) -> str:
        outcome = "ok" if self.ok else "error"
        return f"Event(seq={self.seq}, kind={self.kind!r}, name={self.name!r}, {outcome})"


def _dumps_line(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def new_header(meta: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    from . import __version__

    now = time.time()
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "rewind_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "created_ts": now,
        "meta": dict(meta or {}),
    }
    header.update(fields)
    return header


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
        """Read a whole trace into memory, every body parsed."""
        return _read(os.fspath(path), lazy=False)

    @classmethod
    def open(cls, path: PathLike) -> Trace:
        """Open a trace lazily: skeletons in memory, bodies read from disk on access.

        Gzip archives have no random access and are loaded eagerly.
        """
        return _read(os.fspath(path), lazy=True)

    # -- writing ------------------------------------------------------------
    def dump(self, path: PathLike) -> None:
        """Write this trace to ``path`` (gzip-compressed when it ends in ``.gz``)."""
        target = os.fspath(path)
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        lines = [_dumps_line(self.header)] + [event.to_line() for event in self.events]
        payload = b"\n".join(lines) + b"\n"
        tmp = f"{target}.tmp-{os.getpid()}"
        opener = gzip.open if target.endswith(".gz") else open
        with opener(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, target)


def _check_header(raw: bytes, path: str) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise TraceFormatError(
            "not a rewind trace (the first line is not an agent-rewind header)", path=path, line=1
        )
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise TraceFormatError(f"header has an invalid format version {version!r}", path=path, line=1)
    if version not in SUPPORTED_VERSIONS:
        newest = max(SUPPORTED_VERSIONS)
        if version > newest:
            raise TraceFormatError(
                f"written in trace format v{version}, newer than this rewind reads (v{newest}); "
                "upgrade agent-rewind to read it",
                path=path,
                line=1,
            )
        raise TraceFormatError(f"trace format v{version} is not supported", path=path, line=1)
    return header


def _read(path: str, *, lazy: bool) -> Trace:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
    except FileNotFoundError:
        raise TraceFormatError("no such trace file; record one with rewind.record(path)", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError("is a directory, not a trace file", path=path) from None
    if magic == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                data = fh.read()
        except (OSError, EOFError) as exc:
            raise TraceFormatError(f"corrupt gzip archive ({exc})", path=path) from None
        return _parse_lines(path, data.splitlines(keepends=True), source=None)
    if not lazy:
        with open(path, "rb") as fh:
            return _parse_lines(path, fh.read().splitlines(keepends=True), source=None)
    source = _LineSource(path)
    with open(path, "rb", buffering=1 << 20) as fh:
        return _parse_lines(path, fh, source=source)


def _parse_lines(path: str, lines: Any, *, source: _LineSource | None) -> Trace:
    header: dict[str, Any] | None = None
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
            continue
        stripped = raw.rstrip(b"\r\n")
        if not stripped.strip():
            continue
        complete = raw.endswith(b"\n")
        event: Event | None
        try:
            event = _lazy_event(stripped, source, start, lineno) if source is not None else None
            if event is None:
                event = _eager_event(stripped)
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
    events.sort(key=_seq_key)
    trace = Trace(events, header=header, path=path)
    trace.torn_tail = torn
    return trace


def _seq_key(event: Event) -> int:
    return event.seq


def _eager_event(line: bytes) -> Event:
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("an event line must be a JSON object")
    for key in ("seq", "kind", "name"):
        if key not in data:
            raise KeyError(f"missing {key!r}")
    return Event.from_dict(data)


def _lazy_event(line: bytes, source: _LineSource, offset: int, lineno: int) -> Event | None:
    match = _SKELETON.match(line)
    if match is None or not line.endswith(b"}"):
        return None  # not written by our writer's fast layout: parse it fully
    seq, kind, name, fp, ts, duration, ok, live = match.groups()
    event = Event.__new__(Event)
    event.seq = int(seq)
    event.kind = kind.decode("ascii")
    event.name = json.loads(name)
    event.fingerprint = fp.decode("ascii")
    event.ts = float(ts)
    event.duration_ms = float(duration)
    event.ok = ok == b"true"
    event.live = live == b"true"
    event._body = None
    event._where = (source, offset, len(line), lineno)
    return event


class TraceWriter:
    """Appends events to a trace file, one flushed line each (crash-safe)."""

    def __init__(self, path: PathLike, header: Mapping[str, Any]) -> None:
        self.path = os.fspath(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = open(self.path, "wb")  # noqa: SIM115 - lives as long as the session
        self._fh.write(_dumps_line(header) + b"\n")
        self._fh.flush()

    def write(self, event: Event) -> None:
        line = event.to_line() + b"\n"
        with self._lock:
            if self._fh.closed:
                raise ValueError(f"trace writer for {self.path} is closed")
            self._fh.write(line)
            self._fh.flush()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
