"""``GeminiInstrumentor``: records and replays the ``google-genai`` SDK (Gemini API and Vertex AI).

Hooked surfaces, sync (``client.models``) and async (``client.aio.models``), class-level:

* ``generate_content`` and ``generate_content_stream``, at the SDK's per-request layer
  (``Models._generate_content`` / ``_generate_content_stream``). The public methods stay
  the SDK's own, so everything they do around the request runs as usual on replay:
  automatic function calling (AFC) calls your Python tools between model turns (each
  model turn is one step; decorate the tools with ``@rewind.tool`` to record them too),
  automatic continuation, ``chats`` sessions, ``automatic_function_calling_history``;
* ``embed_content``.

Replay revives ``GenerateContentResponse`` / ``EmbedContentResponse`` the way the SDK
does (``_from_response``), so ``.text``, ``.function_calls`` and ``.parsed`` (with a
``response_schema``) work; streams yield ``GenerateContentResponse`` chunks from the SDK's
own generator. The request identity is ``model``, ``contents`` and ``config`` without
``config.http_options`` (headers, base URL, timeouts: transport, and where an API key
passed per call would sit); Python functions given as tools are identified by name.

The SDK is neither Stainless- nor Speakeasy-generated: this module brings a small kit
(``_kit``) and its error handling (``errors.ClientError`` / ``ServerError`` keep
``code``, ``status``, ``message`` and ``details`` on replay, whichever HTTP library the
client used).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rewind.data.canonical import to_jsonable
from rewind.data.http_error import is_secret_header
from rewind.engine.providers import Failure, Faults, ProviderSpec

from ._errors import add_response, error_record, revive_error
from ._fault_records import located, read_timeout, record, response, transport_dropped
from ._instrumentor import SurfaceInstrumentor
from ._kit import ASYNC_GENERATORS, GENERATORS, Kit
from ._surface import BindingFields, NativeProvider, Surface, parameter_attributes, schema_of, url_server_attributes

_MODELS = "google.genai.models"
_RESPONSE = "google.genai.types:GenerateContentResponse"
_EMBEDDING = "google.genai.types:EmbedContentResponse"
#: Fields of a response object the SDK derives client-side: never recorded, recomputed on replay.
_DERIVED = ("parsed",)


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
    ("max_output_tokens", "gen_ai.request.max_tokens"),
    ("seed", "gen_ai.request.seed"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
    ("candidate_count", "gen_ai.request.choice.count"),
    ("output_dimensionality", "gen_ai.embeddings.dimension.count"),
)


def _http_module() -> Any:
    """The httpx the SDK's clients are built on: ``httpx2`` (pydantic's fork, a namespace of
    its own) where google-genai picks it by default, else ``httpx``; ``None`` for 1.0, which
    talked to the API through requests. A replayed error's response is of the live one's type."""
    try:
        from google.genai import _api_client

        backend = _api_client._get_http_client_backend(None)
    except Exception:  # releases before the httpx2 backend
        backend = "httpx"
    for name in (backend, "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


class GoogleKit(Kit):
    """The ``google-genai`` core: generator streams, pydantic types revived with ``_from_response``."""

    def __init__(self) -> None:
        self.httpx = _http_module()

    def is_stream(self, obj: Any) -> bool:
        return isinstance(obj, GENERATORS + ASYNC_GENERATORS)

    def is_async_stream(self, obj: Any) -> bool:
        return isinstance(obj, ASYNC_GENERATORS)

    def parse(self, type_: Any, data: Any) -> Any:
        return revive_model(type_, data, {})


def revive_model(type_: Any, data: Any, config: Mapping[str, Any]) -> Any:
    """``data`` as the SDK's ``_from_response`` builds it (``parsed`` included, given the config)."""
    from_response = getattr(type_, "_from_response", None)
    if from_response is None:
        return type_.model_validate(data)
    return from_response(response=data, kwargs={"config": dict(config)} if config else {})


