"""The proxy's HTTP server and its lifecycle: one rewind session, one threaded server.

Every request runs in a copy of the context the session was opened in (the session is a
``ContextVar``; handler threads start with an empty context), so concurrent agents
share the session, its lock and its matcher exactly as threads of one Python agent do.
"""

from __future__ import annotations

import contextvars
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from rewind.data.escape import inert
from rewind.engine import placeholder_keys
from rewind.engine.core import begin_call
from rewind.engine.session import Normalizer, Redactor, Session, record, replay
from rewind.errors import DivergenceError
from rewind.storage.trace import Event
from rewind.stub_server._connections import ConnectionTrackingServer

from . import _exchange, _routes
from ._upstream import Pool, forward, parse_upstreams

_DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)

#: What each SDK reads its base URL (and key) from; ``environment()`` fills these in.
BASE_URL_VARIABLES = {
    "OPENAI_BASE_URL": ("openai", "/v1"),
    "ANTHROPIC_BASE_URL": ("anthropic", ""),
    "CO_API_URL": ("cohere", ""),
    "GOOGLE_GEMINI_BASE_URL": ("gemini", ""),
    "MISTRAL_SERVER_URL": ("mistral", "/mistral"),
}
Log = Callable[[str], None]


class Proxy:
    """``rewind proxy``: a local server an agent in any language uses as its provider base URL.

    ``mode="record"`` forwards each request to the provider (``upstreams`` overrides the
    real API's base URL per provider) and records it; ``mode="replay"`` answers from the
    trace with no upstream at all. ``redact=``, ``normalize=`` and ``externalize=`` are the
    session's, as in ``rewind.record``. Use it as a context manager or ``start()``/``stop()``.
    """

    def __init__(
        self,
        trace_path: str,
        *,
        mode: str = "record",
        upstreams: Mapping[str, str] | Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        match: str = "strict",
        meta: dict[str, Any] | None = None,
        redact: Redactor | None = None,
        normalize: Normalizer | None = None,
        externalize: int | None = None,
        log: Log | None = None,
    ) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"Proxy mode must be 'record' or 'replay', not {mode!r}")
        self.mode = mode
        self.trace_path = trace_path
        self.upstreams = {**_routes.DEFAULT_UPSTREAMS, **parse_upstreams(upstreams)}
        self.host = host
        self._port = port
        self.session: Session = (
            record(trace_path, meta=meta, redact=redact, normalize=normalize, externalize=externalize)
            if mode == "record"
            else replay(trace_path, match=match, redact=redact, normalize=normalize)
        )
        self.log = log
        self._context: contextvars.Context | None = None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.pool = Pool()
        #: Requests the proxy did not record (an endpoint it has no route for).
        self.passed_through: list[str] = []

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> Proxy:
        context = contextvars.copy_context()
        httpd = _Server((self.host, self._port), self)  # binds now: a port in use fails here
        try:
            context.run(self.session.__enter__)
        except BaseException:
            httpd.server_close()
            raise
        self._context = context
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="rewind-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        # An exchange answers the agent before its step is written: let those in flight finish,
        # or an agent that exits at once (and the proxy stopped after it) would lose its last step.
        httpd.wait_idle(timeout=30)
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.pool.close()
        assert self._context is not None
        self._context.run(self.session.__exit__, None, None, None)

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the proxy is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://{host}:{self.port}"

    def base_url(self, provider: str) -> str:
        """The base URL an SDK of ``provider`` is given to talk through the proxy."""
        for name, suffix in BASE_URL_VARIABLES.values():
            if name == provider:
                return self.url + suffix
        raise KeyError(f"unknown provider {provider!r}; the proxy knows {', '.join(sorted(self.upstreams))}")

    def environment(self, keys_from: Mapping[str, str] | None = None) -> dict[str, str]:
        """The base-URL variables every SDK reads, pointed at the proxy; in replay also a
        placeholder key for each SDK that refuses to start without one and has none in
        ``keys_from`` (a replay sends no key anywhere)."""
        env = {variable: self.url + suffix for variable, (_, suffix) in BASE_URL_VARIABLES.items()}
        if self.mode == "replay":
            env.update(placeholder_keys.missing(dict(keys_from or {})))
        return env

    # -- results ----------------------------------------------------------------------
    @property
    def divergences(self) -> list[DivergenceError]:
        return self.session.divergences

    @property
    def steps(self) -> list[Event]:
        """Steps recorded so far (record mode)."""
        return list(self.session.new_events)

    def say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)


