"""``OpenAIInstrumentor``: records and replays the ``openai`` SDK, any ``base_url``, Azure too.

Hooked surfaces (sync and async, class-level, so ``OpenAI``, ``AzureOpenAI``, subclasses
and every ``base_url`` - DeepSeek, OpenRouter, Ollama, vLLM … - are covered):

* ``chat.completions.create`` (``stream=True`` too), ``.parse``, and through them the
  ``.stream(...)`` helper, ``with_raw_response`` and ``with_streaming_response``;
  ``beta.chat.completions.parse`` on SDKs that still have it;
* ``responses.create`` (streaming and not), ``.parse``, and through them
  ``responses.stream(...)``, ``with_raw_response`` and
  ``with_streaming_response.create(stream=True)`` (what the OpenAI Agents SDK streams with);
* ``embeddings.create``.

The wrapping machinery is shared (``_surface``); this module is the table and what is
OpenAI-specific: types to revive into, client-side ``.parse`` post-processing, usage and
finish reasons, and how a stream of chunks sums up to a completion.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from rewind.errors import PatchGapWarning, RewindWarning

from ._stainless import resolve
from ._surface import BindingFields, EndpointFields, ParseBindingFields, Patcher, Provider, Surface, warn_once

_CHAT = "openai.resources.chat.completions"
_BETA_CHAT = "openai.resources.beta.chat.completions"
_RESPONSES = "openai.resources.responses"
_EMBEDDINGS = "openai.resources.embeddings"

_CHAT_RESULT = "openai.types.chat:ChatCompletion"
_CHAT_CHUNK = "openai.types.chat:ChatCompletionChunk"
_RESPONSE_RESULT = "openai.types.responses:Response"
_RESPONSE_EVENT = "openai.types.responses:ResponseStreamEvent"
_EMBEDDING_RESULT = "openai.types:CreateEmbeddingResponse"


class OpenAIProvider(Provider):
    """What is OpenAI-specific about recording and replaying the ``openai`` SDK."""

    name = "openai"
    package = "openai"

    def surfaces(self) -> Sequence[Surface]:
        rows: list[Surface] = []
        for is_async, prefix in ((False, ""), (True, "Async")):
            chat: EndpointFields = {
                "operation": "chat",
                "path": "/chat/completions",
                "result": _CHAT_RESULT,
                "chunk": _CHAT_CHUNK,
                "sse_done": True,
            }
            responses: EndpointFields = {
                "operation": "chat",
                "path": "/responses",
                "result": _RESPONSE_RESULT,
                "chunk": _RESPONSE_EVENT,
                "sse_named": True,
            }
            common: BindingFields = {"is_async": is_async, "provider": self}
            optional_parse: ParseBindingFields = {"parsed": True, "required": False, **common}
            beta_parse = parse = optional_parse
            completions, responses_cls = f"{prefix}Completions", f"{prefix}Responses"
            rows += [
                Surface(f"{_CHAT}:{completions}", "create", "openai.chat.completions.create", **common, **chat),
                Surface(f"{_CHAT}:{completions}", "parse", "openai.chat.completions.parse", **optional_parse, **chat),
                # Older SDKs kept structured output under beta; same call, same identity.
                Surface(f"{_BETA_CHAT}:{completions}", "parse", "openai.chat.completions.parse", **beta_parse, **chat),
                Surface(f"{_RESPONSES}:{responses_cls}", "create", "openai.responses.create", **common, **responses),
                Surface(f"{_RESPONSES}:{responses_cls}", "parse", "openai.responses.parse", **parse, **responses),
                Surface(
                    f"{_EMBEDDINGS}:{prefix}Embeddings",
                    "create",
                    "openai.embeddings.create",
                    operation="embeddings",
                    path="/embeddings",
                    result=_EMBEDDING_RESULT,
                    is_async=is_async,
                    provider=self,
                ),
            ]
        return rows

    # -- telemetry --------------------------------------------------------------------
    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        for key, attr in (
            ("temperature", "gen_ai.request.temperature"),
            ("top_p", "gen_ai.request.top_p"),
            ("frequency_penalty", "gen_ai.request.frequency_penalty"),
            ("presence_penalty", "gen_ai.request.presence_penalty"),
            ("seed", "gen_ai.request.seed"),
            ("service_tier", "gen_ai.openai.request.service_tier"),
        ):
            value = request.get(key)
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                attrs[attr] = value
        for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
            if isinstance(request.get(key), int):
                attrs["gen_ai.request.max_tokens"] = request[key]
                break
        n = request.get("n")
        if isinstance(n, int) and n != 1:
            attrs["gen_ai.request.choice.count"] = n
        stop = request.get("stop")
        if isinstance(stop, str):
            attrs["gen_ai.request.stop_sequences"] = [stop]
        elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
            attrs["gen_ai.request.stop_sequences"] = stop
        if request.get("stream") is True:
            attrs["gen_ai.request.stream"] = True
        fmt = request.get("encoding_format")
        if isinstance(fmt, str):
            attrs["gen_ai.request.encoding_formats"] = [fmt]
        output = _output_type(request)
        if output is not None:
            attrs["gen_ai.output.type"] = output
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return {}
        attrs: dict[str, Any] = {}
        if "choices" not in data:  # the core reports chat finish reasons itself
            reasons = _finish_reasons(data)
            if reasons:
                attrs["gen_ai.response.finish_reasons"] = reasons
        usage = data.get("usage")
        if isinstance(usage, dict):
            attrs.update(_usage_attributes(usage))
        for key, attr in (
            ("system_fingerprint", "gen_ai.openai.response.system_fingerprint"),
            ("service_tier", "gen_ai.openai.response.service_tier"),
        ):
            if isinstance(data.get(key), str):
                attrs[attr] = data[key]
        if surface.operation == "embeddings":
            items = data.get("data")
            if isinstance(items, list) and items and isinstance(items[0], dict):
                vector = items[0].get("embedding")
                if isinstance(vector, list):
                    attrs["gen_ai.embeddings.dimension.count"] = len(vector)
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        if surface.path == "/responses":
            return _responses_snapshot(chunks)
        return _accumulate_chat(chunks)

    # -- revival ------------------------------------------------------------------------
    def parse_result(self, surface: Surface, revived: Any, kwargs: Mapping[str, Any]) -> Any:
        import openai

        not_given = openai.NOT_GIVEN
        if surface.path == "/chat/completions":
            parse = resolve("openai.lib._parsing._completions:parse_chat_completion")
            return parse(
                response_format=kwargs.get("response_format", not_given),
                input_tools=kwargs.get("tools", not_given),
                chat_completion=revived,
            )
        parse = resolve("openai.lib._parsing._responses:parse_response")
        text_format = kwargs.get("text_format", not_given)
        if "parse_as" in kwargs:
            parse_as = kwargs["parse_as"]
            text_format = not_given if parse_as is None else parse_as
        tools = kwargs.get("tools", not_given)
        make_tools = resolve("openai.lib._response_resources:_make_tools") or resolve(
            "openai.resources.responses.responses:_make_tools"
        )
        if make_tools is not None and tools is not not_given:
            tools = make_tools(tools)
        return parse(text_format=text_format, input_tools=tools, response=revived)


def _output_type(request: Mapping[str, Any]) -> str | None:
    fmt = request.get("response_format")
    if isinstance(fmt, dict):
        kind = fmt.get("type")
        if kind in ("json_schema", "json_object") or "json_schema" in fmt:
            return "json"
        if kind == "text":
            return "text"
    text = request.get("text")
    if isinstance(text, dict) and isinstance(text.get("format"), dict):
        return "json" if text["format"].get("type") in ("json_schema", "json_object") else "text"
    if "text_format" in request:
        return "json"
    return None


def _finish_reasons(data: Mapping[str, Any]) -> list[str]:
    choices = data.get("choices")
    if isinstance(choices, list):
        return [c["finish_reason"] for c in choices if isinstance(c, dict) and isinstance(c.get("finish_reason"), str)]
    if data.get("object") == "response":
        details = data.get("incomplete_details")
        if isinstance(details, dict) and isinstance(details.get("reason"), str):
            return [details["reason"]]
        output = data.get("output")
        if isinstance(output, list) and any(isinstance(i, dict) and i.get("type") == "function_call" for i in output):
            return ["tool_calls"]
        if isinstance(data.get("status"), str):
            return ["stop" if data["status"] == "completed" else data["status"]]
    return []


def _usage_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Cached and reasoning tokens (the core reports input and output tokens)."""
    attrs: dict[str, Any] = {}
    input_details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details")
    if isinstance(input_details, dict) and isinstance(input_details.get("cached_tokens"), int):
        attrs["gen_ai.usage.cache_read.input_tokens"] = input_details["cached_tokens"]
    output_details = usage.get("output_tokens_details") or usage.get("completion_tokens_details")
    if isinstance(output_details, dict) and isinstance(output_details.get("reasoning_tokens"), int):
        attrs["gen_ai.usage.reasoning.output_tokens"] = output_details["reasoning_tokens"]
    return attrs


