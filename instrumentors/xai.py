"""``XAIInstrumentor``: records and replays the ``xai_sdk`` chat API (gRPC), sync and async.

xAI's SDK is a stateful builder: ``chat = client.chat.create(model=...)``,
``chat.append(user(...))``, and only ``chat.sample()`` / ``.stream()`` / ``.parse()`` /
``.sample_batch()`` / ``.stream_batch()`` send anything, as one ``GetCompletionsRequest``
protobuf over gRPC. rewind hooks exactly there: every chat built while the hook is
installed gets its gRPC stub wrapped, so

* the identity of a step is the request protobuf the builder produced at that moment
  (``MessageToDict`` of it: model, messages, tools, sampling settings) - the API key
  travels in gRPC metadata and never enters it;
* a response is recorded as the JSON form of ``GetChatCompletionResponse`` (streams: one
  event holding every ``GetChatCompletionChunk``), and replayed by parsing it back into
  the SDK's own protobuf classes - the SDK then builds its ``Response`` / ``Chunk``
  objects from them exactly as it does live (``.content``, ``.tool_calls``, ``.usage``,
  accumulation across chunks, structured ``parse``);
* a failed call replays as the recorded ``grpc.RpcError`` class with working
  ``code()`` / ``details()``; replay needs no server and no network.

The stub is wrapped when a chat is constructed (``BaseChat.__init__``), so clients built
before patching are covered; a chat object created before patching is not. Deferred
completions (``chat.defer``) and stored-completion lookups are not hooked.

The gRPC plumbing is xAI's own; each call then takes the shared path of every provider
(``_surface.sync_wrapper`` / ``async_wrapper`` and ``_Invocation``: record, replay,
errors; ``_streams``: chunk-by-chunk recording, truncation, replay), with the
``Provider`` strategy saying what is xAI's (protobuf dump and revival, stream summary,
gRPC errors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from rewind.data.replayed_error import decode_error, encode_error
from rewind.engine.core import Call
from rewind.engine.providers import Failure, Faults, ProviderSpec
from rewind.errors import PatchGapWarning

from ._fault_records import located, record
from ._kit import Kit
from ._streams import RecordEngine, stream_proxy
from ._surface import Provider, Surface, _Invocation, async_wrapper, parameter_attributes, sync_wrapper, warn_once

_RESPONSE = "xai_sdk.proto:chat_pb2.GetChatCompletionResponse"
_CHUNK = "xai_sdk.proto:chat_pb2.GetChatCompletionChunk"

#: Protobuf finish reasons as the GenAI conventions spell them.
_FINISH = {
    "REASON_STOP": "stop",
    "REASON_TOOL_CALLS": "tool_calls",
    "REASON_MAX_LEN": "length",
    "REASON_MAX_CONTEXT": "length",
    "REASON_TIME_LIMIT": "timeout",
}


def _to_dict(message: Any) -> Any:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message, preserving_proto_field_name=True)


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("seed", "gen_ai.request.seed"),
)


class XAIProvider(Provider):
    """What is xAI-specific: protobuf payloads, chunk accumulation, gRPC errors."""

    name = "xai"
    package = "xai_sdk"

    def make_kit(self) -> Kit:
        return Kit()  # protobuf payloads: no HTTP wrappers; streams are told apart by surface

    def surfaces(self) -> Sequence[Surface]:
        return ()  # hooked per chat (see XAIInstrumentor), not per class

    def invocation(self, surface: Surface, call: Call, instance: Any, kwargs: Mapping[str, Any]) -> _Invocation:
        return _XAIInvocation(surface, call, instance, kwargs)

    # -- identity and telemetry -----------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The ``GetCompletionsRequest`` protobuf the chat builder produced, as JSON."""
        return _to_dict(args[0] if args else kwargs["request"])

    def span(self, surface: Surface, instance: Any, request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "xai"}
        model = request.get("model")
        if isinstance(model, str) and model:
            attrs["gen_ai.request.model"] = model
        attrs.update(parameter_attributes(request, _SAMPLING))
        n = request.get("n")
        if isinstance(n, int) and n > 1:
            attrs["gen_ai.request.choice.count"] = n
        if surface.chunk is not None:
            attrs["gen_ai.request.stream"] = True
        return (f"chat {model}" if isinstance(model, str) and model else "chat"), attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return {}
        reasons = [
            _FINISH.get(str(output.get("finish_reason")), str(output.get("finish_reason")).lower())
            for output in data.get("outputs") or ()
            if isinstance(output, dict) and output.get("finish_reason")
        ]
        return {"gen_ai.response.finish_reasons": reasons} if reasons else {}

    # -- payloads -------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        return _to_dict(result)

    def dump_chunk(self, surface: Surface, chunk: Any) -> Any:
        return _to_dict(chunk)

    def construct(self, type_path: str | None, data: Any) -> Any:
        from google.protobuf.json_format import ParseDict

        try:
            return ParseDict(data, self.type_of(type_path)(), ignore_unknown_fields=True)
        except Exception as exc:  # the installed SDK's protobufs no longer fit: serve the dict
            self._fallback(type_path, f"{type(exc).__name__}: {exc}")
            return data

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        """The ``GetChatCompletionResponse`` (as JSON) a list of chunks adds up to."""
        head = next((c for c in chunks if isinstance(c, dict)), None)
        if head is None:
            return None
        summary: dict[str, Any] = {k: head[k] for k in ("id", "model", "created", "system_fingerprint") if k in head}
        outputs: dict[int, dict[str, Any]] = {}
        for chunk in chunks:
            if not isinstance(chunk, dict):
                continue
            if isinstance(chunk.get("usage"), dict):
                summary["usage"] = chunk["usage"]
            for output in chunk.get("outputs") or ():
                index = int(output.get("index") or 0)
                slot = outputs.setdefault(index, {"index": index, "message": {"content": ""}})
                delta = output.get("delta") or {}
                message = slot["message"]
                message["content"] += delta.get("content") or ""
                if delta.get("role"):
                    message["role"] = delta["role"]
                if delta.get("tool_calls"):
                    message.setdefault("tool_calls", []).extend(delta["tool_calls"])
                if output.get("finish_reason"):
                    slot["finish_reason"] = output["finish_reason"]
        summary["outputs"] = [outputs[i] for i in sorted(outputs)]
        return summary

    # -- errors ---------------------------------------------------------------------
    def error_record(self, exc: Exception) -> dict[str, Any]:
        record = encode_error(exc)
        code, details = _call_method(exc, "code"), _call_method(exc, "details")
        if code is not None:
            record["grpc"] = {"code": getattr(code, "name", str(code)), "details": str(details or "")}
        return record

    def revive_error(self, record: Mapping[str, Any], step: int) -> BaseException:
        record = dict(record)
        if str(record.get("module", "")).startswith("grpc.") and record.get("qualname") != "AioRpcError":
            # grpc's private call classes need live channel state (even in __del__): the
            # public base class is what agents catch.
            record.update(module="grpc", qualname="RpcError")
        exc = decode_error(record, step)
        status = record.get("grpc")
        if isinstance(status, Mapping):
            _give_status(exc, str(status.get("code") or "UNKNOWN"), str(status.get("details") or ""))
        return exc


