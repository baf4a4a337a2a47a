"""Real recorded runs for the CLI, TUI, diff and accounting tests.

Every trace here is written by ``rewind.record`` around decorated functions, the way a
user's agent records one. The "model" answers with provider-shaped JSON carrying fresh
ids and timestamps per call, as a live provider would.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import rewind

MODEL = "gpt-4o-2024-08-06"


def chat_response(
    text: str | None,
    *,
    model: str = MODEL,
    usage: tuple[int, int] | None = (1200, 340),
    tool_call: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` body, with per-call ids like the real API."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_call is not None:
        name, arguments = tool_call
        message["tool_calls"] = [
            {
                "id": "call_" + uuid.uuid4().hex[:24],
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_call else "stop"}],
        "system_fingerprint": "fp_" + uuid.uuid4().hex[:10],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def anthropic_response(text: str, *, model: str = "claude-sonnet-4-5-20250929", cache_read: int = 0) -> dict[str, Any]:
    """An Anthropic ``message`` body."""
    return {
        "id": "msg_01" + uuid.uuid4().hex[:22],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 500, "output_tokens": 120, "cache_read_input_tokens": cache_read},
    }


class SearchDown(RuntimeError):
    """The search backend failed."""


def trip_agent(
    *,
    city: str = "Paris",
    final: str | None = None,
    extra_search: bool = False,
    failing_search: bool = False,
    usage: bool = True,
    model: str = MODEL,
) -> Callable[[], None]:
    """A small tool-calling agent: recall, ask, search, (search), answer.

    Steps: 0 memory recall · 1 llm chat (asks for a search) · 2 tool search ·
    [tool search extra] · [tool search failing] · llm chat (final answer).
    """

    @rewind.memory(name="recall")
    def recall(topic: str) -> list[str]:
        return ["likes museums", "vegetarian"]

    @rewind.llm(name="chat")
    def chat(**request: Any) -> dict[str, Any]:
        last = request["messages"][-1]
        if last["role"] == "user":
            tokens = (1200, 40) if usage else None
            return chat_response(None, model=model, usage=tokens, tool_call=("search", {"query": city}))
        return chat_response(final or f"Book the Hotel {city}.", model=model, usage=(1800, 300) if usage else None)

    @rewind.tool(name="search")
    def search(query: str) -> dict[str, Any]:
        if not query:
            raise SearchDown("search backend unavailable")
        return {"query": query, "hits": [f"Hotel {query}", f"{query} Museum"]}

    def run() -> None:
        notes = recall("preferences")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You plan trips. Notes: " + "; ".join(notes)},
            {"role": "user", "content": "Plan a weekend trip."},
        ]
        first = chat(model="gpt-4o", messages=messages)
        call = first["choices"][0]["message"]["tool_calls"][0]
        result = search(**json.loads(call["function"]["arguments"]))
        if extra_search:
            search(f"{city} museums")
        if failing_search:
            try:
                search("")
            except SearchDown:
                pass
        messages.append(first["choices"][0]["message"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
        chat(model="gpt-4o", messages=messages)

    return run


def record_trip(path: Path, *, meta: dict[str, Any] | None = None, **options: Any) -> Path:
    """Record one ``trip_agent(**options)`` run to ``path``."""
    run = trip_agent(**options)
    with rewind.record(path, meta=meta):
        run()
    return path


def record_calls(path: Path, responses: Sequence[Any], *, name: str = "chat") -> Path:
    """One llm step per item of ``responses`` (each returned as is by a decorated function)."""

    @rewind.llm(name=name)
    def call(**request: Any) -> Any:
        return responses[request["turn"]]

    with rewind.record(path):
        for turn in range(len(responses)):
            call(model="any", turn=turn)
    return path


def record_long(path: Path, steps: int) -> Path:
    """A run with many tool steps, for paging and scrolling."""

    @rewind.tool(name="fetch")
    def fetch(page: int) -> dict[str, Any]:
        return {"page": page, "items": [f"item-{page}-{i}" for i in range(3)]}

    with rewind.record(path):
        for page in range(steps):
            fetch(page)
    return path
