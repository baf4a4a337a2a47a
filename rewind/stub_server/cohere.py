"""The Cohere wire format: v2 chat (JSON and SSE), embed and rerank, and v1 embed and rerank.

Cohere's paths (``/v2/...``, ``/v1/embed``, ``/v1/rerank``) collide with no other
format, so it is served at the root: ``StubServer.cohere_base_url`` is the bare
server URL, which is also what the SDK's ``CO_API_URL`` variable expects.

Cohere streams have no error event (the SDK logs and skips events it cannot
parse), so a scripted ``stream_error_after`` drops the connection mid-body,
which the SDK surfaces as ``httpx.RemoteProtocolError``.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Mapping
from typing import Any, Literal

from ._brain import Conversation, Msg, Tool, count_tokens, embedding, json_schema_from_format, schema_of, text_chunks
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec

COHERE_DIMS = 8
_V1_ROUTES = ("/v1/embed", "/v1/rerank")


def _text(content: Any) -> str:
    """Cohere content: a string, or a list of text / document / thinking items."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Mapping):
            if item.get("type") == "thinking":
                continue
            if isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif isinstance(item.get("document"), Mapping):
                data = item["document"].get("data")
                parts.append(data if isinstance(data, str) else json.dumps(data, sort_keys=True))
    return "\n".join(p for p in parts if p)


def _conversation(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=str(body.get("model") or "command-r"))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        role = raw.get("role")
        text = _text(raw.get("content"))
        if role == "system":
            conv.messages.append(Msg("system", text))
        elif role == "tool":
            conv.messages.append(Msg("tool", text))
        elif role == "assistant":
            calls = raw.get("tool_calls") or []
            names = [str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, Mapping)]
            conv.messages.append(Msg("assistant", " ".join([text, *names]).strip(), tuple(names)))
        else:
            conv.messages.append(Msg("user", text))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            conv.tools.append(Tool(str(fn.get("name", "tool")), schema_of(fn.get("parameters"))))
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        # Cohere spells these in capitals: "REQUIRED", "NONE".
        conv.tool_choice = choice.lower()
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        schema = fmt.get("json_schema") or fmt.get("schema")
        if isinstance(schema, Mapping):
            conv.output_schema = dict(schema)
        else:
            conv.json_mode = True
    else:
        conv.output_schema, conv.json_mode = json_schema_from_format(fmt)
    thinking = body.get("thinking")
    conv.thinking = isinstance(thinking, Mapping) and thinking.get("type") == "enabled"
    return conv


# --------------------------------------------------------------------------- chat renderers


def _usage(ctx: Ctx) -> dict[str, Any]:
    counts = {"input_tokens": ctx.conv.input_tokens(), "output_tokens": ctx.answer.output_tokens()}
    return {"billed_units": dict(counts), "tokens": dict(counts), "cached_tokens": 0}


def _finish(ctx: Ctx) -> str:
    return "TOOL_CALL" if ctx.answer.tool_calls else "COMPLETE"


def _tool_calls(ctx: Ctx) -> list[dict[str, Any]]:
    # Cohere's ids read "<tool name>_<suffix>"; only their uniqueness matters to clients.
    return [
        {
            "id": call.call_id or ctx.next_id(f"{call.name}_stub_"),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()},
        }
        for call in ctx.answer.tool_calls
    ]


def _tool_plan(ctx: Ctx) -> str | None:
    # With tool calls the model's words go in tool_plan, not in content.
    if not ctx.answer.tool_calls:
        return None
    return ctx.answer.text or f"I will call {', '.join(c.name for c in ctx.answer.tool_calls)}."


def _content(ctx: Ctx) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if ctx.answer.thinking is not None:
        items.append({"type": "thinking", "thinking": ctx.answer.thinking})
    if not ctx.answer.tool_calls:
        items.append({"type": "text", "text": ctx.answer.text or ""})
    return items


def _chat_json(ctx: Ctx) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": _content(ctx)}
    calls = _tool_calls(ctx)
    if calls:
        message["tool_plan"] = _tool_plan(ctx)
        message["tool_calls"] = calls
    return {"id": ctx.next_id("cohere_stub_"), "finish_reason": _finish(ctx), "message": message, "usage": _usage(ctx)}


def _chat_events(ctx: Ctx) -> list[Event]:
    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> Event:
        return Event({"type": kind, **payload}, event=kind, kind=role)

    message_id = ctx.next_id("cohere_stub_")
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    events = [ev("message-start", {"id": message_id, "delta": {"message": start}})]
    for index, item in enumerate(_content(ctx)):
        key = item["type"]
        events.append(ev("content-start", {"index": index, "delta": {"message": {"content": {"type": key, key: ""}}}}))
        for piece in text_chunks(item[key]):
            delta = {"message": {"content": {key: piece}}}
            events.append(ev("content-delta", {"index": index, "delta": delta}, "content"))
        events.append(ev("content-end", {"index": index}))
    plan = _tool_plan(ctx)
    for piece in text_chunks(plan or ""):
        events.append(ev("tool-plan-delta", {"delta": {"message": {"tool_plan": piece}}}, "content"))
    for index, call in enumerate(_tool_calls(ctx)):
        head: dict[str, Any] = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        events.append(ev("tool-call-start", {"index": index, "delta": {"message": {"tool_calls": head}}}))
        for piece in text_chunks(call["function"]["arguments"]):
            args_delta: dict[str, Any] = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
            events.append(ev("tool-call-delta", {"index": index, "delta": args_delta}, "content"))
        events.append(ev("tool-call-end", {"index": index}))
    end = {"id": message_id, "delta": {"finish_reason": _finish(ctx), "usage": _usage(ctx)}}
    events.append(ev("message-end", end, "final"))
    return events