class GeminiProvider(NativeProvider):
    """What is Gemini-specific about recording and replaying ``google-genai``."""

    name = "gcp.gemini"
    package = "google.genai"
    transport_keys = frozenset()

    def make_kit(self) -> Kit:
        return GoogleKit()

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        for is_async, prefix in ((False, ""), (True, "Async")):
            owner = f"{_MODELS}:{prefix}Models"
            common: BindingFields = {"is_async": is_async, "provider": self}
            rows += [
                Surface(
                    owner,
                    "_generate_content",
                    "gemini.models.generate_content",
                    operation="generate_content",
                    path="/models/{model}:generateContent",
                    result=_RESPONSE,
                    **common,
                ),
                Surface(
                    owner,
                    "_generate_content_stream",
                    "gemini.models.generate_content_stream",
                    operation="generate_content",
                    path="/models/{model}:streamGenerateContent",
                    result=_RESPONSE,
                    chunk=_RESPONSE,
                    **common,
                ),
                Surface(
                    owner,
                    "embed_content",
                    "gemini.models.embed_content",
                    operation="embeddings",
                    path="/models/{model}:batchEmbedContents",
                    result=_EMBEDDING,
                    **common,
                ),
            ]
        return rows

    # -- identity -------------------------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        out = super().request(surface, instance, args, kwargs)
        config = config_identity(out.pop("config", None))
        if config:  # no config, None and one holding only transport options are the same call
            out["config"] = config
        return out

    # -- telemetry --------------------------------------------------------------------
    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        name, attrs = super().span(surface, instance, request)
        if getattr(getattr(instance, "_api_client", None), "vertexai", False):
            attrs["gen_ai.provider.name"] = "gcp.vertex_ai"
        return name, attrs

    def request_url(self, surface: Surface, instance: Any, kwargs: Mapping[str, Any]) -> str | None:
        """``<base URL><API version>/models/<model>:<method>``, as ``BaseApiClient`` joins it."""
        api: Any = getattr(instance, "_api_client", None)
        options = getattr(api, "_http_options", None)
        base, version, model = (
            getattr(options, "base_url", None),
            getattr(options, "api_version", None),
            kwargs.get("model"),
        )
        if getattr(api, "vertexai", False) or not (
            isinstance(base, str) and isinstance(version, str) and isinstance(model, str)
        ):
            return None  # Vertex AI's paths name the project and location: the shared join
        try:
            from google.genai import _transformers

            model = _transformers.t_model(api, model)
        except Exception:  # an SDK without the helper: the name as given
            pass
        url = base.rstrip("/") + "/" + version + surface.path.replace("/models/{model}", "/" + model.lstrip("/"))
        return url + ("?alt=sse" if surface.method == "_generate_content_stream" else "")

    def server_attributes(self, instance: Any) -> dict[str, Any]:
        options = getattr(getattr(instance, "_api_client", None), "_http_options", None)
        # A dict on 1.0, an HttpOptions model later.
        base_url = options.get("base_url") if isinstance(options, Mapping) else getattr(options, "base_url", None)
        return url_server_attributes(base_url)

    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        config = request.get("config")
        attrs: dict[str, Any] = {}
        if surface.method == "_generate_content_stream":
            attrs["gen_ai.request.stream"] = True
        if not isinstance(config, dict):
            return attrs
        attrs.update(parameter_attributes(config, _SAMPLING, stop="stop_sequences"))
        mime = config.get("response_mime_type")
        if isinstance(mime, str):
            attrs["gen_ai.output.type"] = "json" if mime == "application/json" else "text"
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return {}
        attrs: dict[str, Any] = {}
        if isinstance(data.get("responseId"), str):
            attrs["gen_ai.response.id"] = data["responseId"]
        if isinstance(data.get("modelVersion"), str):
            attrs["gen_ai.response.model"] = data["modelVersion"]
        reasons = [c.get("finishReason") for c in data.get("candidates") or [] if isinstance(c, dict)]
        reasons = [r for r in reasons if isinstance(r, str)]
        if reasons:
            attrs["gen_ai.response.finish_reasons"] = reasons
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            for key, attr in (
                ("promptTokenCount", "gen_ai.usage.input_tokens"),
                ("candidatesTokenCount", "gen_ai.usage.output_tokens"),
                ("cachedContentTokenCount", "gen_ai.usage.cache_read.input_tokens"),
                ("thoughtsTokenCount", "gen_ai.usage.reasoning.output_tokens"),
            ):
                if isinstance(usage.get(key), int):
                    attrs[attr] = usage[key]
        embeddings = data.get("embeddings")
        if isinstance(embeddings, list) and embeddings and isinstance(embeddings[0], dict):
            values = embeddings[0].get("values")
            if isinstance(values, list):
                attrs["gen_ai.embeddings.dimension.count"] = len(values)
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return accumulate_response(chunks)

    # -- recording ------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        return dump_response(result)

    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return dump_response(chunk)

    # -- revival --------------------------------------------------------------------
    def revive(self, surface: Surface, data: Any, kwargs: Mapping[str, Any]) -> Any:
        type_ = self.type_of(surface.result)
        if type_ is None or not isinstance(data, dict):
            return super().revive(surface, data, kwargs)
        config = kwargs.get("config")
        schema = {key: _config_value(config, key) for key in ("response_schema", "response_json_schema")}
        try:
            return revive_model(type_, data, {k: v for k, v in schema.items() if v is not None})
        except Exception as exc:  # any revival failure degrades to the dict
            self._fallback(surface.result, f"{type(exc).__name__}: {exc}")
            return data

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = error_record(exc)
        details = getattr(exc, "details", None)
        if details is not None:
            record["details"] = to_jsonable(details)
        # aiohttp responses (async clients) have no status_code/text: the error's own fields tell it.
        headers = getattr(getattr(exc, "response", None), "headers", None)
        add_response(record, getattr(exc, "code", None), headers, lambda: json.dumps(record.get("details")))
        return record

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        exc = revive_error(record, step, httpx=self.kit.httpx)
        # google-genai's APIError has no ``e.request`` (the response carries it): none on replay.
        vars(exc).pop("request", None)
        if "details" in record:
            try:
                exc.details = record["details"]  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
        return exc


