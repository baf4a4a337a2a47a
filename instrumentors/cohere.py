"""``CohereInstrumentor``: records and replays the ``cohere`` SDK (Fern-generated).

Hooked surfaces, sync and async, class-level:

* v2 (``ClientV2`` / ``AsyncClientV2``, and ``client.v2`` of a v1 client): ``chat``,
  ``chat_stream`` (replay yields the SDK's own stream event objects), ``embed``,
  ``rerank``;
* v1 (``Client`` / ``AsyncClient``): ``embed`` (the SDK's batching override: one step
  however many batches it sends) and ``rerank``.

v1 ``chat`` / ``chat_stream`` are deliberately not hooked: the v1 chat API is Cohere's
legacy surface (connectors, ``chat_history``, search queries) and its successor is v2
chat; calls through it run live and unrecorded.

Clients built before patching
-----------------------------
The SDK re-binds ``chat`` and ``chat_stream`` on every client it constructs (argument
checks and experimental-feature warnings wrap the bound method), so a client built
before ``patch_cohere()`` keeps the unpatched public methods. From cohere 5.16 those
still call the SDK's raw client, which is hooked too: such a chat is recorded there, as
the same step with the same identity (a client built after patching passes through that
layer, its public hook being the step). On 5.13 to 5.15 nothing else is reachable: the
chat runs live and unrecorded, and rewind says so once (``PatchGapWarning``) when it
sees one on the wire under a session. ``embed`` and ``rerank`` are covered either way.

The SDK is not Stainless-generated, so this module brings its own kit (``_kit``):
streams are generators, payloads parse with the SDK's own lenient ``construct_type``
(discriminated unions included), and errors (``ApiError`` and its per-status
subclasses) keep ``status_code``, ``headers`` and ``body`` on replay.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewind.data.canonical import to_jsonable
from rewind.engine.context import current_session
from rewind.engine.providers import Failure, Faults, ProviderSpec
from rewind.errors import PatchGapWarning

from ._errors import add_response, error_record, revive_error
from ._fault_records import REQUEST_ID, WORDING, located, read_timeout, record, response, transport_dropped
from ._instrumentor import SurfaceInstrumentor
from ._kit import ASYNC_GENERATORS, GENERATORS, Kit
from ._stainless import dump_model, resolve
from ._surface import (
    BindingFields,
    NativeProvider,
    Surface,
    async_wrapper,
    intercepting,
    parameter_attributes,
    sync_wrapper,
    url_server_attributes,
    warn_once,
)

_V2 = "cohere.v2.client"
_RAW = "cohere.v2.raw_client"
_TYPES = "cohere.types"
#: Recorded call names of the wire paths a chat of a client built before patching sends.
_CHAT_PATHS = {"v2/chat": "chat / chat_stream"}


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("temperature", "gen_ai.request.temperature"),
    ("p", "gen_ai.request.top_p"),
    ("k", "gen_ai.request.top_k"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("seed", "gen_ai.request.seed"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
)


class FernKit(Kit):
    """The generated core of the ``cohere`` SDK."""

    def __init__(self) -> None:
        self.construct_type = resolve("cohere.core.unchecked_base_model:construct_type")
        self.httpx = importlib.import_module("httpx")
        self.sentinels = (type(...),)  # Fern's OMIT is the Ellipsis

    def is_stream(self, obj: Any) -> bool:
        return isinstance(obj, GENERATORS + ASYNC_GENERATORS)

    def is_async_stream(self, obj: Any) -> bool:
        return isinstance(obj, ASYNC_GENERATORS)

    def parse(self, type_: Any, data: Any) -> Any:
        return self.construct_type(type_=type_, object_=data)  # what the SDK parses wire JSON with

    def revival_gap(self) -> str | None:
        return None if self.construct_type is not None else "rewind found no cohere construct_type"


_CHAT_RESULT = f"cohere.v2:V2ChatResponse|{_TYPES}:ChatResponse"
_CHAT_CHUNK = f"cohere.v2:V2ChatStreamResponse|{_TYPES}:StreamedChatResponseV2"


def _chat_surfaces(owner: str, common: BindingFields) -> list[Surface]:
    """``chat`` and ``chat_stream`` of a v2 client class (public or raw): the same two steps."""
    return [
        Surface(
            owner,
            method,
            f"cohere.v2.{method}",
            operation="chat",
            path="/v2/chat",
            result=_CHAT_RESULT,
            chunk=_CHAT_CHUNK if method == "chat_stream" else None,
            **common,
        )
        for method in ("chat", "chat_stream")
    ]


def _public_surfaces(prefix: str, common: BindingFields) -> list[Surface]:
    """The client methods an agent calls: v2 chat, its stream, embed and rerank; v1 embed and rerank."""
    v2 = f"{_V2}:{prefix}V2Client"
    return [
        *_chat_surfaces(v2, common),
        Surface(
            v2,
            "embed",
            "cohere.v2.embed",
            operation="embeddings",
            path="/v2/embed",
            result=f"{_TYPES}:EmbedByTypeResponse",
            **common,
        ),
        Surface(
            v2,
            "rerank",
            "cohere.v2.rerank",
            operation="rerank",
            path="/v2/rerank",
            result="cohere.v2:V2RerankResponse",
            **common,
        ),
        Surface(
            f"cohere.client:{prefix}Client",
            "embed",
            "cohere.v1.embed",
            operation="embeddings",
            path="/v1/embed",
            result=f"{_TYPES}:EmbedResponse",
            **common,
        ),
        Surface(
            f"cohere.base_client:{prefix}BaseCohere",
            "rerank",
            "cohere.v1.rerank",
            operation="rerank",
            path="/v1/rerank",
            result=f"{_TYPES}:RerankResponse",
            **common,
        ),
    ]


def _raw_chat_surfaces(prefix: str, common: BindingFields) -> list[Surface]:
    """Clients built before patching reach chat through the raw client only (module docstring):
    the same steps, hooked one layer down. A client built after patching passes through here
    (its public hook is running)."""
    optional: BindingFields = {**common, "required": False}
    return _chat_surfaces(f"{_RAW}:{prefix}RawV2Client", optional)


def _bypass_detectors(prefix: str, common: BindingFields) -> list[Surface]:
    """Not recorded: notices chats of clients built before patching on SDKs without a raw client
    (before 5.16), where nothing else can catch them."""
    owner = f"cohere.core.http_client:{prefix}HttpClient"
    optional: BindingFields = {**common, "required": False}
    return [
        Surface(owner, method, "", operation="", path="", result="", **optional) for method in ("request", "stream")
    ]


class CohereProvider(NativeProvider):
    """What is Cohere-specific about recording and replaying ``cohere``."""

    name = "cohere"
    package = "cohere"
    transport_keys = frozenset({"request_options"})

    def make_kit(self) -> Kit:
        return FernKit()

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        for is_async, prefix in ((False, ""), (True, "Async")):
            common: BindingFields = {"is_async": is_async, "provider": self}
            rows += _public_surfaces(prefix, common)
            rows += _raw_chat_surfaces(prefix, common)
            rows += _bypass_detectors(prefix, common)
        return rows

    def hook(self, surface: Surface) -> Callable[..., Any]:
        if not surface.name:
            return _bypass_detector
        if surface.owner.startswith(_RAW) and surface.method == "chat_stream":
            return _raw_stream_hook(surface)
        if surface.method == "chat_stream":
            # Both twins are generator functions: the call itself is synchronous and sends
            # nothing; the request goes out on the first read of the (async) generator.
            return sync_wrapper(surface)
        return super().hook(surface)

    def type_of(self, path: str | None) -> Any:
        if path is None or "|" not in path:
            return super().type_of(path)
        # Type names moved between releases (ChatResponse -> V2ChatResponse): first one found.
        for candidate in path.split("|"):
            found = super().type_of(candidate)
            if found is not None:
                return found
        return None

    # -- telemetry --------------------------------------------------------------------
    def server_attributes(self, instance: Any) -> dict[str, Any]:
        wrapper = getattr(instance, "_client_wrapper", None)
        try:
            url = wrapper.get_base_url()  # type: ignore[union-attr]
        except Exception:  # no client wrapper: no server attributes
            return {}
        return url_server_attributes(url)

    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        attrs = parameter_attributes(request, _SAMPLING, stop="stop_sequences")
        if surface.method == "chat_stream":
            attrs["gen_ai.request.stream"] = True
        fmt = request.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_object":
            attrs["gen_ai.output.type"] = "json"
        kinds = request.get("embedding_types")
        if isinstance(kinds, list) and all(isinstance(k, str) for k in kinds):
            attrs["gen_ai.request.encoding_formats"] = kinds
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return {}
        attrs: dict[str, Any] = {}
        if isinstance(data.get("finish_reason"), str):
            attrs["gen_ai.response.finish_reasons"] = [data["finish_reason"]]
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else data.get("meta")
        if isinstance(usage, dict):
            tokens = usage.get("tokens") if isinstance(usage.get("tokens"), dict) else usage.get("billed_units")
            if isinstance(tokens, dict):
                for key, attr in (
                    ("input_tokens", "gen_ai.usage.input_tokens"),
                    ("output_tokens", "gen_ai.usage.output_tokens"),
                ):
                    if isinstance(tokens.get(key), (int, float)):
                        attrs[attr] = int(tokens[key])
        if surface.operation == "embeddings":
            dims = _embedding_dimensions(data.get("embeddings"))
            if dims is not None:
                attrs["gen_ai.embeddings.dimension.count"] = dims
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return accumulate_chat(chunks)

    # -- recording ------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        if surface.owner.startswith(_RAW):
            result = result.data  # the raw client's HttpResponse around the model
        return dump_fern(result)

    def revive(self, surface: Surface, data: Any, kwargs: Mapping[str, Any]) -> Any:
        revived = super().revive(surface, data, kwargs)
        if not surface.owner.startswith(_RAW):
            return revived
        http_response = resolve("cohere.core.http_response:HttpResponse")
        hx = self.kit.httpx
        wire = hx.Response(200, json=data, request=hx.Request("POST", "http://replayed.invalid/v2/chat"))
        return http_response(response=wire, data=revived)

    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return dump_fern(chunk)

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = error_record(exc)
        body = getattr(exc, "body", None)
        if hasattr(body, "dict"):
            # A typed error body (TooManyRequestsErrorBody …): revived as that model if loaded.
            record["body"] = dump_fern(body)
            record["body_type"] = f"{type(body).__module__}:{type(body).__qualname__}"
        # ApiError keeps the status, headers and parsed body, not the HTTP response.
        add_response(
            record,
            getattr(exc, "status_code", None),
            getattr(exc, "headers", None),
            lambda: body if isinstance(body, str) else json.dumps(record.get("body")),
        )
        return record

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        exc = revive_error(record, step, httpx=self.kit.httpx)
        body_type = record.get("body_type")
        if isinstance(body_type, str) and "body" in record:
            module, _, name = body_type.partition(":")
            cls = getattr(sys.modules.get(module), name, None)  # a trace never imports anything
            if cls is not None and self.kit.construct_type is not None:
                try:
                    exc.body = self.kit.construct_type(type_=cls, object_=record["body"])  # type: ignore[attr-defined]
                except Exception:  # the dict is still the body
                    pass
        response = record.get("response")
        if isinstance(response, Mapping):
            try:  # ApiError.headers: the response headers as a plain dict
                exc.headers = dict(response.get("headers") or {})  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
        return exc


def dump_fern(model: Any) -> Any:
    """Wire-shaped JSON of a Fern model: its own ``dict()`` applies the wire names (``float``)."""
    as_dict = getattr(model, "dict", None)
    if callable(as_dict) and hasattr(type(model), "model_fields"):
        try:
            return to_jsonable(as_dict())
        except Exception:  # fall back to pydantic's dump
            pass
    return dump_model(model)


class _RawData:
    """What ``V2Client.chat_stream`` reads from the raw client's stream context: ``.data``."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


