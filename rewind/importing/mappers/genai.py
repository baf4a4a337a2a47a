"""The OpenTelemetry GenAI semantic conventions, in every generation instrumentations emit.

* Current: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions`` in the ``parts`` format and ``gen_ai.tool.definitions``,
  as span attributes or on a ``gen_ai.client.inference.operation.details`` event or log
  record (``opentelemetry-util-genai``: ``-genai-openai``, ``-genai-anthropic``).
* Per-message events or log records: ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``
  (``opentelemetry-instrumentation-openai-v2``).
* The oldest: ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` span events holding
  ``gen_ai.prompt`` / ``gen_ai.completion`` JSON.
* Tool execution: ``execute_tool`` spans with ``gen_ai.tool.call.arguments`` / ``.result``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewind.engine import content_capture
from rewind.importing import content_refs
from rewind.importing.model import CONTENT_MISSING, Chat, Draft
from rewind.importing.spans import SpanRecord

from ._attrs import genai_chat, int_or_none, json_value, parse_arguments

LAYOUT = "genai"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHAT_OPERATIONS = {"chat", "text_completion", "generate_content"}
_CONTAINERS = {"invoke_agent", "create_agent", "invoke_workflow"}


def claims(span: SpanRecord) -> bool:
    attrs = span.attributes
    if "gen_ai.operation.name" in attrs or "gen_ai.input.messages" in attrs:
        return True
    if any(e.name.startswith("gen_ai.") for e in span.events):
        return True
    return "gen_ai.request.model" in attrs and ("gen_ai.system" in attrs or "gen_ai.provider.name" in attrs)


def map_span(span: SpanRecord, layout: str = LAYOUT) -> Draft | None:
    attrs = span.attributes
    operation = str(attrs.get("gen_ai.operation.name") or "chat")
    if operation in _CONTAINERS:
        return None
    if operation == "execute_tool":
        return tool_draft(span, layout)
    if operation in ("retrieval", "retrieve"):
        draft = Draft(span, layout, "memory", name=str(attrs.get("gen_ai.data_source.id") or span.name))
        draft.request = _first(draft, attrs, "gen_ai.retrieval.query.text", "gen_ai.prompt")
        draft.response = _first(draft, attrs, "gen_ai.retrieval.documents", "gen_ai.completion")
        if draft.request is None or draft.response is None:
            draft.problem(CONTENT_MISSING, "the retrieval's query or documents were not captured")
        return draft
    draft = Draft(span, layout, "llm")
    draft.chat = chat_of(span, draft, operation)
    return draft


def tool_draft(span: SpanRecord, layout: str) -> Draft:
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool ").strip()
    draft = Draft(span, layout, "tool", name=str(name))
    if "gen_ai.tool.call.id" in attrs:
        draft.extra["tool_call_id"] = attrs["gen_ai.tool.call.id"]
    if "gen_ai.tool.call.arguments" in attrs:
        draft.request = json_value(draft, "gen_ai.tool.call.arguments", attrs["gen_ai.tool.call.arguments"])
    else:
        draft.problem(CONTENT_MISSING, "gen_ai.tool.call.arguments was not captured (content capture off?)")
    if span.status_code == "ERROR":
        draft.error = error_record(span)
    elif "gen_ai.tool.call.result" in attrs:
        draft.response = json_value(draft, "gen_ai.tool.call.result", attrs["gen_ai.tool.call.result"])
    else:
        draft.problem(CONTENT_MISSING, "gen_ai.tool.call.result was not captured (content capture off?)")
    return draft


def error_record(span: SpanRecord) -> dict[str, Any]:
    """The span's exception as a rewind error record (a plain ``ReplayedError`` on replay)."""
    for event in span.events:
        if event.name == "exception":
            kind = str(event.attributes.get("exception.type") or "Exception")
            message = str(event.attributes.get("exception.message") or "")
            break
    else:
        kind = str(span.attributes.get("error.type") or "Exception")
        message = span.status_message
    module, _, qualname = kind.rpartition(".")
    return {"type": kind, "module": module or "builtins", "qualname": qualname or kind, "message": message}


