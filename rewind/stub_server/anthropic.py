"""The Anthropic wire format: Messages (JSON and SSE), token counting and Models."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import unquote

from ._brain import (
    MODEL_IDS,
    Conversation,
    Msg,
    Tool,
    fixed_chunks,
    json_schema_from_format,
    signature,
    text_chunks,
    text_of,
)
from ._http import Ctx, Event, Exchange, WireFormat, register
from ._script import ErrorSpec


def _anthropic_conversation(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation(model=str(body.get("model") or "stub-model"))
    if body.get("system"):
        conv.messages.append(Msg("system", text_of(body["system"])))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        content = raw.get("content")
        if raw.get("role") == "assistant":
            blocks = content if isinstance(content, list) else []
            calls = [str(b.get("name", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_use"]
            conv.messages.append(Msg("assistant", _anthropic_blocks_text(content), tuple(calls)))
            continue
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        if results:
            conv.messages.append(Msg("tool", "\n".join(text_of(b.get("content")) for b in results)))
        else:
            conv.messages.append(Msg("user", _anthropic_blocks_text(content)))
    for tool in body.get("tools") or []:
        # Server tools (web search, code execution, ...) carry no input_schema and are
        # run by the provider itself, so the stub must never emit a tool_use for them.
        if isinstance(tool, Mapping) and isinstance(tool.get("input_schema"), Mapping):
            conv.tools.append(Tool(str(tool.get("name", "tool")), dict(tool["input_schema"])))
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):
        kind = choice.get("type")
        if kind == "tool":
            conv.tool_choice = str(choice.get("name", "auto"))
        elif kind == "any":
            conv.tool_choice = "required"
        elif kind == "none":
            conv.tool_choice = "none"
    thinking = body.get("thinking")
    conv.thinking = isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")
    output_config = body.get("output_config")
    fmt = output_config.get("format") if isinstance(output_config, Mapping) else None
    conv.output_schema, conv.json_mode = json_schema_from_format(fmt or body.get("output_format"))
    return conv


def _anthropic_blocks_text(content: Any) -> str:
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                parts.append(str(block.get("name", "")))
            elif isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking"):
                continue
            else:
                parts.append(text_of(block))
        return "\n".join(p for p in parts if p)
    return text_of(content)


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_error_defaults(status: int) -> tuple[str, str]:
    kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    messages = {
        "rate_limit_error": "Rate limited (injected by the rewind stub server).",
        "overloaded_error": "Overloaded",
    }
    return kind, messages.get(kind, f"Request failed with status {status} (injected by the stub).")


def _anthropic_error_object(spec: ErrorSpec) -> dict[str, Any]:
    kind, message = _anthropic_error_defaults(spec.status)
    return {"type": spec.type or kind, "message": spec.message or message}


def _anthropic_usage(ctx: Ctx, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": ctx.conv.input_tokens(),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _anthropic_blocks(ctx: Ctx) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if ctx.answer.thinking is not None:
        blocks.append(
            {"type": "thinking", "thinking": ctx.answer.thinking, "signature": signature(ctx.answer.thinking)}
        )
    if ctx.answer.text is not None or not ctx.answer.tool_calls:
        blocks.append({"type": "text", "text": ctx.answer.text or ""})
    for call in ctx.answer.tool_calls:
        call_id = call.call_id or ctx.next_id("toolu_stub_")
        blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments_obj()})
    return blocks


def _anthropic_message(ctx: Ctx, message_id: str, blocks: list[dict[str, Any]], done: bool) -> dict[str, Any]:
    stop = "tool_use" if ctx.answer.tool_calls else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": ctx.conv.model,
        "content": blocks,
        "stop_reason": stop if done else None,
        "stop_sequence": None,
        "usage": _anthropic_usage(ctx, ctx.answer.output_tokens() if done else 1),
    }


def _anthropic_json(ctx: Ctx) -> dict[str, Any]:
    message_id = ctx.next_id("msg_stub_")
    return _anthropic_message(ctx, message_id, _anthropic_blocks(ctx), done=True)


def _anthropic_events(ctx: Ctx) -> list[Event]:
    message_id = ctx.next_id("msg_stub_")
    blocks = _anthropic_blocks(ctx)

    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> Event:
        return Event({"type": kind, **payload}, event=kind, kind=role)

    events = [ev("message_start", {"message": _anthropic_message(ctx, message_id, [], done=False)})]
    for index, block in enumerate(blocks):
        if block["type"] == "thinking":
            start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in text_chunks(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "tool_use":
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in fixed_chunks(arguments)]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in text_chunks(block["text"])]
        events.append(ev("content_block_start", {"index": index, "content_block": start}))
        if index == 0:
            events.append(ev("ping", {}))
        for delta in deltas:
            role: Literal["meta", "content"] = "meta" if delta["type"] == "signature_delta" else "content"
            events.append(ev("content_block_delta", {"index": index, "delta": delta}, role))
        events.append(ev("content_block_stop", {"index": index}))
    stop = "tool_use" if ctx.answer.tool_calls else "end_turn"
    delta_event = {
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": _anthropic_usage(ctx, ctx.answer.output_tokens()),
    }
    events.append(ev("message_delta", delta_event, "final"))
    events.append(ev("message_stop", {}, "final"))
    return events


def _anthropic_stream_error(spec: ErrorSpec | None, _seq: int) -> Event:
    # Mid-stream failures on the real API are nearly always overload, so that is the default.
    err = _anthropic_error_object(spec or ErrorSpec(status=529))
    return Event({"type": "error", "error": err}, event="error")


def _anthropic_model(model_id: str) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": model_id, "created_at": "2023-11-14T22:13:20Z"}


# --------------------------------------------------------------------------- routes


def _strip_v1(path: str) -> str:
    return path[3:] or "/" if path.startswith("/v1/") or path == "/v1" else path


class AnthropicFormat(WireFormat):
    name = "anthropic"
    priority = 900

    def owns(self, path: str, headers: Mapping[str, str]) -> bool:
        return _strip_v1(path).startswith("/messages") or "anthropic-version" in headers

    def local_path(self, path: str) -> str:
        return _strip_v1(path)

    def error_payload(self, spec: ErrorSpec, request_id: str) -> Any:
        return {"type": "error", "error": _anthropic_error_object(spec), "request_id": request_id}


FORMAT = register(AnthropicFormat())


@FORMAT.route("GET", r"/models")
def _list_models(ex: Exchange, _match: re.Match[str]) -> None:
    data = [_anthropic_model(m) for m in MODEL_IDS]
    ex.send_json(200, {"data": data, "has_more": False, "first_id": MODEL_IDS[0], "last_id": MODEL_IDS[-1]})


@FORMAT.route("GET", r"/models/(?P<model>.+)")
def _get_model(ex: Exchange, match: re.Match[str]) -> None:
    ex.send_json(200, _anthropic_model(unquote(match["model"])))


@FORMAT.route("POST", r"/messages/count_tokens")
def _count_tokens(ex: Exchange, _match: re.Match[str]) -> None:
    ex.send_json(200, {"input_tokens": _anthropic_conversation(ex.body).input_tokens()})


@FORMAT.route("POST", r"/messages")
def _messages(ex: Exchange, _match: re.Match[str]) -> None:
    ex.generate(
        _anthropic_conversation(ex.body),
        streaming=bool(ex.body.get("stream")),
        render_json=_anthropic_json,
        render_events=_anthropic_events,
        stream_error=_anthropic_stream_error,
    )
