"""A deterministic loopback model server speaking the OpenAI and Anthropic wire formats.

The real ``openai`` and ``anthropic`` SDKs can be pointed at it (``base_url``) and
parse its answers into their own types, which makes it the shared fake backend
for tests, examples, ``make demo`` and anyone who wants to try rewind without an
API key::

    with StubServer() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="stub")
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])

It is deliberately stdlib only and imports nothing else from ``rewind``, so it
keeps working while the rest of the package changes, and so it can run anywhere
with ``python -m rewind.stub_server``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

__all__ = ["StubRequest", "StubServer", "main"]

# A fixed timestamp keeps every payload byte-for-byte reproducible across runs.
CREATED = 1_700_000_000
DEFAULT_EMBEDDING_DIMS = 8
DEFAULT_PORT = 8765
MODEL_IDS = ("stub-model", "gpt-4o-mini", "text-embedding-3-small", "claude-stub")

_DISCONNECT_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
_TURN_KEYS = frozenset({"text", "tool_calls", "thinking", "error", "stream_error_after", "delay"})
_ERROR_KEYS = frozenset({"status", "type", "message", "code", "param", "headers", "body"})

Provider = Literal["openai", "anthropic"]


# --------------------------------------------------------------------------- public records


@dataclass(frozen=True)
class StubRequest:
    """One request as the server received it.

    ``path`` is the raw request target including any query string (the Anthropic
    beta namespace shows up as ``/v1/messages?beta=true``); header names are
    lower-cased so lookups do not depend on the client's spelling.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


# --------------------------------------------------------------------------- scripted turns


@dataclass(frozen=True)
class _ToolCall:
    name: str
    arguments: Any
    call_id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def arguments_obj(self) -> dict[str, Any]:
        if isinstance(self.arguments, Mapping):
            return dict(self.arguments)
        if isinstance(self.arguments, str):
            try:
                parsed = json.loads(self.arguments)
            except ValueError:
                return {}
            return parsed if isinstance(parsed, dict) else {}
        return {}


@dataclass(frozen=True)
class _ErrorSpec:
    status: int = 500
    type: str | None = None
    message: str | None = None
    code: str | None = None
    param: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None


@dataclass(frozen=True)
class _ScriptTurn:
    text: str | None = None
    tool_calls: tuple[_ToolCall, ...] | None = None
    thinking: str | None = None
    error: _ErrorSpec | None = None
    stream_error_after: int | None = None
    delay: float = 0.0


def _parse_error_spec(spec: Any) -> _ErrorSpec:
    if isinstance(spec, int):
        return _ErrorSpec(status=spec)
    if not isinstance(spec, Mapping):
        raise ValueError(f"script error must be a dict or a status code, got {spec!r}")
    unknown = set(spec) - _ERROR_KEYS
    if unknown:
        raise ValueError(f"unknown keys in script error: {sorted(unknown)}")
    headers = spec.get("headers") or {}
    return _ErrorSpec(
        status=int(spec.get("status", 500)),
        type=spec.get("type"),
        message=spec.get("message"),
        code=spec.get("code"),
        param=spec.get("param"),
        headers=tuple((str(k), str(v)) for k, v in dict(headers).items()),
        body=spec.get("body"),
    )


def _parse_turn(spec: Any) -> _ScriptTurn:
    # A bare string is the most common scripted answer, so it gets a shorthand.
    if isinstance(spec, str):
        return _ScriptTurn(text=spec)
    if not isinstance(spec, Mapping):
        raise ValueError(f"script turn must be a dict or a string, got {spec!r}")
    unknown = set(spec) - _TURN_KEYS
    # Failing loudly on a typo beats silently falling back to the default brain.
    if unknown:
        raise ValueError(f"unknown keys in script turn: {sorted(unknown)}")
    tool_calls: tuple[_ToolCall, ...] | None = None
    if "tool_calls" in spec:
        calls = []
        for raw in spec["tool_calls"] or []:
            if not isinstance(raw, Mapping) or "name" not in raw:
                raise ValueError(f"scripted tool call needs a name: {raw!r}")
            calls.append(_ToolCall(str(raw["name"]), raw.get("arguments", {}), raw.get("id")))
        tool_calls = tuple(calls)
    after = spec.get("stream_error_after")
    return _ScriptTurn(
        text=None if spec.get("text") is None else str(spec["text"]),
        tool_calls=tool_calls,
        thinking=None if spec.get("thinking") is None else str(spec["thinking"]),
        error=None if spec.get("error") is None else _parse_error_spec(spec["error"]),
        stream_error_after=None if after is None else max(0, int(after)),
        delay=float(spec.get("delay") or 0.0),
    )


# --------------------------------------------------------------------------- conversation model


@dataclass
class _Msg:
    role: Literal["system", "user", "assistant", "tool"]
    text: str


