"""``AnthropicInstrumentor``: records and replays the ``anthropic`` SDK.

Hooked surfaces (sync and async, class-level, so every client, subclass and ``base_url``
is covered):

* ``messages.create`` (``stream=True`` too), and through it ``with_raw_response`` and
  ``with_streaming_response``; ``messages.parse`` and ``messages.count_tokens`` where the
  SDK has them;
* the ``messages.stream(...)`` helper: the SDK's own ``MessageStream`` is kept and fed the
  raw event stream, so ``text_stream``, ``get_final_message()`` and ``get_final_text()``
  (and every derived event) replay exactly as they ran;
* the same on the beta namespace (``beta.messages.create`` / ``.stream`` / ``.parse`` /
  ``.count_tokens``), which pydantic-ai and the SDK's own tool runner call.

The wrapping machinery is shared (``_surface``); this module is the table and what is
Anthropic-specific: the deferred request inside a stream manager, how raw events add up
to a message, usage with cache tokens, and the SDK's own OpenTelemetry call span.

The SDK's call span
-------------------
Recent anthropic releases start their own ``anthropic.messages.create`` span per API
call and send its trace context (``traceparent``) with the request. While rewind records
a call, that span would be a second LLM span for the same step, nested in rewind's. By
default rewind's span takes its place: the SDK gets a non-recording stand-in carrying
rewind's span context, so exactly one LLM span exists per step (live or replayed) and
``traceparent`` names rewind's span. ``AnthropicInstrumentor().instrument(sdk_spans=True)``
(or ``REWIND_ANTHROPIC_SDK_SPANS=1``) keeps the SDK's spans as children. Calls outside a
session are never touched. Headers are not part of a call's identity, so a per-run
``traceparent`` never changes a fingerprint.

On anthropic < 1.0 the ``Stream`` metaclass answers ``isinstance`` with "exactly a
``Stream``"; while instrumented it also admits rewind's proxies over real streams.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import wrapt
from opentelemetry import trace

from rewind.engine.providers import ProviderSpec
from rewind.engine.telemetry import TRACERS
from rewind.errors import PatchGapWarning, RewindWarning

from ._instrumentor import SurfaceInstrumentor
from ._stainless import dump_model, resolve
from ._stainless_faults import STAINLESS_FAULTS
from ._streams import AsyncStream, SyncStream
from ._surface import (
    BindingFields,
    EndpointFields,
    Provider,
    Surface,
    async_wrapper,
    intercepting,
    parameter_attributes,
    sync_wrapper,
    warn_once,
)

_MESSAGES = "anthropic.resources.messages"
_BETA_MESSAGES = "anthropic.resources.beta.messages"
#: Anthropic on Bedrock and on Vertex: beta ``Messages`` classes of their own that copy the
#: first-party methods at import, so hooking the first-party class never reaches them.
_PLATFORM_BETA_MESSAGES = ("anthropic.lib.bedrock._beta_messages", "anthropic.lib.vertex._beta_messages")
_PATH = "/v1/messages"

#: Environment switch for ``opentelemetry-instrument`` users, who cannot pass ``sdk_spans``.
SDK_SPANS_ENV = "REWIND_ANTHROPIC_SDK_SPANS"


#: Sampling parameters and the GenAI request attributes they become.
_SAMPLING = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
)


class AnthropicProvider(Provider):
    """What is Anthropic-specific about recording and replaying the ``anthropic`` SDK."""

    name = "anthropic"
    package = "anthropic"

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        namespaces = ((False, _MESSAGES, "anthropic.types"), (True, _BETA_MESSAGES, "anthropic.types.beta"))
        for beta, module, types in namespaces:
            prefix = "Beta" if beta else ""
            name = "anthropic.beta.messages" if beta else "anthropic.messages"
            message: EndpointFields = {
                "operation": "chat",
                "path": _PATH,
                "result": f"{types}:{prefix}Message",
                "chunk": f"{types}:{prefix}RawMessageStreamEvent",
                "sse_named": True,
            }
            modules = (module, *_PLATFORM_BETA_MESSAGES) if beta else (module,)
            for is_async, owner_module in ((a, m) for a in (False, True) for m in modules):
                owner = f"{owner_module}:{'Async' if is_async else ''}Messages"
                # The beta namespace is younger than the SDK floor's stable one, the platforms'
                # classes younger still: skipped where absent.
                first_party = owner_module == module
                common: BindingFields = {"is_async": is_async, "provider": self, "required": first_party and not beta}
                optional: BindingFields = {**common, "required": False}
                rows += [
                    Surface(owner, "create", f"{name}.create", **common, **message),
                    # The helper sends what create(stream=True) sends: one identity for both.
                    Surface(owner, "stream", f"{name}.create", **common, **message),
                    Surface(owner, "parse", f"{name}.parse", parsed=True, **optional, **message),
                    Surface(
                        owner,
                        "count_tokens",
                        f"{name}.count_tokens",
                        operation="count_tokens",
                        path=f"{_PATH}/count_tokens",
                        result=f"{types}:{prefix}MessageTokensCount",
                        **optional,
                    ),
                ]
        return rows

    def hook(self, surface: Surface) -> Callable[..., Any]:
        if surface.method == "stream":
            return _stream_helper_hook(surface)
        return super().hook(surface)

    # -- identity -------------------------------------------------------------------
    def request(
        self, surface: Surface, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        out = super().request(surface, instance, args, kwargs)
        tools = out.get("tools")
        if isinstance(tools, (list, tuple)):
            # Runnable tools (``@beta_tool``) are sent as the schema their to_dict() gives.
            out["tools"] = [_tool_param(tool) for tool in tools]
        if surface.method == "stream":
            out["stream"] = True
        return out

    # -- telemetry --------------------------------------------------------------------
    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        attrs = parameter_attributes(request, _SAMPLING, stop="stop_sequences")
        if request.get("stream") is True:
            attrs["gen_ai.request.stream"] = True
        config = request.get("output_config")
        fmt = config.get("format") if isinstance(config, dict) else None
        if request.get("output_format") is not None or (isinstance(fmt, dict) and fmt.get("type") == "json_schema"):
            attrs["gen_ai.output.type"] = "json"
        thinking = request.get("thinking")
        if isinstance(thinking, dict) and isinstance(thinking.get("type"), str):
            attrs["anthropic.thinking.type"] = thinking["type"]
        betas = request.get("betas")
        if isinstance(betas, list) and betas and all(isinstance(b, str) for b in betas):
            attrs["anthropic.beta"] = betas
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return {}
        attrs: dict[str, Any] = {}
        if isinstance(data.get("id"), str):
            attrs["gen_ai.response.id"] = data["id"]
        if isinstance(data.get("model"), str):
            attrs["gen_ai.response.model"] = data["model"]
        if isinstance(data.get("stop_reason"), str):
            attrs["gen_ai.response.finish_reasons"] = [data["stop_reason"]]
        usage = data.get("usage")
        if isinstance(usage, dict):
            attrs.update(usage_attributes(usage))
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return accumulate_message(chunks)

    # -- recording ------------------------------------------------------------------
    def dump(self, surface: Surface, result: Any) -> Any:
        data = dump_model(result)
        if surface.parsed:
            # parsed_output is derived client-side from the text: the trace keeps the wire shape.
            _drop_parsed_output(data)
        return data

    # -- revival --------------------------------------------------------------------
    def revive(self, surface: Surface, data: Any, kwargs: Mapping[str, Any]) -> Any:
        revived = super().revive(surface, data, kwargs)
        if not isinstance(revived, dict) and not hasattr(revived, "_workspace_id"):
            # The SDK stamps it beside _request_id on every parsed response, and its own
            # helpers (message threads) read it; a step does not record it.
            try:
                object.__setattr__(revived, "_workspace_id", None)
            except Exception:
                pass
        return revived

    def parse_result(self, surface: Surface, revived: Any, kwargs: Mapping[str, Any]) -> Any:
        import anthropic

        beta = surface.name.startswith("anthropic.beta.")
        parse = resolve(f"anthropic.lib._parse._response:{'parse_beta_response' if beta else 'parse_response'}")
        output_format = kwargs.get("output_format")
        if output_format is None or not isinstance(output_format, type):
            output_format = anthropic.NOT_GIVEN
        return parse(output_format=output_format, response=revived)


def usage_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI usage attributes of an Anthropic ``usage`` object.

    ``gen_ai.usage.input_tokens`` counts every input token, cached ones included, as the
    GenAI conventions ask; the API reports the uncached remainder as ``input_tokens``.
    """
    attrs: dict[str, Any] = {}
    read = usage.get("cache_read_input_tokens")
    created = usage.get("cache_creation_input_tokens")
    if isinstance(read, int):
        attrs["gen_ai.usage.cache_read.input_tokens"] = read
    if isinstance(created, int):
        attrs["gen_ai.usage.cache_creation.input_tokens"] = created
    input_tokens = usage.get("input_tokens")
    if isinstance(input_tokens, int):
        cached = (read if isinstance(read, int) else 0) + (created if isinstance(created, int) else 0)
        attrs["gen_ai.usage.input_tokens"] = input_tokens + cached
    output_tokens = usage.get("output_tokens")
    if isinstance(output_tokens, int):
        attrs["gen_ai.usage.output_tokens"] = output_tokens
    details = usage.get("output_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
        attrs["gen_ai.usage.reasoning.output_tokens"] = details["thinking_tokens"]
    return attrs


def accumulate_message(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``message`` a list of raw stream events adds up to (as far as the stream got)."""
    message: dict[str, Any] | None = None
    partial_json: dict[int, str] = {}
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        kind = chunk.get("type")
        if kind == "message_start" and isinstance(chunk.get("message"), dict):
            message = copy.deepcopy(chunk["message"])
            message["content"] = list(message.get("content") or [])
            continue
        if message is None:
            continue
        content: list[Any] = message["content"]
        index = chunk.get("index")
        if kind == "content_block_start" and isinstance(index, int) and isinstance(chunk.get("content_block"), dict):
            while len(content) <= index:
                content.append(None)
            content[index] = copy.deepcopy(chunk["content_block"])
        elif kind == "content_block_delta" and isinstance(index, int) and index < len(content):
            block, delta = content[index], chunk.get("delta")
            if isinstance(block, dict) and isinstance(delta, dict):
                _apply_delta(block, delta, partial_json, index)
        elif kind == "content_block_stop" and isinstance(index, int):
            _close_json(content, partial_json, index)
        elif kind == "message_delta":
            delta = chunk.get("delta")
            if isinstance(delta, dict):
                message.update(delta)
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                merged = dict(message.get("usage") or {})
                merged.update({k: v for k, v in usage.items() if v is not None})
                message["usage"] = merged
    if message is None:
        return None
    for index in list(partial_json):
        _close_json(message["content"], partial_json, index)
    message["content"] = [block for block in message["content"] if block is not None]
    return message


def _apply_delta(block: dict[str, Any], delta: dict[str, Any], partial_json: dict[int, str], index: int) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + str(delta.get("partial_json") or "")
    elif kind == "thinking_delta":
        block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))


def _close_json(content: list[Any], partial_json: dict[int, str], index: int) -> None:
    text = partial_json.pop(index, "")
    if not text or index >= len(content) or not isinstance(content[index], dict):
        return
    try:
        content[index]["input"] = json.loads(text)
    except ValueError:
        pass  # a stream cut off mid-arguments keeps the block's starting input


def _drop_parsed_output(data: Any) -> None:
    if isinstance(data, dict):
        for block in data.get("content") or []:
            if isinstance(block, dict):
                block.pop("parsed_output", None)


def _tool_param(tool: Any) -> Any:
    to_dict = getattr(tool, "to_dict", None)
    if isinstance(tool, dict) or not callable(to_dict):
        return tool
    try:
        return to_dict()
    except Exception:  # identity falls back to the object itself
        return tool


# --------------------------------------------------------------------------- stream helpers


def _stream_helper_hook(surface: Surface) -> Callable[..., Any]:
    """``messages.stream(...)`` returns a manager that sends its request on ``__enter__``.

    The manager and the SDK's ``MessageStream`` it builds are kept; only the request the
    manager holds is routed through rewind, so on replay ``MessageStream`` derives its
    events, ``text_stream`` and final message from the recorded raw events.
    """
    intercept = async_wrapper(surface) if surface.is_async else sync_wrapper(surface)

    def hook(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        manager = wrapped(*args, **kwargs)
        slot = next((key for key in getattr(manager, "__dict__", {}) if key.endswith("__api_request")), None)
        if slot is None:
            warn_once(
                f"gap:{surface.label}:request",
                f"rewind found no deferred request inside {type(manager).__name__} ({surface.label}): the "
                "installed anthropic SDK's stream helper changed, so its calls are neither recorded nor "
                "replayed. Use create(stream=True), upgrade rewind or pin a tested SDK version.",
                PatchGapWarning,
            )
            return manager
        original = manager.__dict__[slot]
        if surface.is_async:
            # Awaited on entry; the SDK's own request coroutine runs only if the call goes live.
            manager.__dict__[slot] = _DeferredRequest(
                lambda: intercept(lambda *a, **k: original, instance, args, kwargs), original
            )
        else:
            manager.__dict__[slot] = lambda: intercept(lambda *a, **k: original(), instance, args, kwargs)
        return manager

    return hook


class _DeferredRequest:
    """Stands in for the request coroutine an async stream manager awaits on entry.

    An object rather than a coroutine, so a manager that is never entered warns no more
    than the SDK's own would.
    """

    __slots__ = ("_original", "_send")

    def __init__(self, send: Callable[[], Any], original: Any) -> None:
        self._send = send
        self._original = original

    def __await__(self) -> Generator[Any, None, Any]:
        return self._run().__await__()

    async def _run(self) -> Any:
        try:
            return await self._send()
        finally:
            original = self._original
            if inspect.iscoroutine(original) and inspect.getcoroutinestate(original) == inspect.CORO_CREATED:
                original.close()  # replayed: the SDK's request was never needed


# --------------------------------------------------------------------------- the SDK's own span


def _rewind_call_span(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``anthropic._base_client.start_api_call_span`` while rewind records the call.

    Rewind's span is current here and is the step's LLM span; the SDK gets a stand-in
    that records nothing and propagates rewind's span context, as its own would have.
    When nothing observes rewind's spans there is none, and the SDK keeps its own (its
    per-client provider, if it has one, still gets it), as without rewind.
    """
    if not intercepting() or not TRACERS.observed():
        return wrapped(*args, **kwargs)
    context = trace.get_current_span().get_span_context()
    if not context.is_valid or kwargs.get("propagation", True) is False:
        return None  # the SDK then sends the request without a call span, as it does when tracing is off
    return trace.NonRecordingSpan(context)


def _admit_proxies(wrapped: Callable[..., Any], cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``_SyncStreamMeta.__instancecheck__`` (anthropic < 1.0) that also admits rewind's stream proxies.

    That metaclass answers ``isinstance(x, Stream)`` with "is exactly a ``Stream``", which no
    proxy can be; a proxy over a real ``Stream`` is one for every other purpose.
    """
    (candidate,) = args
    if isinstance(candidate, (SyncStream, AsyncStream)):
        return isinstance(candidate.__wrapped__, cls)
    return wrapped(*args, **kwargs)


class _SDKHook:
    """One wrapper over an SDK internal (``"module:Owner"``, attribute); absent targets are skipped."""

    def __init__(self, owner: str, attr: str, wrapper: Callable[..., Any]) -> None:
        self.owner = owner
        self.attr = attr
        self.wrapper = wrapper
        self._applied: tuple[Any, Any] | None = None

    def apply(self) -> None:
        if self._applied is not None:
            return
        owner = resolve(self.owner)
        original = getattr(owner, "__dict__", {}).get(self.attr)
        if original is None:
            return  # this SDK version has no such internal: nothing to adjust
        wrapt.wrap_function_wrapper(owner, self.attr, self.wrapper)
        self._applied = (owner, original)

    def revert(self) -> None:
        if self._applied is None:
            return
        owner, original = self._applied
        self._applied = None
        setattr(owner, self.attr, original)


#: The SDK's call span, handed to rewind's while a session records (unless kept).
_SDK_SPAN_HOOK = ("anthropic._base_client", "start_api_call_span", _rewind_call_span)
#: ``isinstance(proxy, Stream)`` on SDKs whose stream metaclass admits exact instances only.
_ISINSTANCE_HOOKS = (
    ("anthropic._streaming:_SyncStreamMeta", "__instancecheck__", _admit_proxies),
    ("anthropic._streaming:_AsyncStreamMeta", "__instancecheck__", _admit_proxies),
)


def _keep_sdk_spans(option: Any) -> bool:
    if option is not None:
        return bool(option)
    return os.environ.get(SDK_SPANS_ENV, "").strip().lower() in ("1", "true", "yes", "on", "keep")


PROVIDER = AnthropicProvider()

#: The oldest anthropic release the test suite is run against.
MINIMUM_SDK = "0.43"


class AnthropicInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through the ``anthropic`` SDK (``rewind_anthropic`` entry point).

    ``instrument(sdk_spans=True)`` keeps the SDK's own call spans (nested in rewind's) while
    a session records; by default rewind's span stands in for them. See the module docstring.
    Besides the provider's surfaces it hooks two pieces of the SDK's own machinery: its
    stream metaclass (so a replayed stream proxy passes ``isinstance``) and, unless the
    SDK's spans are kept, its call-span factory.
    """

    provider = PROVIDER
    sdk = "anthropic"
    # Older releases' stream helper re-reads the HTTP body itself: recording it would be silently wrong.
    minimum = MINIMUM_SDK

    def _instrument(self, **kwargs: Any) -> None:
        super()._instrument(**kwargs)
        patcher = self.__dict__.get("_rewind_patcher")
        if patcher is None or not patcher.active or self.__dict__.get("_rewind_hooks"):
            return
        hooks = [_SDKHook(*target) for target in _ISINSTANCE_HOOKS]
        if not _keep_sdk_spans(kwargs.get("sdk_spans")):
            hooks.append(_SDKHook(*_SDK_SPAN_HOOK))
        self._rewind_hooks = hooks
        try:
            for hook in hooks:
                hook.apply()
        except RewindWarning:
            raise  # a PatchGapWarning the user turned into an error
        except Exception as exc:  # instrumenting must never break the application
            self._uninstrument()
            warn_once(
                f"instrument:anthropic:{type(exc).__name__}",
                f"rewind could not instrument the anthropic SDK ({type(exc).__name__}: {exc}); "
                "anthropic calls will run live and unrecorded.",
                PatchGapWarning,
            )

    def _uninstrument(self, **kwargs: Any) -> None:
        for hook in reversed(self.__dict__.pop("_rewind_hooks", None) or []):
            hook.revert()
        super()._uninstrument(**kwargs)


DECLARATION = ProviderSpec(
    name="anthropic",
    sdk="anthropic",
    instrumentor="rewind.instrumentors.anthropic:AnthropicInstrumentor",
    keys=("ANTHROPIC_API_KEY",),
    faults=STAINLESS_FAULTS,
)
