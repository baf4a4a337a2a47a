"""A small tool-calling agent on the real openai SDK, for the what-if tests (edit, mutate, offline)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import openai

import rewind
from rewind.stub_server import StubServer

MODEL = "gpt-4o-mini"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": text,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    for name, text in (("get_weather", "Tomorrow's forecast."), ("get_news", "Today's headline."))
]
#: Every tool call that really ran (not served from a trace), in order.
LIVE: list[str] = []

#: The stub model's turns: the weather of two cities, then the answer.
SCRIPT: list[Any] = [
    {
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
        ]
    },
    "Umbrella for Paris only.",
]


@rewind.tool
def get_weather(city: str) -> dict[str, Any]:
    LIVE.append(f"get_weather:{city}")
    return {"Paris": {"rain_mm": 6}, "Tokyo": {"rain_mm": 0}}.get(city, {"rain_mm": None})


@rewind.tool
def get_news(city: str) -> dict[str, Any]:
    LIVE.append(f"get_news:{city}")
    return {"headline": f"{city} opens a new museum"}


FUNCTIONS = {"get_weather": get_weather, "get_news": get_news}


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="stub", max_retries=0)


def run_agent(oai: openai.OpenAI, *, stream: bool = False, retry_rate_limits: bool = True) -> dict[str, Any]:
    """Ask, run the tools the model calls, return the tools used and the final answer.

    Rate limits are retried after ``retry-after`` seconds (the agent's own retry code); a
    tool that raises is reported to the model as an error message.
    """
    messages: list[Any] = [{"role": "user", "content": "Umbrella for Paris and Tokyo tomorrow?"}]
    used: list[str] = []
    for _ in range(5):
        message = _ask(oai, messages, stream=stream, retry_rate_limits=retry_rate_limits)
        if not message.tool_calls:
            return {"tools": used, "answer": message.content or ""}
        messages.append(message)
        for call in message.tool_calls:
            used.append(call.function.name)
            try:
                result: Any = FUNCTIONS[call.function.name](**json.loads(call.function.arguments))
            except RuntimeError as exc:
                result = {"error": str(exc)}
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return {"tools": used, "answer": "(gave up)"}


def _ask(oai: openai.OpenAI, messages: list[Any], *, stream: bool, retry_rate_limits: bool) -> Any:
    for attempt in range(3):
        try:
            if not stream:
                return (
                    oai.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
                    .choices[0]
                    .message
                )
            return _streamed(oai, messages)
        except openai.RateLimitError as exc:
            if not retry_rate_limits or attempt == 2:
                raise
            time.sleep(float(exc.response.headers.get("retry-after", "0")))
    raise AssertionError("unreachable")


class _Message:
    def __init__(self, content: str, tool_calls: list[Any]) -> None:
        self.content = content
        self.tool_calls = tool_calls

    def as_dict(self) -> dict[str, Any]:
        return {"role": "assistant", "content": self.content}


def _streamed(oai: openai.OpenAI, messages: list[Any]) -> Any:
    text = ""
    for chunk in oai.chat.completions.create(model=MODEL, messages=messages, stream=True, temperature=0):
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    return _Message(text, [])


def record(path: Path, script: list[Any] | None = None, *, stream: bool = False) -> dict[str, Any]:
    """Record one run against a fresh stub server (stopped afterwards)."""
    with StubServer(script=script if script is not None else SCRIPT) as server, rewind.record(path):
        return run_agent(client(server.openai_base_url), stream=stream)
