"""The stub model server under a flood: what it keeps is bounded, a chunked body is read in
linear time, and a body past its limit is refused with a 413."""

from __future__ import annotations

import http.client
import json
import time
import tracemalloc

from rewind.stub_server import StubServer
from rewind.stub_server._http import MAX_BODY

PAD = "x" * (1 << 20)


def _post(conn: http.client.HTTPConnection, body: bytes, headers: dict[str, str] | None = None) -> int:
    conn.request(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json", **(headers or {})}
    )
    answer = conn.getresponse()
    answer.read()
    return answer.status


def test_the_request_log_keeps_the_newest_within_its_bounds() -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": PAD}]}).encode()
    tracemalloc.start()
    try:
        with StubServer() as server:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            for _ in range(200):  # 200 MB of requests
                assert _post(conn, body) == 200
            conn.close()
            kept, _ = tracemalloc.get_traced_memory()
            assert server.request_count == 200
            assert 0 < len(server.requests) < 200
            assert server.requests[-1].body["messages"][0]["content"] == PAD
    finally:
        tracemalloc.stop()
    assert kept < 100 * 1024 * 1024, f"{kept / 1e6:.0f} MB kept"  # every body was kept: 200+ MB


def test_a_chunked_body_is_read_in_linear_time() -> None:
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * (16 << 20)}]}).encode()
    chunks = (payload[i : i + 1024] for i in range(0, len(payload), 1024))
    with StubServer() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        started = time.monotonic()
        conn.request("POST", "/v1/chat/completions", body=chunks, encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})  # fmt: skip
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 200
        # 16,000 chunks: rebuilding the body per chunk copied ~128 GB; appending copies it once.
        assert time.monotonic() - started < 30
        assert len(server.requests[-1].body["messages"][0]["content"]) == 16 << 20


def test_a_body_over_the_limit_is_refused_unread() -> None:
    with StubServer() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(MAX_BODY + 1))
        conn.endheaders()
        answer = conn.getresponse()
        assert answer.status == 413
        assert "Request body over" in answer.read().decode()
