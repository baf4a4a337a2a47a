"""Stream chunks synthesized from an imported step's final message.

Telemetry keeps the answer, not the chunks it arrived in. When the agent asks an
imported step for a stream, the SDK instrumentor serves these chunks (the same path a
recorded stream takes): OpenAI ``chat.completion.chunk``s, or Anthropic's
``message_start`` … ``message_stop`` events, adding up to the same message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rewind.storage.trace import Event

_PIECE = 64  # characters of text per chunk: a stream that is visibly one


def with_stream(event: Event, kwargs: Mapping[str, Any]) -> Event | None:
    """``event`` with a ``stream`` record synthesized from its response, or ``None`` when its
    response has no shape a stream can be made of."""
    response = event.response
    if not isinstance(response, dict) or not event.ok:
        return None
    if response.get("object") == "chat.completion":
        chunks = openai_chunks(response, include_usage=_include_usage(kwargs))
    elif response.get("type") == "message":
        chunks = anthropic_events(response)
    else:
        return None
    return event.copy(stream={"chunks": chunks, "truncated": False, "synthesized": True})


def _include_usage(kwargs: Mapping[str, Any]) -> bool:
    options = kwargs.get("stream_options")
    return isinstance(options, Mapping) and bool(options.get("include_usage"))


def _pieces(text: str) -> list[str]:
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


def openai_chunks(response: dict[str, Any], *, include_usage: bool = False) -> list[dict[str, Any]]:
    head = {
        "id": response.get("id"),
        "object": "chat.completion.chunk",
        "created": response.get("created") or 0,
        "model": response.get("model"),
    }

    def chunk(index: int, delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    chunks: list[dict[str, Any]] = []
    for choice in response.get("choices") or []:
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        chunks.append(chunk(index, {"role": "assistant", "content": ""}))
        content = message.get("content")
        if isinstance(content, str) and content:
            chunks.extend(chunk(index, {"content": piece}) for piece in _pieces(content))
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            chunks.append(
                chunk(
                    index,
                    {
                        "tool_calls": [
                            {
                                "index": position,
                                "id": call.get("id"),
                                "type": "function",
                                "function": {
                                    "name": function.get("name"),
                                    "arguments": function.get("arguments") or "",
                                },
                            }
                        ]
                    },
                )
            )
        chunks.append(chunk(index, {}, choice.get("finish_reason") or "stop"))
    if include_usage and isinstance(response.get("usage"), dict):
        chunks.append({**head, "choices": [], "usage": response["usage"]})
    return chunks


def anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    usage = message.get("usage") or {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message.get("content") or []):
        kind = block.get("type")
        if kind == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            events.extend(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                for piece in _pieces(block.get("text") or "")
            )
        elif kind == "tool_use":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "input": {},
                    },
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})},
                }
            )
        else:
            continue
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events
