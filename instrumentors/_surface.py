"""The shared wrapping machinery every SDK instrumentor is built from.

A provider module (``instrumentors/openai.py``, ``anthropic.py`` …) is a table of
``Surface`` rows plus a ``Provider`` subclass holding what is really provider-specific.
Everything else lives here and in three helpers: ``_stainless`` (the generated-SDK classes
and the in-memory HTTP objects replay builds from them), ``_streams`` (stream and raw
response proxies) and ``_errors`` (provider errors as data, raised again with a bounded
``e.response``).

Contract
--------
``Surface`` - one SDK method to hook, e.g. ``Completions.create``:

* ``owner`` ``"package.module:Class"`` and ``method``: patched on the class (``wrapt``), so
  every client instance, subclass (``AzureOpenAI``) and ``base_url`` is covered, and the
  SDK's ``with_raw_response`` / ``with_streaming_response`` wrappers, which call the
  bound method, go through the hook too. An owner that is just ``"package.module"`` hooks
  a module-level function (``litellm.completion``): the module attribute is replaced, so
  calls looking it up at call time are covered, names imported from it earlier are not.
* ``name``: the recorded call name (part of replay identity). ``operation``: the GenAI
  operation (``chat``, ``embeddings``). ``path``: the endpoint, used for replayed raw
  responses. ``result`` / ``chunk``: import paths of the response and stream-chunk types
  that revival constructs. ``is_async``: coroutine method or not.
* ``required``: a required surface missing from an SDK whose owner module exists gives
  ``PatchGapWarning`` at patch time (once); a missing owner module means the SDK predates
  the feature and is skipped silently, as are missing optional surfaces.
* ``parsed``: the method post-processes the wire response (``.parse``): revival
  constructs ``result`` and hands it to ``Provider.parse_result``.

``Provider`` - the strategy for one SDK, with Stainless-generic defaults:

* ``request(surface, instance, args, kwargs)``: the replay identity, i.e. the kwargs the
  agent passed minus transport noise (headers, timeouts, ``NOT_GIVEN``), pydantic model
  classes turned into their JSON schema. Never includes credentials.
* ``span(surface, instance, request)``: span name and start attributes (GenAI semconv).
* ``response_attributes``, ``stream_summary``: provider-shaped response facts.
* ``dump`` / ``dump_chunk`` / ``revive`` / ``revive_chunk`` / ``parse_result``.
* ``hook(surface)``: the wrapper patched over the method (``sync_wrapper`` /
  ``async_wrapper``); a provider overrides it for a method that defers its request, e.g.
  a stream helper returning a manager that sends it on ``__enter__``.
* ``make_kit()``: the SDK-core strategy (``_kit.Kit``: what a stream is, the replayed
  stream object, payload parsing, "not given" markers). Stainless SDKs get
  ``_stainless.SDKKit``; other generators subclass ``NativeProvider`` with a small kit.
* ``transport_keys``, ``error_record`` / ``revive_error``: call keywords that are not
  the request, and errors whose HTTP details live somewhere other than ``e.response``.

``intercepting()`` tells code running inside the SDK (a provider's hook on the SDK's own
telemetry, say) whether a hooked call is running live under a session right now.

Behaviour, for every surface
----------------------------
* No session: a plain passthrough (one ``ContextVar`` read). Nested hooked calls (an SDK
  helper calling another hooked method) pass through; the outer call is the step.
* Record: the call runs with its span current. A model response is one event written
  when the call returns (wire-shaped JSON: API field names, only the fields sent). A
  stream returns a proxy (``_streams``) that records chunks as the agent reads them and
  writes ONE event when the stream ends, ``extra={"stream": {"chunks": [...],
  "truncated": bool}}``, with the error if one was raised mid-stream; its ``response`` is
  a provider summary (the accumulated completion) for stats and diffs. Raw wrappers
  (``with_raw_response`` / ``with_streaming_response``) record the wire body and its
  headers (``extra["http"]``). Errors record the exception, its body and a bounded view of
  its HTTP response (``_errors``).
* Replay: the recorded event is revived into real SDK types the way the SDK parses wire
  data: its strict-validation parser first (``validate_type``, what clients with
  ``_strict_response_validation`` use; an order of magnitude faster), its default lenient
  parser (``construct_type``) for payloads that do not validate; raw wrappers are real ``LegacyAPIResponse`` /
  ``APIResponse`` objects over an in-memory HTTP response (``.headers``, ``.parse()``,
  ``.iter_lines()`` work), streams are proxies over real ``Stream`` objects yielding the
  recorded chunks. If revival fails, the recorded dict is served with
  ``ReviveFallbackWarning`` (once per type). Recorded errors are raised again
  (``_errors.revive_error``), mid-stream ones after the same chunks.
* Instrumentation never changes what a live call returns or raises: a failure inside
  rewind's own bookkeeping abandons the step, never the agent's call.
"""

