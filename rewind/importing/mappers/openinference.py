"""OpenInference (Arize: ``openinference-instrumentation-*``, what Phoenix shows).

Messages are flattened into indexed attributes (``llm.input_messages.N.message.role``,
``.message.content``, ``.message.contents.M.message_content.text``,
``.message.tool_calls.K.tool_call.function.name`` …); ``llm.tools.N.tool.json_schema``
holds each tool definition; ``input.value`` / ``output.value`` hold the request and
response as the SDK saw them (JSON when ``input.mime_type`` says so), which is the most
faithful copy any layout carries, so it is preferred when it parses.
"""

from __future__ import annotations

import json
from typing import Any

from rewind.importing.model import CONTENT_MISSING, Chat, Draft
from rewind.importing.spans import SpanRecord

from ._attrs import indexed, int_or_none, json_value, parse_arguments, provider_of

LAYOUT = "openinference"
KIND = "openinference.span.kind"
_CONTAINERS = {"CHAIN", "AGENT", "GUARDRAIL", "EVALUATOR", "RERANKER", "PROMPT", "UNKNOWN"}


def claims(span: SpanRecord) -> bool:
    attrs = span.attributes
    return KIND in attrs or any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs)


def map_span(span: SpanRecord) -> Draft | None:
    attrs = span.attributes
    kind = str(attrs.get(KIND) or "LLM").upper()
    if kind in _CONTAINERS:
        return None
    if kind == "TOOL":
        draft = Draft(span, LAYOUT, "tool", name=str(attrs.get("tool.name") or span.name))
        draft.request = _value(draft, attrs, "tool.parameters", "input.value")
        draft.response = _value(draft, attrs, "output.value")
        if draft.request is None or draft.response is None:
            draft.problem(CONTENT_MISSING, "the tool's input.value/output.value were not captured")
        return draft
    if kind == "RETRIEVER":
        draft = Draft(span, LAYOUT, "memory", name=span.name)
        draft.request = _value(draft, attrs, "input.value")
        documents = indexed(attrs, "retrieval.documents.")
        draft.response = [
            {key.removeprefix("document."): value for key, value in doc.items()} for doc in documents
        ] or None
        if draft.request is None or draft.response is None:
            draft.problem(CONTENT_MISSING, "the retrieval's query or documents were not captured")
        return draft
    draft = Draft(span, LAYOUT, "llm")
    draft.chat = _chat(span, draft, kind)
    return draft


def _chat(span: SpanRecord, draft: Draft, kind: str) -> Chat:
    attrs = span.attributes
    model = attrs.get("llm.model_name") or attrs.get("embedding.model_name")
    chat = Chat(
        provider=provider_of(attrs, span.scope, model),
        operation="embeddings" if kind == "EMBEDDING" else "chat",
        model=model if isinstance(model, str) else None,
        input_tokens=int_or_none(attrs.get("llm.token_count.prompt")),
        output_tokens=int_or_none(attrs.get("llm.token_count.completion")),
    )
    params = _value(draft, attrs, "llm.invocation_parameters")
    if isinstance(params, dict):
        chat.params = {k: v for k, v in params.items() if k not in ("model", "messages", "tools", "input")}
        chat.streamed = bool(params.get("stream")) if "stream" in params else None
    if attrs.get("input.mime_type") == "application/json":
        request = _value(draft, attrs, "input.value")
        if isinstance(request, dict):
            chat.raw_request = request
    if attrs.get("output.mime_type") == "application/json":
        response = _value(draft, attrs, "output.value")
        if isinstance(response, dict) and response.get("object") == "chat.completion.chunk":
            response = _accumulated(response)
        if isinstance(response, dict) and (
            response.get("object") == "chat.completion" or response.get("type") == "message"
        ):
            chat.raw_response = response
    if kind == "EMBEDDING":
        _embeddings(attrs, chat)
        return chat
    inputs = indexed(attrs, "llm.input_messages.")
    outputs = indexed(attrs, "llm.output_messages.")
    if inputs:
        messages = [_message(row) for row in inputs]
        chat.system = [p for m in messages if m["role"] == "system" for p in m["parts"]] or None
        chat.input = [m for m in messages if m["role"] != "system"] if chat.provider == "anthropic" else messages
        if chat.provider != "anthropic":
            chat.system = None
    if outputs:
        chat.output = [_message(row) for row in outputs]
    tools = indexed(attrs, "llm.tools.")
    if tools:
        from .genai import tool_definitions

        schemas = [parse_arguments(row.get("tool.json_schema")) for row in tools]
        chat.tools = tool_definitions(schemas)
    if chat.raw_response is not None and isinstance(chat.raw_response, dict):
        chat.response_id = chat.raw_response.get("id")
        chat.response_model = chat.raw_response.get("model")
    return chat


def _embeddings(attrs: dict[str, Any], chat: Chat) -> None:
    """``embedding.embeddings.N.embedding.{text,vector}`` as an embeddings request and response."""
    rows = indexed(attrs, "embedding.embeddings.")
    texts = [row.get("embedding.text") for row in rows]
    vectors = [parse_arguments(row.get("embedding.vector")) for row in rows]
    if chat.raw_request is None and rows and all(isinstance(t, str) for t in texts):
        chat.raw_request = {"model": chat.model, "input": texts}
    if rows and all(isinstance(v, list) for v in vectors):
        chat.raw_response = {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "model": chat.model,
            "usage": {"prompt_tokens": chat.input_tokens or 0, "total_tokens": chat.input_tokens or 0},
        }
    chat.input = chat.input or ([] if chat.raw_request is not None else None)


def _accumulated(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """A streamed call's ``output.value``: the chunks added up, still labelled a chunk."""
    choices = []
    for choice in chunk.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return None
        choices.append(
            {
                "index": choice.get("index", 0),
                "message": {"content": None, "refusal": None, **message, "role": "assistant"},
                "finish_reason": choice.get("finish_reason") or "stop",
                "logprobs": None,
            }
        )
    return {**chunk, "object": "chat.completion", "choices": choices}


def _message(row: dict[str, Any]) -> dict[str, Any]:
    role = str(row.get("message.role") or "user")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        content = row.get("message.content")
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": row.get("message.tool_call_id"), "response": content}],
        }
    if "message.content" in row and row["message.content"] is not None:
        parts.append({"type": "text", "content": str(row["message.content"])})
    for content in indexed(row, "message.contents."):
        if content.get("message_content.type", "text") == "text":
            parts.append({"type": "text", "content": str(content.get("message_content.text") or "")})
        elif "message_content.image.image.url" in content:
            parts.append({"type": "uri", "modality": "image", "uri": content["message_content.image.image.url"]})
    for call in indexed(row, "message.tool_calls."):
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("tool_call.id"),
                "name": call.get("tool_call.function.name"),
                "arguments": parse_arguments(call.get("tool_call.function.arguments")),
            }
        )
    message: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(row.get("message.name"), str):
        message["name"] = row["message.name"]
    return message


def _value(draft: Draft, attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in attrs:
            return json_value(draft, key, attrs[key])
    return None


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