class _Server(ConnectionTrackingServer):
    def __init__(self, address: tuple[str, int], proxy: Proxy) -> None:
        self.proxy = proxy
        self._in_flight = 0
        self._idle = threading.Condition()
        super().__init__(address, _Handler)

    def exchange_started(self) -> None:
        with self._idle:
            self._in_flight += 1

    def exchange_ended(self) -> None:
        with self._idle:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the agent hung up or stalled: its business
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "rewind-proxy/1"
    sys_version = ""
    timeout = 120
    disable_nagle_algorithm = True
    # Per request (reset by _handle): headers sent, body chunked, cut short, last chunk written.
    _started = _chunked = _aborted = _ended = False

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests hold prompts; the proxy reports steps, not request lines

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    # -- Sink --------------------------------------------------------------------------
    def start(self, status: int, headers: Sequence[tuple[str, str]], *, length: int | None) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if length is None:
            # A stream, chunked: a stream that stopped short ends without the last chunk, so the
            # agent's HTTP client sees it cut off (a closed connection would read as an end).
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self._chunked = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self._started = True

    def write(self, data: bytes) -> None:
        if self._chunked:
            if not data:
                return  # an empty chunk would end the body
            data = b"%x\r\n%s\r\n" % (len(data), data)
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except _DISCONNECTS as exc:
            self.close_connection = True
            raise _exchange.ClientGone(str(exc)) from exc

    def end(self) -> None:
        """A stream's last chunk, written once: the exchange may end it early, before its step is
        recorded, and the handler ends whatever the exchange left open."""
        if not self._chunked or self._ended or self._aborted:
            return
        self._ended = True
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except _DISCONNECTS as exc:
            self.close_connection = True
            raise _exchange.ClientGone(str(exc)) from exc

    def abort(self) -> None:
        self._aborted = True
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- one request -----------------------------------------------------------------------
    def _handle(self) -> None:
        self._started = self._chunked = self._aborted = self._ended = False
        proxy = self.server.proxy
        assert proxy._context is not None
        self.server.exchange_started()
        try:
            proxy._context.copy().run(self._exchange, proxy)
            self.end()
        except _exchange.ClientGone:
            self.close_connection = True
        except Exception as exc:  # a bug of ours answers 500 rather than leaving the agent waiting
            proxy.say(inert(f"rewind proxy: internal error on {self.command} {urlsplit(self.path).path}: {exc!r}"))
            self.close_connection = True
            if not self._started:
                _exchange.answer_json(self, 500, _exchange.proxy_error(f"rewind proxy internal error: {exc!r}"))
        finally:
            self.server.exchange_ended()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _exchange(self, proxy: Proxy) -> None:
        raw = self._read_body()
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        headers = {k.lower(): v for k, v in self.headers.items()}
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        provider, matched = _routes.resolve(self.command, path, headers, body)
        if matched is None:
            self._unrouted(proxy, provider, path, parts.query, raw)
            return
        call = begin_call(
            "llm",
            matched.name,
            matched.request,
            describe=_describe(matched, proxy.upstreams[provider]),
        )
        assert call is not None  # the session is current in this context
        started = time.perf_counter()
        if proxy.mode == "replay":
            try:
                _exchange.replay(call, matched, self)
            except DivergenceError as error:
                proxy.say(inert(f"rewind proxy: {matched.name}: replay diverged\n{error}", keep_newlines=True))
                _exchange.answer_json(self, _exchange.DIVERGENCE_STATUS, _exchange.divergence_body(error))
                return
            served = call.served.seq if call.served is not None else "?"
            proxy.say(f"rewind proxy: replayed step {served} {matched.name} ({_ms(started)})")
            return
        query = f"?{parts.query}" if parts.query else ""
        upstream = proxy.upstreams[provider]
        outgoing = list(self.headers.items())

        def send() -> Any:
            return forward(proxy.pool, upstream, self.command, matched.upstream_path + query, outgoing, raw)

        _exchange.record(call, matched, send, self)
        state = "ok" if call.seq is not None and _ok(proxy, call.seq) else "error"
        proxy.say(f"rewind proxy: recorded step {call.seq} {matched.name} {state} ({_ms(started)})")

    def _unrouted(self, proxy: Proxy, provider: str, path: str, query: str, raw: bytes) -> None:
        """An endpoint the proxy does not record (model lists, token counts …)."""
        where = f"{self.command} {path}"
        if proxy.mode == "replay":
            message = (
                f"rewind proxy: {where} is not an endpoint the proxy records, so a replay cannot answer it "
                "(see docs/proxy.md for the endpoints it records)"
            )
            proxy.say(message)
            _exchange.answer_json(self, 404, _exchange.proxy_error(message))
            return
        with proxy._lock:
            proxy.passed_through.append(where)
        proxy.say(f"rewind proxy: passed {where} through to {provider} unrecorded (not an endpoint the proxy records)")
        upstream = proxy.upstreams[provider]
        target = _routes.upstream_path(provider, path) + (f"?{query}" if query else "")
        try:
            reply = forward(proxy.pool, upstream, self.command, target, list(self.headers.items()), raw)
        except OSError as exc:
            _exchange.answer_json(
                self, 502, _exchange.proxy_error(f"rewind proxy: the {provider} upstream is unreachable: {exc}")
            )
            return
        try:
            data = reply.read_all()
            self.start(reply.status, _exchange.relayed_headers(reply.headers), length=len(data))
            self.write(data)
        finally:
            reply.close()


def _describe(matched: _routes.Matched, upstream: str) -> Callable[[], tuple[str | None, Mapping[str, Any] | None]]:
    """The instrumentor's span name and attributes for this call, plus where the provider is."""

    def describe() -> tuple[str | None, Mapping[str, Any] | None]:
        surface = matched.route.surface(matched.streaming)
        attrs: dict[str, Any] = {"rewind.proxy": True}
        parts = urlsplit(upstream)
        if parts.hostname:
            attrs["server.address"] = parts.hostname
            attrs["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        if surface is None:
            return None, attrs
        try:
            name, start = surface.provider.span(surface, None, matched.request)
        except Exception:  # a span attribute is never worth the step
            return None, attrs
        return name, {**start, **attrs}

    return describe


def _ok(proxy: Proxy, seq: int) -> bool:
    for event in reversed(proxy.session.new_events):
        if event.seq == seq:
            return event.ok
    return False


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.1f} ms"
