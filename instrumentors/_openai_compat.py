"""What every OpenAI-shaped API has in common, for the SDKs that speak it.

``openai`` itself and the Stainless-generated SDKs of OpenAI-compatible services
(``groq``, ``together``, ``fireworks-ai``) send the same chat-completions and embeddings
payloads. What that wire format implies for rewind lives here once:

* ``Route``: one SDK method on the sync resource class and its ``Async`` twin, the
  provider-independent half of a ``Surface`` row;
* ``OpenAICompatibleProvider``: a ``Provider`` whose ``surfaces()`` expand its ``routes``
  table, with the GenAI request attributes of OpenAI-style parameters, usage details,
  embedding dimensions, and how ``chat.completion.chunk`` payloads add up to a completion.

A provider module is then a table: ``name``, ``package`` and its ``routes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._surface import Provider, Surface, parameter_attributes


@dataclass(frozen=True)
class Route:
    """One hooked method on ``module:cls`` and on ``module:Async<cls>``.

    ``name`` is the recorded call name (replay identity), the other fields are the
    ``Surface`` fields of the same name.
    """

    module: str
    cls: str
    method: str
    name: str
    operation: str
    path: str
    result: str
    chunk: str | None = None
    sse_named: bool = False
    sse_done: bool = False
    parsed: bool = False
    required: bool = True

    def surfaces(self, provider: Provider) -> list[Surface]:
        return [
            Surface(
                f"{self.module}:{prefix}{self.cls}",
                self.method,
                self.name,
                operation=self.operation,
                path=self.path,
                result=self.result,
                chunk=self.chunk,
                is_async=is_async,
                required=self.required,
                parsed=self.parsed,
                sse_named=self.sse_named,
                sse_done=self.sse_done,
                provider=provider,
            )
            for is_async, prefix in ((False, ""), (True, "Async"))
        ]


def chat_route(module: str, cls: str, name: str, *, path: str, result: str, chunk: str, **more: Any) -> Route:
    """``create`` on a chat-completions resource (``stream=True`` answers with SSE ending in ``[DONE]``)."""
    return Route(module, cls, "create", name, "chat", path, result, chunk=chunk, sse_done=True, **more)


def embeddings_route(module: str, cls: str, name: str, *, path: str, result: str, **more: Any) -> Route:
    """``create`` on an embeddings resource."""
    return Route(module, cls, "create", name, "embeddings", path, result, **more)


#: Request parameters that map one to one onto GenAI span attributes.
_REQUEST_SCALARS = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("seed", "gen_ai.request.seed"),
)


class OpenAICompatibleProvider(Provider):
    """A ``Provider`` for an SDK speaking the OpenAI chat-completions/embeddings wire format."""

    #: The table: every hooked method of the SDK.
    routes: ClassVar[Sequence[Route]] = ()

    def surfaces(self) -> Sequence[Surface]:
        return [surface for route in self.routes for surface in route.surfaces(self)]

    # -- telemetry --------------------------------------------------------------------
    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        return request_attributes(request)

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        # The core already reports id, model, input/output tokens and chat finish reasons.
        if not isinstance(data, dict):
            return {}
        attrs: dict[str, Any] = {}
        usage = data.get("usage")
        if isinstance(usage, dict):
            attrs.update(usage_detail_attributes(usage))
        if surface.operation == "embeddings":
            dimensions = embedding_dimensions(data)
            if dimensions is not None:
                attrs["gen_ai.embeddings.dimension.count"] = dimensions
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        return accumulate_chat(chunks)


def request_attributes(request: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI request attributes of OpenAI-style chat/embeddings parameters."""
    attrs = parameter_attributes(request, _REQUEST_SCALARS, stop="stop")
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        if isinstance(request.get(key), int):
            attrs["gen_ai.request.max_tokens"] = request[key]
            break
    n = request.get("n")
    if isinstance(n, int) and n != 1:
        attrs["gen_ai.request.choice.count"] = n
    if request.get("stream") is True:
        attrs["gen_ai.request.stream"] = True
    fmt = request.get("encoding_format")
    if isinstance(fmt, str):
        attrs["gen_ai.request.encoding_formats"] = [fmt]
    output = output_type(request)
    if output is not None:
        attrs["gen_ai.output.type"] = output
    return attrs


def output_type(request: Mapping[str, Any]) -> str | None:
    """``gen_ai.output.type`` of a request: ``json`` for JSON modes and schemas, else ``text``."""
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


def usage_detail_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Cached and reasoning tokens (the core reports input and output tokens)."""
    attrs: dict[str, Any] = {}
    input_details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details")
    if isinstance(input_details, dict) and isinstance(input_details.get("cached_tokens"), int):
        attrs["gen_ai.usage.cache_read.input_tokens"] = input_details["cached_tokens"]
    output_details = usage.get("output_tokens_details") or usage.get("completion_tokens_details")
    if isinstance(output_details, dict) and isinstance(output_details.get("reasoning_tokens"), int):
        attrs["gen_ai.usage.reasoning.output_tokens"] = output_details["reasoning_tokens"]
    return attrs


def embedding_dimensions(data: Mapping[str, Any]) -> int | None:
    items = data.get("data")
    if isinstance(items, list) and items and isinstance(items[0], dict):
        vector = items[0].get("embedding")
        if isinstance(vector, list):
            return len(vector)
    return None


def completion_head(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``chat.completion`` envelope (id, created, model …) of a stream's first chunk; no choices yet."""
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
    return summary


def accumulate_chat(chunks: list[Any]) -> dict[str, Any] | None:
    """The ``chat.completion`` a list of ``chat.completion.chunk`` payloads adds up to."""
    summary = completion_head(chunks)
    if summary is None:
        return None
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict):
                _add_choice_delta(choices, choice)
    summary["choices"] = [_finished_choice(choices[index]) for index in sorted(choices)]
    if usage is not None:
        summary["usage"] = usage
    return summary


def _add_choice_delta(choices: dict[int, dict[str, Any]], choice: Mapping[str, Any]) -> None:
    index = int(choice.get("index") or 0)
    slot = choices.setdefault(index, {"index": index, "role": None, "content": [], "tools": {}, "finish_reason": None})
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


def _finished_choice(slot: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": slot["role"] or "assistant",
        "content": "".join(slot["content"]) if slot["content"] else None,
    }
    if slot["tools"]:
        message["tool_calls"] = [slot["tools"][i] for i in sorted(slot["tools"])]
    if "function_call" in slot:
        message["function_call"] = slot["function_call"]
    return {"index": slot["index"], "message": message, "finish_reason": slot["finish_reason"]}
