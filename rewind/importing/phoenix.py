"""Reading a run back from a running Arize Phoenix over its HTTP API.

Phoenix answers ``GET /v1/projects/{project}/spans`` with pages of spans (``data`` and a
``next_cursor``); each span has ``context.trace_id``/``span_id`` (hex), ``parent_id``,
ISO-8601 ``start_time``/``end_time``, ``status_code``, ``events`` and its attributes as
one flat dict (or nested, on some versions: flattened back to dotted names here). Only
loopback or hosts the user names are contacted; nothing is sent but the query.
"""

from __future__ import annotations

import http.client
import io
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any

from .errors import TelemetryError
from .limits import Budget
from .otlp import parse_json, span_id_of, time_ns
from .spans import SpanEvent, SpanRecord

PAGE = 1000
#: Seconds one read may wait, and the whole import may take (``REWIND_IMPORT_TIMEOUT``).
READ_TIMEOUT = 30.0
TIMEOUT_ENV = "REWIND_IMPORT_TIMEOUT"
TOTAL_TIMEOUT = 300.0
#: The largest answer one page may be (a thousand spans with long prompts fit easily).
MAX_PAGE_BYTES = 64 * 1024 * 1024
#: Pages in a row that bring no span while promising more: a server that never ends.
MAX_EMPTY_PAGES = 3


def read_phoenix(
    url: str, project: str = "default", *, headers: dict[str, str] | None = None, timeout: float | None = None
) -> list[SpanRecord]:
    """Every span of ``project``, page by page, within one deadline and one import's budget.

    Only the host of ``url`` is contacted: a redirect elsewhere is refused, not followed.
    """
    base = url.rstrip("/")
    deadline = time.monotonic() + (timeout if timeout is not None else _total_timeout())
    budget = Budget(base)
    opener = _opener(base)
    spans: list[SpanRecord] = []
    cursor: str | None = None
    seen: set[str] = set()
    empty = 0
    while True:
        query = {"limit": str(PAGE)}
        if cursor:
            query["cursor"] = cursor
        page_url = f"{base}/v1/projects/{urllib.parse.quote(project, safe='')}/spans?{urllib.parse.urlencode(query)}"
        page = _get(opener, page_url, headers or {}, project, deadline, budget)
        data = page.get("data")
        found = 0
        for raw in data if isinstance(data, list) else []:
            budget.spend_spans()
            span = _span(raw, budget) if isinstance(raw, dict) else None
            if span is not None:
                spans.append(span)
                found += 1
        next_cursor = page.get("next_cursor")
        if not next_cursor:
            break
        if not isinstance(next_cursor, str) or next_cursor in seen:
            raise TelemetryError(f"{base}: Phoenix returned the cursor {str(next_cursor)[:60]!r} again; stopped")
        empty = 0 if found else empty + 1
        if empty >= MAX_EMPTY_PAGES:
            raise TelemetryError(
                f"{base}: Phoenix answered {empty} pages in a row with no span but another cursor; stopped"
            )
        seen.add(next_cursor)
        cursor = next_cursor
    if not spans:
        raise TelemetryError(f"{base}: Phoenix project {project!r} has no spans")
    return spans


def _total_timeout() -> float:
    raw = (os.environ.get(TIMEOUT_ENV) or "").strip()
    if not raw:
        return TOTAL_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise TelemetryError(f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds")
    return value


def _get(
    opener: urllib.request.OpenerDirector,
    url: str,
    headers: dict[str, str],
    project: str,
    deadline: float,
    budget: Budget,
) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json", **headers})
    request.deadline = deadline  # type: ignore[attr-defined]  # read by _DeadlineConnection
    try:
        with opener.open(request, timeout=min(READ_TIMEOUT, _left(deadline, url))) as answer:
            body = _read_page(answer, url)
        payload = parse_json(body, budget)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise TelemetryError(f"{url}: Phoenix has no project {project!r} (pass --project NAME)") from None
        raise TelemetryError(f"{url}: Phoenix answered HTTP {exc.code} {exc.reason}") from None
    except _Deadline as exc:
        raise TelemetryError(str(exc)) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, _Deadline):
            raise TelemetryError(str(reason)) from None
        raise TelemetryError(f"{url}: cannot reach Phoenix ({reason}); is it running at that address?") from None
    except RecursionError:
        raise TelemetryError(f"{url}: the answer nests too deeply to be Phoenix spans") from None
    except ValueError:
        raise TelemetryError(f"{url}: the answer is not JSON; is this a Phoenix server?") from None
    if not isinstance(payload, dict):
        raise TelemetryError(f"{url}: unexpected answer (not a JSON object)")
    return payload


def _read_page(answer: Any, url: str) -> bytes:
    body = answer.read(MAX_PAGE_BYTES + 1)
    if len(body) > MAX_PAGE_BYTES:
        raise TelemetryError(f"{url}: one page of Phoenix's answer is over {MAX_PAGE_BYTES:,} bytes; stopped")
    return bytes(body)


# -- only the named host, within one deadline -----------------------------------------


class _Deadline(TimeoutError):
    """The whole import ran out of time (a server that trickles its answer)."""