@dataclass
class _Tool:
    name: str
    schema: dict[str, Any]


@dataclass
class _Conversation:
    """The provider-neutral view of a request that the default brain reasons about."""

    model: str
    messages: list[_Msg] = field(default_factory=list)
    tools: list[_Tool] = field(default_factory=list)
    # "auto", "none", "required", or a specific tool name.
    tool_choice: str = "auto"
    output_schema: dict[str, Any] | None = None
    json_mode: bool = False
    thinking: bool = False

    def input_tokens(self) -> int:
        return max(1, sum(_count_tokens(m.text) for m in self.messages))

    def last_user_text(self) -> str:
        for msg in reversed(self.messages):
            if msg.role == "user":
                return msg.text
        return ""

    def trailing_tool_results(self) -> list[str]:
        results: list[str] = []
        for msg in reversed(self.messages):
            if msg.role != "tool":
                break
            results.append(msg.text)
        return list(reversed(results))


@dataclass
class _Answer:
    text: str | None
    tool_calls: list[_ToolCall]
    thinking: str | None = None

    def output_tokens(self) -> int:
        words = _count_tokens(self.text or "") + _count_tokens(self.thinking or "")
        words += sum(_count_tokens(c.name + " " + c.arguments_json()) for c in self.tool_calls)
        # Real providers never bill zero output tokens, and SDK code divides by it.
        return max(1, words)


def _count_tokens(text: str) -> int:
    # Word counts are crude but stable, which is all a replay tool needs to assert on.
    return len(text.split())


