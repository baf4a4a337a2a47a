"""OpenLLMetry (Traceloop: ``opentelemetry-instrumentation-openai`` and friends).

Messages are indexed attributes: ``gen_ai.prompt.N.role`` / ``.content`` /
``.tool_calls.K.{id,name,arguments}`` / ``.tool_call_id`` for the request,
``gen_ai.completion.N.*`` (with ``finish_reason``) for the answer; tool definitions are
``llm.request.functions.N.{name,description,parameters}``; ``llm.is_streaming`` says
whether the call streamed.
"""

from __future__ import annotations

from typing import Any

from rewind.importing.model import Draft
from rewind.importing.spans import SpanRecord

from ._attrs import genai_chat, indexed, json_value, parse_arguments

LAYOUT = "openllmetry"


def claims(span: SpanRecord) -> bool:
    return any(
        k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "llm.request.functions.")) for k in span.attributes
    ) or ("llm.request.type" in span.attributes)


def map_span(span: SpanRecord) -> Draft | None:
    attrs = span.attributes
    request_type = str(attrs.get("llm.request.type") or "chat")
    if request_type not in ("chat", "completion", "embedding"):
        return None
    draft = Draft(span, LAYOUT, "llm")
    chat = genai_chat(attrs, span.scope, embeddings=request_type == "embedding")
    if "llm.is_streaming" in attrs:
        chat.streamed = bool(attrs["llm.is_streaming"])
    prompts = indexed(attrs, "gen_ai.prompt.")
    completions = indexed(attrs, "gen_ai.completion.")
    if prompts:
        messages = [_message(draft, row, f"gen_ai.prompt.{i}") for i, row in enumerate(prompts)]
        if chat.provider == "anthropic":
            chat.system = [p for m in messages if m["role"] == "system" for p in m["parts"]] or None
            messages = [m for m in messages if m["role"] != "system"]
        chat.input = messages
    if completions:
        chat.output = []
        for i, row in enumerate(completions):
            message = _message(draft, row, f"gen_ai.completion.{i}")
            message["role"] = "assistant"
            message["finish_reason"] = str(row.get("finish_reason") or "")
            chat.output.append(message)
    functions = indexed(attrs, "llm.request.functions.")
    if functions:
        chat.tools = [
            {
                k: v
                for k, v in (
                    ("name", row.get("name")),
                    ("description", row.get("description")),
                    ("parameters", parse_arguments(row.get("parameters"))),
                )
                if v is not None
            }
            for row in functions
        ]
    draft.chat = chat
    return draft


def _message(draft: Draft, row: dict[str, Any], where: str) -> dict[str, Any]:
    role = str(row.get("role") or "user")
    content = row.get("content")
    if role == "tool":
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": row.get("tool_call_id"), "response": content}],
        }
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        stripped = content.lstrip()
        if stripped.startswith("[{") and role in ("user", "assistant", "system"):
            # Content blocks are stored as their JSON list.
            from rewind.engine import content_capture

            blocks = json_value(draft, f"{where}.content", content)
            parts.extend(content_capture._parts(blocks) if isinstance(blocks, list) else [])
        else:
            parts.append({"type": "text", "content": content})
    for call in indexed(row, "tool_calls."):
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": parse_arguments(call.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}