def _left(deadline: float, url: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Deadline(
            f"{url}: Phoenix did not answer within the import's time limit "
            f"({TIMEOUT_ENV}, default {TOTAL_TIMEOUT:.0f} s); stopped"
        )
    return left


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each one waiting at most until the deadline (not ``timeout`` anew)."""

    def __init__(self, sock: socket.socket, deadline: float, url: str) -> None:
        super().__init__()
        # The socket's own raw file holds a reference, so http.client closing the socket
        # after the headers leaves the body readable, as it does without this wrapper.
        self._raw = sock.makefile("rb", buffering=0)
        self._sock, self._deadline, self._url = sock, deadline, url

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(min(READ_TIMEOUT, _left(self._deadline, self._url)))
        try:
            return self._raw.readinto(buffer)
        except TimeoutError:
            # The deadline, rather than this one read, ran out (the clock may be a hair behind).
            _left(self._deadline - 0.05, self._url)
            raise

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """The connection's socket, whose ``makefile`` (what http.client reads) keeps the deadline."""

    def __init__(self, sock: socket.socket, deadline: float, url: str) -> None:
        self._sock, self._deadline, self._url = sock, deadline, url

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline, self._url))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _KeepsDeadline:
    """Mixed into http.client's connections: the socket they read keeps the deadline."""

    sock: Any

    def __init__(self, *args: Any, deadline: float, url: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline, self.url = deadline, url

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]  # http.client's connect, after this in the MRO
        self.sock = _DeadlineSocket(self.sock, self.deadline, self.url)


class _DeadlineConnection(_KeepsDeadline, http.client.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_KeepsDeadline, http.client.HTTPSConnection):
    pass


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection: Any = _DeadlineConnection
        return self.do_open(connection, req, **_bound(req))


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = getattr(self, "_context", None)
        connection: Any = _DeadlineHTTPSConnection
        return self.do_open(connection, req, context=context, **_bound(req))


def _bound(req: urllib.request.Request) -> dict[str, Any]:
    return {"deadline": getattr(req, "deadline", float("inf")), "url": req.full_url}


class _SameHostRedirect(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the scheme, host and port the user named."""

    def __init__(self, origin: str) -> None:
        super().__init__()
        self.origin = _netloc(origin)

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        target = urllib.parse.urljoin(req.full_url, newurl)
        if _netloc(target) != self.origin:
            raise TelemetryError(
                f"{req.full_url}: Phoenix redirected to {target[:200]}; rewind contacts only the host you named "
                "(pass that URL instead if you trust it)"
            )
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            new.deadline = getattr(req, "deadline", float("inf"))  # type: ignore[attr-defined]
        return new


def _netloc(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def _opener(base: str) -> urllib.request.OpenerDirector:
    # No ProxyHandler: the query goes to the host named, not through a proxy the environment names.
    handlers = [_DeadlineHTTP(), _DeadlineHTTPS(), _SameHostRedirect(base), urllib.request.ProxyHandler({})]
    return urllib.request.build_opener(*handlers)


def _span(raw: dict[str, Any], budget: Budget) -> SpanRecord | None:
    context = _dict(raw.get("context"))
    trace_id = span_id_of(context.get("trace_id"), 16)
    span_id = span_id_of(context.get("span_id"), 8)
    if trace_id is None or span_id is None:
        return None
    attributes = flatten(_dict(raw.get("attributes")), budget=budget)
    events = []
    listed = raw.get("events")
    for event in listed if isinstance(listed, list) else []:
        if isinstance(event, dict):
            budget.spend_items()
            events.append(
                SpanEvent(
                    str(event.get("name") or ""),
                    _nanos(event.get("timestamp")),
                    flatten(_dict(event.get("attributes")), budget=budget),
                )
            )
    resource = {}
    project = attributes.get("openinference.project.name")
    if isinstance(project, str):
        resource["openinference.project.name"] = project
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=span_id_of(raw.get("parent_id"), 8),
        name=str(raw.get("name") or ""),
        start_ns=_nanos(raw.get("start_time")),
        end_ns=_nanos(raw.get("end_time")),
        attributes=attributes,
        events=events,
        status_code=str(raw.get("status_code") or "UNSET").upper(),
        status_message=str(raw.get("status_message") or ""),
        kind=str(raw.get("span_kind") or "INTERNAL"),
        resource=resource,
    )


def flatten(value: dict[str, Any], prefix: str = "", *, budget: Budget | None = None) -> dict[str, Any]:
    """Nested attribute dicts (and lists of dicts) back to OpenTelemetry's dotted names.

    Walked with a stack, not recursion: a hostile answer may nest as deep as JSON allows.
    """
    out: dict[str, Any] = {}
    stack: list[tuple[str, dict[str, Any]]] = [(prefix, value)]
    while stack:
        at, mapping = stack.pop()
        if budget is not None:
            budget.spend_items(len(mapping))
        nested: list[tuple[str, dict[str, Any]]] = []
        for key, item in mapping.items():
            name = f"{at}{key}"
            if isinstance(item, dict):
                nested.append((name + ".", item))
            elif isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
                nested.extend((f"{name}.{index}.", element) for index, element in enumerate(item))
            else:
                out[name] = item
        stack.extend(reversed(nested))
    return out


def _nanos(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return time_ns(value)
    if not isinstance(value, str):
        return 0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    try:
        return time_ns(int(moment.timestamp() * 1_000_000) * 1000)
    except (OverflowError, ValueError, OSError):
        return 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
