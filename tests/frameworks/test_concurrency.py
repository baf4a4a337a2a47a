"""Concurrent agents: three under ``asyncio.gather``, and a ``ThreadPoolExecutor`` fan-out."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("langchain_openai")

import rewind
from rewind.errors import DivergenceError, ThreadlessCallWarning
from rewind.setup.integrations import patched

CITIES = ("Lisbon", "Kyoto", "Quito")


def _agent_graph(tools: Any, base_url: str) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"clear skies in {city}"

    # base_url= given: without it, ChatOpenAI shares one cached async HTTP client per process,
    # whose pooled connections die with the event loop of an earlier asyncio.run().
    return create_agent(ChatOpenAI(model="gpt-4o-mini", base_url=base_url, max_retries=0), tools=[get_weather])


def test_three_agents_under_asyncio_gather(battery: Any, tools: Any) -> None:
    """Three LangGraph agents at once; the stub answers them in a scrambled order.

    Recorded steps sit in the order the calls finished, which differs from the order a
    later run makes them: positional (strict) replay is not enough, ``match="parallel"``
    serves each call by its identity wherever it sits in the trace.
    """
    # Slow down the first three model calls unevenly: the agents' first answers finish
    # in the reverse order of their requests.
    battery.stub.add_script({"delay": 0.6}, {"delay": 0.3}, {"delay": 0.0})

    async def main() -> list[str]:
        graph = _agent_graph(tools, battery.stub.openai_base_url)
        states = await asyncio.gather(
            *(
                graph.ainvoke({"messages": [{"role": "user", "content": f"What is the weather in city={city} now?"}]})
                for city in CITIES
            )
        )
        return [str(state["messages"][-1].content) for state in states]

    answers = battery.run(lambda: asyncio.run(main()), match="parallel")
    assert answers == [f"Based on the tool result: clear skies in {city}" for city in CITIES]
    assert sorted(battery.live_tools) == ["get_weather"] * 3
    assert sorted(v for _, v in tools.calls) == sorted(CITIES)
    steps = battery.steps
    assert len(steps) == 6
    # The trace holds the interleaving of that one run: the agents' second calls were made
    # in the order their first answers came back, not in the order they started.
    order = [next(c for c in CITIES if c in str(s.request["messages"][0]["content"])) for s in steps]
    assert sorted(order[:3]) == sorted(order[3:]) and order[3:] != order[:3]

    # The same trace under strict matching: the agents' calls arrive in another order.
    with patched("openai"), pytest.raises(DivergenceError), rewind.replay(battery.trace, match="strict"):
        asyncio.run(main())


def test_thread_pool_fan_out_with_patch_thread_pool(battery: Any, tools: Any) -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"drizzle in {city}"

    def one(city: str) -> str:
        from langchain.agents import create_agent

        graph = create_agent(ChatOpenAI(model="gpt-4o-mini", max_retries=0), tools=[get_weather])
        state = graph.invoke({"messages": [{"role": "user", "content": f"What is the weather in city={city} now?"}]})
        return str(state["messages"][-1].content)

    def agent() -> list[str]:
        with ThreadPoolExecutor(max_workers=3) as pool:
            return list(pool.map(one, CITIES))

    unpatch = rewind.patch_thread_pool()
    try:
        answers = battery.run(agent, match="parallel")
    finally:
        unpatch()
    assert answers == [f"Based on the tool result: drizzle in {city}" for city in CITIES]
    assert sorted(battery.live_tools) == ["get_weather"] * 3
    assert len(battery.steps) == 6  # every worker's calls reached the recording session


def test_thread_pool_without_patch_thread_pool_records_nothing(battery: Any) -> None:
    """Why the patch is needed: a worker thread starts with an empty context, outside the session."""
    from langchain_openai import ChatOpenAI

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        with ThreadPoolExecutor(max_workers=3) as pool:
            return [str(m.content) for m in pool.map(model.invoke, CITIES)]

    with (
        patched("openai"),
        pytest.warns(ThreadlessCallWarning, match="patch_thread_pool"),
        rewind.record(battery.trace),
    ):
        answers = agent()
    assert answers == [f"Echo: {city}" for city in CITIES]  # they ran, live
    assert battery.steps == []  # and none of them was recorded


def test_langchain_batch_needs_no_patch(battery: Any) -> None:
    """LangChain's own ``batch()`` fans out on a pool that copies the caller's context itself."""
    from langchain_openai import ChatOpenAI

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        return [str(m.content) for m in model.batch(list(CITIES), config={"max_concurrency": 3})]

    assert battery.run(agent, match="parallel") == [f"Echo: {city}" for city in CITIES]
    assert len(battery.steps) == 3