from __future__ import annotations

import importlib
import json
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

import wrapt

from rewind.data.http_error import bind_request, without_secrets
from rewind.engine.context import current_session, warn_if_threadless
from rewind.engine.core import Call, begin_call
from rewind.errors import PatchGapWarning, RedactionError, ReviveFallbackWarning, TraceWriteError

from ._chunk_shape import check_stream
from ._errors import error_record, revive_error
from ._kit import Kit
from ._stainless import SDKKit, dump_model, has_extras, resolve, sse_bytes
from ._streams import NESTED as _NESTED
from ._streams import AsyncRaw, RecordEngine, ReplayEngine, SyncRaw, stream_proxy

if TYPE_CHECKING:
    from rewind.engine.policy import ReplayPolicy

#: Call keywords that configure transport, not the request: never part of identity.
TRANSPORT_KEYS = frozenset({"extra_headers", "timeout", "api_key", "idempotency_key"})

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def intercepting() -> bool:
    """True while a hooked call runs live under a session: SDK work nested in it is that step's."""
    return _NESTED.get()


def warn_once(key: str, message: str, category: type[Warning], *, stacklevel: int = 3) -> None:
    """Emit ``message`` the first time ``key`` is seen in this process."""
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn(message, category, stacklevel=stacklevel)


class _EndpointFields(TypedDict):
    operation: str
    path: str
    result: str


class EndpointFields(_EndpointFields, total=False):
    """The ``Surface`` fields that describe one HTTP endpoint, shared by the rows that call it."""

    chunk: str | None
    sse_named: bool
    sse_done: bool


class BindingFields(TypedDict, total=False):
    """The ``Surface`` fields that say how a row is hooked, shared across endpoints."""

    is_async: bool
    required: bool
    provider: Provider


class ParseBindingFields(BindingFields, total=False):
    """``BindingFields`` for the structured-output (``parse``) rows."""

    parsed: bool


@dataclass(frozen=True)
class Surface:
    """One SDK method rewind hooks; see the module docstring for each field."""

    owner: str
    method: str
    name: str
    operation: str
    path: str
    result: str
    chunk: str | None = None
    is_async: bool = False
    required: bool = True
    parsed: bool = False
    sse_named: bool = False
    sse_done: bool = False
    provider: Provider = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @property
    def label(self) -> str:
        return f"{self.owner}.{self.method}"


