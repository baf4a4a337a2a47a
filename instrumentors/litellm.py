"""``LiteLLMInstrumentor``: records and replays ``litellm`` calls, whichever provider they reach.

Hooked (module-level functions, so the hook replaces the module attribute):

* ``litellm.completion`` / ``litellm.acompletion``, ``stream=True`` too (a
  ``CustomStreamWrapper`` read with ``for`` / ``async for``);
* ``litellm.embedding`` / ``litellm.aembedding``;

each on the ``litellm`` module and on ``litellm.main``, where litellm defines them. Every
caller that looks the function up when it calls covers: ``litellm.completion(...)``,
``from litellm import completion`` executed after patching, ``litellm.Router`` (it calls
``getattr(litellm, "acompletion")``), smolagents' ``LiteLLMModel``, DSPy, CrewAI,
LangChain's ``ChatLiteLLM``, and litellm's own helpers (``text_completion``,
``completion_with_retries``, ``batch_completion``) that call ``completion`` inside. A name
bound by ``from litellm import completion`` BEFORE patching keeps the unpatched function.

One agent call is one step: the hooked call runs with the shared ``_NESTED`` marker set, so
what litellm does inside it (``acompletion`` calling ``completion``, the ``openai`` SDK call
it makes for OpenAI-compatible models, its own retries) passes through, whether or not
``patch_openai()`` is active too. At replay nothing below the hook runs: no network, no
litellm callbacks, no cost-map lookups.

Replay serves litellm's own objects: a ``ModelResponse`` / ``EmbeddingResponse`` with the
private state agents read (``_hidden_params`` such as ``response_cost``,
``_response_headers``, ``_response_ms``), and for streams a ``CustomStreamWrapper``
(``isinstance`` holds) yielding ``ModelResponseStream`` chunks. Credentials (``api_key``,
``aws_secret_access_key``, any ``*_token`` …), endpoints and transport settings
(``api_base``, ``extra_headers``, ``timeout``, ``num_retries`` …) and litellm's call
plumbing (``metadata``, ``litellm_logging_obj``, ``litellm_call_id`` …) are never part of a
call's identity nor written anywhere (the private state litellm keeps on a response echoes
some of them: those entries are dropped, and so is any string holding a value the call
was given).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import wrapt

from rewind.data.canonical import to_jsonable
from rewind.data.http_error import bind_request, public_url
from rewind.engine.providers import ProviderSpec

from ._errors import ReplayedHTTPResponse
from ._instrumentor import SurfaceInstrumentor
from ._kit import Kit
from ._litellm_faults import litellm_faults
from ._litellm_state import REQUEST_ECHOES as REQUEST_ECHOES
from ._litellm_state import (
    CallCredentials,
    clean_hidden,
    not_the_request,
    private_state,
    restore_state,
    scrub,
    secret_values,
    stream_state,
)
from ._openai_compat import OpenAICompatibleProvider
from ._stainless import keep_headers, resolve
from ._streams import AsyncStream, RecordEngine, ReplayEngine, SyncStream, _finish_quietly, _redacted
from ._surface import NativeProvider, Surface, _Invocation, schema_of

_STREAM = "litellm.litellm_core_utils.streaming_handler:CustomStreamWrapper"
_RESPONSE = "litellm.types.utils:ModelResponse"
_CHUNK = "litellm.types.utils:ModelResponseStream"
_EMBEDDING = "litellm.types.utils:EmbeddingResponse"
_CONVERTER = "litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response:convert_to_model_response_object"
_OLD_CONVERTER = "litellm.utils:convert_to_model_response_object"
_CONVERTED = {"ModelResponse": "completion", "EmbeddingResponse": "embedding"}
_UNSET: Any = object()


#: litellm's provider names that differ from ``gen_ai.provider.name`` well-known values.
_SEMCONV_PROVIDERS = {
    "text-completion-openai": "openai",
    "azure": "azure.ai.openai",
    "azure_text": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "cohere_chat": "cohere",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
    "fireworks_ai": "fireworks",
}


def _model_dump(model: Any) -> Any:
    try:
        # litellm's models hold values their declared types do not: pydantic would warn.
        return model.model_dump(warnings=False)
    except TypeError:  # pydantic before 2.? has no warnings=
        return model.model_dump()


def _same_attributes(obj: Any, recorded: Any, rebuilt: Any) -> None:
    """Give ``obj`` the attributes the recorded dump has where its own dump differs."""
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict) or not isinstance(recorded, dict) or not isinstance(rebuilt, dict):
        return
    for key in [k for k in rebuilt if k not in recorded and k in fields]:
        try:
            delattr(obj, key)
        except Exception:
            pass
    for key, value in recorded.items():
        if value is None and key not in rebuilt:
            try:
                setattr(obj, key, None)
            except Exception:
                pass


# --------------------------------------------------------------------------- kit and provider


class LiteLLMKit(Kit):
    """litellm's response types: pydantic models built from keyword arguments, one stream class."""

    def __init__(self) -> None:
        import httpx  # litellm's own HTTP library: replayed errors get case-insensitive headers

        self.httpx = httpx
        self.stream_type: Any = resolve(_STREAM)
        self._converter: Any = _UNSET

    def is_stream(self, obj: Any) -> bool:
        return self.stream_type is not None and isinstance(obj, self.stream_type)

    def parse(self, type_: Any, data: Any) -> Any:
        convert = self.converter
        kind = _CONVERTED.get(getattr(type_, "__name__", ""))
        if convert is None or kind is None or not isinstance(data, dict):
            return type_(**data)  # stream chunks: what litellm builds them with
        # litellm's converter from OpenAI-shaped dicts (what its OpenAI-compatible routes
        # and its cache build responses with). Other routes build them their own way, and
        # litellm deletes optional attributes it considers unset: the revived object gets
        # exactly the recorded ones.
        revived = convert(response_object=data, model_response_object=type_(), response_type=kind)
        if kind == "completion":
            again = _model_dump(revived)
            if again != data:
                _same_attributes(revived, data, again)
                for choice, recorded, rebuilt in zip(revived.choices, data.get("choices") or (), again["choices"]):
                    _same_attributes(choice, recorded, rebuilt)
                    if isinstance(recorded, dict) and isinstance(rebuilt, dict):
                        message = getattr(choice, "message", None)
                        _same_attributes(message, recorded.get("message"), rebuilt.get("message"))
        return revived

    @property
    def converter(self) -> Any:
        if self._converter is _UNSET:
            self._converter = resolve(_CONVERTER) or resolve(_OLD_CONVERTER)
        return self._converter

    def revival_gap(self) -> str | None:
        if resolve(_RESPONSE) is None:
            return "rewind found no litellm.types.utils.ModelResponse"
        return None

    def replayed_stream(self, state: Any, kwargs: Mapping[str, Any]) -> Any:
        """A ``CustomStreamWrapper`` that never reads: the replayed chunks come from rewind.

        Built without ``__init__`` (which needs litellm's live logging object); it carries
        the attributes an agent reads from a live one before iterating.
        """
        cls = self.stream_type
        if cls is None:
            return iter(())
        wrapper = cls.__new__(cls)
        state = state if isinstance(state, Mapping) else {}
        wrapper.__dict__.update(
            model=state.get("model", kwargs.get("model")),
            custom_llm_provider=state.get("custom_llm_provider"),
            completion_stream=None,
            logging_obj=None,
            stream_options=kwargs.get("stream_options"),
            messages=kwargs.get("messages"),
            response_id=None,
            chunks=[],
            _closed=False,
            _hidden_params={},
            _response_headers=None,
        )
        restore_state(wrapper, state)
        return wrapper


