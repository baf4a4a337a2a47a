"""Haystack's Agent and a chat Pipeline, unmodified, on OpenAIChatGenerator against the stub server."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("haystack")


def _weather_tool(tools: Any) -> Any:
    from haystack.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Humid and 30C in {city}"

    return get_weather


def _text(message: Any) -> str:
    if message.tool_call_result is not None:
        return str(message.tool_call_result.result)
    if message.tool_calls:
        return ",".join(call.tool_name for call in message.tool_calls)
    return str(message.text)


def test_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage

    get_weather = _weather_tool(tools)

    def agent() -> list[str]:
        # OPENAI_BASE_URL (conftest) points the OpenAI client at the stub.
        generator = OpenAIChatGenerator(model="gpt-4o-mini", max_retries=0)
        assistant = Agent(chat_generator=generator, tools=[get_weather], system_prompt="Be brief.")
        result = assistant.run(messages=[ChatMessage.from_user("What is the weather in city=Manila today?")])
        return [f"{m.role.value}:{_text(m)}" for m in result["messages"]]

    messages = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert messages[-3] == "assistant:get_weather"
    assert messages[-2] == "tool:Humid and 30C in Manila"
    assert messages[-1] == "assistant:Based on the tool result: Humid and 30C in Manila"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")] * 2


def test_agent_streams_through_a_pipeline(battery: Any, tools: Any) -> None:
    """The Agent as a Pipeline component behind a prompt builder, streaming tokens to a callback."""
    from haystack import Pipeline
    from haystack.components.agents import Agent
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage

    get_weather = _weather_tool(tools)

    def agent() -> tuple[str, list[str]]:
        tokens: list[str] = []
        generator = OpenAIChatGenerator(model="gpt-4o-mini", api_base_url=battery.stub.openai_base_url, max_retries=0)
        pipeline = Pipeline()
        pipeline.add_component(
            "prompt", ChatPromptBuilder(template=[ChatMessage.from_user("Weather in city={{city}} now?")])
        )
        pipeline.add_component(
            "agent",
            Agent(chat_generator=generator, tools=[get_weather], streaming_callback=lambda c: tokens.append(c.content)),
        )
        pipeline.connect("prompt.prompt", "agent.messages")
        result = pipeline.run({"prompt": {"city": "Lagos"}})
        return result["agent"]["last_message"].text or "", tokens

    answer, tokens = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Humid and 30C in Lagos"
    assert "".join(t for t in tokens if t) == answer
    steps = battery.steps
    assert [e.kind for e in steps] == ["llm", "llm"]
    assert all(e.request["stream"] for e in steps)


def test_agent_run_async(battery: Any, tools: Any) -> None:
    """``Agent.run_async``: the generator's async client, the tool in the agent's own loop."""
    import asyncio

    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage

    get_weather = _weather_tool(tools)

    async def main() -> str:
        assistant = Agent(chat_generator=OpenAIChatGenerator(model="gpt-4o-mini", max_retries=0), tools=[get_weather])
        result = await assistant.run_async(messages=[ChatMessage.from_user("What is the weather in city=Accra today?")])
        return str(result["last_message"].text)

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Humid and 30C in Accra"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")] * 2


def test_agent_on_the_responses_api(battery: Any, tools: Any) -> None:
    """``OpenAIResponsesChatGenerator``: the same Agent on OpenAI's Responses API."""
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIResponsesChatGenerator
    from haystack.dataclasses import ChatMessage

    get_weather = _weather_tool(tools)

    def agent() -> str:
        generator = OpenAIResponsesChatGenerator(model="gpt-4o-mini", max_retries=0)
        assistant = Agent(chat_generator=generator, tools=[get_weather])
        result = assistant.run(messages=[ChatMessage.from_user("What is the weather in city=Nairobi today?")])
        return str(result["last_message"].text)

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Humid and 30C in Nairobi"
    assert [e.name for e in battery.steps] == ["openai.responses.create"] * 2