class Provider:
    """Provider strategy with defaults that fit every Stainless-generated SDK."""

    #: ``gen_ai.provider.name`` and the SDK package to import.
    name = ""
    package = ""
    #: Call keywords that configure transport, not the request (never part of identity).
    transport_keys: frozenset[str] = TRANSPORT_KEYS

    def __init__(self) -> None:
        self._kit: Kit | None = None
        self._types: dict[str, Any] = {}

    @property
    def kit(self) -> Kit:
        if self._kit is None:
            self._kit = self.make_kit()
        return self._kit

    def make_kit(self) -> Kit:
        """The SDK-core strategy (``_kit``); Stainless unless a provider says otherwise."""
        return SDKKit(self.package)

    def surfaces(self) -> Sequence[Surface]:
        raise NotImplementedError

    def invocation(self, surface: Surface, call: Call, instance: Any, kwargs: Mapping[str, Any]) -> _Invocation:
        """What runs one intercepted call live or from the recording; a provider whose calls
        return something the kit cannot describe alone (litellm's private response state,
        its one stream class for sync and async) returns an ``_Invocation`` subclass."""
        return _Invocation(surface, call, instance, kwargs)

    def hook(self, surface: Surface) -> Callable[..., Any]:
        """The ``wrapt`` wrapper patched over ``surface``; override for methods that defer
        their request (a stream manager sending it on ``__enter__``)."""
        return async_wrapper(surface) if surface.is_async else sync_wrapper(surface)

    def type_of(self, path: str | None) -> Any:
        if path is None:
            return None
        if path not in self._types:
            self._types[path] = resolve(path)
        return self._types[path]

    # -- identity -------------------------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        sentinels = self.kit.sentinels
        transport = self.transport_keys
        out: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in transport or (sentinels and isinstance(value, sentinels)):
                continue
            if key == "extra_query" and isinstance(value, Mapping):
                # ?key=... / ?api_key=...: a credential is transport, never identity or trace data.
                value = without_secrets(value)
                if not value:
                    continue
            out[key] = schema_of(value) if isinstance(value, type) else value
        if args:
            out["args"] = list(args)
        return out

    # -- telemetry ------------------------------------------------------------------
    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        model = request.get("model")
        attrs: dict[str, Any] = {"gen_ai.operation.name": surface.operation, "gen_ai.provider.name": self.name}
        if isinstance(model, str):
            attrs["gen_ai.request.model"] = model
        attrs.update(self.server_attributes(instance))  # a copy: the cached dict stays untouched
        attrs.update(self.request_attributes(surface, request))
        return (f"{surface.operation} {model}" if isinstance(model, str) else surface.operation), attrs

    def request_url(self, surface: Surface, instance: Any, kwargs: Mapping[str, Any]) -> str | None:
        """The URL a call through ``instance`` went to, where this SDK builds it its own way
        (a replayed error's ``e.response.request``); ``None``: the shared builders'."""
        return None

    def server_attributes(self, instance: Any) -> dict[str, Any]:
        """``server.address`` / ``server.port`` of the client behind ``instance``.

        Stainless clients keep an httpx base URL; other SDKs say where theirs is
        (``url_server_attributes`` turns a URL string into the attributes).
        """
        return server_attributes(instance)

    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        """Span attributes of a (revived or summarized) response, beyond what the core sets.

        The core already sets ``gen_ai.response.id``/``.model``, input/output token usage
        and chat-style finish reasons from the recorded response (``usage_attributes``).
        """
        return {}

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return None

    # -- recording ------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        return dump_model(result)

    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return dump_model(chunk)

    # -- revival --------------------------------------------------------------------
    def construct(self, type_path: str | None, data: Any) -> Any:
        """``data`` as the SDK's wire parser would build it, or ``data`` plus a warning."""
        type_ = self.type_of(type_path)
        construct_type = self.kit.construct_type
        if type_ is None or construct_type is None:
            self._fallback(type_path, "the type or the SDK's construct_type is missing")
            return data
        validate_type = self.kit.validate_type
        if validate_type is not None:
            # The SDK's strict-validation parse: identical models for well-formed payloads, and
            # an order of magnitude faster than the lenient parser below, which is what the SDK
            # falls back to by default and what serves anything that does not validate.
            # A field the class does not declare (a vendor's extension) is where the two parsers
            # part (``model_fields_set``): such a payload takes the SDK's own path below.
            try:
                validated = validate_type(type_=type_, value=data)
                if not has_extras(validated):
                    return validated
            except Exception:
                pass
        try:
            return construct_type(type_=type_, value=data)
        except Exception as exc:  # any revival failure degrades to the dict
            self._fallback(type_path, f"{type(exc).__name__}: {exc}")
            return data

    def revive(self, surface: Surface, data: Any, kwargs: Mapping[str, Any]) -> Any:
        revived = self.construct(surface.result, data)
        if surface.parsed and revived is not data:
            try:
                return self.parse_result(surface, revived, kwargs)
            except Exception as exc:
                self._fallback(f"{surface.name} (parsed)", f"{type(exc).__name__}: {exc}")
                return data
        return revived

    def revive_chunk(self, surface: Surface, data: Any) -> Any:
        return self.construct(surface.chunk, data)

    def parse_result(self, surface: Surface, revived: Any, kwargs: Mapping[str, Any]) -> Any:
        """Apply the SDK's own client-side parsing (``.parse`` surfaces)."""
        return revived

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        """A live error as trace data (class, scalars, body, a bounded HTTP response)."""
        return error_record(exc)

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        """The recorded error, ready to raise again as the SDK's own class."""
        return revive_error(record, step, httpx=self.kit.httpx)

    def _fallback(self, what: Any, why: str) -> None:
        warn_once(
            f"revive:{what}",
            f"rewind could not revive a recorded {what} into its {self.package} SDK type ({why}); "
            "serving the recorded dict instead. The installed SDK may be missing or its internals "
            "changed; pin the SDK version the trace was recorded with for exact types.",
            ReviveFallbackWarning,
            stacklevel=5,
        )


