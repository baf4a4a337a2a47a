"""Short human-readable views of recorded steps, shared by the CLI, the TUI and ``render_text``.

Everything here reads JSON data and never raises on an unexpected shape: a payload
rewind does not recognise is shown as compact JSON. Everything it returns for display
is inert (``rewind._escape``): recorded text never reaches a terminal as an escape
sequence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from rewind.data.escape import inert
from rewind.storage.trace import Event

ELLIPSIS = "…"


def compact(value: Any, limit: int | None = None) -> str:
    """One-line JSON (strings shown bare), cut to ``limit`` characters."""
    if isinstance(value, str):
        return clip(value, limit)
    return clip(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str), limit)


def pretty(value: Any) -> str:
    """Indented JSON for detail views (its line breaks are the layout's; the text is inert)."""
    return inert(json.dumps(value, ensure_ascii=False, indent=2, default=str), keep_newlines=True)


def clip(text: str, limit: int | None) -> str:
    """``text`` on one line, inert, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split()) if ("\n" in text or "\r" in text or "\t" in text) else text
    text = inert(text)
    if limit is not None and len(text) > limit:
        return text[: max(0, limit - 1)] + ELLIPSIS
    return text


def error_line(error: Any) -> str:
    """``Type: message`` for a recorded error record."""
    if not isinstance(error, dict):
        return compact(error)
    kind = str(error.get("qualname") or error.get("type") or "error")
    message = str(error.get("message", ""))
    return clip(f"{kind}: {message}" if message else kind, None)


def model_of(event: Event) -> str | None:
    """The model an llm step used: what the provider reported, else what was asked for.

    Recorded text: pass it through ``clip`` (or ``inert``) before showing it."""
    for source in (event.response, _stream_head(event), event.request):
        model = _model_in(source)
        if model:
            return model
    return None


def _model_in(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    for holder in (payload, payload.get("message"), payload.get("response")):
        if isinstance(holder, dict):
            model = holder.get("model") or holder.get("model_version") or holder.get("modelVersion")
            if isinstance(model, str) and model:
                return model
    return None


def stream_chunks(event: Event) -> list[Any]:
    """The recorded chunks of a streamed call (``Event.get("stream")``), or ``[]``.

    Accepts a bare list of chunks or a mapping holding them under ``chunks``/``events``.
    """
    stream = event.get("stream")
    if isinstance(stream, list):
        return stream
    if isinstance(stream, dict):
        for key in ("chunks", "events", "items"):
            if isinstance(stream.get(key), list):
                return stream[key]
    return []


def unwrap_chunk(chunk: Any) -> Any:
    """A chunk's payload when the recorder wrapped it (``{"data": …}``) with metadata."""
    if isinstance(chunk, dict) and "choices" not in chunk and "type" not in chunk:
        for key in ("data", "chunk", "event"):
            inner = chunk.get(key)
            if isinstance(inner, dict):
                return inner
    return chunk


def _stream_head(event: Event) -> Any:
    for chunk in stream_chunks(event)[:3]:
        chunk = unwrap_chunk(chunk)
        if _model_in(chunk):
            return chunk
    return None


def answer_text(response: Any) -> str | None:
    """The text (and tool calls) an LLM answered, for OpenAI, Anthropic and Gemini shapes."""
    if not isinstance(response, dict):
        return None
    parts = list(_answer_parts(response))
    return " ".join(p for p in parts if p) if parts else None


def _answer_parts(response: dict[str, Any]) -> Iterator[str]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):  # OpenAI chat
        message = choices[0].get("message") or {}
        if isinstance(message, dict):
            yield from _content_text(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    yield f"→ {function.get('name')}({_args(function.get('arguments'))})"
        return
    output = response.get("output")
    if isinstance(output, list):  # OpenAI Responses
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                yield from _content_text(item.get("content"))
            elif item.get("type") == "function_call":
                yield f"→ {item.get('name')}({_args(item.get('arguments'))})"
        return
    content = response.get("content")
    if isinstance(content, list) and response.get("type") == "message":  # Anthropic
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                yield f"→ {block.get('name')}({_args(block.get('input'))})"
            else:
                yield from _content_text([block])
        return
    candidates = response.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):  # Gemini
        body = candidates[0].get("content")
        parts = body.get("parts") if isinstance(body, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]
            elif isinstance(part, dict):
                call = part.get("function_call") or part.get("functionCall")
                if isinstance(call, dict):
                    yield f"→ {call.get('name')}({_args(call.get('args'))})"