def _text_of(content: Any) -> str:
    """Flatten the many shapes providers use for message content into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        if "content" in content:
            return _text_of(content["content"])
        if "output" in content:
            return _text_of(content["output"])
        return ""
    if isinstance(content, list):
        parts = [_text_of(part) for part in content]
        return "\n".join(p for p in parts if p)
    return str(content)


def _schema_of(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"type": "object", "properties": {}}


def _json_schema_from_format(fmt: Any) -> tuple[dict[str, Any] | None, bool]:
    """Return (schema, json_mode) for an OpenAI/Anthropic structured output setting."""
    if not isinstance(fmt, Mapping):
        return None, False
    kind = fmt.get("type")
    if kind == "json_schema":
        # Chat nests the schema one level deeper than Responses and Anthropic do.
        inner = fmt.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, Mapping) else fmt.get("schema")
        return _schema_of(schema), False
    if kind == "json_object":
        return None, True
    return None, False


def _chat_conversation(body: Mapping[str, Any]) -> _Conversation:
    conv = _Conversation(model=str(body.get("model") or "stub-model"))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        role = raw.get("role")
        text = _text_of(raw.get("content"))
        if role in ("system", "developer"):
            conv.messages.append(_Msg("system", text))
        elif role == "user":
            conv.messages.append(_Msg("user", text))
        elif role in ("tool", "function"):
            conv.messages.append(_Msg("tool", text))
        elif role == "assistant":
            calls = raw.get("tool_calls") or []
            names = " ".join(str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, Mapping))
            conv.messages.append(_Msg("assistant", (text + " " + names).strip()))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            conv.tools.append(_Tool(str(fn.get("name", "tool")), _schema_of(fn.get("parameters"))))
    for fn in body.get("functions") or []:
        if isinstance(fn, Mapping):
            conv.tools.append(_Tool(str(fn.get("name", "tool")), _schema_of(fn.get("parameters"))))
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        conv.tool_choice = choice
    elif isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        conv.tool_choice = str(choice["function"].get("name", "auto"))
    conv.output_schema, conv.json_mode = _json_schema_from_format(body.get("response_format"))
    return conv


def _responses_conversation(body: Mapping[str, Any]) -> _Conversation:
    conv = _Conversation(model=str(body.get("model") or "stub-model"))
    if body.get("instructions"):
        conv.messages.append(_Msg("system", _text_of(body["instructions"])))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call_output" or (isinstance(kind, str) and kind.endswith("_call_output")):
            conv.messages.append(_Msg("tool", _text_of(item.get("output"))))
        elif kind == "function_call":
            conv.messages.append(_Msg("assistant", str(item.get("name", ""))))
        elif kind in (None, "message"):
            role = item.get("role")
            text = _text_of(item.get("content"))
            if role in ("system", "developer"):
                conv.messages.append(_Msg("system", text))
            elif role == "assistant":
                conv.messages.append(_Msg("assistant", text))
            else:
                conv.messages.append(_Msg("user", text))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            conv.tools.append(_Tool(str(tool.get("name", "tool")), _schema_of(tool.get("parameters"))))
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        conv.tool_choice = choice
    elif isinstance(choice, Mapping) and choice.get("type") == "function":
        conv.tool_choice = str(choice.get("name", "auto"))
    text_cfg = body.get("text")
    if isinstance(text_cfg, Mapping):
        conv.output_schema, conv.json_mode = _json_schema_from_format(text_cfg.get("format"))
    return conv


def _anthropic_conversation(body: Mapping[str, Any]) -> _Conversation:
    conv = _Conversation(model=str(body.get("model") or "stub-model"))
    if body.get("system"):
        conv.messages.append(_Msg("system", _text_of(body["system"])))
    for raw in body.get("messages") or []:
        if not isinstance(raw, Mapping):
            continue
        content = raw.get("content")
        if raw.get("role") == "assistant":
            conv.messages.append(_Msg("assistant", _anthropic_blocks_text(content)))
            continue
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        if results:
            conv.messages.append(_Msg("tool", "\n".join(_text_of(b.get("content")) for b in results)))
        else:
            conv.messages.append(_Msg("user", _anthropic_blocks_text(content)))
    for tool in body.get("tools") or []:
        # Server tools (web search, code execution, ...) carry no input_schema and are
        # run by the provider itself, so the stub must never emit a tool_use for them.
        if isinstance(tool, Mapping) and isinstance(tool.get("input_schema"), Mapping):
            conv.tools.append(_Tool(str(tool.get("name", "tool")), dict(tool["input_schema"])))
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
    conv.output_schema, conv.json_mode = _json_schema_from_format(fmt or body.get("output_format"))
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
                parts.append(_text_of(block))
        return "\n".join(p for p in parts if p)
    return _text_of(content)


# --------------------------------------------------------------------------- the default brain

_QUOTED = re.compile(r"\"([^\"]{1,200})\"|\u201c([^\u201d]{1,200})\u201d|(?:^|\s)'([^']{1,200})'(?=[\s.,;:!?]|$)")
_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "email": "stub@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
    "duration": "PT1S",
}


def _string_value(name: str, text: str) -> str:
    """Pick a deterministic string argument from the user's words.

    An explicit ``name=value`` wins, then the first quoted phrase, then the whole
    (whitespace-normalised) message, so "search for "otel replay"" gives
    ``query="otel replay"`` and plain questions still produce something readable.
    """
    if name:
        explicit = re.search(rf"\b{re.escape(name)}\s*[:=]\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", text, flags=re.IGNORECASE)
        if explicit:
            return explicit.group(1).strip("\"'")
    quoted = _QUOTED.search(text)
    if quoted:
        return next(g for g in quoted.groups() if g is not None)
    cleaned = " ".join(text.split())
    return cleaned[:200] if cleaned else "stub"


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return {}
    node: Any = root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return {}
        node = node[part]
    return node


def _example(schema: Any, root: Mapping[str, Any], name: str, text: str, depth: int = 0) -> Any:
    """Build the smallest value that satisfies ``schema``, deterministically."""
    if depth > 12 or not isinstance(schema, Mapping):
        return _string_value(name, text)
    if isinstance(schema.get("$ref"), str):
        return _example(_resolve_ref(schema["$ref"], root), root, name, text, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            non_null = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return _example((non_null or options)[0], root, name, text, depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            resolved = _resolve_ref(part["$ref"], root) if isinstance(part, Mapping) and "$ref" in part else part
            if isinstance(resolved, Mapping):
                merged.update(resolved)
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        return _example(merged, root, name, text, depth + 1)

    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"

    if kind == "object":
        properties = schema.get("properties")
        props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        keys = [k for k in required if isinstance(k, str)] if isinstance(required, list) else list(props)
        return {key: _example(props.get(key, {}), root, key, text, depth + 1) for key in keys}
    if kind == "array":
        if isinstance(schema.get("prefixItems"), list):
            return [_example(item, root, name, text, depth + 1) for item in schema["prefixItems"]]
        max_items = schema.get("maxItems")
        if max_items == 0:
            return []
        count = max(1, int(schema.get("minItems") or 0))
        return [_example(schema.get("items", {}), root, name, text, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        return _clamp_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    value = _FORMAT_EXAMPLES.get(str(schema.get("format"))) or _string_value(name, text)
    max_len = schema.get("maxLength")
    if isinstance(max_len, int):
        value = value[:max_len]
    min_len = schema.get("minLength")
    if isinstance(min_len, int) and len(value) < min_len:
        value = value + "x" * (min_len - len(value))
    return value


def _clamp_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    value: float = 1
    low, high = schema.get("minimum"), schema.get("maximum")
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(ex_low, (int, float)) and value <= ex_low:
        value = ex_low + 1
    if isinstance(high, (int, float)) and value > high:
        value = high
    if isinstance(ex_high, (int, float)) and value >= ex_high:
        value = ex_high - 1
    return int(value) if integer else value


def _pick_tool(conv: _Conversation, user_text: str) -> _Tool:
    by_name = {tool.name: tool for tool in conv.tools}
    if conv.tool_choice in by_name:
        return by_name[conv.tool_choice]
    lowered = user_text.lower()
    for tool in conv.tools:
        name = tool.name.lower()
        if name in lowered or name.replace("_", " ") in lowered:
            return tool
    return conv.tools[0]


def _thinking_for(user_text: str) -> str:
    topic = " ".join(user_text.split())[:120] or "the request"
    return f"The user asked: {topic}. A deterministic answer is enough."


def _default_answer(conv: _Conversation) -> _Answer:
    """The stub's answer when no script turn is queued."""
    last = conv.messages[-1] if conv.messages else None
    user_text = conv.last_user_text()
    if last is not None and last.role == "user" and conv.tools and conv.tool_choice != "none":
        tool = _pick_tool(conv, user_text)
        args = _example(tool.schema, tool.schema, "", user_text)
        return _Answer(None, [_ToolCall(tool.name, args if isinstance(args, dict) else {})])
    results = conv.trailing_tool_results() if last is not None and last.role == "tool" else []
    if conv.output_schema is not None:
        hint = " ".join(results) if results else user_text
        value = _example(conv.output_schema, conv.output_schema, "", hint)
        return _Answer(json.dumps(value), [])
    if results:
        quoted = "; ".join(" ".join(r.split()) for r in results)
        if len(quoted) > 500:
            quoted = quoted[:500] + "..."
        return _Answer(f"Based on the tool result: {quoted}", [])
    if conv.json_mode:
        return _Answer(json.dumps({"echo": user_text}), [])
    if user_text:
        return _Answer(f"Echo: {' '.join(user_text.split())}", [])
    return _Answer("Hello from the rewind stub server.", [])