class NativeProvider(Provider):
    """A provider whose SDK is not Stainless-generated (Speakeasy, Fern, Google's own).

    Its kit (``make_kit``) says what a stream is and builds replayed stream objects, and
    parses recorded payloads into SDK types (``Kit.parse``); everything else is shared.
    """

    def make_kit(self) -> Kit:
        raise NotImplementedError

    def construct(self, type_path: str | None, data: Any) -> Any:
        type_ = self.type_of(type_path)
        if type_ is None:
            self._fallback(type_path, "the type is missing")
            return data
        try:
            return self.kit.parse(type_, data)
        except Exception as exc:  # any revival failure degrades to the dict
            self._fallback(type_path, f"{type(exc).__name__}: {exc}")
            return data


def schema_of(cls: type) -> Any:
    """A class passed as a request value (``response_format=MyModel``) as stable JSON."""
    schema = getattr(cls, "model_json_schema", None)
    if callable(schema):
        try:
            return {"type": cls.__qualname__, "json_schema": schema()}
        except Exception:
            pass
    return {"type": f"{cls.__module__}.{cls.__qualname__}"}


_SERVERS: weakref.WeakKeyDictionary[Any, tuple[Any, dict[str, Any]]] = weakref.WeakKeyDictionary()


def parameter_attributes(
    params: Mapping[str, Any], table: Sequence[tuple[str, str]], *, stop: str | None = None
) -> dict[str, Any]:
    """GenAI request attributes of a provider's sampling parameters.

    ``table`` maps parameter names to attribute names (numbers only, never booleans);
    ``stop`` names the parameter that holds the stop sequences (one string or a list).
    """
    attrs: dict[str, Any] = {}
    for key, attr in table:
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attr] = value
    if stop is not None:
        sequences = params.get(stop)
        if isinstance(sequences, str):
            attrs["gen_ai.request.stop_sequences"] = [sequences]
        elif isinstance(sequences, list) and all(isinstance(s, str) for s in sequences):
            attrs["gen_ai.request.stop_sequences"] = sequences
    return attrs


def url_server_attributes(url: Any) -> dict[str, Any]:
    """``server.address`` / ``server.port`` of a base URL string (SDKs that keep no httpx URL)."""
    try:
        parts = urlsplit(str(url or ""))
        host, port = parts.hostname, parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # not a URL, or a port out of range
        return {}
    if not host:
        return {}
    return {"server.address": host, "server.port": port} if port is not None else {"server.address": host}


def server_attributes(instance: Any) -> dict[str, Any]:
    """``server.address`` / ``server.port`` from the client's ``base_url`` (cached per client)."""
    client = getattr(instance, "_client", None)
    url = getattr(client, "base_url", None)
    try:
        cached = _SERVERS.get(client)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is not None and cached[0] is url:
        return cached[1]
    attrs: dict[str, Any] = {}
    host = getattr(url, "host", None)
    if host:
        attrs["server.address"] = host
        port = getattr(url, "port", None)
        if port is None:
            port = {"https": 443, "http": 80}.get(str(getattr(url, "scheme", "")))
        if isinstance(port, int):
            attrs["server.port"] = port
    try:
        _SERVERS[client] = (url, attrs)
    except TypeError:
        pass
    return attrs


# --------------------------------------------------------------------------- one call


