"""One HTTP exchange as one step: recorded from the provider, or answered from the trace.

Both paths drive the interception core's ``Call`` (``rewind.core.begin_call``), as the
Python instrumentors do: the same canonical request and fingerprint, the same matching,
the same span, the same event. What is the proxy's own is only the HTTP around it:

* recording relays the provider's answer to the agent as it arrives (each SSE piece is
  written on before the next is read) and records what it relayed: a JSON body as the
  step's response (with its status and headers, credentials dropped), a stream as its
  chunks plus the instrumentor's summary, an HTTP error as the error record the
  provider's SDK would write (its class for that status, the body, the bounded response);
* replaying writes the recorded step back in its wire format: the JSON body, the chunks
  in the route's SSE framing, or the recorded error's status, headers and body. A
  divergence is an HTTP error the agent's SDK raises (``DIVERGENCE_STATUS``).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from rewind.data.http_error import bounded_response, keep_headers
from rewind.data.replayed_error import encode_error
from rewind.engine.core import Call
from rewind.errors import DivergenceError, RedactionError, TraceWriteError
from rewind.storage.trace import Event

from . import _sdk_errors
from ._routes import Matched, WireRoute
from ._upstream import HOP_HEADERS, Reply

#: A divergence's status: a 4xx no SDK retries on its own (with ``x-should-retry: false``
#: for the Stainless ones), so the agent fails at the step that diverged.
DIVERGENCE_STATUS = 422
SSE_TYPE = "text/event-stream; charset=utf-8"
JSON_TYPE = "application/json"


class ClientGone(OSError):
    """The agent hung up before its answer was written."""


class Sink(Protocol):
    """Where the agent's answer goes (the HTTP handler)."""

    def start(self, status: int, headers: Sequence[tuple[str, str]], *, length: int | None) -> None: ...

    def write(self, data: bytes) -> None: ...

    def end(self) -> None:
        """The answer is complete: a stream's agent sees its body end (once; later calls do nothing)."""

    def abort(self) -> None:
        """End the answer short: the agent's client sees a body cut off."""


class ProviderHTTPError(Exception):
    """The provider answered with an HTTP error (the live exception a proxied call records)."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


# --------------------------------------------------------------------------- recording


def record(call: Call, matched: Matched, send: Callable[[], Reply], sink: Sink) -> None:
    """Forward the request, relay the answer to ``sink`` and record it as ``call``'s step."""
    with call.activate():
        try:
            reply = send()
        except OSError as exc:
            _record_failure(call, exc)
            answer_json(
                sink, 502, proxy_error(f"rewind proxy: the {matched.route.provider} upstream is unreachable: {exc}")
            )
            return
    try:
        if reply.status >= 400:
            _relay_error(call, matched, reply, sink)
        elif reply.is_sse:
            _relay_stream(call, matched, reply, sink)
        else:
            _relay_json(call, matched, reply, sink)
    finally:
        reply.close()


def _relay_json(call: Call, matched: Matched, reply: Reply, sink: Sink) -> None:
    body = reply.read_all()
    sink.start(reply.status, relayed_headers(reply.headers), length=len(body))
    _write_or_note_gone(sink, body)
    try:
        data: Any = json.loads(body)
    except ValueError:
        data = body.decode("utf-8", "replace")
    extra = {"http": {"status_code": reply.status, "headers": recorded_headers(reply.headers)}}
    request_id = reply.header("x-request-id") or reply.header("request-id")
    if request_id:
        extra["request_id"] = request_id  # type: ignore[assignment]
    _finish(
        lambda: call.succeed(
            data, extra=call.redacted(extra, "extra"), attributes=_attributes(matched, data), converted=True
        ),
        call,
    )


