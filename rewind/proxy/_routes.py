"""Which provider call an HTTP request is, and how its wire shapes map to a step.

A request is first given to a provider the way the stub server tells its wire formats
apart (``rewind.stub_server``'s ``WireFormat.owns``/``local_path``: one table of paths
and SDK headers for both), then matched against this module's routes. A route names the
step exactly as that provider's Python instrumentor does (``openai.chat.completions.create``,
``mistral.chat.stream`` …), turns the wire body into the same request the instrumentor
records (the SDK's keyword arguments are the body's fields, minus what picks the method),
and reuses the instrumentor's ``Surface`` for span names, attributes and stream summaries.
So a step recorded through the proxy and one recorded by the Python SDK have one identity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rewind import stub_server  # noqa: F401  (registers the wire formats the routing below reads)
from rewind.stub_server._http import WireFormat, formats

#: Where each provider's API lives when no ``--upstream`` says otherwise.
DEFAULT_UPSTREAMS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "mistral": "https://api.mistral.ai",
    "cohere": "https://api.cohere.com",
    "gemini": "https://generativelanguage.googleapis.com",
}

#: The part of the proxy's path that is the proxy's own, not the provider's, per provider:
#: an OpenAI client's base URL ends in ``/v1`` (its upstream base does too); a Mistral
#: client's is ``<proxy>/mistral`` (its SDK reads no base-URL variable and its paths are
#: OpenAI's, so the prefix tells them apart, as on the stub server).
_PROXY_PREFIX = {"openai": "/v1", "mistral": "/mistral"}

Identity = Callable[[Mapping[str, Any], "re.Match[str]"], dict[str, Any]]


@dataclass(frozen=True)
class WireRoute:
    """One provider endpoint the proxy records and replays."""

    provider: str
    method: str
    pattern: re.Pattern[str]
    #: The step's name for a plain (JSON) answer and for a streamed one.
    name: str
    stream_name: str
    #: The request the Python instrumentor records for the same call.
    identity: Identity
    #: Whether the request asks for a stream (a body flag, or the path for Gemini).
    streams: Callable[[Mapping[str, Any], re.Match[str]], bool]
    #: SSE framing: ``event: <type>`` lines, and a closing ``data: [DONE]``.
    named: bool = False
    done: bool = False
    #: A stream chunk as the instrumentor records it, from the event's JSON, and back.
    chunk_in: Callable[[Any], Any] = lambda data: data
    chunk_out: Callable[[Any], Any] = lambda chunk: chunk
    #: Event types the SDK reads past without handing them to the agent (Anthropic's ``ping``):
    #: relayed live, never recorded, so the step is the one the instrumentor writes.
    unseen: frozenset[str] = frozenset()

    def is_error(self, data: Any) -> bool:
        """An error event: the SDK raises there (OpenAI: any payload with an ``error``;
        Anthropic: an event of type ``error``; Mistral: an ``error`` object)."""
        if not isinstance(data, dict):
            return False
        if self.provider == "openai":
            return bool(data.get("error"))
        if self.provider == "mistral":
            return data.get("object") == "error"
        return self.provider == "anthropic" and data.get("type") == "error"

    def delivers(self, data: Any) -> bool:
        return not (self.unseen and isinstance(data, dict) and data.get("type") in self.unseen)

    def step_name(self, streaming: bool) -> str:
        return self.stream_name if streaming else self.name

    def surface(self, streaming: bool) -> Any:
        """The instrumentor's ``Surface`` of this call (span, attributes, stream summary)."""
        return _surface(self.provider, self.step_name(streaming))


@dataclass(frozen=True)
class Matched:
    """A request resolved to its route: what the proxy needs to record or replay it."""

    route: WireRoute
    request: dict[str, Any]
    streaming: bool
    #: The path to append to the provider's upstream base URL (query string apart).
    upstream_path: str

    @property
    def name(self) -> str:
        return self.route.step_name(self.streaming)


# --------------------------------------------------------------------------- identities


def _body(body: Mapping[str, Any], match: re.Match[str]) -> dict[str, Any]:
    """Stainless SDKs (openai, anthropic) send their keyword arguments as the body."""
    return dict(body)


def _without_stream(body: Mapping[str, Any], match: re.Match[str]) -> dict[str, Any]:
    """Speakeasy/Fern SDKs pick ``stream`` by method (``chat.stream``), so it is not an argument."""
    return {key: value for key, value in body.items() if key != "stream"}


def _gemini(body: Mapping[str, Any], match: re.Match[str]) -> dict[str, Any]:
    """google-genai's ``generate_content(model=, contents=, config=)``: the model is in the path."""
    request: dict[str, Any] = {"model": match.group("model")}
    if "contents" in body:
        request["contents"] = body["contents"]
    rest = {key: value for key, value in body.items() if key != "contents"}
    if rest:
        request["config"] = rest
    return request