class LiteLLMProvider(OpenAICompatibleProvider, NativeProvider):
    """litellm speaks the OpenAI chat/embeddings shapes whichever provider answers."""

    name = "litellm"  # a fallback: spans name the provider litellm routes to
    package = "litellm"

    def __init__(self) -> None:
        super().__init__()
        self._routes: dict[tuple[Any, Any], tuple[str, Any]] = {}
        self._positional: dict[str, tuple[str, ...]] = {}

    def make_kit(self) -> Kit:
        return LiteLLMKit()

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        for module in ("litellm", "litellm.main"):
            for method, is_async in (("completion", False), ("acompletion", True)):
                rows.append(
                    Surface(
                        module,
                        method,
                        "litellm.completion",  # one identity for sync and async, like the SDK hooks
                        operation="chat",
                        path="/chat/completions",
                        result=_RESPONSE,
                        chunk=_CHUNK,
                        is_async=is_async,
                        provider=self,
                    )
                )
            for method, is_async in (("embedding", False), ("aembedding", True)):
                rows.append(
                    Surface(
                        module,
                        method,
                        "litellm.embedding",
                        operation="embeddings",
                        path="/embeddings",
                        result=_EMBEDDING,
                        is_async=is_async,
                        provider=self,
                    )
                )
        return rows

    def invocation(self, surface: Surface, call: Any, instance: Any, kwargs: Mapping[str, Any]) -> _Invocation:
        call.credential_source = CallCredentials(instance, kwargs)  # read only if the call fails
        return LiteLLMInvocation(surface, call, instance, kwargs)

    # -- identity -----------------------------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if args:
            # completion("gpt-4o", messages) and completion(model="gpt-4o", messages=...)
            # are the same request.
            names = self._positional_names(surface)
            for name, value in zip(names, args):
                if not not_the_request(name):
                    out[name] = value
            if len(args) > len(names):
                out["args"] = list(args[len(names) :])
        for key, value in kwargs.items():
            if not_the_request(key):
                continue
            out[key] = schema_of(value) if isinstance(value, type) else value
        return out

    def _positional_names(self, surface: Surface) -> tuple[str, ...]:
        names = self._positional.get(surface.method)
        if names is None:
            names = _parameter_names(resolve(f"litellm.main:{surface.method}"))
            if not names and surface.method.startswith("a"):  # aembedding(*args, **kwargs)
                names = _parameter_names(resolve(f"litellm.main:{surface.method[1:]}"))
            self._positional[surface.method] = names
        return names

    # -- telemetry ----------------------------------------------------------------------
    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        provider, model = self._route(request.get("model"), request.get("custom_llm_provider"))
        attrs: dict[str, Any] = {"gen_ai.operation.name": surface.operation, "gen_ai.provider.name": provider}
        if isinstance(model, str) and model:
            attrs["gen_ai.request.model"] = model
        attrs.update(self.request_attributes(surface, request))
        name = f"{surface.operation} {model}" if isinstance(model, str) and model else surface.operation
        return name, attrs

    def _route(self, model: Any, custom: Any) -> tuple[str, Any]:
        """``gen_ai.provider.name`` and the provider's model name for a litellm model string."""
        if not isinstance(model, str):
            return "litellm", None
        key = (model, custom if isinstance(custom, str) else None)
        route = self._routes.get(key)
        if route is None:
            route = _resolve_route(*key)
            if len(self._routes) < 1024:  # agents use a handful of models: a bounded cache
                self._routes[key] = route
        return route

    # -- recording ----------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        if not callable(getattr(result, "model_dump", None)):
            return to_jsonable(result, where="response")
        return to_jsonable(_model_dump(result), where="response")

    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return self.dump(surface, chunk)

    # -- revival ------------------------------------------------------------------------
    def revive_chunk(self, surface: Surface, data: Any, chunk_type: Any = None) -> Any:
        if isinstance(data, dict) and (chunk_type == "ModelResponse" or self.type_of(_CHUNK) is None):
            # Older litellm (1.5x's sync streams) yields ModelResponse(stream=True) chunks,
            # built by the constructor (the converter is for whole responses).
            try:
                return self.type_of(_RESPONSE)(**{**data, "stream": True})
            except Exception as exc:
                self._fallback(_RESPONSE, f"{type(exc).__name__}: {exc}")
                return data
        return self.construct(surface.chunk, data)

    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = super().error_record(exc)
        # litellm keeps the provider's response headers (retry-after …) here; its own
        # e.response may be a stand-in without them.
        headers = getattr(exc, "litellm_response_headers", None)
        if headers:
            record["litellm_response_headers"] = keep_headers(headers)
        target = _request_target(exc, self.kit.httpx)
        if target is not None:
            record["request_target"] = target
        return record

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        exc = super().revive_error(record, step)
        headers = record.get("litellm_response_headers")
        if isinstance(headers, Mapping):
            value: Any = self.kit.httpx.Headers(dict(headers))
        else:
            response = exc.__dict__.get("response")
            value = response.headers if isinstance(response, ReplayedHTTPResponse) else None
        if value is not None:
            try:
                exc.litellm_response_headers = value  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
        return exc