def _resolve_answer(conv: _Conversation, turn: _ScriptTurn | None) -> _Answer:
    if turn is not None and (turn.text is not None or turn.tool_calls is not None):
        answer = _Answer(turn.text, list(turn.tool_calls or ()))
    else:
        answer = _default_answer(conv)
    if turn is not None and turn.thinking is not None:
        answer.thinking = turn.thinking
    elif conv.thinking:
        answer.thinking = _thinking_for(conv.last_user_text())
    return answer


def _signature(thinking: str) -> str:
    # Opaque but reproducible, like the real field: clients must only echo it back.
    return base64.b64encode(hashlib.sha256(thinking.encode()).digest()).decode()


def _text_chunks(text: str) -> list[str]:
    """Split text at word boundaries so deltas concatenate back to the exact text."""
    return re.findall(r"\s*\S+|\s+$", text)


def _fixed_chunks(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --------------------------------------------------------------------------- error bodies


def _openai_error_defaults(status: int) -> tuple[str, str | None, str]:
    if status == 429:
        return "requests", "rate_limit_exceeded", "Rate limit reached (injected by the rewind stub server)."
    if status == 401:
        return "invalid_request_error", "invalid_api_key", "Incorrect API key provided (injected by the stub)."
    if status >= 500:
        return "server_error", None, "The server had an error processing your request (injected by the stub)."
    return "invalid_request_error", None, f"Request failed with status {status} (injected by the stub)."


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


def _openai_error_object(spec: _ErrorSpec) -> dict[str, Any]:
    kind, code, message = _openai_error_defaults(spec.status)
    return {
        "message": spec.message or message,
        "type": spec.type or kind,
        "param": spec.param,
        "code": spec.code if spec.code is not None else code,
    }


def _anthropic_error_object(spec: _ErrorSpec) -> dict[str, Any]:
    kind, message = _anthropic_error_defaults(spec.status)
    return {"type": spec.type or kind, "message": spec.message or message}


# --------------------------------------------------------------------------- SSE plumbing


@dataclass
class _Event:
    data: Any
    event: str | None = None
    # "content" events are the ones stream_error_after counts; "final" events are
    # the trailers an injected error must pre-empt even if content ran out early.
    kind: Literal["meta", "content", "final"] = "meta"


def _encode_event(event: _Event) -> bytes:
    data = event.data if isinstance(event.data, str) else json.dumps(event.data, separators=(",", ":"))
    head = f"event: {event.event}\n" if event.event else ""
    return f"{head}data: {data}\n\n".encode()


# --------------------------------------------------------------------------- renderers


@dataclass
class _Ctx:
    """Per-request identity and accounting shared by the renderers."""

    server: StubServer
    conv: _Conversation
    answer: _Answer
    body: Mapping[str, Any]

    def next_id(self, prefix: str) -> str:
        return self.server._next_id(prefix)


def _chat_usage(ctx: _Ctx) -> dict[str, Any]:
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


def _chat_tool_calls(ctx: _Ctx) -> list[dict[str, Any]]:
    return [
        {
            "id": call.call_id or ctx.next_id("call_stub_"),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()},
        }
        for call in ctx.answer.tool_calls
    ]