def _relay_stream(call: Call, matched: Matched, reply: Reply, sink: Sink) -> None:
    route = matched.route
    sink.start(reply.status, relayed_headers(reply.headers), length=None)
    pieces, client_gone, failure = _relay_pieces(reply, sink)
    if failure is None and not client_gone:
        # The agent has every event: let it go on before the stream is parsed and its step
        # written, as a whole answer's agent does (its body is sent before its step is recorded).
        _end_or_note_gone(sink)
    chunks, in_band = _stream_events(route, pieces)
    if failure is not None and in_band is None:
        sink.abort()  # the agent sees the body stop short, as it would have without the proxy
    complete = failure is None and not client_gone and in_band is None
    stream = {"chunks": chunks, "truncated": not complete}
    if in_band is not None:
        headers = _as_dict(reply.headers)
        record = _sdk_errors.stream_error(route.provider, in_band, reply.status, headers, reply.url)
        if record is None:
            record = stream_error_record(route.provider, in_band, reply)
        error = ProviderHTTPError(record["message"], reply.status)
        _finish(lambda: call.fail(error, error=record, extra=call.redacted({"stream": stream}, "extra")), call)
        return
    if failure is not None:
        _finish(
            lambda: call.fail(failure, error=encode_error(failure), extra=call.redacted({"stream": stream}, "extra")),
            call,
        )
        return
    surface = route.surface(matched.streaming)
    summary = surface.provider.stream_summary(surface, chunks) if surface is not None else None
    _finish(
        lambda: call.succeed(
            summary,
            extra=call.redacted({"stream": stream}, "extra"),
            attributes=_attributes(matched, summary),
            converted=True,
        ),
        call,
    )


def _relay_pieces(reply: Reply, sink: Sink) -> tuple[list[bytes], bool, Exception | None]:
    """Relay the body to the agent piece by piece, each written as soon as it is read (nothing
    else happens between a read and its write), until it ends, the provider's connection
    breaks (the exception) or the agent hangs up (``True``). Returns the pieces read."""
    pieces: list[bytes] = []
    client_gone = False
    try:
        for piece in reply.pieces():
            pieces.append(piece)
            try:
                sink.write(piece)
            except ClientGone:
                client_gone = True  # the agent stopped reading: what it got is the step
                break
    except (OSError, http.client.HTTPException) as exc:  # the provider's connection broke mid-stream
        return pieces, client_gone, exc
    return pieces, client_gone, None


def _stream_events(route: WireRoute, pieces: Iterable[bytes]) -> tuple[list[Any], Any]:
    """The relayed stream's recorded chunks, and the provider's error event if it sent one (the
    step's error: Anthropic, the Responses API). Fed piece by piece, as the pieces arrived."""
    events = EventSplitter()
    chunks: list[Any] = []
    for piece in pieces:
        for data in events.feed(piece):
            if route.is_error(data):
                return chunks, data  # the SDK raised at the error event: nothing after it reached the agent
            if route.delivers(data):
                chunks.append(route.chunk_in(data))
    return chunks, None


def _relay_error(call: Call, matched: Matched, reply: Reply, sink: Sink) -> None:
    body = reply.read_all()
    sink.start(reply.status, relayed_headers(reply.headers), length=len(body))
    _write_or_note_gone(sink, body)
    text = body.decode("utf-8", "replace")
    provider = matched.route.provider
    record = _sdk_errors.status_error(provider, reply.status, _as_dict(reply.headers), body, reply.url)
    if record is None:
        record = error_record(provider, reply.status, reply.headers, text)
    exc = ProviderHTTPError(record["message"], reply.status)
    _finish(lambda: call.fail(exc, error=record), call)


def _record_failure(call: Call, exc: Exception) -> None:
    _finish(lambda: call.fail(exc, error=encode_error(exc)), call)


def _finish(write: Callable[[], Any], call: Call) -> None:
    """Record the step; the agent already has its answer, so a failure here is only reported."""
    try:
        write()
    except (RedactionError, TraceWriteError):
        raise
    except Exception:  # rewind's bookkeeping failed: never the agent's answer
        call.abandon()


def _write_or_note_gone(sink: Sink, data: bytes) -> None:
    try:
        sink.write(data)
    except ClientGone:
        pass  # the provider answered; the agent hung up: the step is still what happened


def _end_or_note_gone(sink: Sink) -> None:
    try:
        sink.end()
    except ClientGone:
        pass  # as above: the step is what the provider sent


def _attributes(matched: Matched, data: Any) -> dict[str, Any] | None:
    surface = matched.route.surface(matched.streaming)
    if surface is None:
        return None
    try:
        return dict(surface.provider.response_attributes(surface, data))
    except Exception:  # an attribute is never worth a step
        return None


# --------------------------------------------------------------------------- error records