class _RawStream:
    """The raw ``chat_stream`` context manager, its events recorded or replayed (sync and async)."""

    def __init__(self, send: Callable[..., Any], wrapped: Callable[..., Any], call: tuple[Any, ...]) -> None:
        self._send = send
        self._wrapped = wrapped
        self._call = call  # (instance, args, kwargs)
        self._live: Any = None

    def _open(self, *args: Any, **kwargs: Any) -> Any:
        self._live = self._wrapped(*args, **kwargs)
        return self._live.__enter__().data

    async def _aopen(self, *args: Any, **kwargs: Any) -> Any:
        self._live = self._wrapped(*args, **kwargs)
        return (await self._live.__aenter__()).data

    def __enter__(self) -> _RawData:
        return _RawData(self._send(self._open, *self._call))

    def __exit__(self, *exc_info: Any) -> Any:
        return self._live.__exit__(*exc_info) if self._live is not None else None

    async def __aenter__(self) -> _RawData:
        return _RawData(await self._send(self._aopen, *self._call))

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._live.__aexit__(*exc_info) if self._live is not None else None


def _raw_stream_hook(surface: Surface) -> Callable[..., Any]:
    """The raw client's ``chat_stream`` sends on entering its context: intercepted there."""
    send = async_wrapper(surface) if surface.is_async else sync_wrapper(surface)

    def hook(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if intercepting() or current_session() is None:
            return wrapped(*args, **kwargs)  # a client built after patching: its public hook runs
        return _RawStream(send, wrapped, (instance, args, kwargs))

    return hook


def _bypass_detector(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Warn once when a chat reaches the wire under a session without passing a hook."""
    path = args[0] if args else kwargs.get("path")
    if path in _CHAT_PATHS and not intercepting() and current_session() is not None:
        warn_once(
            "cohere:prebuilt-client",
            f"rewind: a cohere client called {_CHAT_PATHS[path]} without going through rewind, so the call "
            "was neither recorded nor replayed: the client was constructed before patch_cohere() (the SDK "
            "binds chat and chat_stream on each client when it is built). Call patch_cohere() (or "
            "auto_patch()) first, then construct cohere clients.",
            PatchGapWarning,
            stacklevel=3,
        )
    return wrapped(*args, **kwargs)


def _embedding_dimensions(embeddings: Any) -> int | None:
    if isinstance(embeddings, dict):  # by type: {"float": [[...]], "int8": [[...]]}
        embeddings = next((v for v in embeddings.values() if isinstance(v, list) and v), None)
    if isinstance(embeddings, list) and embeddings and isinstance(embeddings[0], list):
        return len(embeddings[0])
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def accumulate_chat(chunks: list[Any]) -> dict[str, Any] | None:
    """The v2 chat response a list of ``chat_stream`` events adds up to (as far as it got)."""
    response: dict[str, Any] | None = None
    content: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    plan: list[str] = []
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        kind, index = chunk.get("type"), chunk.get("index")
        delta = _dict(chunk.get("delta"))
        message = _dict(delta.get("message"))
        if kind == "message-start":
            response = {"id": chunk.get("id"), "message": {"role": message.get("role") or "assistant"}}
        elif kind in ("content-start", "content-delta") and isinstance(index, int):
            piece = _dict(message.get("content"))
            slot = content.setdefault(index, {"type": piece.get("type") or "text"})
            for key, value in piece.items():
                if key != "type" and isinstance(value, str):
                    slot[key] = str(slot.get(key) or "") + value
        elif kind == "tool-plan-delta" and isinstance(message.get("tool_plan"), str):
            plan.append(message["tool_plan"])
        elif kind in ("tool-call-start", "tool-call-delta") and isinstance(index, int):
            call = _dict(message.get("tool_calls"))
            slot = calls.setdefault(index, {"type": "function", "function": {"name": None, "arguments": ""}})
            if call.get("id"):
                slot["id"] = call["id"]
            function = _dict(call.get("function"))
            if function.get("name"):
                slot["function"]["name"] = function["name"]
            if isinstance(function.get("arguments"), str):
                slot["function"]["arguments"] += function["arguments"]
        elif kind == "message-end" and response is not None:
            if delta.get("finish_reason") is not None:
                response["finish_reason"] = delta["finish_reason"]
            if isinstance(delta.get("usage"), dict):
                response["usage"] = delta["usage"]
    if response is None:
        return None
    if content:
        response["message"]["content"] = [content[i] for i in sorted(content)]
    if calls:
        response["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    if plan:
        response["message"]["tool_plan"] = "".join(plan)
    return response


PROVIDER = CohereProvider()

#: The oldest cohere release the test suite is run against (compat/cohere.txt).
MINIMUM_SDK = "5.13"


class CohereInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through ``cohere`` (``rewind_cohere`` entry point)."""

    provider = PROVIDER
    sdk = "cohere"
    minimum = MINIMUM_SDK


# --------------------------------------------------------------------------- provider faults

_CLIENT_MODULES = ("cohere.core.http_client",)
_FAULT_CLASSES = {
    429: "cohere.errors.too_many_requests_error:TooManyRequestsError",
    500: "cohere.errors.internal_server_error:InternalServerError",
    503: "cohere.errors.service_unavailable_error:ServiceUnavailableError",
}


def _fault(failure: Failure) -> dict[str, Any]:
    """cohere (Fern): an ``ApiError`` subclass per status, with the status, headers and parsed body."""
    if failure.fault == "timeout":
        return read_timeout(*_CLIENT_MODULES)
    module, qualname = located(_FAULT_CLASSES[failure.status])
    body = {"id": REQUEST_ID, "message": WORDING[failure.fault]}
    answer = response(failure.status, failure, json.dumps(body))
    shaped = record(
        module,
        qualname,
        f"headers: {answer['headers']}, status_code: {failure.status}, body: {body}",
        attrs={"status_code": failure.status},
        body=body,
        response=answer,
    )
    if failure.status == 429:
        # Older releases (5.13) parse a 429's body into a model of their own; the instrumentor
        # revives it as that model. located imported its module only if the SDK has it.
        typed = located("cohere.types.too_many_requests_error_body:TooManyRequestsErrorBody")
        if typed[0] in sys.modules:
            shaped["body_type"] = f"{typed[0]}:{typed[1]}"
    return shaped


def _dropped(failure: Failure) -> dict[str, Any]:
    return transport_dropped(*_CLIENT_MODULES)  # the HTTP library's error comes through unwrapped


DECLARATION = ProviderSpec(
    name="cohere",
    sdk="cohere",
    instrumentor="rewind.instrumentors.cohere:CohereInstrumentor",
    keys=("CO_API_KEY",),
    faults=Faults(_fault, _dropped),
)