def _request_target(exc: BaseException, httpx: Any) -> list[str] | None:
    """The method and URL (credentials in the query removed) of the request ``exc``'s
    response answered, when it carries one."""
    try:
        request = exc.response.request  # type: ignore[attr-defined]
        return [str(request.method), str(public_url(httpx, str(request.url)))]
    except Exception:  # no response, or an httpx response never bound to a request
        return None


#: Stands for the call's ``api_base`` in a recorded request URL (an endpoint is never recorded).
_API_BASE = "{api_base}"


def _relative_target(record: dict[str, Any], kwargs: Mapping[str, Any]) -> None:
    """Write the recorded request URL relative to the call's ``api_base``, so no endpoint is kept."""
    target, base = record.get("request_target"), kwargs.get("api_base") or kwargs.get("base_url")
    if isinstance(target, list) and isinstance(base, str) and base and target[1].startswith(base.rstrip("/")):
        target[1] = _API_BASE + target[1][len(base.rstrip("/")) :]


def _bind_target(exc: BaseException, record: Mapping[str, Any], kwargs: Mapping[str, Any], httpx: Any) -> BaseException:
    """A replayed error's response made a real httpx one bound to the request litellm sent
    (``api_base`` from the replaying call): handlers (smolagents', dspy's, a user's) read
    ``e.response.request`` and ``e.request`` as they did live."""
    target = record.get("request_target")
    if not (isinstance(target, list) and len(target) == 2 and all(isinstance(p, str) for p in target)):
        return exc
    method, url = target
    if url.startswith(_API_BASE):
        base = kwargs.get("api_base") or kwargs.get("base_url")
        if not isinstance(base, str):
            return exc
        url = base.rstrip("/") + url[len(_API_BASE) :]
    if "[redacted by rewind]" in url:
        return exc
    return bind_request(exc, httpx, method, url)


