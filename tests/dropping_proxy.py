"""A loopback proxy that relays a server's answers but drops the connection partway through each body.

What a provider's connection reset looks like to a client: the status line and headers
arrive, then part of the body (chunked framing, no terminating chunk), then the socket
closes. The what-if tests use it to record the error each SDK raises LIVE for a dropped
stream, to compare with the ``connection_reset`` fault ``rewind mutate`` injects.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse

_HOP_BY_HOP = ("content-length", "transfer-encoding", "connection")


class DroppingProxy:
    """``with DroppingProxy(stub.url) as proxy:`` point the SDK at ``proxy.url``; bodies stop at ``keep``."""

    def __init__(self, target: str, keep: float = 0.6) -> None:
        self._target = urllib.parse.urlsplit(target)
        self._keep = keep
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dropping-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(5)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                try:
                    self._relay(conn)
                except OSError:
                    pass  # the client gave up first

    def _relay(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        reader = conn.makefile("rb")
        method, path, _ = reader.readline().decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while line := reader.readline().decode("latin-1").strip():
            name, _, value = line.partition(":")
            headers[name.strip()] = value.strip()
        length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
        body = reader.read(length) if length else b""
        upstream = http.client.HTTPConnection(self._target.hostname or "127.0.0.1", self._target.port, timeout=10)
        forwarded = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(method, path, body=body, headers=forwarded)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        head = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        head += [f"{k}: {v}" for k, v in answer.getheaders() if k.lower() not in _HOP_BY_HOP]
        head += ["Transfer-Encoding: chunked", "Connection: close", "", ""]
        conn.sendall("\r\n".join(head).encode("latin-1"))
        kept = data[: max(1, int(len(data) * self._keep))]
        conn.sendall(b"%x\r\n%s\r\n" % (len(kept), kept))
        conn.shutdown(socket.SHUT_RDWR)  # no terminating chunk: the body stops short
