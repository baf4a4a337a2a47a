"""``Event``: one recorded step (an LLM, tool or memory call) and its outcome.

An event is a skeleton (seq, kind, name, fingerprint, timing, outcome) and a body
(request, response or error, and extras). The body is either in memory or, for an
event from ``Trace.open`` or a writer that releases bodies, a place in the trace file
(a ``LineSource``, an offset and a length) read on access through
``rewind.storage.event_line``. ``to_line`` is the writer's spelling: the skeleton
first, the request last.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rewind.data.canonical import fast_dumps

from .event_line import HEAD_PREFIX, SKELETON_KEYS, read_body, read_exact_body, read_head, read_head_before
from .line_source import LineSource


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
        self._source: LineSource | None = None
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
        body = read_body(self._source, self._offset, self._length)
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
        if self._length <= HEAD_PREFIX:
            # A small line is read whole: one orjson parse of all of it costs less than
            # the standard library's parse of the part before the request.
            body = read_exact_body(self._source, self._offset, self._length)
            if body is not None:
                if self._keep:
                    self._body = body
                return body
        head = read_head(self._source, self._offset, self._length)
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

    def release_body(self, source: LineSource, offset: int, length: int) -> None:
        """Let go of the body and read it back when touched from ``source``, where the
        line just written for this event is ``length`` bytes at ``offset`` (a writer
        releasing bodies makes its events like those of ``Trace.open``)."""
        # The lazy location is in place before the body goes, so a concurrent reader
        # sees one or the other, never neither.
        self._source, self._offset, self._length, self._keep = source, offset, length, False
        self._head = None
        self._request_text = None
        self._body = None

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
        if request_text is not None and self._length <= HEAD_PREFIX:
            head = read_head_before(self._source, self._offset, self._length, request_text)
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
            return dumps_line(self.to_dict())
        # The request is already canonical JSON text: encode the rest and splice it in,
        # instead of parsing it back only to encode it again.
        head = self._head_dict()
        for key, value in self._body.items():
            head[key] = value
        prefix = dumps_line(head)
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
        body = {k: v for k, v in data.items() if k not in SKELETON_KEYS}
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


def dumps_line(data: Mapping[str, Any]) -> bytes:
    """The writer's spelling of one trace line (compact, UTF-8, keys in insertion order)."""
    fast = fast_dumps(data)
    if fast is not None:
        return fast
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