#: The Stainless SDKs' class per status (``_make_status_error``); 5xx not listed is InternalServerError.
_STAINLESS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def error_record(provider: str, status: int, headers: Iterable[tuple[str, str]], text: str) -> dict[str, Any]:
    """The provider's HTTP error as trace data: for openai and anthropic the record their SDK's
    instrumentor writes (so a Python replay raises ``openai.RateLimitError`` …); for the
    others a ``ProviderHTTPError`` record. Every record keeps the bounded response, which
    is what a replay through the proxy answers with."""
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    response = bounded_response(status, _as_dict(headers), text)
    request_id = response["headers"].get("x-request-id") or response["headers"].get("request-id")
    if provider in ("openai", "anthropic"):
        qualname = _STAINLESS.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
        if provider == "anthropic" and status == 529:
            qualname = "OverloadedError"
        message = f"Error code: {status} - {body}"
        attrs: dict[str, Any] = {"message": message, "status_code": status, "request_id": request_id}
        if provider == "openai":
            # openai keeps the body's "error" object, and its fields as attributes.
            inner = body.get("error", body) if isinstance(body, dict) else body
            if isinstance(inner, dict):
                attrs.update({key: inner.get(key) for key in ("code", "param", "type")})
            body = inner
        return _sdk_record(provider, qualname, message, attrs, response=response, body=body)
    record = encode_error(ProviderHTTPError(f"HTTP {status} from {provider}: {text[:500]}", status))
    record["attrs"] = {"status_code": status}
    record["response"] = response
    record["body"] = body
    return record


def stream_error_record(provider: str, data: Any, reply: Reply) -> dict[str, Any]:
    """An error event in a stream as the SDK's instrumentor records it: Anthropic's
    ``APIStatusError`` (status 200, the event as its body), OpenAI's ``APIError`` (the
    event's ``error`` object as its body); for others a ``ProviderHTTPError``."""
    response = bounded_response(reply.status, _as_dict(reply.headers), "")
    request_id = response["headers"].get("x-request-id") or response["headers"].get("request-id")
    if provider == "anthropic":
        message = str(data)
        attrs = {"message": message, "status_code": reply.status, "request_id": request_id}
        return _sdk_record("anthropic", "APIStatusError", message, attrs, response=response, body=data)
    inner = data.get("error") if isinstance(data.get("error"), dict) else data
    message = str(inner.get("message") or data)
    if provider == "openai":
        attrs = {"message": message, **{key: inner.get(key) for key in ("code", "param", "type")}}
        return _sdk_record("openai", "APIError", message, attrs, body=inner)
    record = encode_error(ProviderHTTPError(message, reply.status))
    record["body"] = data
    return record


def _sdk_record(module: str, qualname: str, message: str, attrs: dict[str, Any], **fields: Any) -> dict[str, Any]:
    record = {"type": f"{module}.{qualname}", "module": module, "qualname": qualname, "message": message}
    return {**record, "attrs": attrs, **fields}


def in_band_error(route: WireRoute, record: Mapping[str, Any]) -> Any:
    """The error event a recorded mid-stream error was (``None``: the connection broke)."""
    body = record.get("body")
    if not isinstance(body, dict):
        return None
    if route.provider == "anthropic" and body.get("type") == "error":
        return body
    if route.provider == "openai" and record.get("qualname") == "APIError":
        return {"type": "error", "error": body} if route.named else {"error": body}
    return body if route.is_error(body) else None  # recorded by the proxy: the event itself


