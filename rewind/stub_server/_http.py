"""The HTTP core: one threaded server, a handler that routes to registered wire formats.

A wire format (``openai.py``, ``anthropic.py``, ...) is a :class:`WireFormat` that
claims the requests it understands, lists its routes and knows its own error
body. The handler does everything they share: reading and logging the request,
injected failures, scripted turns, JSON answers and streams.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

from ._brain import Answer, Conversation, resolve_answer
from ._connections import ConnectionTrackingServer
from ._script import ErrorSpec, ScriptTurn

if TYPE_CHECKING:
    from ._server import StubServer

_DISCONNECT_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
SSE = "text/event-stream; charset=utf-8"
#: The largest request body the stub reads (a 413 beyond it): no model request comes near.
MAX_BODY = 64 * 1024 * 1024


# --------------------------------------------------------------------------- public records


@dataclass(frozen=True)
class StubRequest:
    """One request as the server received it.

    ``path`` is the raw request target including any query string (the Anthropic
    beta namespace shows up as ``/v1/messages?beta=true``); header names are
    lower-cased so lookups do not depend on the client's spelling.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


# --------------------------------------------------------------------------- streamed events


@dataclass
class Event:
    data: Any
    event: str | None = None
    # "content" events are the ones stream_error_after counts; "final" events are
    # the trailers an injected error must pre-empt even if content ran out early.
    kind: Literal["meta", "content", "final"] = "meta"


def encode_sse(event: Event) -> bytes:
    data = event.data if isinstance(event.data, str) else json.dumps(event.data, separators=(",", ":"))
    head = f"event: {event.event}\n" if event.event else ""
    return f"{head}data: {data}\n\n".encode()


@dataclass
class Ctx:
    """Per-request identity and accounting shared by the renderers."""

    server: StubServer
    conv: Conversation
    answer: Answer
    body: Mapping[str, Any]

    def next_id(self, prefix: str) -> str:
        return self.server._next_id(prefix)


# --------------------------------------------------------------------------- wire formats

RouteHandler = Callable[["Exchange", "re.Match[str]"], None]
# Builds the in-band error event a stream ends with; None for formats that have
# none (their clients only notice a connection that drops mid-body).
StreamError = Callable[[ErrorSpec | None, int], Event] | None


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handle: RouteHandler


class WireFormat:
    """One provider's wire format. Subclass it, add routes, and :func:`register` it.

    ``priority`` orders the claims: the first format (lowest number) whose
    :meth:`owns` accepts a request gets it, including its injected failures and
    404s, which then come back in that format's error shape. OpenAI is the
    fallback that owns everything, so it goes last.
    """

    name = "base"
    priority = 50

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        raise NotImplementedError

    def local_path(self, path: str) -> str:
        """The path the routes are matched against (strip prefixes, version segments)."""
        return path

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        raise NotImplementedError

    def error_headers(self, spec: ErrorSpec) -> tuple[tuple[str, str], ...]:
        """Headers an error response carries in this format (Bedrock names its errors in one)."""
        return ()

    def route(self, method: str, pattern: str) -> Callable[[RouteHandler], RouteHandler]:
        """Decorator: ``pattern`` must match the whole local path."""

        def add(handler: RouteHandler) -> RouteHandler:
            self.routes.append(Route(method, re.compile(pattern), handler))
            return handler

        return add

    def find(self, method: str, path: str) -> tuple[RouteHandler, re.Match[str]] | None:
        for route in self.routes:
            if route.method == method:
                match = route.pattern.fullmatch(path)
                if match:
                    return route.handle, match
        return None


_FORMATS: list[WireFormat] = []
_FORMATS_LOCK = threading.Lock()


def register(fmt: WireFormat) -> WireFormat:
    with _FORMATS_LOCK:
        if all(existing.name != fmt.name for existing in _FORMATS):
            _FORMATS.append(fmt)
            _FORMATS.sort(key=lambda f: f.priority)
    return fmt


def formats() -> list[WireFormat]:
    with _FORMATS_LOCK:
        return list(_FORMATS)


def _choose_format(path: str, headers: Mapping[str, str]) -> WireFormat:
    for fmt in formats():
        if fmt.owns(path, headers):
            return fmt
    raise LookupError("no wire format registered")  # unreachable once openai.py is imported


# --------------------------------------------------------------------------- HTTP layer


