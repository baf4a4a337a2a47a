"""Real provider traffic as data: cassettes recorded by other projects, played on loopback.

A cassette (VCR-style YAML, see ``tests/fixtures/real_traffic/README.md``) holds request and
response pairs recorded against the real APIs. ``interactions()`` reads each pair into an
``Interaction``; ``Player`` serves one of them from ``127.0.0.1`` to whatever asks: the
recorded status, headers and body (gzip-encoded when the client accepts it, as the APIs do;
server-sent events as recorded), so the real SDK parses real provider bytes.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real_traffic"

#: Hosts whose traffic an SDK we instrument speaks, and which SDK speaks it.
SDK_OF_HOST = {
    "api.openai.com": "openai",
    "openrouter.ai": "openai",
    "api.deepseek.com": "openai",
    "api.cerebras.ai": "openai",
    "api.z.ai": "openai",
    "api.groq.com": "groq",
    "api.anthropic.com": "anthropic",
    "api.mistral.ai": "mistral",
    "api.cohere.com": "cohere",
    "bedrock-runtime.us-east-1.amazonaws.com": "bedrock",
    "generativelanguage.googleapis.com": "gemini",
}
#: Endpoints (by the end of their path) the harness knows how to call.
ENDPOINTS = (
    "/chat/completions",
    "/responses",
    "/embeddings",
    "/messages",
    "/v2/chat",
    "/converse",
    "/converse-stream",
    ":generateContent",  # Gemini API: /v1beta/models/<model>:<method>
    ":streamGenerateContent",
    ":batchEmbedContents",
)
#: Headers that describe one transfer of the body, not the response: the player sets its own.
_TRANSFER = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})


@dataclass(frozen=True)
class Interaction:
    """One recorded request and response."""

    source: str  # the cassette, relative to FIXTURES
    index: int  # its position in the cassette
    host: str
    path: str
    request: dict[str, Any]  # the JSON body the client sent
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def sdk(self) -> str:
        return SDK_OF_HOST[self.host]

    @property
    def endpoint(self) -> str:
        return next(e for e in ENDPOINTS if self.path.endswith(e))

    @property
    def streamed(self) -> bool:
        return any(k == "content-type" and ("event-stream" in v or "eventstream" in v) for k, v in self.headers)

    @property
    def id(self) -> str:
        return f"{self.source}#{self.index}"


def _body(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode("utf-8")
    raw = (response.get("body") or {}).get("string", b"")
    return raw if isinstance(raw, bytes) else str(raw).encode("utf-8")


def _request_body(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON the client sent: decoded by the recorder (``parsed_body``) or kept as text."""
    if "parsed_body" in request:
        return request["parsed_body"]  # type: ignore[no-any-return]
    try:
        body = json.loads(request.get("body") or "")
    except (TypeError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _headers(recorded: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    out = []
    for name, values in (recorded or {}).items():
        if name.lower() in _TRANSFER:
            continue
        for value in values if isinstance(values, list) else [values]:
            out.append((name.lower(), str(value)))
    return tuple(out)


def interactions(root: Path = FIXTURES) -> Iterator[Interaction]:
    """Every interaction under ``root`` that an instrumented SDK speaks, in a stable order."""
    for path in sorted(root.rglob("*.yaml")):
        cassette = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for index, pair in enumerate(cassette.get("interactions") or []):
            request, response = pair.get("request"), pair.get("response")
            if not request or not response or "status" not in response:
                continue
            body = _request_body(request)
            if body is None:
                continue
            url = urlsplit(request["uri"])
            if url.hostname not in SDK_OF_HOST or not url.path.endswith(ENDPOINTS):
                continue
            yield Interaction(
                source=str(path.relative_to(root)),
                index=index,
                host=url.hostname,
                path=url.path,
                request=body,
                status=int(response["status"]["code"]),
                headers=_headers(response.get("headers")),
                body=_body(response),
            )


class Player:
    """A loopback HTTP server answering every request with one recorded response."""

    def __init__(self, interaction: Interaction) -> None:
        self.interaction = interaction
        self.requests: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> Player:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        player = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                player.requests.append((self.command, self.path))
                recorded = player.interaction
                body = recorded.body
                gzipped = not recorded.streamed and "gzip" in (self.headers.get("accept-encoding") or "")
                if gzipped:
                    body = gzip.compress(body, mtime=0)
                self.send_response(recorded.status)
                for name, value in recorded.headers:
                    self.send_header(name, value)
                if gzipped:
                    self.send_header("content-encoding", "gzip")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass  # quiet

        return Handler
