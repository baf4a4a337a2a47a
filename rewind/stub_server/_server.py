"""The public :class:`StubServer`: lifecycle, addresses, the request log and test controls."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

from ._brain import Conversation
from ._http import StubRequest, _HTTPServer
from ._script import ErrorSpec, ScriptTurn, parse_turn

#: How many of the newest requests ``StubServer.requests`` keeps, and their bodies' total bytes.
LOGGED_REQUESTS = 1000
LOGGED_BYTES = 64 * 1024 * 1024

ScriptMode = Literal["queue", "conversation"]
_log = logging.getLogger("rewind.stub_server")

# --------------------------------------------------------------------------- public server


class StubServer:
    """A deterministic model server on loopback speaking several providers' wire formats.

    ``script`` is a list of turns for the generation endpoints. With
    ``script_mode="queue"`` (the default) they are used up in order, whichever
    provider asks, and the default brain answers once they run out; ``restart()``
    queues them again. With ``script_mode="conversation"`` nothing is used up:
    a request gets the turn whose index is the number of model answers already
    in its conversation, so every conversation (each run of an agent, each of
    several parallel agents) replays the script from its first turn. See
    ``docs/stub-server.md`` for the turn format.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        script: Sequence[Mapping[str, Any] | str] | None = None,
        script_mode: ScriptMode = "queue",
        latency: float = 0.0,
        latency_jitter: float = 0.0,
        seed: int = 0,
        stream_delay: float = 0.0,
        verbose: bool = False,
    ) -> None:
        self.host = host
        self._port = port
        self.latency = float(latency)
        self.latency_jitter = float(latency_jitter)
        self.seed = seed
        self.stream_delay = float(stream_delay)
        self.verbose = verbose
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        # The newest requests only (LOGGED_REQUESTS, LOGGED_BYTES of bodies): a long-running
        # server must not keep every prompt it was ever sent.
        self._requests: deque[tuple[StubRequest, int]] = deque()
        self._logged_bytes = 0
        self._received = 0
        self._counters: dict[str, int] = {}
        if script_mode not in ("queue", "conversation"):
            raise ValueError(f"script_mode must be 'queue' or 'conversation', not {script_mode!r}")
        self.script_mode: ScriptMode = script_mode
        # Every turn ever given, so restart() can queue them again.
        self._turns: list[ScriptTurn] = [parse_turn(t) for t in script or ()]
        self._script: deque[ScriptTurn] = deque(self._turns)
        self._failures: deque[ErrorSpec] = deque()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> StubServer:
        """Bind and serve on a background daemon thread. Returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            # Binding here rather than in the thread surfaces "port in use" to the caller
            # and makes .url valid as soon as start() returns.
            httpd = _HTTPServer((self.host, self._port), self)
            self._port = int(httpd.server_address[1])
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"rewind-stub:{self._port}",
                daemon=True,
            )
            self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every socket; later connections are refused."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._httpd is not None

    # ----------------------------------------------------------------- addresses

    @property
    def port(self) -> int:
        if self._port == 0:
            raise RuntimeError("StubServer has no port yet; call start() first")
        return self._port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def mistral_base_url(self) -> str:
        """For ``Mistral(server_url=...)``; the SDK appends ``/v1/...`` itself."""
        return self.url + "/mistral"

    @property
    def cohere_base_url(self) -> str:
        """For ``cohere.ClientV2(base_url=...)`` (or ``CO_API_URL``); v1 and v2 paths both live here."""
        return self.url

    @property
    def bedrock_endpoint_url(self) -> str:
        """For ``boto3.client("bedrock-runtime", endpoint_url=...)``; any credentials are accepted."""
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """For ``genai.Client(http_options={"base_url": ...})`` (or ``GOOGLE_GEMINI_BASE_URL``)."""
        return self.url

    # ----------------------------------------------------------------- observation

    @property
    def requests(self) -> list[StubRequest]:
        """A snapshot of the requests received so far, oldest first: the newest
        ``LOGGED_REQUESTS`` (1,000), whose bodies add up to at most ``LOGGED_BYTES`` (64 MB)."""
        with self._lock:
            return [request for request, _ in self._requests]

    @property
    def request_count(self) -> int:
        """Every request received so far (``requests`` keeps only the newest)."""
        with self._lock:
            return self._received

    @property
    def script_remaining(self) -> int:
        """Turns not used yet (queue mode); in conversation mode, the script's length."""
        with self._lock:
            return len(self._turns) if self.script_mode == "conversation" else len(self._script)

    # ----------------------------------------------------------------- control

    def add_script(self, *turns: Mapping[str, Any] | str) -> None:
        """Queue more scripted turns after any still pending."""
        parsed = [parse_turn(t) for t in turns]
        with self._lock:
            self._turns.extend(parsed)
            self._script.extend(parsed)

    def fail_next(
        self,
        status: int = 429,
        n: int = 1,
        body: Mapping[str, Any] | str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next ``n`` requests (any endpoint) with an HTTP error.

        The body defaults to the provider's own error shape for ``status``; pass
        ``body`` to send something else verbatim. Injected failures do not use up
        script turns, so an SDK retry gets the turn the failed attempt would have.
        """
        spec = ErrorSpec(
            status=status,
            headers=tuple((str(k), str(v)) for k, v in (headers or {}).items()),
            body=None if body is None else (dict(body) if isinstance(body, Mapping) else body),
        )
        with self._lock:
            self._failures.extend([spec] * n)

    def reset(self) -> None:
        """Forget requests, pending script turns and failures, and restart id counters."""
        with self._lock:
            self._forget_requests()
            self._counters.clear()
            self._script.clear()
            self._turns.clear()
            self._failures.clear()
            self._rng = random.Random(self.seed)

    def restart(self) -> None:
        """Back to the state right after start: the whole script queued again from its
        first turn, no pending failures, an empty request log, ids counting from 1.

        ``POST /_stub/restart`` does the same over HTTP, for a server run from the CLI.
        """
        with self._lock:
            self._forget_requests()
            self._counters.clear()
            self._script = deque(self._turns)
            self._failures.clear()
            self._rng = random.Random(self.seed)

    # ----------------------------------------------------------------- handler hooks

    def _forget_requests(self) -> None:
        self._requests.clear()
        self._logged_bytes = 0
        self._received = 0

    def _record(self, request: StubRequest, size: int = 0) -> int:
        """Log ``request`` (its body ``size`` bytes); its number, counting every request."""
        with self._lock:
            self._requests.append((request, size))
            self._logged_bytes += size
            self._received += 1
            while len(self._requests) > 1 and (
                len(self._requests) > LOGGED_REQUESTS or self._logged_bytes > LOGGED_BYTES
            ):
                self._logged_bytes -= self._requests.popleft()[1]
            return self._received

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            value = self._counters.get(prefix, 0) + 1
            self._counters[prefix] = value
        return f"{prefix}{value}"

    def _pop_turn(self, conv: Conversation) -> ScriptTurn | None:
        with self._lock:
            if self.script_mode == "conversation":
                index = conv.model_turns()
                return self._turns[index].pick(self._rng) if index < len(self._turns) else None
            if not self._script:
                return None
            turn = self._script.popleft()
            if not self._script:
                # Not silent: a second run of an agent would otherwise get default answers unnoticed.
                _log.info("script used up after %d turns; the default brain answers from now on", len(self._turns))
            return turn.pick(self._rng)

    def _pop_failure(self) -> ErrorSpec | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _sleep_latency(self) -> None:
        if self.latency <= 0 and self.latency_jitter <= 0:
            return
        with self._lock:
            jitter = self._rng.uniform(0, self.latency_jitter) if self.latency_jitter > 0 else 0.0
        time.sleep(max(0.0, self.latency + jitter))

    def __repr__(self) -> str:
        where = self.url if self._port else f"http://{self.host}:<unbound>"
        return f"StubServer({where}, running={self.running})"