def _parameter_names(function: Any) -> tuple[str, ...]:
    if function is None:
        return ()
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return ()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in parameters if p.kind in positional)


def _resolve_route(model: Any, custom: Any) -> tuple[str, Any]:
    if not isinstance(model, str):
        return "litellm", model
    try:
        from litellm import get_llm_provider

        name, provider, _key, _base = get_llm_provider(
            model=model, custom_llm_provider=custom if isinstance(custom, str) else None
        )
    except Exception:  # a model litellm cannot route: the live call fails the same way
        return "litellm", model
    if not isinstance(provider, str) or not provider:
        return "litellm", model
    return _SEMCONV_PROVIDERS.get(provider, provider), name if isinstance(name, str) else model


# --------------------------------------------------------------------------- one call


class _StreamRecorder(RecordEngine):
    """Also keeps the chunks' private state: the first chunk's in full, then what changed.

    litellm repeats most of ``_hidden_params`` (response headers …) on every chunk; only a
    timestamp and, at the end, usage differ.
    """

    def __init__(self, call: Any, surface: Surface, stream_state: dict[str, Any], secrets: frozenset[str]) -> None:
        super().__init__(call, surface)
        self._state: dict[str, Any] = {"stream": stream_state}
        self.extra["litellm"] = self._state
        self._first: Mapping[Any, Any] = {}
        self._secrets = secrets

    def take(self, item: Any) -> Any:
        self._last = (item, len(self.chunks))
        try:
            self._keep_state(item, len(self.chunks))
        except Exception:  # private state is a nicety; the chunks are the record
            pass
        return super().take(item)

    def finish(self, *, complete: bool, exc: BaseException | None = None) -> None:
        last = self.__dict__.pop("_last", None)
        if last is not None and not self.finished and last[1] > 0:
            # litellm fills the final chunk's usage in once the stream ends: what the agent
            # holds by now is what it reads.
            try:
                self._keep_state(*last)
            except Exception:
                pass
        if self._secrets and not self.finished:
            self.extra["litellm"] = scrub(self._state, self._secrets)
        super().finish(complete=complete, exc=exc)

    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = super().error_record(exc)
        return scrub(record, self._secrets) if self._secrets else record

    def _keep_state(self, item: Any, index: int) -> None:
        hidden = getattr(item, "_hidden_params", None)
        if index == 0:
            self._first = dict(hidden) if isinstance(hidden, Mapping) else {}
            self._state["chunk"] = private_state(item)
            self._state["chunk_type"] = type(item).__name__
            return
        if not isinstance(hidden, Mapping):
            return
        first = self._first
        changed = {k: v for k, v in hidden.items() if k not in first or first[k] != v}
        gone = [k for k in first if k not in hidden]
        if changed or gone:
            diff: dict[str, Any] = {"hidden_params": clean_hidden(changed)}
            if gone:
                diff["gone"] = [str(k) for k in gone]
            self._state.setdefault("chunks", {})[str(index)] = diff
        else:
            self._state.get("chunks", {}).pop(str(index), None)


