"""Message content on spans, per the GenAI content-capture conventions (off by default).

Spans reach other backends (Jaeger, Phoenix, a vendor), where prompts and answers may not
belong, so content goes on them only when the application opts in with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``, read as the official
instrumentations read it (``opentelemetry-util-genai``'s ``ContentCapturingMode``):
``SPAN_ONLY`` puts content on span attributes, ``EVENT_ONLY`` on the one
``gen_ai.client.inference.operation.details`` event of the span, ``SPAN_AND_EVENT`` on
both, ``NO_CONTENT`` (or unset) nowhere; the older ``true`` means ``SPAN_ONLY``, ``false``
``NO_CONTENT``. The rewind file always holds the full payloads whatever this says; a
``redact=`` function applies here too, because what is captured is the stored (redacted)
payload.

What is captured, as JSON strings:

* LLM chat calls: ``gen_ai.input.messages``, ``gen_ai.output.messages`` and, when the
  request carries them apart from the messages, ``gen_ai.system_instructions``: messages
  of ``{"role", "parts": [...]}`` with ``text``, ``tool_call``, ``tool_call_response``,
  ``reasoning`` and ``uri`` parts, converted from OpenAI Chat Completions, the OpenAI
  Responses API and Anthropic Messages payloads;
* tool calls: ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from rewind.data import genai_names as names

ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: The event that carries a call's content when the mode says "event" (GenAI conventions).
OPERATION_DETAILS = "gen_ai.client.inference.operation.details"


class Mode(NamedTuple):
    """Where content goes: span attributes, the operation-details event, both or neither."""

    span: bool
    event: bool


NO_CONTENT = Mode(False, False)
_MODES = {
    "span_only": Mode(True, False),
    "event_only": Mode(False, True),
    "span_and_event": Mode(True, True),
    "no_content": NO_CONTENT,
    # The older boolean form (instrumentations before the enum): content on spans.
    "true": Mode(True, False),
    "1": Mode(True, False),
    "yes": Mode(True, False),
    "on": Mode(True, False),
}

_last: tuple[str | None, Mode] = (None, NO_CONTENT)


def mode() -> Mode:
    """The capture mode (read from the environment on every call, parsed when it changes)."""
    global _last
    raw = os.environ.get(ENV)
    if raw != _last[0]:
        _last = (raw, _MODES.get((raw or "").strip().lower(), NO_CONTENT))
    return _last[1]


def capturing() -> bool:
    """Whether spans carry message content as attributes."""
    return mode().span


def input_attributes(kind: str, operation: str, request: Any) -> dict[str, str]:
    """Content attributes of a call's (stored) request."""
    if kind == "tool":
        return {names.TOOL_CALL_ARGUMENTS: _json(request)}
    if kind != "llm" or operation != "chat" or not isinstance(request, Mapping):
        return {}
    attrs: dict[str, str] = {}
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    if isinstance(request.get("messages"), list):  # Chat Completions, Anthropic Messages
        messages = [m for m in (_message(item) for item in request["messages"]) if m]
        system = _parts(request.get("system"))
    elif "input" in request:  # Responses API
        messages = _response_items(request["input"], default_role="user")
        system = _parts(request.get("instructions"))
    if messages:
        attrs[names.INPUT_MESSAGES] = _json(messages)
    if system:
        attrs[names.SYSTEM_INSTRUCTIONS] = _json(system)
    tools = _tool_definitions(request.get("tools"))
    if tools:
        attrs[names.TOOL_DEFINITIONS] = _json(tools)
    return attrs


def output_attributes(kind: str, response: Any) -> dict[str, str]:
    """Content attributes of a call's (stored) response."""
    if kind == "tool":
        return {names.TOOL_CALL_RESULT: _json(response)}
    if kind != "llm":
        return {}
    messages: list[dict[str, Any]] = []
    if isinstance(response, str):
        messages = [{"role": "assistant", "parts": [_text(response)]}]
    elif isinstance(response, Mapping):
        if isinstance(response.get("choices"), list):  # Chat Completions
            for choice in response["choices"]:
                if isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping):
                    message = _message(choice["message"]) or {"role": "assistant", "parts": []}
                    message["finish_reason"] = choice.get("finish_reason") or ""
                    messages.append(message)
        elif response.get("type") == "message" or (
            response.get("role") == "assistant" and isinstance(response.get("content"), list)
        ):  # Anthropic
            message = _message(response) or {"role": "assistant", "parts": []}
            message["finish_reason"] = response.get("stop_reason") or ""
            messages.append(message)
        elif response.get("object") == "response" and isinstance(response.get("output"), list):  # Responses
            parts = [
                part for item in _response_items(response["output"], default_role="assistant") for part in item["parts"]
            ]
            status = response.get("status")
            messages.append(
                {
                    "role": "assistant",
                    "parts": parts,
                    "finish_reason": "stop" if status == "completed" else str(status or ""),
                }
            )
    return {names.OUTPUT_MESSAGES: _json(messages)} if messages else {}


