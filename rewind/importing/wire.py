"""A recovered ``Chat`` rebuilt in its provider's wire shape, so the SDK instrumentors
revive it as the SDK's own objects: an OpenAI ``chat.completion`` (tool calls included)
or an Anthropic ``message``. Providers without a shape of their own are rebuilt as
OpenAI chat completions (what OpenAI-compatible SDKs speak).
"""

from __future__ import annotations

import json
from typing import Any

from .model import Chat

OPENAI_CHAT = "openai.chat.completions.create"
OPENAI_EMBEDDINGS = "openai.embeddings.create"
ANTHROPIC_MESSAGES = "anthropic.messages.create"

_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "tool_call": "tool_use",
    "length": "max_tokens",
    "end_turn": "end_turn",
}
#: GenAI finish reasons (``tool_call``) and Anthropic stop reasons as OpenAI finish reasons.
_OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "tool_call": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
}


def step_name(chat: Chat) -> str:
    if chat.operation == "embeddings":
        return OPENAI_EMBEDDINGS
    return ANTHROPIC_MESSAGES if chat.provider == "anthropic" else OPENAI_CHAT


def build_request(chat: Chat) -> dict[str, Any]:
    if chat.raw_request is not None:
        return dict(chat.raw_request)
    if chat.operation == "embeddings":
        return {"model": chat.model, **chat.params}  # the input texts: only a raw request has them
    if chat.provider == "anthropic":
        return _anthropic_request(chat)
    return _openai_request(chat)


def build_response(chat: Chat, *, created: int, fallback_id: str) -> Any:
    if chat.raw_response is not None:
        return chat.raw_response
    if chat.output is None:
        return None
    if chat.provider == "anthropic":
        return _anthropic_response(chat, fallback_id)
    return _openai_response(chat, created, fallback_id)


# -- OpenAI chat completions ---------------------------------------------------------


def _openai_request(chat: Chat) -> dict[str, Any]:
    request: dict[str, Any] = {}
    if chat.model is not None:
        request["model"] = chat.model
    messages: list[dict[str, Any]] = []
    if chat.system:
        messages.append({"role": "system", "content": _joined_text(chat.system)})
    for message in chat.input or []:
        messages.extend(_openai_messages(message))
    request["messages"] = messages
    if chat.tools:
        request["tools"] = [{"type": "function", "function": {k: v for k, v in tool.items()}} for tool in chat.tools]
    for key, value in chat.params.items():
        request.setdefault(key, value)
    return request


def _openai_messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    role = message.get("role") or "user"
    parts = message.get("parts") or []
    if role == "tool" or (parts and all(p.get("type") == "tool_call_response" for p in parts)):
        return [
            {"role": "tool", "tool_call_id": p.get("id"), "content": _text_value(p.get("response"))}
            for p in parts
            if p.get("type") == "tool_call_response"
        ]
    texts = [p for p in parts if p.get("type") == "text"]
    calls = [p for p in parts if p.get("type") == "tool_call"]
    images = [p for p in parts if p.get("type") == "uri"]
    out: dict[str, Any] = {"role": role}
    if images:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": str(p.get("content") or "")} for p in texts]
        blocks += [{"type": "image_url", "image_url": {"url": p.get("uri")}} for p in images]
        out["content"] = blocks
    elif texts:
        out["content"] = _joined_text(texts)
    else:
        out["content"] = None if calls else ""
    if calls:
        out["tool_calls"] = [_openai_tool_call(p) for p in calls]
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return [out]


def _openai_tool_call(part: dict[str, Any]) -> dict[str, Any]:
    arguments = part.get("arguments")
    return {
        "id": part.get("id"),
        "type": "function",
        "function": {
            "name": part.get("name"),
            "arguments": arguments
            if isinstance(arguments, str)
            else json.dumps(arguments if arguments is not None else {}),
        },
    }