class _HTTPServer(ConnectionTrackingServer):
    def __init__(self, address: tuple[str, int], stub: StubServer) -> None:
        self.stub = stub
        super().__init__(address, Exchange)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        # Socket-level failures are the client's business (it hung up or stalled).
        if isinstance(exc, _DISCONNECT_ERRORS) or (isinstance(exc, OSError) and not self.stub.verbose):
            return
        super().handle_error(request, client_address)


class _TooLarge(Exception):
    """The request body is over ``MAX_BODY``: answered 413, the connection closed."""


class _ClientGone(Exception):
    """The client hung up; there is nobody left to answer."""


class Exchange(BaseHTTPRequestHandler):
    """One request/response; the API route handlers of every wire format use."""

    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "rewind-stub/1"
    sys_version = ""
    # Bounds how long an idle keep-alive connection pins a thread.
    timeout = 30
    # Headers and body leave in separate writes; with Nagle on, a keep-alive
    # request waits ~40 ms for the client's delayed ACK before the body goes out.
    disable_nagle_algorithm = True

    request_id = ""
    _headers_sent = False
    # Set per request by _dispatch before any route handler runs.
    format: WireFormat
    body: dict[str, Any]
    request_headers: dict[str, str]

    def log_message(self, format: str, *args: Any) -> None:
        # Agents put prompts and keys in requests; stay quiet unless asked.
        if self.server.stub.verbose:
            sys.stderr.write(f"[rewind-stub] {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # ----------------------------------------------------------------- what route handlers see

    @property
    def stub(self) -> StubServer:
        return self.server.stub

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query)

    def send_json(self, status: int, payload: Any, extra: Iterable[tuple[str, str]] = ()) -> None:
        raw = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        self._send_head(status, "application/json", extra, length=len(raw))
        self._write(raw)

    def send_error_spec(self, spec: ErrorSpec) -> None:
        payload = spec.body if spec.body is not None else self.format.error_payload(spec, self.request_id)
        self.send_json(spec.status, payload, (*self.format.error_headers(spec), *spec.headers))

    def generate(
        self,
        conv: Conversation,
        *,
        streaming: bool,
        render_json: Callable[[Ctx], Any],
        render_events: Callable[[Ctx], list[Event]],
        stream_error: StreamError,
        numbered: bool = False,
        encode: Callable[[Event], bytes] = encode_sse,
        content_type: str = SSE,
    ) -> None:
        """Answer a generation request with the next scripted turn or the default brain."""
        stub = self.stub
        turn = stub._pop_turn(conv)
        if turn is not None and turn.delay > 0:
            time.sleep(turn.delay)
        if turn is not None and turn.error is not None and turn.stream_error_after is None:
            self.send_error_spec(turn.error)
            return
        if turn is not None and turn.stream_error_after is not None and not streaming:
            # Without a stream there is no "midway", so the turn fails as a whole.
            self.send_error_spec(turn.error or ErrorSpec(status=500))
            return
        ctx = Ctx(stub, conv, resolve_answer(conv, turn), self.body)
        if streaming:
            self._stream(render_events(ctx), turn, stream_error, numbered, encode, content_type)
        else:
            self.send_json(200, render_json(ctx))

    # ----------------------------------------------------------------- plumbing

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()  # appended in place: rebuilding bytes per chunk was quadratic
            while True:
                size_line = self.rfile.readline(1024)
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                if len(data) + size > MAX_BODY:
                    raise _TooLarge
                data += self.rfile.read(size)
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise _TooLarge
        return self.rfile.read(length) if length > 0 else b""

    def _send_head(
        self,
        status: int,
        content_type: str,
        extra: Iterable[tuple[str, str]] = (),
        length: int | None = None,
        *,
        keep_alive: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        # Both spellings always go out: each SDK surfaces only its own on exceptions.
        self.send_header("x-request-id", self.request_id)
        self.send_header("request-id", self.request_id)
        for name, value in extra:
            self.send_header(name, value)
        if length is None:
            self.send_header("Cache-Control", "no-cache")
            if not keep_alive:
                self.send_header("Connection", "close")
                self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self._headers_sent = True

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except _DISCONNECT_ERRORS as exc:
            self.close_connection = True
            raise _ClientGone from exc

    def _stream(
        self,
        events: Sequence[Event],
        turn: ScriptTurn | None,
        make_error: StreamError,
        numbered: bool,
        encode: Callable[[Event], bytes],
        content_type: str,
    ) -> None:
        stub = self.stub
        error_after = turn.stream_error_after if turn is not None else None
        error_spec = turn.error if turn is not None else None
        # A stream goes out as the providers send theirs: chunked, on a connection kept
        # alive for the next call (an HTTP/1.0 client gets the body up to a close). Without
        # an in-band error event, the only failure a client can see is a body that stops
        # short: chunked framing without its terminating chunk, then a close, does that.
        drop = error_after is not None and make_error is None
        chunked = drop or self.request_version == "HTTP/1.1"
        framing = [("Transfer-Encoding", "chunked")] if chunked else []
        self._send_head(200, content_type, framing, keep_alive=chunked and not drop)
        sent_content = 0
        for seq, event in enumerate(events):
            cut = event.kind == "final" or (event.kind == "content" and sent_content >= (error_after or 0))
            if error_after is not None and cut:
                if make_error is not None:
                    self._send_piece(encode(make_error(error_spec, seq)), chunked)
                    self._end_chunks(chunked)
                return
            if numbered and isinstance(event.data, dict):
                event.data["sequence_number"] = seq
            self._send_piece(encode(event), chunked)
            if event.kind == "content":
                sent_content += 1
            if stub.stream_delay > 0:
                time.sleep(stub.stream_delay)
        self._end_chunks(chunked and not drop)

    def _send_piece(self, data: bytes, chunked: bool) -> None:
        if chunked and data:  # an empty chunk would end the body
            self._write(b"%x\r\n%s\r\n" % (len(data), data))
        elif data:
            self._write(data)

    def _end_chunks(self, chunked: bool) -> None:
        if chunked:
            self._write(b"0\r\n\r\n")

    # ----------------------------------------------------------------- routing

    def _dispatch(self) -> None:
        stub = self.stub
        self._headers_sent = False
        try:
            raw = self._read_body()
            body: Any = None
            bad_json = False
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    bad_json = True
            headers: dict[str, str] = {}
            for name, value in self.headers.items():
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            number = stub._record(StubRequest(self.command, self.path, headers, body), len(raw))
            self.request_id = f"req_stub_{number}"
            self.request_headers = headers
            self.body = body if isinstance(body, dict) else {}

            path = urlsplit(self.path).path.rstrip("/") or "/"
            self.format = _choose_format(path, headers)
            local = self.format.local_path(path)

            if self.command == "POST" and path == "/_stub/restart":
                # The CLI's way to rerun a queued script (same as StubServer.restart()).
                stub.restart()
                self.send_json(200, {"status": "restarted", "script_turns": stub.script_remaining})
                return
            stub._sleep_latency()
            injected = stub._pop_failure()
            if injected is not None:
                self.send_error_spec(injected)
                return
            if bad_json or (self.command == "POST" and not isinstance(body, dict)):
                self.send_error_spec(ErrorSpec(400, message="Request body must be a JSON object."))
                return
            if self.command == "GET" and local in ("/", "/health", "/healthz"):
                self.send_json(200, {"status": "ok", "service": "rewind-stub-server"})
                return
            found = self.format.find(self.command, local)
            if found is None:
                message = f"Unknown route {self.command} {self.path} on the rewind stub server."
                self.send_error_spec(ErrorSpec(404, message=message))
                return
            handler, match = found
            handler(self, match)
        except _TooLarge:
            self.close_connection = True
            path = urlsplit(self.path).path.rstrip("/") or "/"
            self.format = _choose_format(path, {name.lower(): value for name, value in self.headers.items()})
            self.request_id = "req_stub_too_large"
            message = f"Request body over {MAX_BODY:,} bytes; the rewind stub server does not read it."
            self.send_error_spec(ErrorSpec(413, message=message))
        except _ClientGone:
            self.close_connection = True
        except _DISCONNECT_ERRORS:
            self.close_connection = True
        # A bug in the stub must surface as a 500 rather than a client waiting forever.
        except Exception as exc:
            traceback.print_exc()
            self.close_connection = True
            if not self._headers_sent:
                try:
                    self.send_json(
                        500,
                        {
                            "error": {
                                "message": f"stub server error: {exc}",
                                "type": "server_error",
                                "param": None,
                                "code": None,
                            }
                        },
                    )
                except _ClientGone:
                    pass