def _call_method(exc: BaseException, name: str) -> Any:
    method = getattr(exc, name, None)
    if not callable(method):
        return None
    try:
        return method()
    except Exception:
        return None


def _give_status(exc: BaseException, code_name: str, details: str) -> None:
    """``code()`` / ``details()`` and friends on a replayed ``grpc.RpcError``, as live."""
    import grpc

    code = getattr(grpc.StatusCode, code_name, grpc.StatusCode.UNKNOWN)
    methods: dict[str, Callable[[], Any]] = {
        "code": lambda: code,
        "details": lambda: details,
        "initial_metadata": lambda: (),
        "trailing_metadata": lambda: (),
        "debug_error_string": lambda: f"replayed by rewind: {code_name}: {details}",
    }
    # Public methods for grpc.RpcError, private fields for grpc.aio.AioRpcError's own methods.
    fields: dict[str, Any] = {**methods, "_code": code, "_details": details, "_initial_metadata": ()}
    fields.update(_trailing_metadata=(), _debug_error_string=methods["debug_error_string"]())
    for name, value in fields.items():
        try:
            object.__setattr__(exc, name, value)
        except (AttributeError, TypeError):
            pass


PROVIDER = XAIProvider()

_UNARY = Surface(
    owner="xai_sdk.proto.chat_pb2_grpc:ChatStub",
    method="GetCompletion",
    name="xai.chat.completion",
    operation="chat",
    path="/xai_api.v1.Chat/GetCompletion",
    result=_RESPONSE,
    required=False,
    provider=PROVIDER,
)
#: The same step streamed: one recorded call name for both RPCs.
_STREAM = dataclasses.replace(
    _UNARY, method="GetCompletionChunk", path="/xai_api.v1.Chat/GetCompletionChunk", chunk=_CHUNK
)


_ASYNC_UNARY = dataclasses.replace(_UNARY, is_async=True)
_ASYNC_STREAM = dataclasses.replace(_STREAM, is_async=True)

# --------------------------------------------------------------------------- one call


class _XAIInvocation(_Invocation):
    """The shared call path; a streaming RPC is told by its surface, not by the kit."""

    __slots__ = ()

    def _adopt(self, result: Any) -> Any:
        surface = self.surface
        if surface.chunk is None:
            return super()._adopt(result)
        # An aio streaming call is iterated through the async generator it hands out.
        source = result.__aiter__() if surface.is_async else result
        return stream_proxy(source, RecordEngine(self.call, surface), is_async=surface.is_async)


