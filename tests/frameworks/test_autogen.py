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


def test_non_openai_model_name_needs_model_info(battery: Any, tools: Any) -> None:
    """A model autogen does not know (any OpenAI-compatible server) needs ``model_info``: one line."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.models import ModelFamily, ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Drizzle in {city}"

    info = ModelInfo(
        vision=False, function_calling=True, json_output=True, family=ModelFamily.UNKNOWN, structured_output=True
    )

    async def main() -> str:
        client = OpenAIChatCompletionClient(
            model="acme-local-8b", base_url=battery.stub.openai_base_url, api_key="sk-battery", model_info=info
        )
        assistant = AssistantAgent("assistant", model_client=client, tools=[get_weather])
        result = await assistant.run(task="What is the weather in city=Riga today?")
        await client.close()
        return result.messages[-1].to_text()

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    # Without reflect_on_tool_use the tool's result is the agent's answer: one model call.
    assert answer == "Drizzle in Riga"
    assert [e.kind for e in battery.steps] == ["llm"]


def test_round_robin_team_of_two_agents(battery: Any, tools: Any) -> None:
    """A two-agent RoundRobinGroupChat: a forecaster with a tool, then an editor, each its own client.

    (autogen-ext 0.7's AnthropicChatCompletionClient passes ``temperature`` to
    ``messages.create``, which the anthropic SDK pinned here no longer takes, so both agents
    are on the OpenAI client.)
    """
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Sleet in {city}"

    async def main() -> list[str]:
        clients = [
            OpenAIChatCompletionClient(model="gpt-4o-mini-2024-07-18", base_url=battery.stub.openai_base_url)
            for _ in range(2)
        ]
        forecaster = AssistantAgent(
            "forecaster", model_client=clients[0], tools=[get_weather], reflect_on_tool_use=True
        )
        editor = AssistantAgent("editor", model_client=clients[1], system_message="Polish the forecast.")
        team = RoundRobinGroupChat([forecaster, editor], termination_condition=MaxMessageTermination(3))
        result = await team.run(task="What is the weather in city=Vilnius today?")
        for client in clients:
            await client.close()
        return [f"{m.source}:{m.type}:{m.to_text()}" for m in result.messages]

    messages = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert messages[-2:] == [
        "forecaster:TextMessage:Based on the tool result: Sleet in Vilnius",
        "editor:TextMessage:Echo: Based on the tool result: Sleet in Vilnius",
    ]
    assert [e.name for e in battery.steps] == ["openai.chat.completions.create"] * 3
