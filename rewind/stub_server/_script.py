"""Scripted turns and injected errors: what a test queues up for the server to answer with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TURN_KEYS = frozenset({"text", "tool_calls", "thinking", "error", "stream_error_after", "delay"})
_ERROR_KEYS = frozenset({"status", "type", "message", "code", "param", "headers", "body"})


@dataclass(frozen=True)
class ToolCall:
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
class ErrorSpec:
    status: int = 500
    type: str | None = None
    message: str | None = None
    code: str | None = None
    param: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None


@dataclass(frozen=True)
class ScriptTurn:
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    thinking: str | None = None
    error: ErrorSpec | None = None
    stream_error_after: int | None = None
    delay: float = 0.0


def parse_error_spec(spec: Any) -> ErrorSpec:
    if isinstance(spec, int):
        return ErrorSpec(status=spec)
    if not isinstance(spec, Mapping):
        raise ValueError(f"script error must be a dict or a status code, got {spec!r}")
    unknown = set(spec) - _ERROR_KEYS
    if unknown:
        raise ValueError(f"unknown keys in script error: {sorted(unknown)}")
    headers = spec.get("headers") or {}
    return ErrorSpec(
        status=int(spec.get("status", 500)),
        type=spec.get("type"),
        message=spec.get("message"),
        code=spec.get("code"),
        param=spec.get("param"),
        headers=tuple((str(k), str(v)) for k, v in dict(headers).items()),
        body=spec.get("body"),
    )


def parse_turn(spec: Any) -> ScriptTurn:
    # A bare string is the most common scripted answer, so it gets a shorthand.
    if isinstance(spec, str):
        return ScriptTurn(text=spec)
    if not isinstance(spec, Mapping):
        raise ValueError(f"script turn must be a dict or a string, got {spec!r}")
    unknown = set(spec) - _TURN_KEYS
    # Failing loudly on a typo beats silently falling back to the default brain.
    if unknown:
        raise ValueError(f"unknown keys in script turn: {sorted(unknown)}")
    tool_calls: tuple[ToolCall, ...] | None = None
    if "tool_calls" in spec:
        calls = []
        for raw in spec["tool_calls"] or []:
            if not isinstance(raw, Mapping) or "name" not in raw:
                raise ValueError(f"scripted tool call needs a name: {raw!r}")
            calls.append(ToolCall(str(raw["name"]), raw.get("arguments", {}), raw.get("id")))
        tool_calls = tuple(calls)
    after = spec.get("stream_error_after")
    return ScriptTurn(
        text=None if spec.get("text") is None else str(spec["text"]),
        tool_calls=tool_calls,
        thinking=None if spec.get("thinking") is None else str(spec["thinking"]),
        error=None if spec.get("error") is None else parse_error_spec(spec["error"]),
        stream_error_after=None if after is None else max(0, int(after)),
        delay=float(spec.get("delay") or 0.0),
    )