def _chat_json(ctx: _Ctx) -> dict[str, Any]:
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


def _chat_events(ctx: _Ctx) -> list[_Event]:
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

    events = [_Event(chunk({"role": "assistant", "content": "", "refusal": None}))]
    for piece in _text_chunks(ctx.answer.text or ""):
        events.append(_Event(chunk({"content": piece}), kind="content"))
    for index, call in enumerate(_chat_tool_calls(ctx)):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append(_Event(chunk({"tool_calls": [head]})))
        for piece in _fixed_chunks(call["function"]["arguments"]):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            events.append(_Event(chunk(delta), kind="content"))
    events.append(_Event(chunk({}, "tool_calls" if ctx.answer.tool_calls else "stop"), kind="final"))
    if include_usage:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = _chat_usage(ctx)
        events.append(_Event(usage_chunk, kind="final"))
    events.append(_Event("[DONE]", kind="final"))
    return events


def _chat_stream_error(spec: _ErrorSpec | None, _seq: int) -> _Event:
    return _Event({"error": _openai_error_object(spec or _ErrorSpec(status=500))})


def _responses_usage(ctx: _Ctx) -> dict[str, Any]:
    prompt, completion = ctx.conv.input_tokens(), ctx.answer.output_tokens()
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _responses_items(ctx: _Ctx) -> list[dict[str, Any]]:
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


def _responses_object(ctx: _Ctx, response_id: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
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


def _responses_json(ctx: _Ctx) -> dict[str, Any]:
    response_id = ctx.next_id("resp_stub_")
    return _responses_object(ctx, response_id, "completed", _responses_items(ctx))


def _responses_events(ctx: _Ctx) -> list[_Event]:
    response_id = ctx.next_id("resp_stub_")
    items = _responses_items(ctx)

    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> _Event:
        # sequence_number is filled in at send time so an injected error slots in cleanly.
        return _Event({"type": kind, "sequence_number": 0, **payload}, event=kind, kind=role)

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
            for piece in _text_chunks(text):
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
            for piece in _fixed_chunks(item["arguments"]):
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


def _responses_stream_error(spec: _ErrorSpec | None, seq: int) -> _Event:
    # The live API nests the details under "error" (unlike its published schema);
    # the nested form is also what makes the Python SDK raise instead of yielding.
    err = _openai_error_object(spec or _ErrorSpec(status=500))
    err["code"] = err["code"] or err["type"]
    return _Event({"type": "error", "sequence_number": seq, "error": err}, event="error")


def _anthropic_usage(ctx: _Ctx, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": ctx.conv.input_tokens(),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _anthropic_blocks(ctx: _Ctx) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if ctx.answer.thinking is not None:
        blocks.append(
            {"type": "thinking", "thinking": ctx.answer.thinking, "signature": _signature(ctx.answer.thinking)}
        )
    if ctx.answer.text is not None or not ctx.answer.tool_calls:
        blocks.append({"type": "text", "text": ctx.answer.text or ""})
    for call in ctx.answer.tool_calls:
        call_id = call.call_id or ctx.next_id("toolu_stub_")
        blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments_obj()})
    return blocks


def _anthropic_message(ctx: _Ctx, message_id: str, blocks: list[dict[str, Any]], done: bool) -> dict[str, Any]:
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


def _anthropic_json(ctx: _Ctx) -> dict[str, Any]:
    message_id = ctx.next_id("msg_stub_")
    return _anthropic_message(ctx, message_id, _anthropic_blocks(ctx), done=True)


def _anthropic_events(ctx: _Ctx) -> list[_Event]:
    message_id = ctx.next_id("msg_stub_")
    blocks = _anthropic_blocks(ctx)

    def ev(kind: str, payload: dict[str, Any], role: Literal["meta", "content", "final"] = "meta") -> _Event:
        return _Event({"type": kind, **payload}, event=kind, kind=role)

    events = [ev("message_start", {"message": _anthropic_message(ctx, message_id, [], done=False)})]
    for index, block in enumerate(blocks):
        if block["type"] == "thinking":
            start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _text_chunks(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "tool_use":
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _fixed_chunks(arguments)]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _text_chunks(block["text"])]
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


def _anthropic_stream_error(spec: _ErrorSpec | None, _seq: int) -> _Event:
    # Mid-stream failures on the real API are nearly always overload, so that is the default.
    err = _anthropic_error_object(spec or _ErrorSpec(status=529))
    return _Event({"type": "error", "error": err}, event="error")


# --------------------------------------------------------------------------- embeddings


