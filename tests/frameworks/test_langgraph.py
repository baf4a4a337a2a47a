"""LangGraph agents, unmodified, on langchain-openai against the stub server."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")


def test_react_agent_calls_a_tool_and_answers(battery: Any, tools: Any) -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"It is sunny and 21C in {city}."

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        graph = create_react_agent(model, [get_weather])
        state = graph.invoke({"messages": [("user", "What is the weather in Oslo?")]})
        return [str(m.content) for m in state["messages"]]

    messages = battery.run(agent)
    assert battery.live_tools == ["get_weather"]
    assert tools.names() == ["get_weather"]  # the tool is agent code: it ran again on replay
    assert "sunny" in messages[-1]
    assert [e.kind for e in battery.steps] == ["llm", "llm"]