def _accumulate_chat(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``chat.completion`` a list of ``chat.completion.chunk`` payloads adds up to."""
    head = next((c for c in chunks if isinstance(c, dict)), None)
    if head is None:
        return None
    summary: dict[str, Any] = {
        "id": head.get("id"),
        "object": "chat.completion",
        "created": head.get("created"),
        "model": head.get("model"),
    }
    for key in ("system_fingerprint", "service_tier"):
        if head.get(key) is not None:
            summary[key] = head[key]
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            index = int(choice.get("index") or 0)
            slot = choices.setdefault(
                index, {"index": index, "role": None, "content": [], "tools": {}, "finish_reason": None}
            )
            delta = choice.get("delta") or {}
            if isinstance(delta.get("role"), str):
                slot["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                slot["content"].append(delta["content"])
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):  # the pre-tools function calling API
                function = slot.setdefault("function_call", {"name": "", "arguments": ""})
                function["name"] += legacy.get("name") or ""
                function["arguments"] += legacy.get("arguments") or ""
            for call in delta.get("tool_calls") or []:
                fresh = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                tool = slot["tools"].setdefault(int(call.get("index") or 0), fresh)
                if call.get("id"):
                    tool["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    tool["function"]["name"] += function["name"]
                if function.get("arguments"):
                    tool["function"]["arguments"] += function["arguments"]
            if choice.get("finish_reason") is not None:
                slot["finish_reason"] = choice["finish_reason"]
    summary["choices"] = []
    for index in sorted(choices):
        slot = choices[index]
        message: dict[str, Any] = {
            "role": slot["role"] or "assistant",
            "content": "".join(slot["content"]) if slot["content"] else None,
        }
        if slot["tools"]:
            message["tool_calls"] = [slot["tools"][i] for i in sorted(slot["tools"])]
        if "function_call" in slot:
            message["function_call"] = slot["function_call"]
        summary["choices"].append({"index": index, "message": message, "finish_reason": slot["finish_reason"]})
    if usage is not None:
        summary["usage"] = usage
    return summary


def _responses_snapshot(chunks: list[Any]) -> dict[str, Any] | None:
    """The latest ``Response`` snapshot a Responses event stream carried (the final one when complete)."""
    for chunk in reversed(chunks):
        if isinstance(chunk, dict) and isinstance(chunk.get("response"), dict):
            return chunk["response"]
    return None


PROVIDER = OpenAIProvider()


class OpenAIInstrumentor(BaseInstrumentor):
    """Records and replays calls made through the ``openai`` SDK (``rewind_openai`` entry point)."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("openai >= 1.40",)

    def _instrument(self, **kwargs: Any) -> None:
        import openai  # noqa: F401 - a missing SDK raises ModuleNotFoundError: the loader skips us

        patcher = getattr(self, "_rewind_patcher", None)
        if patcher is None:
            patcher = self._rewind_patcher = Patcher(PROVIDER)
        if patcher.active:
            return
        try:
            patcher.apply()
        except RewindWarning:
            raise  # a PatchGapWarning the user turned into an error
        except Exception as exc:  # instrumenting must never break the application
            patcher.revert()
            warn_once(
                f"instrument:{type(exc).__name__}",
                f"rewind could not instrument the openai SDK ({type(exc).__name__}: {exc}); "
                "openai calls will run live and unrecorded.",
                PatchGapWarning,
            )

    def _uninstrument(self, **kwargs: Any) -> None:
        patcher = getattr(self, "_rewind_patcher", None)
        if patcher is not None:
            patcher.revert()
