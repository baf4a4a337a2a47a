"""The Gemini API wire format (what ``google-genai`` speaks without Vertex AI).

``POST /v1beta/models/{model}:generateContent`` answers one
``GenerateContentResponse``; ``:streamGenerateContent?alt=sse`` streams them as
``data:`` lines (without ``alt=sse`` the real API sends one JSON array, and so
does the stub); ``:embedContent`` and ``:batchEmbedContents`` (which the SDK uses
for every ``embed_content`` call) and ``:countTokens`` round it off.

Gemini writes schemas in its OpenAPI dialect (``"type": "OBJECT"``); they are
lower-cased before the default brain fills them. Served at the root:
``StubServer.gemini_base_url`` is the bare server URL, which is what
``http_options={"base_url": ...}`` and ``GOOGLE_GEMINI_BASE_URL`` expect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from ._brain import MODEL_IDS, Conversation, Msg, Tool, count_tokens, embedding, text_chunks
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec

GEMINI_DIMS = 8
_VERSIONED = re.compile(r"/(v1|v1beta|v1alpha)(/.*)")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _field(obj: Any, camel: str) -> Any:
    """Read a field in either spelling: protobuf JSON accepts both, and the SDK sends some of each."""
    if not isinstance(obj, Mapping):
        return None
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), camel))


def _error_object(spec: ErrorSpec) -> dict[str, Any]:
    status = _STATUS_NAMES.get(spec.status, "INTERNAL" if spec.status >= 500 else "FAILED_PRECONDITION")
    message = spec.message or f"Request failed with status {spec.status} (injected by the rewind stub server)."
    return {"error": {"code": spec.status, "message": message, "status": spec.type or status}}


def _lower_types(schema: Any) -> Any:
    """Gemini's schema dialect spells types in capitals; JSON Schema does not."""
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "nullable":
            continue
        else:
            out[key] = _lower_types(value)
    return out


def _parts_text(parts: Any) -> str:
    texts = []
    for part in parts if isinstance(parts, list) else []:
        # Thoughts are the model's scratchpad, not what the user or a tool said.
        if isinstance(part, Mapping) and isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    return "\n".join(t for t in texts if t)


def _function_response_text(response: Any) -> str:
    # {"result": "2 hits"} reads better as "2 hits" than as its JSON.
    if isinstance(response, Mapping) and len(response) == 1:
        (only,) = response.values()
        if isinstance(only, str):
            return only
    return json.dumps(response, sort_keys=True)


def _conversation(model: str, body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=model)
    system = _field(body, "systemInstruction")
    if isinstance(system, Mapping):
        conv.messages.append(Msg("system", _parts_text(system.get("parts"))))
    for content in body.get("contents") or []:
        if not isinstance(content, Mapping):
            continue
        parts: list[Any] = content["parts"] if isinstance(content.get("parts"), list) else []
        responses = [r for r in (_field(p, "functionResponse") for p in parts) if isinstance(r, Mapping)]
        calls = [c for c in (_field(p, "functionCall") for p in parts) if isinstance(c, Mapping)]
        if responses:
            for resp in responses:
                conv.messages.append(Msg("tool", _function_response_text(resp.get("response"))))
        elif content.get("role") == "model":
            names = [str(call.get("name", "")) for call in calls]
            conv.messages.append(Msg("assistant", " ".join([_parts_text(parts), *names]).strip(), tuple(names)))
        else:
            conv.messages.append(Msg("user", _parts_text(parts)))
    for tool in body.get("tools") or []:
        for decl in _field(tool, "functionDeclarations") or []:
            if isinstance(decl, Mapping):
                schema = _field(decl, "parametersJsonSchema") or decl.get("parameters") or {"type": "object"}
                conv.tools.append(Tool(str(decl.get("name", "tool")), _lower_types(schema)))
    calling = _field(_field(body, "toolConfig"), "functionCallingConfig")
    if isinstance(calling, Mapping):
        mode = str(calling.get("mode") or "AUTO").upper()
        allowed = _field(calling, "allowedFunctionNames") or []
        if mode == "NONE":
            conv.tool_choice = "none"
        elif mode in ("ANY", "VALIDATED"):
            conv.tool_choice = str(allowed[0]) if len(allowed) == 1 else "required"
    config = _field(body, "generationConfig")
    schema = _field(config, "responseJsonSchema") or _field(config, "responseSchema")
    if isinstance(schema, Mapping):
        conv.output_schema = _lower_types(schema)
    elif _field(config, "responseMimeType") == "application/json":
        conv.json_mode = True
    conv.thinking = bool(_field(_field(config, "thinkingConfig"), "includeThoughts"))
    return conv


# --------------------------------------------------------------------------- renderers


def _usage(ctx: Ctx, *, done: bool = True) -> dict[str, Any]:
    prompt = ctx.conv.input_tokens()
    thoughts = count_tokens(ctx.answer.thinking or "")
    answer = max(1, ctx.answer.output_tokens() - thoughts)
    usage: dict[str, Any] = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    if done:
        usage["candidatesTokenCount"] = answer
        usage["totalTokenCount"] = prompt + answer + thoughts
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
    return usage


def _call_parts(ctx: Ctx) -> list[dict[str, Any]]:
    parts = []
    for call in ctx.answer.tool_calls:
        fn: dict[str, Any] = {"name": call.name, "args": call.arguments_obj()}
        if call.call_id:
            fn["id"] = call.call_id
        parts.append({"functionCall": fn})
    return parts