class _Invocation:
    """The parts of one hooked call that both the sync and async paths share."""

    __slots__ = ("call", "instance", "kwargs", "raw_mode", "surface")

    def __init__(self, surface: Surface, call: Call, instance: Any, kwargs: Mapping[str, Any]) -> None:
        self.surface = surface
        self.call = call
        self.instance = instance
        self.kwargs = kwargs
        self.raw_mode = surface.provider.kit.raw_mode(kwargs)

    # -- live ---------------------------------------------------------------------
    def failed(self, exc: BaseException) -> None:
        try:
            error = self.surface.provider.error_record(exc) if isinstance(exc, Exception) else None
            self.call.fail(exc, error=error)
        except (RedactionError, TraceWriteError):
            raise  # the user's redactor failed, or the step could not be written: the agent is told
        except Exception:  # the agent's exception matters, not ours
            self.call.abandon(exc)

    def adopt(self, result: Any) -> Any:
        """Record a live result; may return a recording proxy in its place."""
        try:
            return self._adopt(result)
        except (RedactionError, TraceWriteError):
            raise  # the user's redactor failed, or the step could not be written: the agent is told
        except Exception:  # bookkeeping failed: keep the agent's result
            self.call.abandon()
            return result

    def _adopt(self, result: Any) -> Any:
        surface, call = self.surface, self.call
        provider = surface.provider
        kit = provider.kit
        if kit.is_stream(result):
            return stream_proxy(result, RecordEngine(call, surface), is_async=kit.is_async_stream(result))
        if kit.is_http_wrapper(result):
            streaming = bool(getattr(result, "_stream", False) or getattr(result, "_is_sse_stream", False))
            is_legacy = kit.legacy_response is not None and isinstance(result, kit.legacy_response)
            engine = RecordEngine(call, surface)
            if not streaming and (is_legacy or self.raw_mode == "true"):
                # with_raw_response already read the body: record it now.
                SyncRaw(result, engine, streaming=False, is_async=False)._record_body()
                return result
            if kit.async_api_response is not None and isinstance(result, kit.async_api_response):
                return AsyncRaw(result, engine, streaming=streaming, is_async=True)
            return SyncRaw(result, engine, streaming=streaming, is_async=False)
        data = provider.dump(surface, result)
        request_id = request_id_of(result)
        call.succeed(
            data,
            extra={"request_id": request_id} if isinstance(request_id, str) else None,
            attributes=provider.response_attributes(surface, data) if call.annotating else None,
            converted=True,
        )
        return result

    # -- replay ---------------------------------------------------------------------
    def replay(self) -> Any:
        call, surface = self.call, self.surface
        provider = surface.provider
        kit = provider.kit
        event = call.take_served()
        stream_record = event.get("stream")
        if stream_record is None and event.get("imported") is not None and _wants_stream(surface, self.kwargs):
            # Telemetry keeps the final message, not its chunks: synthesize them from it.
            from rewind.storage.streams import with_stream

            synthesized = with_stream(event, self.kwargs)
            if synthesized is not None:
                event, stream_record = synthesized, synthesized.get("stream")
        check_stream(event, stream_record, provider.type_of(surface.chunk), wanted=_wants_stream(surface, self.kwargs))
        client = getattr(self.instance, "_client", None)
        if not event.ok and stream_record is None:
            call.raise_recorded_error(event, self.revive_error(event))
        url = _url(client, surface.path)
        result_type = provider.type_of(surface.result)
        if stream_record is not None:
            engine = ReplayEngine(
                call,
                surface,
                event,
                lambda chunk: provider.revive_chunk(surface, chunk),
                revive_error=self.revive_error,
            )
            body = b""
            http = event.get("http") or {}  # a raw wrapper's status and headers, as the server sent them
            if self.raw_mode is not None:
                body = sse_bytes(engine.chunks, named=surface.sse_named, done=surface.sse_done)
            fake = kit.fake_response(
                url=url,
                status_code=int(http.get("status_code") or 200),
                headers=http.get("headers"),
                body=body,
                raw_mode=self.raw_mode,
                content_type="text/event-stream",
            )
            chunk_type = provider.type_of(surface.chunk)
            sdk_stream = kit.stream_object(
                is_async=surface.is_async, chunk_type=chunk_type, client=client, response=fake
            )
            proxy = stream_proxy(sdk_stream, engine, is_async=surface.is_async)
            if self.raw_mode is None:
                return proxy
            return kit.http_wrapper(
                self._wrapper_class(),
                raw=fake,
                cast_to=result_type,
                client=client,
                stream=True,
                stream_cls=kit.stream_class(is_async=surface.is_async, chunk_type=chunk_type),
                path=surface.path,
                parsed=proxy,
            )
        data = event.response
        revived = provider.revive(surface, data, self.kwargs)
        http = event.get("http") or {}
        headers = http.get("headers") or {}
        request_id = event.get("request_id") or headers.get("x-request-id") or headers.get("request-id")
        if kit.base_model is not None and isinstance(revived, kit.base_model):
            # The SDK's own stamp: None where the response carried no id, as live.
            kit.stamp_response(revived, request_id if isinstance(request_id, str) else None)
        elif isinstance(request_id, str):
            _set_private(revived, "_request_id", request_id)
        attributes = provider.response_attributes(surface, data) if call.annotating else None
        if self.raw_mode is None:
            call.end_replayed(attributes)
            return revived
        fake = kit.fake_response(
            url=url,
            status_code=int(http.get("status_code") or 200),
            headers=http.get("headers"),
            body=json.dumps(data).encode("utf-8") if not isinstance(data, str) else data.encode("utf-8"),
            raw_mode=self.raw_mode,
        )
        wrapper = kit.http_wrapper(
            self._wrapper_class(),
            raw=fake,
            cast_to=result_type,
            client=client,
            stream=False,
            stream_cls=None,
            path=surface.path,
            parsed=revived,
        )
        call.end_replayed(attributes)
        return wrapper

    def revive_error(self, event: Any) -> BaseException:
        """The recorded error, its HTTP response bound to the request the SDK sent (``bind_request``)."""
        provider = self.surface.provider
        error = provider.revive_error(event.error or {}, event.seq)
        method, url = self.request_target()
        return bind_request(error, provider.kit.httpx, method, url, provider.kit.request_errors)

    def request_target(self) -> tuple[str, str]:
        """The method and URL this call went to: what the SDK's own request builder makes of
        its endpoint (an Azure deployment path, a default query), the provider's own
        (``Provider.request_url``), or base URL plus path."""
        url = self.surface.provider.request_url(self.surface, self.instance, self.kwargs)
        if url is not None:
            return "POST", url
        client = getattr(self.instance, "_client", None)
        options = getattr(self.surface.provider.kit, "final_request_options", None)
        build = getattr(client, "_build_request", None)
        if options is not None and callable(build):
            model = self.kwargs.get("model")
            try:
                request = build(
                    options.construct(
                        method="post",
                        url=self.surface.path,
                        json_data={"model": model} if isinstance(model, str) else {},
                    )
                )
                return str(request.method), str(request.url)
            except Exception:  # a builder that needs more (signing credentials …): the plain join
                pass
        return "POST", _url(client, self.surface.path)

    def _wrapper_class(self) -> Any:
        kit = self.surface.provider.kit
        if self.raw_mode == "true" and kit.legacy_response is not None:
            return kit.legacy_response  # newer codegen answers with_raw_response with APIResponse
        return kit.async_api_response if self.surface.is_async else kit.api_response