def _openai_response(chat: Chat, created: int, fallback_id: str) -> dict[str, Any]:
    choices = []
    for index, message in enumerate(chat.output or []):
        [wire] = _openai_messages({**message, "role": "assistant"})
        wire.setdefault("refusal", None)
        reason = message.get("finish_reason") or (
            chat.finish_reasons[index] if index < len(chat.finish_reasons) else ""
        )
        reason = _OPENAI_FINISH.get(reason, reason) or ("tool_calls" if "tool_calls" in wire else "stop")
        choices.append({"index": index, "message": wire, "finish_reason": reason, "logprobs": None})
    response: dict[str, Any] = {
        "id": chat.response_id or fallback_id,
        "object": "chat.completion",
        "created": created,
        "model": chat.response_model or chat.model or "unknown",
        "choices": choices,
    }
    if chat.input_tokens is not None or chat.output_tokens is not None:
        prompt, completion = chat.input_tokens or 0, chat.output_tokens or 0
        response["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return response


# -- Anthropic messages ------------------------------------------------------------------


def _anthropic_request(chat: Chat) -> dict[str, Any]:
    request: dict[str, Any] = {}
    if chat.model is not None:
        request["model"] = chat.model
    messages: list[dict[str, Any]] = []
    system = list(chat.system or [])
    for message in chat.input or []:
        role = message.get("role")
        if role == "system":
            system += list(message.get("parts") or [])
            continue
        wire = {"role": "user" if role in ("user", "tool") else "assistant", "content": _anthropic_blocks(message)}
        if messages and messages[-1]["role"] == wire["role"] == "user" and role == "tool":
            messages[-1]["content"] = _blocks(messages[-1]["content"]) + wire["content"]
        else:
            messages.append(wire)
    request["messages"] = messages
    if system:
        request["system"] = _joined_text(system)
    if chat.tools:
        request["tools"] = [
            {
                k: v
                for k, v in (
                    ("name", t["name"]),
                    ("description", t.get("description")),
                    ("input_schema", t.get("parameters")),
                )
                if v is not None
            }
            for t in chat.tools
        ]
    params = dict(chat.params)
    if "stop" in params:
        params["stop_sequences"] = params.pop("stop")
    for key, value in params.items():
        request.setdefault(key, value)
    return request


def _anthropic_blocks(message: dict[str, Any]) -> Any:
    parts = message.get("parts") or []
    if len(parts) == 1 and parts[0].get("type") == "text" and message.get("role") != "tool":
        return str(parts[0].get("content") or "")
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(part.get("content") or "")})
        elif kind == "tool_call":
            arguments = part.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    pass
            blocks.append(
                {"type": "tool_use", "id": part.get("id"), "name": part.get("name"), "input": arguments or {}}
            )
        elif kind == "tool_call_response":
            blocks.append(
                {"type": "tool_result", "tool_use_id": part.get("id"), "content": _text_value(part.get("response"))}
            )
        elif kind == "reasoning":
            blocks.append({"type": "thinking", "thinking": str(part.get("content") or ""), "signature": ""})
    return blocks


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _anthropic_response(chat: Chat, fallback_id: str) -> dict[str, Any]:
    message = (chat.output or [{"parts": []}])[0]
    content = _blocks(_anthropic_blocks({**message, "role": "assistant"}))
    reason = message.get("finish_reason") or (chat.finish_reasons[0] if chat.finish_reasons else "")
    stop = _ANTHROPIC_STOP.get(reason, reason) or (
        "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    )
    return {
        "id": chat.response_id or fallback_id,
        "type": "message",
        "role": "assistant",
        "model": chat.response_model or chat.model or "unknown",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": chat.input_tokens or 0, "output_tokens": chat.output_tokens or 0},
    }


# -- helpers ---------------------------------------------------------------------------


def _joined_text(parts: list[dict[str, Any]]) -> str:
    return "".join(str(p.get("content") or "") for p in parts if p.get("type", "text") == "text")


def _text_value(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
