"""LlamaIndex's FunctionAgent and ReActAgent, unmodified, on ``llama_index.llms.openai.OpenAI``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.llms.openai")


def _weather_tool(tools: Any) -> Any:
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Windy and 15C in {city}"

    return get_weather


def test_function_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    get_weather = _weather_tool(tools)

    async def main() -> str:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt="You answer weather questions.")
        response = await agent.run(user_msg="What is the weather in city=Perth today?")
        return str(response)

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Windy and 15C in Perth"
    steps = battery.steps
    assert [e.kind for e in steps] == ["llm", "llm"]
    assert all(e.request["stream"] for e in steps)  # FunctionAgent streams its model calls


def test_react_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    """ReActAgent parses Thought/Action text, not native tool calls: the stub is scripted with it."""
    from llama_index.core.agent.workflow import ReActAgent
    from llama_index.llms.openai import OpenAI

    get_weather = _weather_tool(tools)
    battery.stub.add_script(
        'Thought: I need the weather tool.\nAction: get_weather\nAction Input: {"city": "Perth"}',
        "Thought: I can answer without using any more tools.\nAnswer: Perth is windy, 15C.",
    )

    async def main() -> tuple[str, list[str]]:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = ReActAgent(tools=[get_weather], llm=llm)
        handler = agent.run(user_msg="What is the weather in Perth?")
        outputs = [str(event.tool_output) async for event in handler.stream_events() if hasattr(event, "tool_output")]
        return str(await handler), outputs

    answer, outputs = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Perth is windy, 15C."
    assert outputs == ["Windy and 15C in Perth"]
    assert [e.kind for e in battery.steps] == ["llm", "llm"]


def test_function_agent_on_the_responses_api(battery: Any, tools: Any) -> None:
    """``OpenAIResponses``: the same agent on OpenAI's Responses API."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAIResponses

    get_weather = _weather_tool(tools)

    async def main() -> str:
        llm = OpenAIResponses(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        agent = FunctionAgent(tools=[get_weather], llm=llm)
        return str(await agent.run(user_msg="What is the weather in city=Hobart today?"))

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Windy and 15C in Hobart"
    assert [e.name for e in battery.steps] == ["openai.responses.create"] * 2


def test_predict_and_call_runs_a_tool(battery: Any, tools: Any) -> None:
    """The LLM's own sync tool-calling helper, ``predict_and_call``, outside any agent workflow."""
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    weather = FunctionTool.from_defaults(fn=_weather_tool(tools))

    def agent() -> str:
        llm = OpenAI(model="gpt-4o-mini", api_base=battery.stub.openai_base_url, max_retries=0)
        return str(llm.predict_and_call([weather], "What is the weather in city=Darwin today?"))

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Windy and 15C in Darwin"
    assert [e.name for e in battery.steps] == ["openai.chat.completions.create"]