#: The shared wrappers per (RPC, aio stub). An aio stub's streaming call is made without
#: ``await`` (the agent iterates it), so its wrapper is the synchronous one.
_HOOKS: dict[tuple[str, bool], Callable[..., Any]] = {
    ("GetCompletion", False): sync_wrapper(_UNARY),
    ("GetCompletion", True): async_wrapper(_ASYNC_UNARY),
    ("GetCompletionChunk", False): sync_wrapper(_STREAM),
    ("GetCompletionChunk", True): sync_wrapper(_ASYNC_STREAM),
}


class _ChatStub(wrapt.ObjectProxy):
    """A chat's gRPC stub whose completion calls are rewind steps; everything else passes through."""

    def __init__(self, stub: Any, is_async: bool) -> None:
        super().__init__(stub)
        self._self_async = is_async

    def GetCompletion(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self._self_rpc("GetCompletion", request, args, kwargs)

    def GetCompletionChunk(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self._self_rpc("GetCompletionChunk", request, args, kwargs)

    def _self_rpc(self, method: str, request: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        original = getattr(self.__wrapped__, method)
        if not PROVIDER_STATE.enabled:
            return original(request, *args, **kwargs)
        return _HOOKS[method, self._self_async](original, self, (request, *args), kwargs)


class _State:
    enabled = False


PROVIDER_STATE = _State()


def _wrap_stub(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    result = wrapped(*args, **kwargs)
    try:
        stub = instance.__dict__.get("_stub")
        if stub is not None and not isinstance(stub, _ChatStub):
            from xai_sdk.aio.chat import Chat as AsyncChat

            instance._stub = _ChatStub(stub, is_async=isinstance(instance, AsyncChat))
    except Exception:  # never break the agent's chat
        pass
    return result


class XAIInstrumentor(BaseInstrumentor):
    """Records and replays ``xai_sdk`` chat completions (``rewind_xai`` entry point)."""

    minimum = "1.4"  # the first release that reaches a plaintext (loopback) endpoint, which the tests need

    def instrumentation_dependencies(self) -> Collection[str]:
        return (f"xai-sdk >= {self.minimum}",)

    def _instrument(self, **kwargs: Any) -> None:
        import xai_sdk.chat  # a missing SDK raises ModuleNotFoundError: the loader skips us

        base = getattr(xai_sdk.chat, "BaseChat", None)
        if base is None or "__init__" not in vars(base):
            warn_once(
                "gap:xai_sdk.chat.BaseChat",
                "rewind could not hook xai_sdk.chat.BaseChat: the installed xai-sdk's layout moved, so "
                "xAI chat calls are neither recorded nor replayed. Pin a tested xai-sdk version.",
                PatchGapWarning,
            )
            return
        if not isinstance(vars(base)["__init__"], wrapt.FunctionWrapper):
            self._rewind_original = vars(base)["__init__"]
            wrapt.wrap_function_wrapper(base, "__init__", _wrap_stub)
        PROVIDER_STATE.enabled = True

    def _uninstrument(self, **kwargs: Any) -> None:
        import xai_sdk.chat

        PROVIDER_STATE.enabled = False  # chats already built pass straight through from now on
        original = self.__dict__.get("_rewind_original")
        if original is not None:
            xai_sdk.chat.BaseChat.__init__ = original
            self._rewind_original = None


# --------------------------------------------------------------------------- provider faults

_GRPC = {
    "rate_limit": ("RESOURCE_EXHAUSTED", "Rate limit exceeded. Please try again later."),
    "server_error": ("INTERNAL", "Internal server error."),
    "overloaded": ("UNAVAILABLE", "The service is overloaded. Please try again later."),
    "timeout": ("DEADLINE_EXCEEDED", "Deadline Exceeded"),
    "connection_reset": ("UNAVAILABLE", "Socket closed"),  # gRPC reports a dropped connection as UNAVAILABLE
}


def _fault(failure: Failure) -> dict[str, Any]:
    """xai-sdk (gRPC): the channel's ``RpcError`` with ``code()`` / ``details()``."""
    code, details = _GRPC[failure.fault]
    # A sync channel raises its private _InactiveRpcError (replayed as grpc.RpcError), grpc.aio AioRpcError.
    module, qualname = located("grpc.aio:AioRpcError") if failure.in_async else ("grpc._channel", "_InactiveRpcError")
    message = (
        f"<{qualname} of RPC that terminated with:\n"
        f'\tstatus = StatusCode.{code}\n\tdetails = "{details}"\n\tdebug_error_string = "{code}:{details}"\n>'
    )
    return record(module, qualname, message, grpc={"code": code, "details": details})


DECLARATION = ProviderSpec(
    name="xai",
    sdk="xai_sdk",
    instrumentor="rewind.instrumentors.xai:XAIInstrumentor",
    frames=("xai_sdk", "grpc"),
    faults=Faults(_fault, _fault),
)
