"""One hooked SDK call, live or replayed: ``Invocation``.

Built by ``Provider.invocation`` once the interception core has decided the call is a
step (``rewind.engine.core.begin_call``). Live, ``adopt`` records the result (a model,
or a recording proxy in place of a stream or raw HTTP wrapper) and ``failed`` the error;
a failure in that bookkeeping abandons the step and never changes what the agent gets,
except a failing redactor or an unwritable trace, which the agent is told about.
Replaying, ``replay`` revives the recorded event into the SDK's own types (raw wrappers
over an in-memory HTTP response, streams over the recorded chunks) or raises the
recorded error, bound to the request the SDK would have sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rewind.data.http_error import bind_request
from rewind.engine.core import Call
from rewind.errors import RedactionError, TraceWriteError

from ._chunk_shape import check_stream
from ._stainless import sse_bytes
from ._streams import AsyncRaw, RecordEngine, ReplayEngine, SyncRaw, stream_proxy

if TYPE_CHECKING:
    from ._surface import Surface


class Invocation:
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