def chat_of(span: SpanRecord, draft: Draft, operation: str = "chat") -> Chat:
    attrs = dict(span.attributes)
    for event in span.events:
        if event.name == DETAILS_EVENT:  # content moved off the span onto an event or log record
            attrs.update({k: v for k, v in event.attributes.items() if k.startswith("gen_ai.")})
    chat = genai_chat(attrs, span.scope, embeddings=operation == "embeddings")
    for key in ("gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming"):
        if isinstance(attrs.get(key), bool):
            chat.streamed = attrs[key]
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list):
        chat.finish_reasons = [str(r) for r in reasons]
    if "gen_ai.input.messages" in attrs:
        chat.input = _messages(json_value(draft, "gen_ai.input.messages", attrs["gen_ai.input.messages"]))
    if "gen_ai.output.messages" in attrs:
        chat.output = _messages(json_value(draft, "gen_ai.output.messages", attrs["gen_ai.output.messages"]))
    if "gen_ai.system_instructions" in attrs:
        system = json_value(draft, "gen_ai.system_instructions", attrs["gen_ai.system_instructions"])
        chat.system = _parts(system) if system is not None else None
    if "gen_ai.tool.definitions" in attrs:
        tools = json_value(draft, "gen_ai.tool.definitions", attrs["gen_ai.tool.definitions"])
        chat.tools = tool_definitions(tools)
    if chat.input is None or chat.output is None:
        _from_message_events(span, draft, chat)
    draft.problems.extend(content_refs.problems(attrs))  # content a completion hook stored elsewhere
    return chat


def _from_message_events(span: SpanRecord, draft: Draft, chat: Chat) -> None:
    """The per-message events (or logs), and the oldest prompt/completion events."""
    inputs: list[dict[str, Any]] = []
    outputs: list[tuple[int, dict[str, Any]]] = []
    for event in span.events:
        body = event.body if isinstance(event.body, Mapping) else event.attributes
        if event.name in _MESSAGE_EVENTS:
            role = _MESSAGE_EVENTS[event.name]
            inputs.append(_event_message(role, body))
        elif event.name == "gen_ai.choice":
            message = body.get("message") if isinstance(body.get("message"), Mapping) else {}
            converted = _event_message("assistant", message or {})
            converted["finish_reason"] = str(body.get("finish_reason") or "")
            outputs.append((int_or_none(body.get("index")) or 0, converted))
        elif event.name == "gen_ai.content.prompt" and chat.input is None:
            value = json_value(draft, "gen_ai.prompt", event.attributes.get("gen_ai.prompt"))
            if isinstance(value, list):
                chat.input = [m for m in (content_capture._message(v) for v in value) if m]
        elif event.name == "gen_ai.content.completion" and chat.output is None:
            value = json_value(draft, "gen_ai.completion", event.attributes.get("gen_ai.completion"))
            if isinstance(value, list):
                chat.output = [
                    m
                    for m in (content_capture._message(v.get("message", v)) for v in value if isinstance(v, Mapping))
                    if m
                ]
    if inputs and chat.input is None:
        chat.input = inputs
    if outputs and chat.output is None:
        chat.output = [message for _, message in sorted(outputs, key=lambda pair: pair[0])]


def _event_message(role: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One per-message event body (OpenAI-like: content, tool_calls, id) as a parts message."""
    parts: list[dict[str, Any]] = []
    content = body.get("content")
    if role == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": body.get("id"), "response": content}]}
    if content is not None:
        parts.extend(content_capture._parts(content))
    for call in body.get("tool_calls") or []:
        if isinstance(call, Mapping):
            inner = call.get("function")
            function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else {}
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": parse_arguments(function.get("arguments")),
                }
            )
    return {"role": role, "parts": parts}


def _messages(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        return None
    out: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, Mapping):
            message = {"role": str(item.get("role") or "user"), "parts": _parts(item.get("parts"))}
            if "finish_reason" in item:
                message["finish_reason"] = str(item.get("finish_reason") or "")
            if isinstance(item.get("name"), str):
                message["name"] = item["name"]
            out.append(message)
    return out


def _parts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "content": value}]
    parts: list[dict[str, Any]] = []
    for part in value if isinstance(value, list) else []:
        if not isinstance(part, Mapping):
            continue
        part = dict(part)
        if part.get("type") == "tool_call":
            part["arguments"] = parse_arguments(part.get("arguments"))
        elif part.get("type") == "tool_call_response" and "response" not in part and "result" in part:
            part["response"] = part.pop("result")
        parts.append(part)
    return parts


def tool_definitions(value: Any) -> list[dict[str, Any]] | None:
    """Tool definitions (GenAI, OpenAI or Anthropic spelling) as ``{name, description, parameters}``."""
    if not isinstance(value, list):
        return None
    tools: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, Mapping):
            continue
        inner = item.get("function")
        function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else item
        name = function.get("name")
        if not isinstance(name, str):
            continue
        tool: dict[str, Any] = {"name": name}
        if isinstance(function.get("description"), str):
            tool["description"] = function["description"]
        parameters = function.get("parameters", function.get("input_schema"))
        if isinstance(parameters, str):
            parameters = parse_arguments(parameters)
        if parameters is not None:
            tool["parameters"] = parameters
        tools.append(tool)
    return tools


def _first(draft: Draft, attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in attrs:
            return json_value(draft, key, attrs[key])
    return None
