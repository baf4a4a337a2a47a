"""Reading attribute values the way every mapper needs: JSON that may have been cut short."""

from __future__ import annotations

import json
from typing import Any

from rewind.importing.model import CONTENT_TRUNCATED, Chat, Draft


def json_value(draft: Draft, key: str, value: Any) -> Any:
    """``value`` parsed when it is JSON text; a cut-off JSON text is a truncation problem (``None``)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in '[{"':
        return value
    try:
        return json.loads(text)
    except ValueError:
        draft.problem(
            CONTENT_TRUNCATED,
            f"{key} is cut off after {len(value)} characters (not valid JSON): an attribute length limit "
            "(OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT / OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT) truncated it",
        )
        return None


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as a list (by N) of ``{rest: value}`` dicts."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if index.isdigit() and rest:
            rows.setdefault(int(index), {})[rest] = value
    return [rows[i] for i in sorted(rows)]


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_arguments(value: Any) -> Any:
    """Tool-call arguments as data when they are JSON text (models do send broken JSON: kept as sent)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def request_params(attrs: dict[str, Any]) -> dict[str, Any]:
    """The GenAI ``gen_ai.request.*`` scalars as request parameters."""
    names = {
        "gen_ai.request.temperature": "temperature",
        "gen_ai.request.top_p": "top_p",
        "gen_ai.request.max_tokens": "max_tokens",
        "gen_ai.request.frequency_penalty": "frequency_penalty",
        "gen_ai.request.presence_penalty": "presence_penalty",
        "gen_ai.request.seed": "seed",
        "gen_ai.request.stop_sequences": "stop",
        "gen_ai.request.choice.count": "n",
    }
    return {param: attrs[key] for key, param in names.items() if key in attrs}


def provider_of(attrs: dict[str, Any], scope: str, model: Any) -> str | None:
    """Which provider's wire shape to rebuild: from the attributes, the scope, the model name."""
    for key in ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return _family(value)
    lowered = scope.lower()
    for family in ("anthropic", "openai"):
        if family in lowered:
            return family
    if isinstance(model, str) and model.startswith("claude"):
        return "anthropic"
    return None


def _family(value: str) -> str:
    lowered = value.lower()
    if "anthropic" in lowered:
        return "anthropic"
    if lowered in ("openai", "azure.ai.openai", "az.ai.openai", "azure"):
        return "openai"
    return lowered


def genai_chat(attrs: dict[str, Any], scope: str, embeddings: bool) -> Chat:
    """The chat (or embeddings) call the ``gen_ai.*`` attributes describe: provider, model,
    parameters, usage (either spelling of the token counts) and the response's id and model.
    What the layouts differ in, their messages, each mapper adds."""
    model = attrs.get("gen_ai.request.model")
    return Chat(
        provider=provider_of(attrs, scope, model),
        operation="embeddings" if embeddings else "chat",
        model=model if isinstance(model, str) else None,
        params=request_params(attrs),
        input_tokens=int_or_none(attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens"))),
        output_tokens=int_or_none(attrs.get("gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens"))),
        response_id=attrs.get("gen_ai.response.id"),
        response_model=attrs.get("gen_ai.response.model"),
    )
