"""HTTP servers on loopback that misbehave the way a hostile or broken backend would.

``HostileServer(behaviour)`` serves every GET with one behaviour:

* ``endless``: an empty page of spans with a new ``next_cursor``, forever;
* ``trickle``: a 200 answer whose body comes one byte per second;
* ``redirect``: a 302 to a host that is not the one asked (``203.0.113.7``, TEST-NET-3: never
  contacted by a correct client; run the client under the network guard so a wrong one
  is stopped before any packet);
* ``crowded``: one page holding ``spans`` spans and a cursor to more.

It counts the requests it answered (``requests``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OFF_HOST = "http://203.0.113.7:6006"


def phoenix_span(number: int) -> dict[str, Any]:
    return {
        "name": "ChatCompletion",
        "context": {"trace_id": f"{7:032x}", "span_id": f"{number + 1:016x}"},
        "parent_id": None,
        "span_kind": "LLM",
        "start_time": "2026-01-01T00:00:00+00:00",
        "end_time": "2026-01-01T00:00:01+00:00",
        "status_code": "OK",
        "attributes": {"openinference": {"span": {"kind": "LLM"}}},
        "events": [],
    }


class HostileServer:
    def __init__(self, behaviour: str, *, spans: int = 5000) -> None:
        self.behaviour = behaviour
        self.spans = spans
        self.requests = 0
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.requests += 1
                server.answer(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        if self.behaviour == "redirect":
            handler.send_response(302)
            handler.send_header("Location", f"{OFF_HOST}/v1/projects/default/spans")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if self.behaviour == "trickle":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "1000000")
            handler.end_headers()
            for _ in range(600):
                if self._stop.is_set():
                    return
                try:
                    handler.wfile.write(b" ")
                    handler.wfile.flush()
                except OSError:
                    return
                time.sleep(1.0)
            return
        if self.behaviour == "endless":
            page: dict[str, Any] = {"data": [], "next_cursor": f"cursor-{self.requests}"}
        else:
            page = {"data": [phoenix_span(n) for n in range(self.spans)], "next_cursor": f"more-{self.requests}"}
        body = json.dumps(page).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            handler.wfile.write(body)
        except OSError:
            pass