def _flag(body: Mapping[str, Any], match: re.Match[str]) -> bool:
    return body.get("stream") is True


def _never(body: Mapping[str, Any], match: re.Match[str]) -> bool:
    return False


def _gemini_streams(body: Mapping[str, Any], match: re.Match[str]) -> bool:
    return match.group("method") == "streamGenerateContent"


def _wrap_data(data: Any) -> Any:
    return {"data": data}  # mistralai's CompletionEvent around each chunk


def _unwrap_data(chunk: Any) -> Any:
    return chunk.get("data") if isinstance(chunk, dict) and "data" in chunk else chunk


def _gemini_chunk_out(chunk: Any) -> Any:
    # google-genai's dump keeps the HTTP response it saw; the wire chunk never carried it.
    if isinstance(chunk, dict) and "sdkHttpResponse" in chunk:
        return {key: value for key, value in chunk.items() if key != "sdkHttpResponse"}
    return chunk


def _route(provider: str, method: str, pattern: str, name: str, **fields: Any) -> WireRoute:
    fields.setdefault("stream_name", name)
    fields.setdefault("identity", _body)
    fields.setdefault("streams", _never)
    return WireRoute(provider, method, re.compile(pattern), name, **fields)


ROUTES: tuple[WireRoute, ...] = (
    _route("openai", "POST", r"/chat/completions", "openai.chat.completions.create", streams=_flag, done=True),
    _route("openai", "POST", r"/responses", "openai.responses.create", streams=_flag, named=True),
    _route("openai", "POST", r"/embeddings", "openai.embeddings.create"),
    _route(
        "anthropic",
        "POST",
        r"/messages",
        "anthropic.messages.create",
        streams=_flag,
        named=True,
        unseen=frozenset({"ping"}),
    ),
    _route(
        "mistral",
        "POST",
        r"/chat/completions",
        "mistral.chat.complete",
        stream_name="mistral.chat.stream",
        identity=_without_stream,
        streams=_flag,
        done=True,
        chunk_in=_wrap_data,
        chunk_out=_unwrap_data,
    ),
    _route("mistral", "POST", r"/embeddings", "mistral.embeddings.create"),
    _route(
        "cohere",
        "POST",
        r"/v2/chat",
        "cohere.v2.chat",
        stream_name="cohere.v2.chat_stream",
        identity=_without_stream,
        streams=_flag,
        named=True,
    ),
    _route("cohere", "POST", r"/v2/embed", "cohere.v2.embed"),
    _route("cohere", "POST", r"/v2/rerank", "cohere.v2.rerank"),
    _route(
        "gemini",
        "POST",
        r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)",
        "gemini.models.generate_content",
        stream_name="gemini.models.generate_content_stream",
        identity=_gemini,
        streams=_gemini_streams,
        chunk_out=_gemini_chunk_out,
    ),
)


# --------------------------------------------------------------------------- resolution


def provider_of(path: str, headers: Mapping[str, str]) -> WireFormat:
    """The stub server's wire format that claims this request (OpenAI claims the rest)."""
    for fmt in formats():
        if fmt.owns(path, headers):
            return fmt
    raise LookupError("no wire format registered")


def upstream_path(provider: str, path: str) -> str:
    """``path`` with the proxy's own prefix for ``provider`` removed."""
    prefix = _PROXY_PREFIX.get(provider)
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        return path[len(prefix) :] or "/"
    return path


def resolve(method: str, path: str, headers: Mapping[str, str], body: Any) -> tuple[str, Matched | None]:
    """``(provider, matched route or None)`` for one request; ``path`` has no query string."""
    fmt = provider_of(path, headers)
    local = fmt.local_path(path)
    forward = upstream_path(fmt.name, path)
    if not isinstance(body, Mapping):
        return fmt.name, None
    for route in ROUTES:
        if route.provider != fmt.name or route.method != method:
            continue
        match = route.pattern.fullmatch(local)
        if match is None:
            continue
        streaming = route.streams(body, match)
        return fmt.name, Matched(route, route.identity(body, match), streaming, forward)
    return fmt.name, None


_SURFACES: dict[tuple[str, str], Any] = {}


def _surface(provider: str, name: str) -> Any:
    """The first synchronous instrumentor ``Surface`` recording under ``name``."""
    key = (provider, name)
    if key not in _SURFACES:
        from importlib import import_module

        module = import_module(f"rewind.instrumentors.{provider}")
        found = [s for s in module.PROVIDER.surfaces() if s.name == name and not s.is_async]
        _SURFACES[key] = found[0] if found else None
    return _SURFACES[key]
