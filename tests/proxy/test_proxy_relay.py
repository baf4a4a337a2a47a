"""How ``rewind proxy`` relays a recorded stream: each event reaches the agent before the
provider sends the next, and the agent sees the stream end before its step is written.

Both are checked by order of arrival, never by timing: the provider here sends an event
only once the agent has read the one before (a proxy that held events back would leave
both waiting), and the step's redactor holds the recording until the agent has read the
whole stream (a proxy that ended the body after recording would leave both waiting).
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewind.proxy import Proxy
from rewind.storage.trace import Trace

#: Long enough for any loaded machine; only a proxy that holds bytes back ever waits this long.
PATIENCE = 20.0
REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
CONTENTS = ["", "one", " two", " three"]


def _event(index: int, content: str) -> bytes:
    chunk = {
        "id": "chatcmpl-relay",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    if index == 0:
        chunk["choices"][0]["delta"]["role"] = "assistant"
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


class _PacedUpstream(ThreadingHTTPServer):
    """An OpenAI-style provider that streams one event per ``allow()``, each its own write."""

    daemon_threads = True

    def __init__(self) -> None:
        self.turns = threading.Semaphore(0)
        self.timed_out = False
        super().__init__(("127.0.0.1", 0), _PacedHandler)

    def allow(self) -> None:
        self.turns.release()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _PacedHandler(BaseHTTPRequestHandler):
    server: _PacedUpstream
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, content in enumerate([*CONTENTS, None]):
            if not self.server.turns.acquire(timeout=PATIENCE):
                self.server.timed_out = True
                return
            data = b"data: [DONE]\n\n" if content is None else _event(index, content)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@pytest.fixture
def upstream() -> Iterator[_PacedUpstream]:
    server = _PacedUpstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _post_stream(proxy: Proxy) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=PATIENCE)
    body = json.dumps(REQUEST)
    connection.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    return connection.getresponse()


def _read_event(response: http.client.HTTPResponse) -> bytes:
    """One server-sent event, read as the agent's SDK reads it: line by line to the blank line."""
    lines = []
    while True:
        line = response.readline()
        assert line, "the stream ended early"
        if line == b"\n":
            return b"".join(lines) + line
        lines.append(line)


def test_each_event_reaches_the_agent_before_the_provider_sends_the_next(
    upstream: _PacedUpstream, tmp_path: Path
) -> None:
    trace = tmp_path / "paced.rewind"
    with Proxy(str(trace), upstreams={"openai": upstream.base_url}) as proxy:
        upstream.allow()  # the first event
        response = _post_stream(proxy)
        assert response.status == 200 and response.getheader("transfer-encoding") == "chunked"
        for index, content in enumerate(CONTENTS):
            assert _read_event(response) == _event(index, content)  # arrived while the provider waits
            upstream.allow()  # only now does the provider send the next one
        assert _read_event(response) == b"data: [DONE]\n\n"
        upstream.allow()  # the end of the body
        assert response.read() == b""
    assert not upstream.timed_out
    [step] = Trace.open(trace).events
    assert step.ok and [c["choices"][0]["delta"]["content"] for c in step.get("stream")["chunks"]] == CONTENTS
    assert step.response["choices"][0]["message"]["content"] == "one two three"


def test_the_agent_sees_the_stream_end_before_its_step_is_written(upstream: _PacedUpstream, tmp_path: Path) -> None:
    trace = tmp_path / "ended.rewind"
    read_whole = threading.Event()
    order: list[str] = []

    def redact(payload: Any) -> Any:
        if isinstance(payload, dict) and isinstance(payload.get("stream"), dict):  # the step's chunks: being recorded
            read_whole.wait(timeout=PATIENCE)
            order.append("recorded")
        return payload

    for _ in range(len(CONTENTS) + 2):  # every event and the body's end, unpaced
        upstream.allow()
    with Proxy(str(trace), upstreams={"openai": upstream.base_url}, redact=redact) as proxy:
        response = _post_stream(proxy)
        body = response.read()  # returns only once the proxy wrote the stream's last chunk
        order.append("agent read the whole stream")
        read_whole.set()
    assert body == b"".join(_event(i, c) for i, c in enumerate(CONTENTS)) + b"data: [DONE]\n\n"
    assert order == ["agent read the whole stream", "recorded"]
    [step] = Trace.open(trace).events
    assert step.ok and not step.get("stream")["truncated"]
