"""What an imported step's request is compared on: what telemetry carries, nothing else.

Telemetry drops defaults and transport fields and spells content its own way, so an
imported request is never the bytes the SDK will send. Both sides are projected to the
same view: the model, the messages as GenAI parts (system instructions first, tool-call
ids left out: a replay hands the agent the recorded ids, telemetry may not carry them),
tool results and arguments as data, and the tools' names and parameter schemas (only
when the telemetry carried them).
"""

from __future__ import annotations

import json
from typing import Any

from rewind.engine import content_capture


def projection(kind: str, request: Any, *, tools: bool = True) -> Any:
    if kind == "llm" and isinstance(request, dict):
        view: dict[str, Any] = {"model": request.get("model")}
        attrs = content_capture.input_attributes("llm", "chat", request)
        system = json.loads(attrs.get("gen_ai.system_instructions", "[]"))
        messages = json.loads(attrs.get("gen_ai.input.messages", "[]"))
        if system:
            messages.insert(0, {"role": "system", "parts": system})
        view["messages"] = _merge(messages)
        if "input" in request and "messages" not in request and not messages:
            view["input"] = _data(request.get("input"))
        if tools:
            view["tools"] = _tools(request)
        return view
    if isinstance(request, dict):
        return {key: _data(value) for key, value in request.items()}
    return _data(request)


def _merge(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as comparable data: consecutive messages of one role joined (Anthropic folds tool
    results into one user turn, OpenAI sends one tool message each), ids dropped, text joined."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = {"tool": "tool"}.get(message.get("role", ""), message.get("role"))
        parts = [_part(p) for p in message.get("parts") or []]
        if role == "user" and parts and all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    for message in out:
        message["parts"] = _join_text(message["parts"])
    return out


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "content": part.get("content") or ""}
    if kind == "tool_call":
        return {"type": "tool_call", "name": part.get("name"), "arguments": _data(part.get("arguments"))}
    if kind == "tool_call_response":
        return {"type": "tool_call_response", "response": _data(part.get("response"))}
    return {k: v for k, v in part.items() if k != "id"}


def _join_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if part["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = {"type": "text", "content": out[-1]["content"] + part["content"]}
        elif part["type"] == "text" and not part["content"]:
            continue
        else:
            out.append(part)
    return out


def _tools(request: dict[str, Any]) -> list[Any]:
    tools = request.get("tools")
    if not isinstance(tools, list):
        return []
    out = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        function: dict[str, Any] = inner if isinstance(inner, dict) else tool
        out.append(
            {
                "name": function.get("name"),
                "parameters": _data(function.get("parameters", function.get("input_schema"))),
            }
        )
    return sorted(out, key=lambda t: str(t["name"]))


def _data(value: Any) -> Any:
    """Text that holds JSON compared as the data it holds."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null"):
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) and value[0].get("type") == "text":
        return _data(value[0].get("text", value[0].get("content")))
    return value


def first_difference(recorded: Any, incoming: Any, path: str = "") -> str | None:
    """Where two projections first differ, as ``path: recorded != incoming``."""
    if isinstance(recorded, dict) and isinstance(incoming, dict):
        for key in sorted(set(recorded) | set(incoming)):
            found = first_difference(recorded.get(key), incoming.get(key), f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(incoming, list):
        for index, (a, b) in enumerate(zip(recorded, incoming)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        if len(recorded) != len(incoming):
            return f"{path}: {len(recorded)} item(s) recorded, {len(incoming)} incoming"
        return None
    if recorded != incoming:
        return f"{path}: recorded {_short(recorded)} != incoming {_short(incoming)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