def _content_text(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]
            elif isinstance(part, str):
                yield part


def _args(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return clip(arguments, 60)
    if isinstance(arguments, dict):
        return clip(", ".join(f"{k}={compact(v)}" for k, v in arguments.items()), 60)
    return compact(arguments, 60)


def stream_text(event: Event) -> str | None:
    """Text assembled from a streamed call's recorded chunks (OpenAI chat/Responses, Anthropic)."""
    pieces: list[str] = []
    for chunk in stream_chunks(event):
        chunk = unwrap_chunk(chunk)
        if not isinstance(chunk, dict):
            continue
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                    pieces.append(delta["content"])
            continue
        kind = chunk.get("type")
        if kind == "response.output_text.delta" and isinstance(chunk.get("delta"), str):
            pieces.append(chunk["delta"])
        elif kind == "content_block_delta":
            delta = chunk.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                pieces.append(delta["text"])
    return "".join(pieces) if pieces else None


def outcome(event: Event, limit: int | None = None) -> str:
    """What a step returned, in one line: the answer text, an error, or compact JSON."""
    if not event.ok:
        return clip("✗ " + error_line(event.error), limit)
    response = event.response
    text = answer_text(response) if event.kind == "llm" else None
    if text is None and response is None and event.get("stream") is not None:
        streamed = stream_text(event)
        count = len(stream_chunks(event))
        text = f"[stream, {count} chunks] {streamed or ''}".rstrip()
    if text is None:
        text = compact(response)
    stream = event.get("stream")
    if isinstance(stream, dict) and stream.get("truncated"):
        text = "[stream cut short] " + text
    return clip(text, limit)


def request_text(request: Any) -> str | None:
    """The most telling part of a request: the last user message, else ``None``."""
    if not isinstance(request, dict):
        return None
    messages = request.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") in ("user", "tool"):
                text = " ".join(_content_text(message.get("content")))
                if text:
                    return text
    prompt = request.get("input", request.get("prompt"))
    if isinstance(prompt, str):
        return prompt
    return None


def request_preview(request: Any, limit: int | None = None) -> str:
    """A request in one line, led by what is new in it.

    A chat request re-sends its whole history (the system prompt first) at every step:
    its newest message is what tells the steps apart, so it comes first, with the
    message count; other requests are compact JSON.
    """
    if isinstance(request, dict) and isinstance(request.get("messages"), list) and request["messages"]:
        messages = request["messages"]
        newest = _message_text(messages[-1])
        count = f"{len(messages)} message" + ("" if len(messages) == 1 else "s")
        return clip(f"[{count}] {newest}", limit)
    if isinstance(request, dict) and isinstance(request.get("input"), list) and request["input"]:
        items = request["input"]  # the Responses API's history
        count = f"{len(items)} input item" + ("" if len(items) == 1 else "s")
        return clip(f"[{count}] {_message_text(items[-1])}", limit)
    return compact(request, limit)


def _message_text(message: Any) -> str:
    """``role: text`` of one chat message; tool calls and tool results named as such."""
    if not isinstance(message, dict):
        return compact(message)
    role = str(message.get("role") or message.get("type") or "message")
    parts = list(_content_text(message.get("content")))
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"→ {function.get('name')}({_args(function.get('arguments'))})")
    content = message.get("content")
    if isinstance(content, list):  # Anthropic blocks: tool_use / tool_result
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                parts.append(f"→ {block.get('name')}({_args(block.get('input'))})")
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append("tool result: " + " ".join(_content_text(block.get("content"))))
    if message.get("type") == "function_call_output":
        parts.append(compact(message.get("output")))
    text = " ".join(p for p in parts if p) or compact({k: v for k, v in message.items() if k != "role"})
    return f"{role}: {text}"


def search_text(event: Event) -> str:
    """Everything a substring filter looks at for one step: its skeleton, request and outcome, whole."""
    return " ".join(_filter_fields(event)).lower()


def _filter_fields(event: Event) -> Iterable[str]:
    yield f"#{event.seq} {event.kind} {event.name}"
    yield "ok" if event.ok else "error"
    model = model_of(event) if event.kind == "llm" else None
    if model:
        yield model
    yield outcome(event)
    yield compact(event.request)
    if not event.ok:
        yield compact(event.error)
    elif event.response is not None:
        yield compact(event.response)
    else:
        yield compact(event.get("stream"))