def _as_dict(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in headers:
        name = key.lower()
        value = value.strip()  # as HTTP clients read them (http.server pads its Server header)
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def recorded_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Response headers as a trace keeps them: lower-cased, credentials and per-hop ones dropped."""
    return {k: v for k, v in keep_headers(_as_dict(headers)).items() if k not in HOP_HEADERS}


def relayed_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The provider's response headers as the proxy passes them on (it sets the framing itself)."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_HEADERS]


# --------------------------------------------------------------------------- SSE


class EventSplitter:
    """Turns arriving bytes into the JSON payloads of complete server-sent events."""

    def __init__(self) -> None:
        self._buffer = b""
        #: A piece's final ``\r``, held back: its ``\n`` may open the next piece.
        self._carriage = b""

    def feed(self, piece: bytes) -> list[Any]:
        piece = self._carriage + piece
        self._carriage = b"\r" if piece.endswith(b"\r") else b""
        if self._carriage:
            piece = piece[:-1]
        self._buffer += piece.replace(b"\r\n", b"\n")
        out: list[Any] = []
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            lines = block.decode("utf-8", "replace").split("\n")
            data = "\n".join(line[5:].lstrip(" ") for line in lines if line.startswith("data:"))
            if not data or data.startswith("[DONE]"):
                continue
            try:
                out.append(json.loads(data))
            except ValueError:
                out.append(data)
        return out


def sse_frame(chunk: Any, *, named: bool) -> bytes:
    data = chunk if isinstance(chunk, str) else json.dumps(chunk, separators=(",", ":"), ensure_ascii=False)
    kind = chunk.get("type") if named and isinstance(chunk, dict) else None
    return (f"event: {kind}\ndata: {data}\n\n" if isinstance(kind, str) else f"data: {data}\n\n").encode("utf-8")


# --------------------------------------------------------------------------- replaying


def replay(call: Call, matched: Matched, sink: Sink) -> None:
    """Answer the agent from the step the session's matcher chose; a divergence raises."""
    event = call.take_served()  # DivergenceError when nothing matches
    if event.ok:
        call.end_replayed()
        stream = event.get("stream")
        if isinstance(stream, dict) and isinstance(stream.get("chunks"), list):
            _replay_stream(matched, event, stream, sink, complete=not stream.get("truncated"))
        else:
            _replay_json(event, sink)
        return
    try:
        call.raise_recorded_error(event)
    except BaseException:  # the span ended with the recorded error; the agent gets it over HTTP
        pass
    _replay_error(matched, event, sink)


def _replay_json(event: Event, sink: Sink) -> None:
    response = event.response
    body = response.encode("utf-8") if isinstance(response, str) else json.dumps(response).encode("utf-8")
    http = event.get("http")
    headers = dict(http.get("headers") or {}) if isinstance(http, dict) else {}
    status = http.get("status_code") if isinstance(http, dict) else None
    headers.setdefault("content-type", JSON_TYPE)
    request_id = event.get("request_id")
    if isinstance(request_id, str):
        headers.setdefault("x-request-id", request_id)
    sink.start(status if isinstance(status, int) else 200, _replayed(headers), length=len(body))
    sink.write(body)


def _replay_stream(matched: Matched, event: Event, stream: Mapping[str, Any], sink: Sink, *, complete: bool) -> None:
    route = matched.route
    sink.start(200, [("content-type", SSE_TYPE)], length=None)
    for chunk in stream["chunks"]:
        sink.write(sse_frame(route.chunk_out(chunk), named=route.named))
    in_band = in_band_error(route, event.error or {}) if not event.ok else None
    if in_band is not None:
        sink.write(sse_frame(in_band, named=route.named))  # the provider's error event, where it came
        return
    if not complete or not event.ok:
        sink.abort()  # the recorded stream stopped short: so does this one
        return
    if route.done:
        sink.write(b"data: [DONE]\n\n")


def _replay_error(matched: Matched, event: Event, sink: Sink) -> None:
    error = event.error or {}
    stream = event.get("stream")
    if isinstance(stream, dict) and isinstance(stream.get("chunks"), list):
        _replay_stream(matched, event, stream, sink, complete=False)
        return
    response = error.get("response")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        text = response.get("text")
        body = text.encode("utf-8") if isinstance(text, str) else b""
        headers = dict(response.get("headers") or {})
        sink.start(response["status_code"], _replayed(headers), length=len(body))
        sink.write(body)
        return
    # No HTTP answer was recorded (the provider was unreachable, a timeout): say what was.
    message = f"rewind proxy: step {event.seq} recorded {error.get('type', 'an error')}: {error.get('message', '')}"
    answer_json(sink, 502, proxy_error(message))


def _replayed(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in headers.items() if k.lower() not in HOP_HEADERS]


# --------------------------------------------------------------------------- the proxy's own answers


def divergence_body(error: DivergenceError) -> dict[str, Any]:
    """One JSON body every provider's SDK reads an error message from (OpenAI's and Gemini's
    ``error.message``, Anthropic's ``type: error``, Cohere's top-level ``message``)."""
    message = str(error)
    detail = {
        "type": "rewind_divergence",
        "code": "rewind_divergence",
        "status": "FAILED_PRECONDITION",
        "message": message,
        "step": error.step,
        "reason": error.reason,
        "hint": error.hint,
    }
    return {"type": "error", "message": message, "error": detail}


def proxy_error(message: str) -> dict[str, Any]:
    return {"type": "error", "message": message, "error": {"type": "rewind_proxy_error", "message": message}}


def answer_json(sink: Sink, status: int, payload: Any, extra: Sequence[tuple[str, str]] = ()) -> None:
    body = json.dumps(payload).encode("utf-8")
    sink.start(status, [("content-type", JSON_TYPE), ("x-should-retry", "false"), *extra], length=len(body))
    try:
        sink.write(body)
    except ClientGone:
        pass
