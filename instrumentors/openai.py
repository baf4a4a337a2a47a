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

The wrapping machinery is shared (``_surface``), and so is what the OpenAI wire format
implies (``_openai_compat``: request attributes, usage, how chunks add up); this module
is the table and what only ``openai`` has: the Responses API, client-side ``.parse``
post-processing, and the ``gen_ai.openai.*`` attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewind.engine.providers import ProviderSpec

from ._instrumentor import SurfaceInstrumentor
from ._openai_compat import (
    OpenAICompatibleProvider,
    Route,
    accumulate_chat,
    chat_route,
    embeddings_route,
    request_attributes,
)
from ._stainless import resolve
from ._stainless_faults import STAINLESS_FAULTS
from ._surface import Surface

_CHAT = "openai.resources.chat.completions"
_BETA_CHAT = "openai.resources.beta.chat.completions"
_RESPONSES = "openai.resources.responses"

_CHAT_FIELDS: dict[str, Any] = {
    "path": "/chat/completions",
    "result": "openai.types.chat:ChatCompletion",
    "chunk": "openai.types.chat:ChatCompletionChunk",
}
_RESPONSE_FIELDS: dict[str, Any] = {
    "operation": "chat",
    "path": "/responses",
    "result": "openai.types.responses:Response",
    "chunk": "openai.types.responses:ResponseStreamEvent",
    "sse_named": True,
}
#: ``.parse`` surfaces post-process the wire response; newer than the SDK floor, so optional.
_PARSE: dict[str, Any] = {"parsed": True, "required": False}


class OpenAIProvider(OpenAICompatibleProvider):
    """What is OpenAI-specific about recording and replaying the ``openai`` SDK."""

    name = "openai"
    package = "openai"
    routes = (
        chat_route(_CHAT, "Completions", "openai.chat.completions.create", **_CHAT_FIELDS),
        Route(
            _CHAT,
            "Completions",
            "parse",
            "openai.chat.completions.parse",
            "chat",
            sse_done=True,
            **_CHAT_FIELDS,
            **_PARSE,
        ),
        # Older SDKs kept structured output under beta; same call, same identity.
        Route(
            _BETA_CHAT,
            "Completions",
            "parse",
            "openai.chat.completions.parse",
            "chat",
            sse_done=True,
            **_CHAT_FIELDS,
            **_PARSE,
        ),
        Route(_RESPONSES, "Responses", "create", "openai.responses.create", **_RESPONSE_FIELDS),
        Route(_RESPONSES, "Responses", "parse", "openai.responses.parse", **_RESPONSE_FIELDS, **_PARSE),
        embeddings_route(
            "openai.resources.embeddings",
            "Embeddings",
            "openai.embeddings.create",
            path="/embeddings",
            result="openai.types:CreateEmbeddingResponse",
        ),
    )

    # -- telemetry --------------------------------------------------------------------
    def request_attributes(self, surface: Surface, request: Mapping[str, Any]) -> dict[str, Any]:
        attrs = request_attributes(request)
        if isinstance(request.get("service_tier"), str):
            attrs["gen_ai.openai.request.service_tier"] = request["service_tier"]
        return attrs

    def response_attributes(self, surface: Surface, data: Any) -> dict[str, Any]:
        attrs = super().response_attributes(surface, data)
        if not isinstance(data, dict):
            return attrs
        if "choices" not in data:  # the core reports chat finish reasons itself
            reasons = _response_finish_reasons(data)
            if reasons:
                attrs["gen_ai.response.finish_reasons"] = reasons
        for key, attr in (
            ("system_fingerprint", "gen_ai.openai.response.system_fingerprint"),
            ("service_tier", "gen_ai.openai.response.service_tier"),
        ):
            if isinstance(data.get(key), str):
                attrs[attr] = data[key]
        return attrs

    def stream_summary(self, surface: Surface, chunks: list[Any]) -> Any:
        if surface.path == "/responses":
            return _responses_snapshot(chunks)
        return accumulate_chat(chunks)

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


def _response_finish_reasons(data: Mapping[str, Any]) -> list[str]:
    """Finish reasons of a Responses API ``response`` (chat completions carry their own)."""
    if data.get("object") != "response":
        return []
    details = data.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return [details["reason"]]
    output = data.get("output")
    if isinstance(output, list) and any(isinstance(i, dict) and i.get("type") == "function_call" for i in output):
        return ["tool_calls"]
    if isinstance(data.get("status"), str):
        return ["stop" if data["status"] == "completed" else data["status"]]
    return []


def _responses_snapshot(chunks: list[Any]) -> dict[str, Any] | None:
    """The latest ``Response`` snapshot a Responses event stream carried (the final one when complete)."""
    for chunk in reversed(chunks):
        if isinstance(chunk, dict) and isinstance(chunk.get("response"), dict):
            return chunk["response"]
    return None


PROVIDER = OpenAIProvider()


class OpenAIInstrumentor(SurfaceInstrumentor):
    """Records and replays calls made through the ``openai`` SDK (``rewind_openai`` entry point)."""

    provider = PROVIDER
    sdk = "openai"
    minimum = "1.40"


DECLARATION = ProviderSpec(
    name="openai",
    sdk="openai",
    instrumentor="rewind.instrumentors.openai:OpenAIInstrumentor",
    keys=("OPENAI_API_KEY",),
    faults=STAINLESS_FAULTS,
)