def _embedding(item: Any, dims: int) -> list[float]:
    """A unit vector derived from a hash of the input, exactly representable as float32.

    Float32-exact values make the JSON floats and the base64 encoding decode to
    the same numbers, so switching encoding_format never changes a result.
    """
    seed = json.dumps(item, sort_keys=True).encode()
    raw = b""
    counter = 0
    while len(raw) < dims * 4:
        raw += hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    values = [int.from_bytes(raw[i * 4 : i * 4 + 4], "big") / 2**32 * 2 - 1 for i in range(dims)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    packed = struct.pack(f"<{dims}f", *(v / norm for v in values))
    return list(struct.unpack(f"<{dims}f", packed))


def _embeddings_json(body: Mapping[str, Any]) -> dict[str, Any]:
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
        vector = _embedding(item, dims)
        tokens += _count_tokens(item) if isinstance(item, str) else len(item) if isinstance(item, list) else 1
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


def _anthropic_model(model_id: str) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": model_id, "created_at": "2023-11-14T22:13:20Z"}


# --------------------------------------------------------------------------- HTTP layer


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Concurrent demos open many connections at once; the default backlog of 5 refuses some.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], stub: StubServer) -> None:
        self.stub = stub
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        # Idle keep-alive connections would otherwise keep answering after stop(),
        # so "stopped" would not really mean unreachable.
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        # Socket-level failures are the client's business (it hung up or stalled).
        if isinstance(exc, _DISCONNECT_ERRORS) or (isinstance(exc, OSError) and not self.stub.verbose):
            return
        super().handle_error(request, client_address)


