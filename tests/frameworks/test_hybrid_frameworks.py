"""Hybrid replay (docs/hybrid.md) with unmodified framework agents against the stub server.

Each framework's agent calls one tool, decorated with ``@rewind.tool`` under the
framework's own tool decorator (so rewind records the tool's answer), and runs twice
after the recording:

* ``live=["llm"]``: the model runs live against the stub server, which now answers
  differently; the tool is served from the recording (its function does not run);
* ``live=["tool"]``: the stub server is stopped, the tool runs live and returns a changed
  result, and the model is served from the recording (``match="fuzzy"``: its requests now
  carry the new tool result). The saved run shows the tool's drift against the recording.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.errors import FuzzyMatchWarning

CALL = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}


class Weather:
    """The tool's world: what it answers now."""

    def __init__(self) -> None:
        self.now = "rain"


def _scenarios(battery: Any, tools: Any, agent: Callable[[], str], weather: Weather) -> None:
    trace: Path = battery.trace
    battery.stub.add_script(CALL, "Recorded: it rains in Paris.")
    unpatch = rewind.auto_patch("openai")
    try:
        with rewind.record(trace):
            assert "Recorded: it rains in Paris." in agent()
        assert tools.names() == ["get_weather"]
        recorded_tools = [e for e in rewind.Trace.load(trace).events if e.kind == "tool"]
        assert [e.name for e in recorded_tools] == ["get_weather"]

        # The model live, answering differently; the tool served.
        tools.clear()
        battery.stub.add_script(CALL, "Live: take an umbrella.")
        before = battery.stub.request_count
        with rewind.replay(trace, live=["llm"]):
            assert "Live: take an umbrella." in agent()
        assert tools.names() == []  # served: the tool's function never ran
        assert battery.stub.request_count - before == 2  # both model turns ran live

        # The tool live with a changed result; the model served, the server stopped.
        battery.stub.stop()
        weather.now = "snow"
        saved = trace.with_name("tools-live.rewind")
        hybrid = rewind.replay(trace, live=["tool"], match="fuzzy", save_as=saved)
        with pytest.warns(FuzzyMatchWarning), hybrid:
            assert "Recorded: it rains in Paris." in agent()  # the recorded model answer
        assert tools.names() == ["get_weather"]
    finally:
        unpatch()
    steps = rewind.Trace.load(saved).events
    assert {(e.kind, e.live) for e in steps} == {("llm", False), ("tool", True)}
    diff = rewind.diff_traces(trace, saved)
    drift = [entry for entry in diff.entries if entry.op != "equal" and entry.kind == "tool"]
    assert len(drift) == 1 and "snow" in str(drift[0].b.response if drift[0].b else None)


def test_langgraph_tool_agent(battery: Any, tools: Any) -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    weather = Weather()

    @tool
    @rewind.tool(name="get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"{weather.now} in {city}"

    def agent() -> str:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        graph = create_agent(model, tools=[get_weather])
        state = graph.invoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})
        return str(state["messages"][-1].content)

    _scenarios(battery, tools, agent, weather)


def test_openai_agents_sdk(battery: Any, tools: Any) -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    agents.set_default_openai_client(AsyncOpenAI(base_url=battery.stub.openai_base_url, max_retries=0))
    weather = Weather()

    @agents.function_tool
    @rewind.tool(name="get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"{weather.now} in {city}"

    def agent() -> str:
        assistant = agents.Agent(name="Assistant", instructions="Answer briefly.", tools=[get_weather])
        return str(agents.Runner.run_sync(assistant, "Weather in Paris?").final_output)

    _scenarios(battery, tools, agent, weather)


def test_pydantic_ai(battery: Any, tools: Any) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent

    weather = Weather()

    def agent() -> str:
        assistant = Agent("openai:gpt-4o-mini", instructions="Answer briefly.")

        @assistant.tool_plain
        @rewind.tool(name="get_weather")
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            tools("get_weather", city)
            return f"{weather.now} in {city}"

        async def run() -> str:
            return str((await assistant.run("Weather in Paris?")).output)

        return asyncio.run(run())

    _scenarios(battery, tools, agent, weather)