def _config_value(config: Any, key: str) -> Any:
    if isinstance(config, Mapping):
        return config.get(key)
    return getattr(config, key, None)


def config_identity(config: Any) -> Any:
    """A generate/embed ``config`` as identity: transport dropped, tools and schemas as data."""
    if config is None:
        return None
    if hasattr(config, "model_dump") and not isinstance(config, type):
        try:
            config = config.model_dump(exclude_none=True)
        except Exception:  # an odd config is identified by what to_jsonable makes of it
            return config
    if not isinstance(config, Mapping):
        return config
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("http_options", "httpOptions") or value is None:
            continue
        out[key] = _identity_value(value)
    return out


def _identity_value(value: Any) -> Any:
    if isinstance(value, type):
        return schema_of(value)  # response_schema=MyModel
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return {"function": f"{value.__module__}.{value.__qualname__}"}  # a Python tool (AFC)
    if isinstance(value, Mapping):
        return {str(k): _identity_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_identity_value(v) for v in value]
    if hasattr(value, "model_dump") and not isinstance(value, type):
        try:
            return _identity_value(value.model_dump(exclude_none=True))
        except Exception:
            return value
    return value


def dump_response(result: Any) -> Any:
    """Wire-shaped JSON of a response object: API (camelCase) names, set fields, no derived ones."""
    dump = getattr(result, "model_dump", None)
    if not callable(dump):
        return to_jsonable(result)
    data = dump(mode="json", by_alias=True, exclude_none=True, exclude=set(_DERIVED))
    http = data.get("sdkHttpResponse")
    if isinstance(http, dict) and isinstance(http.get("headers"), dict):
        # Names keep their case (aiohttp clients report them as sent): the revived object is equal.
        http["headers"] = {k: v for k, v in http["headers"].items() if not is_secret_header(str(k))}
    return data