def _chunk_reviver(provider: LiteLLMProvider, surface: Surface, state: Mapping[str, Any]) -> Any:
    """Revives recorded chunk ``i`` with the private state chunk ``i`` had."""
    first: Mapping[str, Any] = state.get("chunk") or {}
    diffs: Mapping[str, Any] = state.get("chunks") or {}
    if not isinstance(first, Mapping) or not isinstance(diffs, Mapping):  # a hand-edited trace
        first, diffs = {}, {}
    position = iter(range(sys.maxsize))
    chunk_type = state.get("chunk_type")

    def revive(data: Any) -> Any:
        chunk = provider.revive_chunk(surface, data, chunk_type)
        own = diffs.get(str(next(position)))
        if isinstance(own, Mapping) and isinstance(first.get("hidden_params"), dict):
            hidden = {**first["hidden_params"], **(own.get("hidden_params") or {})}
            for key in own.get("gone") or ():
                hidden.pop(key, None)
            restore_state(chunk, {**first, "hidden_params": hidden})
        else:
            restore_state(chunk, first)
        return chunk

    return revive


class _SyncStream(SyncStream):
    """An older ``CustomStreamWrapper`` (1.5x, 1.60) has no ``close``: closing then only ends the step."""

    def close(self) -> None:
        _finish_quietly(self._self_engine, complete=False)
        close = getattr(self.__wrapped__, "close", None)
        if callable(close):
            close()


