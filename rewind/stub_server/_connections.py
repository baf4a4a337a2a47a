"""A threading HTTP server that can cut its open connections: "stopped" means unreachable.

``shutdown()`` stops accepting, but an idle keep-alive connection would go on being served
by its handler thread. The stub server and ``rewind proxy`` both stop this way.
"""

from __future__ import annotations

import socket
import threading
from http.server import ThreadingHTTPServer
from typing import Any


class ConnectionTrackingServer(ThreadingHTTPServer):
    daemon_threads = True
    # Concurrent agents open many connections at once; the default backlog of 5 refuses some.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Shut every open connection down, idle keep-alive ones included."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