_DECLARES_REQUEST_ID: dict[type, bool] = {}


def request_id_of(result: Any) -> Any:
    """``getattr(result, "_request_id", None)``, without pydantic's cost of a miss.

    SDKs whose models declare ``_request_id`` (openai, groq …) keep it as a private
    attribute; for a pydantic model that does not (fireworks, together …), ``getattr``
    ends in ``BaseModel.__getattr__`` raising ``AttributeError`` (microseconds a call).
    Such a model can only hold it where that lookup would find it: its ``__dict__``
    (set with ``object.__setattr__``) or its extra fields.
    """
    cls = type(result)
    declares = _DECLARES_REQUEST_ID.get(cls)
    if declares is None:
        private = getattr(cls, "__private_attributes__", None)
        declares = _DECLARES_REQUEST_ID[cls] = not isinstance(private, dict) or "_request_id" in private
    if declares:
        return getattr(result, "_request_id", None)
    value = result.__dict__.get("_request_id")
    if value is None:
        extra = getattr(result, "__pydantic_extra__", None)
        value = extra.get("_request_id") if isinstance(extra, dict) else None
    return value


def _wants_stream(surface: Surface, kwargs: Mapping[str, Any]) -> bool:
    """The call asks for a stream: ``stream=True`` or a ``.stream()`` helper."""
    return kwargs.get("stream") is True or surface.method == "stream"


def _url(client: Any, path: str) -> str:
    base = str(getattr(client, "base_url", "") or "http://replayed.invalid/")
    return base.rstrip("/") + path


def _set_private(obj: Any, name: str, value: Any) -> None:
    try:
        object.__setattr__(obj, name, value)
    except Exception:  # dicts (fallback revival) and frozen objects
        pass


