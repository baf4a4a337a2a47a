"""The OpenAI wire format: Chat Completions, Responses, Embeddings and Models.

It is also the fallback format: any request no other format claims is answered
here, so unknown routes get an OpenAI-shaped 404.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import unquote

from ._brain import (
    CREATED,
    DEFAULT_EMBEDDING_DIMS,
    MODEL_IDS,
    Conversation,
    Msg,
    Tool,
    count_tokens,
    embedding,
    fixed_chunks,
    json_schema_from_format,
    schema_of,
    text_chunks,
    text_of,
)
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec


def chat_conversation(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=str(body.get("model") or "stub-model"))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        role = raw.get("role")
        text = text_of(raw.get("content"))
        if role in ("system", "developer"):
            conv.messages.append(Msg("system", text))
        elif role == "user":
            conv.messages.append(Msg("user", text))
        elif role in ("tool", "function"):
            conv.messages.append(Msg("tool", text))
        elif role == "assistant":
            calls = raw.get("tool_calls") or []
            names = [str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, Mapping)]
            conv.messages.append(Msg("assistant", " ".join([text, *names]).strip(), tuple(names)))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            conv.tools.append(Tool(str(fn.get("name", "tool")), schema_of(fn.get("parameters"))))
    for fn in body.get("functions") or []:
        if isinstance(fn, Mapping):
            conv.tools.append(Tool(str(fn.get("name", "tool")), schema_of(fn.get("parameters"))))
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        conv.tool_choice = choice
    elif isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        conv.tool_choice = str(choice["function"].get("name", "auto"))
    conv.output_schema, conv.json_mode = json_schema_from_format(body.get("response_format"))
    return conv


def _responses_conversation(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=str(body.get("model") or "stub-model"))
    if body.get("instructions"):
        conv.messages.append(Msg("system", text_of(body["instructions"])))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call_output" or (isinstance(kind, str) and kind.endswith("_call_output")):
            conv.messages.append(Msg("tool", text_of(item.get("output"))))
        elif kind == "function_call":
            name = str(item.get("name", ""))
            conv.messages.append(Msg("assistant", name, (name,)))
        elif kind in (None, "message"):
            role = item.get("role")
            text = text_of(item.get("content"))
            if role in ("system", "developer"):
                conv.messages.append(Msg("system", text))
            elif role == "assistant":
                conv.messages.append(Msg("assistant", text))
            else:
                conv.messages.append(Msg("user", text))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            conv.tools.append(Tool(str(tool.get("name", "tool")), schema_of(tool.get("parameters"))))
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        conv.tool_choice = choice
    elif isinstance(choice, Mapping) and choice.get("type") == "function":
        conv.tool_choice = str(choice.get("name", "auto"))
    text_cfg = body.get("text")
    if isinstance(text_cfg, Mapping):
        conv.output_schema, conv.json_mode = json_schema_from_format(text_cfg.get("format"))
    return conv


def _openai_error_defaults(status: int) -> tuple[str, str | None, str]:
    if status == 429:
        return "requests", "rate_limit_exceeded", "Rate limit reached (injected by the rewind stub server)."
    if status == 401:
        return "invalid_request_error", "invalid_api_key", "Incorrect API key provided (injected by the stub)."
    if status >= 500:
        return "server_error", None, "The server had an error processing your request (injected by the stub)."
    return "invalid_request_error", None, f"Request failed with status {status} (injected by the stub)."


def openai_error_object(spec: ErrorSpec) -> dict[str, Any]:
    kind, code, message = _openai_error_defaults(spec.status)
    return {
        "message": spec.message or message,
        "type": spec.type or kind,
        "param": spec.param,
        "code": spec.code if spec.code is not None else code,
    }


def _chat_usage(ctx: Ctx) -> dict[str, Any]:
    prompt, completion = ctx.conv.input_tokens(), ctx.answer.output_tokens()
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_tool_calls(ctx: Ctx) -> list[dict[str, Any]]:
    return [
        {
            "id": call.call_id or ctx.next_id("call_stub_"),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()},
        }
        for call in ctx.answer.tool_calls
    ]


def _chat_json(ctx: Ctx) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": ctx.answer.text,
        "refusal": None,
        "annotations": [],
    }
    tool_calls = _chat_tool_calls(ctx)
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": ctx.next_id("chatcmpl-stub-"),
        "object": "chat.completion",
        "created": CREATED,
        "model": ctx.conv.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": _chat_usage(ctx),
        "service_tier": "default",
        "system_fingerprint": "fp_stub",
    }


def _chat_events(ctx: Ctx) -> list[Event]:
    completion_id = ctx.next_id("chatcmpl-stub-")
    options = ctx.body.get("stream_options")
    include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": ctx.conv.model,
            "service_tier": "default",
            "system_fingerprint": "fp_stub",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            data["usage"] = None
        return data

    events = [Event(chunk({"role": "assistant", "content": "", "refusal": None}))]
    for piece in text_chunks(ctx.answer.text or ""):
        events.append(Event(chunk({"content": piece}), kind="content"))
    for index, call in enumerate(_chat_tool_calls(ctx)):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append(Event(chunk({"tool_calls": [head]})))
        for piece in fixed_chunks(call["function"]["arguments"]):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            events.append(Event(chunk(delta), kind="content"))
    events.append(Event(chunk({}, "tool_calls" if ctx.answer.tool_calls else "stop"), kind="final"))
    if include_usage:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = _chat_usage(ctx)
        events.append(Event(usage_chunk, kind="final"))
    events.append(Event("[DONE]", kind="final"))
    return events


def _chat_stream_error(spec: ErrorSpec | None, _seq: int) -> Event:
    return Event({"error": openai_error_object(spec or ErrorSpec(status=500))})


def _responses_usage(ctx: Ctx) -> dict[str, Any]:
    prompt, completion = ctx.conv.input_tokens(), ctx.answer.output_tokens()
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _responses_items(ctx: Ctx) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if ctx.answer.text is not None:
        items.append(
            {
                "id": ctx.next_id("msg_item_stub_"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ctx.answer.text, "annotations": [], "logprobs": []}],
            }
        )
    for call in ctx.answer.tool_calls:
        items.append(
            {
                "id": ctx.next_id("fc_stub_"),
                "type": "function_call",
                "status": "completed",
                "arguments": call.arguments_json(),
                "call_id": call.call_id or ctx.next_id("call_stub_"),
                "name": call.name,
            }
        )
    return items


def _responses_object(ctx: Ctx, response_id: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    body = ctx.body
    tools = []
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping):
            echoed = dict(tool)
            if echoed.get("type") == "function":
                echoed.setdefault("description", None)
                echoed.setdefault("strict", True)
            tools.append(echoed)
    text_cfg = body.get("text") if isinstance(body.get("text"), Mapping) else {"format": {"type": "text"}}
    completed = status == "completed"
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "completed_at": CREATED if completed else None,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": ctx.conv.model,
        "output": output,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": bool(body.get("store", True)),
        "temperature": body.get("temperature", 1.0),
        "text": text_cfg,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": tools,
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _responses_usage(ctx) if completed else None,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


def _responses_json(ctx: Ctx) -> dict[str, Any]:
    response_id = ctx.next_id("resp_stub_")
    return _responses_object(ctx, response_id, "completed", _responses_items(ctx))


def _responses_events(ctx: Ctx) -> list[Event]:
    response_id = ctx.next_id("resp_stub_")
    items = _responses_items(ctx)

    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> Event:
        # sequence_number is filled in at send time so an injected error slots in cleanly.
        return Event({"type": kind, "sequence_number": 0, **payload}, event=kind, kind=role)

    events = [
        ev("response.created", {"response": _responses_object(ctx, response_id, "in_progress", [])}),
        ev("response.in_progress", {"response": _responses_object(ctx, response_id, "in_progress", [])}),
    ]
    for index, item in enumerate(items):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                ev(
                    "response.output_item.added",
                    {"output_index": index, "item": {**item, "status": "in_progress", "content": []}},
                )
            )
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            events.append(ev("response.content_part.added", {**where, "content_index": 0, "part": empty_part}))
            for piece in text_chunks(text):
                events.append(
                    ev(
                        "response.output_text.delta",
                        {**where, "content_index": 0, "delta": piece, "logprobs": []},
                        "content",
                    )
                )
            events.append(ev("response.output_text.done", {**where, "content_index": 0, "text": text, "logprobs": []}))
            events.append(ev("response.content_part.done", {**where, "content_index": 0, "part": item["content"][0]}))
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            events.append(ev("response.output_item.added", {"output_index": index, "item": started}))
            for piece in fixed_chunks(item["arguments"]):
                events.append(ev("response.function_call_arguments.delta", {**where, "delta": piece}, "content"))
            events.append(
                ev(
                    "response.function_call_arguments.done",
                    {**where, "name": item["name"], "arguments": item["arguments"]},
                )
            )
        events.append(ev("response.output_item.done", {"output_index": index, "item": item}))
    final = _responses_object(ctx, response_id, "completed", items)
    events.append(ev("response.completed", {"response": final}, "final"))
    return events


def _responses_stream_error(spec: ErrorSpec | None, seq: int) -> Event:
    # The live API nests the details under "error" (unlike its published schema);
    # the nested form is also what makes the Python SDK raise instead of yielding.
    err = openai_error_object(spec or ErrorSpec(status=500))
    err["code"] = err["code"] or err["type"]
    return Event({"type": "error", "sequence_number": seq, "error": err}, event="error")


def embeddings_json(body: Mapping[str, Any]) -> dict[str, Any]:
    raw = body.get("input")
    # A flat list of ints is one tokenised input, not many inputs.
    if isinstance(raw, str) or (isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw)):
        inputs: list[Any] = [raw]
    elif isinstance(raw, list):
        inputs = list(raw)
    else:
        inputs = [raw]
    dims = body.get("dimensions")
    dims = dims if isinstance(dims, int) and 0 < dims <= 4096 else DEFAULT_EMBEDDING_DIMS
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    tokens = 0
    for index, item in enumerate(inputs):
        vector = embedding(item, dims)
        tokens += count_tokens(item) if isinstance(item, str) else len(item) if isinstance(item, list) else 1
        encoded: Any = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model") or "text-embedding-3-small"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# --------------------------------------------------------------------------- models


def _openai_model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": CREATED, "owned_by": "rewind-stub"}


# --------------------------------------------------------------------------- routes


class OpenAIFormat(WireFormat):
    name = "openai"
    # The fallback: it claims whatever no other format did.
    priority = 1000

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        return True

    def local_path(self, path: str) -> str:
        # Azure OpenAI puts the deployment in the path (/openai/deployments/{name}/chat/completions),
        # and Groq's SDK calls /openai/v1/...: strip that prefix first, then the /v1 both share.
        azure = re.match(r"/openai(?:/deployments/[^/]+)?(/.*)$", path)
        if azure:
            path = azure.group(1)
        # Accept both base URL conventions (with and without the /v1 suffix).
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:] or "/"
        return path

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        return {"error": openai_error_object(spec)}


FORMAT = register(OpenAIFormat())


@FORMAT.route("GET", r"/models")
def _list_models(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, {"object": "list", "data": [_openai_model(m) for m in MODEL_IDS]})


@FORMAT.route("GET", r"/models/(?P<model>.+)")
def _get_model(ex: Exchange, match: re.Match[str]) -> None:
    ex.send_json(200, _openai_model(unquote(match["model"])))


@FORMAT.route("POST", r"/embeddings")
def _embeddings(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, embeddings_json(ex.body))


@FORMAT.route("POST", r"/chat/completions")
def _chat(ex: Exchange, _match: re.Match[str]) -> None:
    ex.generate(
        chat_conversation(ex.body),
        streaming=bool(ex.body.get("stream")),
        render_json=_chat_json,
        render_events=_chat_events,
        stream_error=_chat_stream_error,
    )


@FORMAT.route("POST", r"/responses")
def _responses(ex: Exchange, _match: re.Match[str]) -> None:
    ex.generate(
        _responses_conversation(ex.body),
        streaming=bool(ex.body.get("stream")),
        render_json=_responses_json,
        render_events=_responses_events,
        stream_error=_responses_stream_error,
        numbered=True,
    )