# --------------------------------------------------------------------------- embed and rerank


def _meta(**billed: int) -> dict[str, Any]:
    return {"api_version": {"version": "2"}, "billed_units": billed}


def _embed_json(ex: Exchange, *, v1: bool) -> dict[str, Any]:
    body = ex.body
    texts = [str(t) for t in body.get("texts") or []]
    inputs = body.get("inputs") or []
    if not texts and isinstance(inputs, list):
        texts = [_text(item.get("content") if isinstance(item, Mapping) else item) for item in inputs]
    dims = body.get("output_dimension")
    dims = dims if isinstance(dims, int) and 0 < dims <= 4096 else COHERE_DIMS
    vectors = [embedding(t, dims) for t in texts]
    meta = _meta(input_tokens=sum(count_tokens(t) for t in texts))
    kinds = body.get("embedding_types")
    response_id = ex.stub._next_id("embed_stub_")
    if v1 and not kinds:
        return {
            "response_type": "embeddings_floats",
            "id": response_id,
            "embeddings": vectors,
            "texts": texts,
            "meta": meta,
        }
    by_type: dict[str, Any] = {}
    for kind in kinds or ["float"]:
        if kind == "float":
            by_type["float"] = vectors
        elif kind in ("int8", "uint8"):
            offset = 0 if kind == "int8" else 128
            by_type[kind] = [[max(-128, min(127, round(v * 127))) + offset for v in vec] for vec in vectors]
        elif kind in ("binary", "ubinary"):
            # One bit per dimension, packed eight to a byte, as the real API does.
            by_type[kind] = [_pack_bits(vec, signed=kind == "binary") for vec in vectors]
        elif kind == "base64":
            by_type[kind] = [base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() for vec in vectors]
    return {
        "response_type": "embeddings_by_type",
        "id": response_id,
        "embeddings": by_type,
        "texts": texts,
        "meta": meta,
    }


def _pack_bits(vector: list[float], *, signed: bool) -> list[int]:
    out = []
    for start in range(0, len(vector), 8):
        byte = 0
        for value in vector[start : start + 8]:
            byte = (byte << 1) | (1 if value > 0 else 0)
        out.append(byte - 128 if signed else byte)
    return out


def _relevance(query: str, document: str) -> float:
    """Word overlap, squeezed into (0, 1): deterministic and ordered the way a reader expects."""
    words = set(query.lower().split())
    hits = sum(1 for w in set(document.lower().split()) if w in words)
    return round((hits + 1) / (len(words) + 2), 6)


def _rerank_json(ex: Exchange, *, v1: bool) -> dict[str, Any]:
    body = ex.body
    query = str(body.get("query") or "")
    docs = body.get("documents") or []
    texts = [_text(d.get("text") if isinstance(d, Mapping) else d) for d in docs]
    order = sorted(range(len(texts)), key=lambda i: (-_relevance(query, texts[i]), i))
    top_n = body.get("top_n")
    if isinstance(top_n, int) and top_n > 0:
        order = order[:top_n]
    results = []
    for index in order:
        item: dict[str, Any] = {"index": index, "relevance_score": _relevance(query, texts[index])}
        if v1 and body.get("return_documents"):
            item["document"] = {"text": texts[index]}
        results.append(item)
    return {"id": ex.stub._next_id("rerank_stub_"), "results": results, "meta": _meta(search_units=1)}


# --------------------------------------------------------------------------- routes


class CohereFormat(WireFormat):
    name = "cohere"
    priority = 20

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        if path.startswith("/v2/") or path in _V1_ROUTES:
            return True
        return headers.get("x-fern-sdk-name") == "cohere"

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        message = spec.message or f"Request failed with status {spec.status} (injected by the rewind stub server)."
        return {"id": request_id, "message": message}


FORMAT = register(CohereFormat())


@FORMAT.route("POST", r"/v2/chat")
def _chat(ex: Exchange, _match: re.Match[str]) -> None:
    ex.generate(
        _conversation(ex.body),
        streaming=bool(ex.body.get("stream")),
        render_json=_chat_json,
        render_events=_chat_events,
        stream_error=None,
    )


@FORMAT.route("POST", r"/v(?P<version>[12])/embed")
def _embed(ex: Exchange, match: re.Match[str]) -> None:
    ex.send_json(200, _embed_json(ex, v1=match["version"] == "1"))


@FORMAT.route("POST", r"/v(?P<version>[12])/rerank")
def _rerank(ex: Exchange, match: re.Match[str]) -> None:
    ex.send_json(200, _rerank_json(ex, v1=match["version"] == "1"))
