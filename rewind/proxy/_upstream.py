"""Forwarding one request to the real provider, and reading its answer as it arrives.

Plain ``http.client`` (no new dependency): the proxy asks for an uncompressed body
(``accept-encoding: identity``) so it can record what it relays, and reads a stream with
``read1``, which hands over whatever bytes have arrived, so each server-sent event
reaches the agent as soon as the provider sends it.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from rewind.errors import RewindError

#: Headers that describe one hop, not the message (RFC 9110 §7.6.1), plus the ones the
#: proxy sets itself (the body's length and encoding, the upstream's host).
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",  # answered by the proxy itself (curl asks for 100-continue on big bodies)
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)


class UpstreamConfigError(RewindError, ValueError):
    """An ``--upstream`` that is not ``provider=URL`` with an http(s) URL."""


def parse_upstreams(specs: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """``["openai=http://…", …]`` (or a mapping) as ``{provider: base URL}``, checked."""
    from ._routes import DEFAULT_UPSTREAMS

    pairs: list[tuple[str, str]] = []
    if isinstance(specs, Mapping):
        pairs = [(str(k), str(v)) for k, v in specs.items()]
    else:
        for spec in specs:
            provider, sep, url = spec.partition("=")
            if not sep:
                raise UpstreamConfigError(
                    f"--upstream takes provider=URL (e.g. openai=http://127.0.0.1:8765/v1), not {spec!r}"
                )
            pairs.append((provider.strip(), url.strip()))
    out: dict[str, str] = {}
    for provider, url in pairs:
        if provider not in DEFAULT_UPSTREAMS:
            known = ", ".join(sorted(DEFAULT_UPSTREAMS))
            raise UpstreamConfigError(f"unknown provider {provider!r} in --upstream; the proxy knows {known}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamConfigError(
                f"--upstream {provider}={url}: the URL must start with http:// or https:// and name a host"
            )
        out[provider] = url.rstrip("/")
    return out


class Pool:
    """Idle keep-alive connections to the providers, reused as an SDK's own client does: a
    new TCP (and TLS) connection per call would add its handshake to every step."""

    def __init__(self, *, per_host: int = 16, timeout: float = 600.0) -> None:
        self._idle: dict[tuple[str, str, int | None], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._per_host = per_host
        self._timeout = timeout
        self._context: ssl.SSLContext | None = None

    def take(self, scheme: str, host: str, port: int | None) -> tuple[http.client.HTTPConnection, bool]:
        """A connection to the host, and whether it was used before (it may have gone stale)."""
        with self._lock:
            idle = self._idle.get((scheme, host, port))
            if idle:
                return idle.pop(), True
            if scheme == "https" and self._context is None:
                self._context = ssl.create_default_context()
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self._timeout, context=self._context), False
        return http.client.HTTPConnection(host, port, timeout=self._timeout), False

    def give_back(self, scheme: str, host: str, port: int | None, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault((scheme, host, port), [])
            if len(idle) < self._per_host:
                idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


@dataclass
class Reply:
    """The provider's answer: its status and headers now, its body as it arrives."""

    status: int
    headers: list[tuple[str, str]]
    response: http.client.HTTPResponse
    connection: http.client.HTTPConnection
    #: The URL the request went to (error records name it, as an SDK's request does).
    url: str = ""
    pool: Pool | None = None
    address: tuple[str, str, int | None] = ("http", "", None)

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return None

    @property
    def is_sse(self) -> bool:
        return (self.header("content-type") or "").lower().startswith("text/event-stream")

    def read_all(self) -> bytes:
        return self.response.read()

    def pieces(self) -> Iterator[bytes]:
        """The body in the pieces it arrives in."""
        while True:
            piece = self.response.read1(65536)
            if not piece:
                return
            yield piece

    def close(self) -> None:
        """Back to the pool when the answer was read to its end and the server keeps the connection."""
        response = self.response
        if self.pool is not None and response.isclosed() and not response.will_close:
            self.pool.give_back(*self.address, self.connection)
        else:
            self.connection.close()


#: What a keep-alive connection the server already closed raises on reuse (nothing was answered).
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def forward(
    pool: Pool,
    base_url: str,
    method: str,
    path_and_query: str,
    headers: list[tuple[str, str]],
    body: bytes,
) -> Reply:
    """Send the agent's request to ``base_url`` + ``path_and_query``; raises ``OSError`` if unreachable."""
    parts = urlsplit(base_url)
    address = (parts.scheme, parts.hostname or "", parts.port)
    target = parts.path.rstrip("/") + path_and_query
    sent = [(k, v) for k, v in headers if k.lower() not in HOP_HEADERS]
    sent.append(("Accept-Encoding", "identity"))
    while True:
        connection, reused = pool.take(*address)
        try:
            connection.putrequest(method, target, skip_accept_encoding=True)
            for key, value in sent:
                connection.putheader(key, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
        except _STALE:
            connection.close()
            if reused:
                continue  # the server had closed that idle connection: send on a fresh one
            raise
        except BaseException:
            connection.close()
            raise
        break
    url = f"{parts.scheme}://{parts.netloc}{target.split('?', 1)[0]}"  # a ?key= is never recorded
    return Reply(response.status, list(response.getheaders()), response, connection, url, pool, address)