#: Where the SDKs take the model: ``model=`` (most), ``modelId=`` (Bedrock).
_MODEL_KEYS = ("model", "modelId")


def live_model(policy: ReplayPolicy, kwargs: dict[str, Any]) -> None:
    """Rewrite the model of a live call as ``model_map`` says, in the keywords the SDK is
    about to send (so the request rewind records is the one that ran)."""
    for key in _MODEL_KEYS:
        model = kwargs.get(key)
        if isinstance(model, str):
            mapped = policy.live_model(model)
            if mapped != model:
                kwargs[key] = mapped


def _start(surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Invocation | None:
    """The call's invocation, or ``None`` to pass straight through."""
    if _NESTED.get():
        return None
    session = current_session()
    if session is None:
        warn_if_threadless("llm", surface.name)
        return None
    provider = surface.provider
    policy = session.policy
    if policy is not None and policy.model_map and policy.runs_live("llm", surface.name):
        live_model(policy, kwargs)
    request = provider.request(surface, instance, args, kwargs)
    call = begin_call(
        "llm",
        surface.name,
        request,
        describe=lambda: provider.span(surface, instance, request),
        is_async=surface.is_async,
    )
    if call is None:
        return None
    call.credential_source = instance  # read only if the call fails
    return provider.invocation(surface, call, instance, kwargs)


def sync_wrapper(surface: Surface) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        invocation = _start(surface, instance, args, kwargs)
        if invocation is None:
            return wrapped(*args, **kwargs)
        if invocation.call.replaying:
            return invocation.replay()
        token = _NESTED.set(True)
        try:
            with invocation.call.activate():
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            invocation.failed(exc)
            raise
        finally:
            _NESTED.reset(token)
        return invocation.adopt(result)

    return wrapper


def async_wrapper(surface: Surface) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        invocation = _start(surface, instance, args, kwargs)
        if invocation is None:
            return await wrapped(*args, **kwargs)
        if invocation.call.replaying:
            return invocation.replay()
        token = _NESTED.set(True)
        try:
            with invocation.call.activate():
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            invocation.failed(exc)
            raise
        finally:
            _NESTED.reset(token)
        return invocation.adopt(result)

    return wrapper


# --------------------------------------------------------------------------- patching


class Patcher:
    """Hooks a provider's surfaces on their classes, and restores them exactly."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self._applied: list[tuple[Any, str, Any]] = []  # (class or module, name, original)

    @property
    def active(self) -> bool:
        return bool(self._applied)

    def apply(self) -> list[Surface]:
        """Patch every surface the installed SDK has; returns the gaps (after warning once each)."""
        gaps: list[Surface] = []
        for surface in self.provider.surfaces():
            module_name, _, qualname = surface.owner.partition(":")
            try:
                module: Any = importlib.import_module(module_name)
            except ImportError:
                continue  # the SDK predates this feature
            owner: Any = module
            for part in qualname.split(".") if qualname else ():  # no class: a module-level function
                owner = getattr(owner, part, None)
                if owner is None:
                    break
            if not isinstance(owner, (type, ModuleType)) or not callable(getattr(owner, surface.method, None)):
                if surface.required:
                    gaps.append(surface)
                continue
            original = owner.__dict__.get(surface.method)
            wrapt.wrap_function_wrapper(owner, surface.method, self.provider.hook(surface))
            self._applied.append((owner, surface.method, original))
        for surface in gaps:
            warn_once(
                f"gap:{surface.label}",
                f"rewind could not hook {surface.label} ({surface.name}): the installed "
                f"{self.provider.package} SDK's layout moved, so calls through it are neither "
                "recorded nor replayed. Upgrade rewind or pin a tested SDK version.",
                PatchGapWarning,
                stacklevel=4,
            )
        gap = self.provider.kit.revival_gap() if self._applied else None
        if gap is not None:
            warn_once(
                f"canary:{self.provider.package}",
                f"{gap}: replayed responses will be served as dicts rather than SDK types.",
                PatchGapWarning,
                stacklevel=4,
            )
        return gaps

    def revert(self) -> None:
        while self._applied:
            owner, method, original = self._applied.pop()
            if original is None:
                try:
                    delattr(owner, method)
                except AttributeError:
                    pass
            else:
                setattr(owner, method, original)
