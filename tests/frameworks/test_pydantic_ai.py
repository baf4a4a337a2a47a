"""pydantic-ai agents, unmodified, on OpenAI and Anthropic against the stub server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic import BaseModel


class Trip(BaseModel):
    city: str
    weather: str
    pack_umbrella: bool


def test_openai_structured_output_type_and_a_tool(battery: Any, tools: Any) -> None:
    from pydantic_ai import Agent

    # pydantic-ai's default output mode: the model ends the run by calling its output tool
    # (`final_result`). The stub's brain would answer in text, so the script says what a real
    # model does: the user's tool first, then the output tool.
    battery.stub.add_script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {
            "tool_calls": [
                {"name": "final_result", "arguments": {"city": "Paris", "weather": "rain", "pack_umbrella": True}}
            ]
        },
    )

    def agent() -> Trip:
        trip_planner = Agent("openai:gpt-4o-mini", output_type=Trip, instructions="Plan a day trip.")

        @trip_planner.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            tools("get_weather", city)
            return f"rain in {city}"

        return trip_planner.run_sync("A day in Paris: what is the weather?").output

    trip = battery.run(agent)
    assert trip == Trip(city="Paris", weather="rain", pack_umbrella=True)
    assert battery.live_tools == tools.names() == ["get_weather"]
    steps = battery.steps
    # "openai:<model>" is the Responses API in pydantic-ai 2.x.
    assert [e.name for e in steps] == ["openai.responses.create"] * 2
    assert {t["name"] for t in steps[0].request["tools"]} == {"get_weather", "final_result"}


def test_openai_native_output_without_a_script(battery: Any, tools: Any) -> None:
    from pydantic_ai import Agent, NativeOutput

    def agent() -> Trip:
        trip_planner = Agent("openai:gpt-4o-mini", output_type=NativeOutput(Trip))

        @trip_planner.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            tools("get_weather", city)
            return f"sun in {city}"

        return trip_planner.run_sync("What is the weather in city=Nice today?").output

    trip = battery.run(agent)
    assert isinstance(trip, Trip) and trip.pack_umbrella is True
    assert battery.live_tools == ["get_weather"]
    assert battery.steps[-1].request["text"]["format"]["type"] == "json_schema"


def test_anthropic_run_stream(battery: Any, tools: Any) -> None:
    from pydantic_ai import Agent

    async def main() -> tuple[list[str], str]:
        assistant = Agent("anthropic:claude-sonnet-4-6", instructions="Be concise.")

        @assistant.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            tools("get_weather", city)
            return f"hail in {city}"

        async with assistant.run_stream("What is the weather in city=Graz today?") as result:
            deltas = [delta async for delta in result.stream_text(delta=True, debounce_by=None)]
            return deltas, await result.get_output()

    deltas, output = battery.run(lambda: asyncio.run(main()), providers=("anthropic",))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert output == "".join(deltas) == "Based on the tool result: hail in Graz"
    assert len(deltas) > 3
    assert [e.name for e in battery.steps] == ["anthropic.beta.messages.create"] * 2  # pydantic-ai uses the beta client
    assert all(e.request["stream"] for e in battery.steps)