def event_attributes(event: Any) -> dict[str, str]:
    """The step's whole trace line and its sha256, so ``rewind import`` can rebuild the step
    from a backend exactly and prove it (a line cut by an attribute length limit fails)."""
    line = _utf8_json(event.to_line().decode("utf-8", "surrogatepass"))
    digest = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()
    return {"rewind.event": line, "rewind.event.sha256": digest}


# -- conversions ---------------------------------------------------------------------

_ROLES = {"developer": "system"}


def _message(item: Any) -> dict[str, Any] | None:
    """One Chat Completions or Anthropic message as ``{"role", "parts"}``."""
    if not isinstance(item, Mapping):
        return None
    role = str(item.get("role") or "user")
    if role == "tool":  # Chat Completions tool result
        response = _parts(item.get("content"))
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": item.get("tool_call_id"), "response": _flat(response)}],
        }
    parts = _parts(item.get("content"))
    for call in item.get("tool_calls") or []:
        if isinstance(call, Mapping):
            function = call.get("function") or {}
            parts.append(_tool_call(call.get("id"), function.get("name"), function.get("arguments")))
    message: dict[str, Any] = {"role": _ROLES.get(role, role), "parts": parts}
    if isinstance(item.get("name"), str):
        message["name"] = item["name"]
    return message


def _parts(content: Any) -> list[dict[str, Any]]:
    """Message content (a string or a list of typed blocks) as GenAI parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [_text(content)]
    if not isinstance(content, list):
        return [_text(_json(content))]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            parts.append(_text(block))
            continue
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            parts.append(_text(block.get("text")))
        elif kind in ("thinking", "reasoning"):
            parts.append({"type": "reasoning", "content": block.get("thinking") or block.get("text") or ""})
        elif kind == "tool_use":  # Anthropic
            parts.append(_tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":  # Anthropic
            response = _flat(_parts(block.get("content")))
            parts.append({"type": "tool_call_response", "id": block.get("tool_use_id"), "response": response})
        elif kind in ("image_url", "input_image"):
            url = block.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            parts.append({"type": "uri", "modality": "image", "uri": url})
        elif kind == "refusal":
            parts.append(_text(block.get("refusal")))
        elif isinstance(kind, str):
            parts.append({"type": kind})  # images, audio, documents …: named, content left out
    return parts


def _response_items(items: Any, *, default_role: str) -> list[dict[str, Any]]:
    """Responses API input or output items as messages (calls and results become parts)."""
    if isinstance(items, str):
        return [{"role": default_role, "parts": [_text(items)]}]
    if not isinstance(items, list):
        return []
    messages: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call":
            messages.append(
                {
                    "role": "assistant",
                    "parts": [_tool_call(item.get("call_id"), item.get("name"), item.get("arguments"))],
                }
            )
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "parts": [
                        {"type": "tool_call_response", "id": item.get("call_id"), "response": item.get("output")}
                    ],
                }
            )
        elif kind == "reasoning":
            summary = " ".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, Mapping))
            messages.append({"role": "assistant", "parts": [{"type": "reasoning", "content": summary}]})
        elif "role" in item or kind == "message":
            role = str(item.get("role") or default_role)
            messages.append({"role": _ROLES.get(role, role), "parts": _parts(item.get("content"))})
    return messages


def _tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """The request's tools as GenAI tool definitions (``type``, ``name``, ``description``,
    ``parameters``), from Chat Completions, Responses and Anthropic declarations."""
    if not isinstance(tools, list):
        return []
    out: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        inner = tool.get("function")
        function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
        if not isinstance(function.get("name"), str):
            continue
        definition: dict[str, Any] = {"type": "function", "name": function["name"]}
        if isinstance(function.get("description"), str):
            definition["description"] = function["description"]
        parameters = function.get("parameters", function.get("input_schema"))
        if parameters is not None:
            definition["parameters"] = parameters
        out.append(definition)
    return out


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # models do send malformed arguments: keep them as sent
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _text(value: Any) -> dict[str, Any]:
    return {"type": "text", "content": value if isinstance(value, str) else _json(value)}


def _flat(parts: list[dict[str, Any]]) -> Any:
    """A tool result's parts as the plain value it most likely was."""
    if len(parts) == 1 and parts[0].get("type") == "text":
        return parts[0]["content"]
    return parts


def _json(value: Any) -> str:
    return _utf8_json(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8_json(text: str) -> str:
    """JSON text that OTLP can carry: a lone surrogate (valid in a Python string, in a JSON
    escape, never in UTF-8) spelled as its ``\\uXXXX`` escape, which means the same data.
    Without it the OTLP encoder drops the attribute."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
