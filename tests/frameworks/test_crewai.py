"""CrewAI, unmodified: one Agent with a tool, one Task, ``Crew.kickoff()`` against the stub server.

CrewAI's ``LLM`` talks to OpenAI models through the openai SDK (its native provider) and to
the rest through litellm; both paths are run here. Its telemetry, tracing and version check
are off through their documented variables (conftest).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("crewai")


def _crew(llm: Any, tools: Any, **options: Any) -> Any:
    from crewai import Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Cloudy and 18C in {city}"

    forecaster = Agent(
        role="Forecaster",
        goal="Tell people the weather",
        backstory="You read weather tools and report what they say.",
        tools=[get_weather],
        llm=llm,
        verbose=False,
    )
    task = Task(
        description="What is the weather in city=Zurich today? Use get_weather.",
        expected_output="One sentence about the weather.",
        agent=forecaster,
    )
    return Crew(agents=[forecaster], tasks=[task], verbose=False, **options)


def test_crew_kickoff_on_the_native_openai_llm(battery: Any, tools: Any) -> None:
    from crewai import LLM

    def agent() -> str:
        llm = LLM(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        return str(_crew(llm, tools).kickoff().raw)

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Cloudy and 18C in Zurich"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")] * 2


def test_crew_kickoff_on_litellm(battery: Any, tools: Any) -> None:
    """``is_litellm=True``: CrewAI's documented way to send a model through litellm instead."""
    from crewai import LLM

    def agent() -> str:
        llm = LLM(model="openai/gpt-4o-mini", base_url=battery.stub.openai_base_url, is_litellm=True)
        return str(_crew(llm, tools).kickoff().raw)

    answer = battery.run(agent, providers=("litellm", "openai"))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Cloudy and 18C in Zurich"
    # litellm reaches the stub through the openai SDK: one step per model call, never two.
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "litellm.completion")] * 2


def test_crew_kickoff_streams(battery: Any, tools: Any) -> None:
    """``Crew(stream=True)``: the chunks as they come, then the final output."""
    from crewai import LLM

    def agent() -> tuple[str, list[str]]:
        llm = LLM(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        streaming = _crew(llm, tools, stream=True).kickoff()
        chunks = [chunk.content for chunk in streaming if chunk.chunk_type.value == "text"]
        return str(streaming.result.raw), chunks

    answer, chunks = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Cloudy and 18C in Zurich"
    assert len(chunks) > 3 and "".join(chunks).endswith(answer)
    steps = battery.steps
    assert [e.name for e in steps] == ["openai.chat.completions.create"] * 2
    assert all(e.request.get("stream") for e in steps)


def test_crew_akickoff_and_async_task_execution(battery: Any, tools: Any) -> None:
    """``await crew.kickoff_async()`` with ``Task(async_execution=True)``: CrewAI's own threads and tasks."""
    import asyncio

    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Cloudy and 18C in {city}"

    async def main() -> list[str]:
        llm = LLM(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        forecaster = Agent(role="Forecaster", goal="Report weather", backstory="Terse.", tools=[get_weather], llm=llm)
        writer = Agent(role="Writer", goal="Summarise", backstory="Brief.", llm=llm)
        lookup = Task(
            description="What is the weather in city=Basel today? Use get_weather.",
            expected_output="The weather.",
            agent=forecaster,
            async_execution=True,
        )
        summary = Task(
            description="Summarise the forecast.", expected_output="One line.", agent=writer, context=[lookup]
        )
        output = await Crew(agents=[forecaster, writer], tasks=[lookup, summary]).kickoff_async()
        return [str(t.raw) for t in output.tasks_output]

    outputs = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert outputs[0] == "Based on the tool result: Cloudy and 18C in Basel"
    assert [e.name for e in battery.steps] == ["openai.chat.completions.create"] * 3