class _AsyncStream(AsyncStream):
    """``CustomStreamWrapper`` closes asynchronously through ``aclose`` (``close`` is sync)."""

    async def close(self) -> None:
        _finish_quietly(self._self_engine, complete=False)
        wrapped = self.__wrapped__
        aclose = getattr(wrapped, "aclose", None)
        if callable(aclose):
            await aclose()
            return
        close = getattr(wrapped, "close", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result


def _stream_proxy(wrapped: Any, engine: RecordEngine | ReplayEngine, *, is_async: bool) -> Any:
    # One class serves both: whether the agent reads it with async for is the function's.
    return _AsyncStream(wrapped, engine) if is_async else _SyncStream(wrapped, engine)


class LiteLLMInvocation(_Invocation):
    """A litellm call: responses carry private state, and one stream class serves sync and async."""

    __slots__ = ()

    def failed(self, exc: BaseException) -> None:
        try:
            error = self.surface.provider.error_record(exc) if isinstance(exc, Exception) else None
            if error is not None:
                _relative_target(error, self.kwargs)
            secrets = secret_values(self.kwargs)
            if error is not None and secrets:  # litellm error texts may quote what they were given
                error = scrub(error, secrets)
            self.call.fail(exc, error=error)
        except Exception:  # the agent's exception matters, not ours
            self.call.abandon(exc)

    def _adopt(self, result: Any) -> Any:
        surface, call = self.surface, self.call
        provider = surface.provider
        if provider.kit.is_stream(result):
            engine = _StreamRecorder(call, surface, stream_state(result), secret_values(self.kwargs))
            return _stream_proxy(result, engine, is_async=surface.is_async)
        data = provider.dump(surface, result)
        state = private_state(result)
        secrets = secret_values(self.kwargs)
        if secrets and state:  # a belt to the braces above: wherever litellm echoed them
            state = scrub(state, secrets)
        call.succeed(
            data,
            extra=_redacted(call, {"litellm": state}) if state else None,
            attributes=provider.response_attributes(surface, data) if call.annotating else None,
            converted=True,
        )
        return result

    def replay(self) -> Any:
        call, surface = self.call, self.surface
        provider = surface.provider
        event = call.take_served()
        stream_record = event.get("stream")
        state = event.get("litellm")
        state = state if isinstance(state, Mapping) else {}
        if not event.ok and stream_record is None:
            error = event.error or {}
            call.raise_recorded_error(
                event, _bind_target(provider.revive_error(error, event.seq), error, self.kwargs, provider.kit.httpx)
            )
        if stream_record is not None:
            assert isinstance(provider, LiteLLMProvider)
            engine = ReplayEngine(call, surface, event, _chunk_reviver(provider, surface, state))
            kit = provider.kit
            assert isinstance(kit, LiteLLMKit)
            wrapper = kit.replayed_stream(state.get("stream"), self.kwargs)
            return _stream_proxy(wrapper, engine, is_async=surface.is_async)
        data = event.response
        revived = provider.revive(surface, data, self.kwargs)
        restore_state(revived, state)
        call.end_replayed(provider.response_attributes(surface, data) if call.annotating else None)
        return revived


PROVIDER = LiteLLMProvider()


class LiteLLMInstrumentor(SurfaceInstrumentor):
    """Records and replays ``litellm`` calls (``rewind_litellm`` entry point).

    litellm takes seconds to import (and fetches its model cost map over the network
    unless ``LITELLM_LOCAL_MODEL_COST_MAP=True``), so instrumenting never imports it: if
    it is not imported yet, the hooks go in right after the program imports it.
    """

    provider = PROVIDER
    sdk = "litellm"
    minimum = "1.53.1"

    def _instrument(self, **kwargs: Any) -> None:
        if "litellm" in sys.modules:
            super()._instrument(**kwargs)
            return
        if importlib.util.find_spec("litellm") is None:
            raise ModuleNotFoundError("No module named 'litellm'", name="litellm")  # the loader skips us
        self.__dict__["_rewind_armed"] = True
        if not self.__dict__.get("_rewind_hook"):
            self.__dict__["_rewind_hook"] = True
            wrapt.register_post_import_hook(self._imported, "litellm")

    def _imported(self, module: Any) -> None:
        if not self.__dict__.get("_rewind_armed"):
            return  # uninstrumented before the program imported litellm
        try:
            super()._instrument()
        except Exception:  # never break the program's import (a PatchGapWarning made an error)
            pass

    def _uninstrument(self, **kwargs: Any) -> None:
        self.__dict__["_rewind_armed"] = False
        super()._uninstrument(**kwargs)


_REQUEST_ECHOES = REQUEST_ECHOES  # tests and older callers read it from here


DECLARATION = ProviderSpec(
    name="litellm",
    sdk="litellm",
    instrumentor="rewind.instrumentors.litellm:LiteLLMInstrumentor",
    faults=litellm_faults(PROVIDER.error_record),
)
