"""One agent per native provider SDK, unmodified, against the stub server in that provider's wire format.

Each agent is the tool loop the provider's own docs teach: send the tools, run the ones the
model calls, send the results back, stop at the first answer without tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

QUESTION = "What is the weather in city=Cairo today?"
ANSWER = "Based on the tool result: Dry and 35C in Cairo"

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city."}},
    "required": ["city"],
}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "The current weather in a city.", "parameters": WEATHER_SCHEMA},
    }
]


def _get_weather(tools: Any) -> Callable[..., str]:
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        tools("get_weather", city)
        return f"Dry and 35C in {city}"

    return get_weather


def _openai_shaped_loop(create: Callable[..., Any], tools: Any, model: str) -> list[str]:
    """The OpenAI-style tool loop, as written against any OpenAI-compatible SDK."""
    run_tool = {"get_weather": _get_weather(tools)}
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    seen: list[str] = []
    for _ in range(4):
        message = create(model=model, messages=messages, tools=OPENAI_TOOLS).choices[0].message
        if not message.tool_calls:
            seen.append(str(message.content))
            return seen
        messages.append(message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else message)
        for call in message.tool_calls:
            result = run_tool[call.function.name](**json.loads(call.function.arguments))
            seen.append(f"{call.function.name} -> {result}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the agent did not finish")


def _assert_agent_run(battery: Any, tools: Any, seen: list[str], step: str) -> None:
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert seen == ["get_weather -> Dry and 35C in Cairo", ANSWER]
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", step)] * 2


def test_litellm_completion_agent_loop(battery: Any, tools: Any) -> None:
    litellm = pytest.importorskip("litellm")

    def agent() -> list[str]:
        def create(**kwargs: Any) -> Any:
            return litellm.completion(api_base=battery.stub.openai_base_url, **kwargs)

        return _openai_shaped_loop(create, tools, "openai/gpt-4o-mini")

    seen = battery.run(agent, providers=("litellm", "openai"))
    _assert_agent_run(battery, tools, seen, "litellm.completion")


def test_groq_agent_loop(battery: Any, tools: Any) -> None:
    groq = pytest.importorskip("groq")

    def agent() -> list[str]:
        client = groq.Groq(base_url=battery.stub.url, max_retries=0)  # GROQ_API_KEY from the environment
        return _openai_shaped_loop(client.chat.completions.create, tools, "llama-3.3-70b-versatile")

    seen = battery.run(agent, providers=("groq",))
    _assert_agent_run(battery, tools, seen, "groq.chat.completions.create")


def test_together_agent_loop(battery: Any, tools: Any) -> None:
    together = pytest.importorskip("together")

    def agent() -> list[str]:
        client = together.Together(base_url=battery.stub.url, max_retries=0)
        return _openai_shaped_loop(client.chat.completions.create, tools, "meta-llama/Llama-3.3-70B-Instruct-Turbo")

    seen = battery.run(agent, providers=("together",))
    _assert_agent_run(battery, tools, seen, "together.chat.completions.create")


def test_fireworks_agent_loop(battery: Any, tools: Any) -> None:
    fireworks = pytest.importorskip("fireworks")

    def agent() -> list[str]:
        client = fireworks.Fireworks(base_url=battery.stub.url, max_retries=0)
        return _openai_shaped_loop(
            client.chat.completions.create, tools, "accounts/fireworks/models/llama-v3p3-70b-instruct"
        )

    seen = battery.run(agent, providers=("fireworks",))
    _assert_agent_run(battery, tools, seen, "fireworks.chat.completions.create")
