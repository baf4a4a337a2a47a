"""autogen-agentchat's AssistantAgent, unmodified, on autogen-ext's OpenAIChatCompletionClient."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.openai")


def test_assistant_agent_calls_a_tool_and_reflects(battery: Any, tools: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Snowing in {city}"

    async def main() -> list[str]:
        client = OpenAIChatCompletionClient(model="gpt-4o-mini-2024-07-18", base_url=battery.stub.openai_base_url)
        assistant = AssistantAgent("assistant", model_client=client, tools=[get_weather], reflect_on_tool_use=True)
        result = await assistant.run(task="What is the weather in city=Helsinki today?")
        await client.close()
        return [f"{m.type}:{m.to_text()}" for m in result.messages]

    messages = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert messages[-1] == "TextMessage:Based on the tool result: Snowing in Helsinki"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")] * 2


def test_assistant_agent_streams_tokens(battery: Any, tools: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Hail in {city}"

    async def main() -> list[str]:
        client = OpenAIChatCompletionClient(model="gpt-4o-mini-2024-07-18", base_url=battery.stub.openai_base_url)
        assistant = AssistantAgent(
            "assistant",
            model_client=client,
            tools=[get_weather],
            reflect_on_tool_use=True,
            model_client_stream=True,
        )
        chunks = [
            m.content
            async for m in assistant.run_stream(task="What is the weather in city=Tallinn today?")
            if isinstance(m, ModelClientStreamingChunkEvent)
        ]
        await client.close()
        return chunks

    chunks = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert len(chunks) > 3
    assert "".join(chunks) == "Based on the tool result: Hail in Tallinn"
    assert all(e.request["stream"] for e in battery.steps)
