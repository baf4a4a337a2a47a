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


def _final(city: str, weather: str, pack_umbrella: bool) -> dict[str, Any]:
    """A scripted model turn that ends the run through pydantic-ai's output tool."""
    arguments = {"city": city, "weather": weather, "pack_umbrella": pack_umbrella}
    return {"tool_calls": [{"name": "final_result", "arguments": arguments}]}


def test_openai_structured_output_type_and_a_tool(battery: Any, tools: Any) -> None:
    from pydantic_ai import Agent

    # pydantic-ai's default output mode: the model ends the run by calling its output tool
    # (`final_result`). The stub's brain would answer in text, so the script says what a real
    # model does: the user's tool first, then the output tool.
    battery.stub.add_script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        _final("Paris", "rain", True),
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


def test_openai_run_stream_of_a_structured_output(battery: Any) -> None:
    from pydantic_ai import Agent

    battery.stub.add_script(_final("Bern", "dry", False))

    async def main() -> tuple[list[dict[str, Any]], Trip]:
        planner = Agent("openai:gpt-4o-mini", output_type=Trip)
        async with planner.run_stream("Plan a day in Bern.") as result:
            partials = [p.model_dump() async for p in result.stream_output(debounce_by=None)]
            return partials, await result.get_output()

    partials, trip = battery.run(lambda: asyncio.run(main()))
    assert trip == Trip(city="Bern", weather="dry", pack_umbrella=False)
    assert partials[-1] == trip.model_dump()
    assert battery.steps[0].request["stream"] is True


def test_anthropic_model_with_a_tool_and_structured_output(battery: Any, tools: Any) -> None:
    """``AnthropicModel`` with its provider built explicitly, a tool and a structured output."""
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    battery.stub.add_script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oban"}}]},
        _final("Oban", "gale", True),
    )

    def agent() -> Trip:
        provider = AnthropicProvider(base_url=battery.stub.anthropic_base_url)
        model = AnthropicModel("claude-sonnet-4-6", provider=provider)
        planner = Agent(model, output_type=Trip)

        @planner.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            tools("get_weather", city)
            return f"gale in {city}"

        return planner.run_sync("A day in Oban: what is the weather?").output

    trip = battery.run(agent, providers=("anthropic",))
    assert trip == Trip(city="Oban", weather="gale", pack_umbrella=True)
    assert battery.live_tools == ["get_weather"]
    assert len(battery.steps) == 2
