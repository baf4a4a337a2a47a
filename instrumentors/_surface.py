"""The shared wrapping machinery every SDK instrumentor is built from.

A provider module (``instrumentors/openai.py``, ``anthropic.py`` …) is a table of
``Surface`` rows plus a ``Provider`` subclass holding what is really provider-specific.
Everything else lives here and in helpers this module imports from: ``_hooks`` (the
wrappers patched over SDK methods), ``_invocation`` (one hooked call, live or replayed),
``_attributes`` (shared span attributes), ``_stainless`` (the generated-SDK classes and the
in-memory HTTP objects replay builds from them), ``_streams`` (stream and raw response
proxies) and ``_errors`` (provider errors as data, raised again with a bounded
``e.response``). Provider modules import all of it from here.

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
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypedDict

import wrapt

from rewind.data.http_error import without_secrets
from rewind.engine.core import Call
from rewind.errors import PatchGapWarning, ReviveFallbackWarning

from ._attributes import parameter_attributes, server_attributes, url_server_attributes
from ._errors import error_record, revive_error
from ._hooks import async_wrapper, live_model, sync_wrapper
from ._invocation import Invocation, request_id_of
from ._kit import Kit
from ._stainless import SDKKit, dump_model, has_extras, resolve
from ._streams import NESTED as _NESTED

# Provider modules and tests import these from here: the machinery's one front door.
__all__ = [
    "TRANSPORT_KEYS",
    "BindingFields",
    "EndpointFields",
    "NativeProvider",
    "ParseBindingFields",
    "Patcher",
    "Provider",
    "Surface",
    "async_wrapper",
    "intercepting",
    "live_model",
    "parameter_attributes",
    "request_id_of",
    "schema_of",
    "server_attributes",
    "sync_wrapper",
    "url_server_attributes",
    "warn_once",
]
#: The name provider modules subclass (``Provider.invocation``).
_Invocation = Invocation

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

    def invocation(self, surface: Surface, call: Call, instance: Any, kwargs: Mapping[str, Any]) -> Invocation:
        """What runs one intercepted call live or from the recording; a provider whose calls
        return something the kit cannot describe alone (litellm's private response state,
        its one stream class for sync and async) returns an ``Invocation`` subclass."""
        return Invocation(surface, call, instance, kwargs)

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
