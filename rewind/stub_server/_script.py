"""Scripted turns and injected errors: what a test queues up for the server to answer with."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TURN_KEYS = frozenset({"text", "tool_calls", "thinking", "error", "stream_error_after", "delay"})
_CHOICE_KEYS = frozenset({"one_of", "weights"})
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
    #: A random turn: one of these is drawn (with ``weights``) from the server's seeded
    #: generator each time this turn is served, so a run's answer varies and a seed fixes
    #: the sequence of answers.
    one_of: tuple[ScriptTurn, ...] = ()
    weights: tuple[float, ...] | None = None

    def pick(self, rng: random.Random) -> ScriptTurn:
        """This turn, or for a random turn the one ``rng`` draws."""
        if not self.one_of:
            return self
        weights = list(self.weights) if self.weights is not None else None
        return rng.choices(self.one_of, weights=weights)[0]


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
    if "one_of" in spec:
        return _parse_choice(spec)
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


def _parse_choice(spec: Mapping[str, Any]) -> ScriptTurn:
    """``{"one_of": [turn, ...], "weights": [w, ...]}``: a turn drawn at random when served."""
    unknown = set(spec) - _CHOICE_KEYS
    if unknown:
        raise ValueError(f"a one_of turn takes only one_of and weights; unknown keys: {sorted(unknown)}")
    options = spec["one_of"]
    if not isinstance(options, (list, tuple)) or not options:
        raise ValueError(f"one_of must be a non-empty list of turns, got {options!r}")
    turns = tuple(parse_turn(option) for option in options)
    if any(turn.one_of for turn in turns):
        raise ValueError("one_of turns cannot nest another one_of")
    raw = spec.get("weights")
    if raw is None:
        return ScriptTurn(one_of=turns)
    if not isinstance(raw, (list, tuple)) or len(raw) != len(turns):
        raise ValueError(f"weights must be a list of {len(turns)} numbers (one per one_of turn), got {raw!r}")
    try:
        weights = tuple(float(w) for w in raw)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be numbers, got {raw!r}") from None
    if any(w < 0 for w in weights) or not sum(weights) > 0:
        raise ValueError(f"weights must be >= 0 and not all 0, got {raw!r}")
    return ScriptTurn(one_of=turns, weights=weights)