class _ClientGone(Exception):
    """The client hung up; there is nobody left to answer."""


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "rewind-stub/1"
    sys_version = ""
    # Bounds how long an idle keep-alive connection pins a thread.
    timeout = 30
    # Headers and body leave in separate writes; with Nagle on, a keep-alive
    # request waits ~40 ms for the client's delayed ACK before the body goes out.
    disable_nagle_algorithm = True

    request_id = ""
    _headers_sent = False

    def log_message(self, format: str, *args: Any) -> None:
        # Agents put prompts and keys in requests; stay quiet unless asked.
        if self.server.stub.verbose:
            sys.stderr.write(f"[rewind-stub] {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # ----------------------------------------------------------------- plumbing

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_head(
        self, status: int, content_type: str, extra: Iterable[tuple[str, str]] = (), length: int | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        # Both spellings always go out: each SDK surfaces only its own on exceptions.
        self.send_header("x-request-id", self.request_id)
        self.send_header("request-id", self.request_id)
        for name, value in extra:
            self.send_header(name, value)
        if length is None:
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self._headers_sent = True

    def _send_json(self, status: int, payload: Any, extra: Iterable[tuple[str, str]] = ()) -> None:
        raw = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        self._send_head(status, "application/json", extra, length=len(raw))
        self._write(raw)

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except _DISCONNECT_ERRORS as exc:
            self.close_connection = True
            raise _ClientGone from exc

    def _send_error(self, provider: Provider, spec: _ErrorSpec) -> None:
        if spec.body is not None:
            payload: Any = spec.body
        elif provider == "anthropic":
            payload = {"type": "error", "error": _anthropic_error_object(spec), "request_id": self.request_id}
        else:
            payload = {"error": _openai_error_object(spec)}
        self._send_json(spec.status, payload, spec.headers)

    def _stream(
        self,
        events: Sequence[_Event],
        turn: _ScriptTurn | None,
        make_error: Callable[[_ErrorSpec | None, int], _Event],
        *,
        numbered: bool = False,
    ) -> None:
        stub = self.server.stub
        error_after = turn.stream_error_after if turn is not None else None
        error_spec = turn.error if turn is not None else None
        self._send_head(200, "text/event-stream; charset=utf-8")
        sent_content = 0
        for seq, event in enumerate(events):
            cut = event.kind == "final" or (event.kind == "content" and sent_content >= (error_after or 0))
            if error_after is not None and cut:
                self._write(_encode_event(make_error(error_spec, seq)))
                return
            if numbered and isinstance(event.data, dict):
                event.data["sequence_number"] = seq
            self._write(_encode_event(event))
            if event.kind == "content":
                sent_content += 1
            if stub.stream_delay > 0:
                time.sleep(stub.stream_delay)

    # ----------------------------------------------------------------- routing

    def _dispatch(self) -> None:
        stub = self.server.stub
        self._headers_sent = False
        try:
            raw = self._read_body()
            body: Any = None
            bad_json = False
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    bad_json = True
            headers: dict[str, str] = {}
            for name, value in self.headers.items():
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            number = stub._record(StubRequest(self.command, self.path, headers, body))
            self.request_id = f"req_stub_{number}"

            route = urlsplit(self.path).path.rstrip("/") or "/"
            # Accept both base URL conventions (with and without the /v1 suffix).
            if route.startswith("/v1/") or route == "/v1":
                route = route[3:] or "/"
            # Azure OpenAI puts the deployment in the path: /openai/deployments/{name}/chat/completions.
            azure = re.match(r"/openai(?:/deployments/[^/]+)?(/.*)$", route)
            if azure:
                route = azure.group(1)
            provider: Provider = (
                "anthropic" if route.startswith("/messages") or "anthropic-version" in headers else "openai"
            )

            stub._sleep_latency()
            injected = stub._pop_failure()
            if injected is not None:
                self._send_error(provider, injected)
                return
            if bad_json or (self.command == "POST" and not isinstance(body, dict)):
                self._send_error(provider, _ErrorSpec(400, message="Request body must be a JSON object."))
                return
            self._route(self.command, route, body if isinstance(body, dict) else {}, provider)
        except _ClientGone:
            self.close_connection = True
        except _DISCONNECT_ERRORS:
            self.close_connection = True
        # A bug in the stub must surface as a 500 rather than a client waiting forever.
        except Exception as exc:
            traceback.print_exc()
            self.close_connection = True
            if not self._headers_sent:
                try:
                    self._send_json(
                        500,
                        {
                            "error": {
                                "message": f"stub server error: {exc}",
                                "type": "server_error",
                                "param": None,
                                "code": None,
                            }
                        },
                    )
                except _ClientGone:
                    pass

    def _route(self, method: str, route: str, body: dict[str, Any], provider: Provider) -> None:
        if method == "GET" and route in ("/", "/health", "/healthz"):
            self._send_json(200, {"status": "ok", "service": "rewind-stub-server"})
        elif method == "GET" and route == "/models":
            if provider == "anthropic":
                data = [_anthropic_model(m) for m in MODEL_IDS]
                self._send_json(
                    200, {"data": data, "has_more": False, "first_id": MODEL_IDS[0], "last_id": MODEL_IDS[-1]}
                )
            else:
                self._send_json(200, {"object": "list", "data": [_openai_model(m) for m in MODEL_IDS]})
        elif method == "GET" and route.startswith("/models/"):
            model_id = unquote(route[len("/models/") :])
            self._send_json(200, _anthropic_model(model_id) if provider == "anthropic" else _openai_model(model_id))
        elif method == "POST" and route == "/embeddings":
            self._send_json(200, _embeddings_json(body))
        elif method == "POST" and route == "/messages/count_tokens":
            self._send_json(200, {"input_tokens": _anthropic_conversation(body).input_tokens()})
        elif method == "POST" and route == "/chat/completions":
            self._generate(body, _chat_conversation(body), "openai", _chat_json, _chat_events, _chat_stream_error)
        elif method == "POST" and route == "/responses":
            self._generate(
                body,
                _responses_conversation(body),
                "openai",
                _responses_json,
                _responses_events,
                _responses_stream_error,
                numbered=True,
            )
        elif method == "POST" and route == "/messages":
            self._generate(
                body,
                _anthropic_conversation(body),
                "anthropic",
                _anthropic_json,
                _anthropic_events,
                _anthropic_stream_error,
            )
        else:
            stub_error = _ErrorSpec(404, message=f"Unknown route {method} {self.path} on the rewind stub server.")
            self._send_error(provider, stub_error)

    def _generate(
        self,
        body: dict[str, Any],
        conv: _Conversation,
        provider: Provider,
        render_json: Callable[[_Ctx], dict[str, Any]],
        render_events: Callable[[_Ctx], list[_Event]],
        make_error: Callable[[_ErrorSpec | None, int], _Event],
        *,
        numbered: bool = False,
    ) -> None:
        stub = self.server.stub
        turn = stub._pop_turn()
        if turn is not None and turn.delay > 0:
            time.sleep(turn.delay)
        streaming = bool(body.get("stream"))
        if turn is not None and turn.error is not None and turn.stream_error_after is None:
            self._send_error(provider, turn.error)
            return
        if turn is not None and turn.stream_error_after is not None and not streaming:
            # Without a stream there is no "midway", so the turn fails as a whole.
            self._send_error(provider, turn.error or _ErrorSpec(status=500))
            return
        ctx = _Ctx(stub, conv, _resolve_answer(conv, turn), body)
        if streaming:
            self._stream(render_events(ctx), turn, make_error, numbered=numbered)
        else:
            self._send_json(200, render_json(ctx))


# --------------------------------------------------------------------------- public server


class StubServer:
    """A deterministic OpenAI/Anthropic-compatible HTTP server on loopback.

    ``script`` is a list of turns consumed in order by the generation endpoints
    (chat completions, responses, messages); once it runs out the default brain
    answers. See ``docs/stub-server.md`` for the turn format.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        script: Sequence[Mapping[str, Any] | str] | None = None,
        latency: float = 0.0,
        latency_jitter: float = 0.0,
        seed: int = 0,
        stream_delay: float = 0.0,
        verbose: bool = False,
    ) -> None:
        self.host = host
        self._port = port
        self.latency = float(latency)
        self.latency_jitter = float(latency_jitter)
        self.seed = seed
        self.stream_delay = float(stream_delay)
        self.verbose = verbose
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._requests: list[StubRequest] = []
        self._counters: dict[str, int] = {}
        self._script: deque[_ScriptTurn] = deque(_parse_turn(t) for t in script or ())
        self._failures: deque[_ErrorSpec] = deque()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> StubServer:
        """Bind and serve on a background daemon thread. Returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            # Binding here rather than in the thread surfaces "port in use" to the caller
            # and makes .url valid as soon as start() returns.
            httpd = _HTTPServer((self.host, self._port), self)
            self._port = int(httpd.server_address[1])
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"rewind-stub:{self._port}",
                daemon=True,
            )
            self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every socket; later connections are refused."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._httpd is not None

    # ----------------------------------------------------------------- addresses

    @property
    def port(self) -> int:
        if self._port == 0:
            raise RuntimeError("StubServer has no port yet; call start() first")
        return self._port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # ----------------------------------------------------------------- observation

    @property
    def requests(self) -> list[StubRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def script_remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # ----------------------------------------------------------------- control

    def add_script(self, *turns: Mapping[str, Any] | str) -> None:
        """Queue more scripted turns after any still pending."""
        parsed = [_parse_turn(t) for t in turns]
        with self._lock:
            self._script.extend(parsed)

    def fail_next(
        self,
        status: int = 429,
        n: int = 1,
        body: Mapping[str, Any] | str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next ``n`` requests (any endpoint) with an HTTP error.

        The body defaults to the provider's own error shape for ``status``; pass
        ``body`` to send something else verbatim. Injected failures do not use up
        script turns, so an SDK retry gets the turn the failed attempt would have.
        """
        spec = _ErrorSpec(
            status=status,
            headers=tuple((str(k), str(v)) for k, v in (headers or {}).items()),
            body=None if body is None else (dict(body) if isinstance(body, Mapping) else body),
        )
        with self._lock:
            self._failures.extend([spec] * n)

    def reset(self) -> None:
        """Forget requests, pending script turns and failures, and restart id counters."""
        with self._lock:
            self._requests.clear()
            self._counters.clear()
            self._script.clear()
            self._failures.clear()
            self._rng = random.Random(self.seed)

    # ----------------------------------------------------------------- handler hooks

    def _record(self, request: StubRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            value = self._counters.get(prefix, 0) + 1
            self._counters[prefix] = value
        return f"{prefix}{value}"

    def _pop_turn(self) -> _ScriptTurn | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _pop_failure(self) -> _ErrorSpec | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _sleep_latency(self) -> None:
        if self.latency <= 0 and self.latency_jitter <= 0:
            return
        with self._lock:
            jitter = self._rng.uniform(0, self.latency_jitter) if self.latency_jitter > 0 else 0.0
        time.sleep(max(0.0, self.latency + jitter))

    def __repr__(self) -> str:
        where = self.url if self._port else f"http://{self.host}:<unbound>"
        return f"StubServer({where}, running={self.running})"


# --------------------------------------------------------------------------- CLI


def _load_script(path: str) -> list[Any]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: a script file must hold a JSON list of turns")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewind.stub_server",
        description="Run rewind's deterministic OpenAI/Anthropic-compatible stub model server.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port (default %(default)s)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="extra random wait of up to this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="seed for the jitter")
    parser.add_argument("--stream-delay", type=float, default=0.0, help="seconds between streamed events")
    parser.add_argument("--script", help="JSON file holding a list of scripted turns")
    parser.add_argument("--verbose", action="store_true", help="log each request line to stderr")
    args = parser.parse_args(argv)

    server = StubServer(
        args.host,
        args.port,
        script=_load_script(args.script) if args.script else None,
        latency=args.latency,
        latency_jitter=args.jitter,
        seed=args.seed,
        stream_delay=args.stream_delay,
        verbose=args.verbose,
    )
    server.start()
    print(f"rewind stub server listening on {server.url}")
    print(f"  OpenAI base URL:    {server.openai_base_url}")
    print(f"  Anthropic base URL: {server.anthropic_base_url}")
    print()
    print("Point an agent at it:")
    print(f"  export OPENAI_BASE_URL={server.openai_base_url}")
    print("  export OPENAI_API_KEY=stub")
    print(f"  export ANTHROPIC_BASE_URL={server.anthropic_base_url}")
    print("  export ANTHROPIC_API_KEY=stub")
    print()
    print("Press Ctrl+C to stop.", flush=True)
    stop_requested = threading.Event()
    # `make demo` and process managers stop it with SIGTERM; shut down as cleanly as on Ctrl+C.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop_requested.set())
    try:
        while not stop_requested.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