def _response(ctx: Ctx, response_id: str, parts: list[dict[str, Any]], *, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": _usage(ctx, done=finish),
        "modelVersion": ctx.conv.model,
        "responseId": response_id,
    }


def _generate_json(ctx: Ctx) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if ctx.answer.thinking is not None:
        parts.append({"text": ctx.answer.thinking, "thought": True})
    if ctx.answer.text is not None or not ctx.answer.tool_calls:
        parts.append({"text": ctx.answer.text or ""})
    parts.extend(_call_parts(ctx))
    return _response(ctx, ctx.next_id("gemini_stub_"), parts, finish=True)


def _generate_events(ctx: Ctx) -> list[Event]:
    response_id = ctx.next_id("gemini_stub_")

    def ev(parts: list[dict[str, Any]], role: Literal["meta", "content", "final"], finish: bool = False) -> Event:
        return Event(_response(ctx, response_id, parts, finish=finish), kind=role)

    events = [ev([{"text": p, "thought": True}], "content") for p in text_chunks(ctx.answer.thinking or "")]
    events += [ev([{"text": p}], "content") for p in text_chunks(ctx.answer.text or "")]
    # Function calls arrive whole, one part per call.
    events += [ev([part], "content") for part in _call_parts(ctx)]
    events.append(ev([{"text": ""}], "final", finish=True))
    return events


def _stream_error(spec: ErrorSpec | None, _seq: int) -> Event:
    # The SDK checks every chunk for a top-level "error" and raises APIError from it.
    return Event(_error_object(spec or ErrorSpec(status=500)))


def _content_text(content: Any) -> str:
    if isinstance(content, Mapping):
        return _parts_text(content.get("parts"))
    return str(content or "")


def _dims(request: Mapping[str, Any]) -> int:
    dims = _field(request, "outputDimensionality")
    return dims if isinstance(dims, int) and 0 < dims <= 4096 else GEMINI_DIMS


def _model_json(model: str) -> dict[str, Any]:
    name = model if model.startswith("models/") else f"models/{model}"
    return {
        "name": name,
        "version": "001",
        "displayName": name.removeprefix("models/"),
        "inputTokenLimit": 1_048_576,
        "outputTokenLimit": 8192,
        "supportedGenerationMethods": ["generateContent", "countTokens", "embedContent"],
    }


# --------------------------------------------------------------------------- routes


class GeminiFormat(WireFormat):
    name = "gemini"
    priority = 30

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        versioned = _VERSIONED.fullmatch(path)
        if versioned and versioned.group(1) != "v1":
            return True
        # /v1/models/{model}:method is Gemini's; plain /v1/models/{id} stays OpenAI's.
        return bool(versioned and re.fullmatch(r"/models/[^/]+:\w+", versioned.group(2))) or "x-goog-api-key" in headers

    def local_path(self, path: str) -> str:
        versioned = _VERSIONED.fullmatch(path)
        return versioned.group(2) if versioned else path

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        return _error_object(spec)


FORMAT = register(GeminiFormat())
_MODEL = r"/models/(?P<model>[^/:]+)"


@FORMAT.route("POST", _MODEL + r":generateContent")
def _generate(ex: Exchange, match: re.Match[str]) -> None:
    ex.generate(
        _conversation(match["model"], ex.body),
        streaming=False,
        render_json=_generate_json,
        render_events=_generate_events,
        stream_error=_stream_error,
    )


@FORMAT.route("POST", _MODEL + r":streamGenerateContent")
def _stream(ex: Exchange, match: re.Match[str]) -> None:
    sse = ex.query.get("alt") == ["sse"]
    ex.generate(
        _conversation(match["model"], ex.body),
        # Without alt=sse the API answers one JSON array holding every chunk.
        streaming=sse,
        render_json=lambda ctx: [event.data for event in _generate_events(ctx)],
        render_events=_generate_events,
        stream_error=_stream_error,
    )


@FORMAT.route("POST", _MODEL + r":embedContent")
def _embed(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, {"embedding": {"values": embedding(_content_text(ex.body.get("content")), _dims(ex.body))}})


@FORMAT.route("POST", _MODEL + r":batchEmbedContents")
def _batch_embed(ex: Exchange, _match: re.Match[str]) -> None:
    requests = [r for r in ex.body.get("requests") or [] if isinstance(r, Mapping)]
    vectors = [{"values": embedding(_content_text(r.get("content")), _dims(r))} for r in requests]
    ex.send_json(200, {"embeddings": vectors})


@FORMAT.route("POST", _MODEL + r":countTokens")
def _count(ex: Exchange, match: re.Match[str]) -> None:
    request = _field(ex.body, "generateContentRequest")
    body = request if isinstance(request, Mapping) else ex.body
    ex.send_json(200, {"totalTokens": _conversation(match["model"], body).input_tokens()})


@FORMAT.route("GET", r"/models")
def _list_models(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, {"models": [_model_json(m) for m in ("gemini-2.5-flash", *MODEL_IDS)]})


@FORMAT.route("GET", _MODEL)
def _get_model(ex: Exchange, match: re.Match[str]) -> None:
    ex.send_json(200, _model_json(match["model"]))