def accumulate_response(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``GenerateContentResponse`` a list of streamed chunks adds up to (texts joined)."""
    dicts = [c for c in chunks if isinstance(c, dict)]
    if not dicts:
        return None
    summary: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    role = "model"
    finish: Any = None
    for chunk in dicts:
        for key in ("responseId", "modelVersion", "usageMetadata", "createTime"):
            if chunk.get(key) is not None:
                summary[key] = chunk[key]
        for candidate in (chunk.get("candidates") or [])[:1]:
            if not isinstance(candidate, dict):
                continue
            finish = candidate.get("finishReason") or finish
            content: dict[str, Any] = candidate["content"] if isinstance(candidate.get("content"), dict) else {}
            role = content.get("role") or role
            for part in content.get("parts") or []:
                if not isinstance(part, dict):
                    continue
                last = parts[-1] if parts else None
                if (
                    isinstance(part.get("text"), str)
                    and last is not None
                    and isinstance(last.get("text"), str)
                    and bool(last.get("thought")) == bool(part.get("thought"))
                    and len(last) == (2 if "thought" in last else 1)
                ):
                    last["text"] += part["text"]  # consecutive text parts read as one
                else:
                    parts.append(dict(part))
    candidate_out: dict[str, Any] = {"content": {"role": role, "parts": parts}, "index": 0}
    if finish is not None:
        candidate_out["finishReason"] = finish
    summary["candidates"] = [candidate_out]
    return summary


PROVIDER = GeminiProvider()

#: The oldest google-genai release the test suite is run against (compat/gemini.txt).
MINIMUM_SDK = "1.0"


class GeminiInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through ``google-genai`` (``rewind_gemini`` entry point)."""

    provider = PROVIDER
    sdk = "google.genai"
    distribution = "google-genai"
    minimum = MINIMUM_SDK


# --------------------------------------------------------------------------- provider faults

_CLIENT_MODULES = ("google.genai._api_client",)
_GOOGLE_STATUS = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_GOOGLE_WORDING = {
    "rate_limit": "Resource has been exhausted (e.g. check quota).",
    "server_error": "An internal error has occurred. Please retry.",
    "overloaded": "The model is overloaded. Please try again later.",  # what the Gemini API says
}


def _fault(failure: Failure) -> dict[str, Any]:
    """google-genai: ``errors.ClientError`` (4xx) / ``ServerError`` (5xx) with ``code``, ``status``, ``details``."""
    if failure.fault == "timeout":
        if failure.in_async and _async_over_aiohttp():
            return record("builtins", "TimeoutError", "")  # aiohttp's total timeout, as asyncio raises it
        return read_timeout(*_CLIENT_MODULES)
    status = _GOOGLE_STATUS[failure.status]
    error: dict[str, Any] = {"code": failure.status, "message": _GOOGLE_WORDING[failure.fault], "status": status}
    if failure.retry_after is not None and failure.fault == "rate_limit":
        # The API's own back-off hint: a google.rpc.RetryInfo detail ("30s").
        delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{failure.retry_after}s"}
        error["details"] = [delay]
    details = {"error": error}
    qualname = "ClientError" if failure.status < 500 else "ServerError"
    module, qualname = located(f"google.genai.errors:{qualname}")
    return record(
        module,
        qualname,
        f"{failure.status} {status}. {details}",
        attrs={"message": error["message"], "status": status, "code": failure.status},
        response=response(failure.status, failure, json.dumps(details)),
        details=details,
    )


def _async_over_aiohttp() -> bool:
    """google-genai's async client talks through aiohttp whenever aiohttp is installed (newer releases)."""
    try:
        client = sys.modules.get(_CLIENT_MODULES[0]) or importlib.import_module(_CLIENT_MODULES[0])
    except Exception:
        return False
    return vars(client).get("has_aiohttp") is True


def _dropped(failure: Failure) -> dict[str, Any]:
    if failure.in_async and _async_over_aiohttp():
        module, qualname = located("aiohttp.client_exceptions:ClientPayloadError")
        message = (
            "Response payload is not completed: <TransferEncodingError: 400, "
            "message='Not enough data to satisfy transfer length header.'>"
        )
        return record(module, qualname, message)
    return transport_dropped(*_CLIENT_MODULES)


# google-genai reads either key, and warns when both are set: a placeholder goes into one only when neither is.
DECLARATION = ProviderSpec(
    name="gemini",
    sdk="google.genai",
    instrumentor="rewind.instrumentors.gemini:GeminiInstrumentor",
    keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    faults=Faults(_fault, _dropped),
)
