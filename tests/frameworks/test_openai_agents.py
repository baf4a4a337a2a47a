"""The OpenAI Agents SDK, unmodified, on its default Responses API model against the stub server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")


@pytest.fixture
def sdk(battery: Any) -> Any:
    """The SDK's documented setup: its default client pointed at the stub, tracing export off."""
    import agents
    from openai import AsyncOpenAI

    # OPENAI_AGENTS_DISABLE_TRACING=1 (conftest) already stops the trace export; this is the
    # in-code switch the SDK documents, for a run that did not set the variable.
    agents.set_tracing_disabled(True)
    agents.set_default_openai_client(AsyncOpenAI(base_url=battery.stub.openai_base_url, max_retries=0))
    return agents


def test_runner_run_with_a_function_tool(battery: Any, tools: Any, sdk: Any) -> None:
    from agents import Agent, Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Windy in {city}"

    def agent() -> str:
        assistant = Agent(name="Assistant", instructions="Answer briefly.", tools=[get_weather])
        result = Runner.run_sync(assistant, "What is the weather in city=Dublin today?")
        return str(result.final_output)

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Based on the tool result: Windy in Dublin"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.responses.create")] * 2


def test_runner_run_async(battery: Any, tools: Any, sdk: Any) -> None:
    from agents import Agent, Runner, function_tool

    @function_tool
    async def search_hotels(city: str) -> str:
        """Hotels in a city."""
        tools("search_hotels", city)
        return f"Hotel Astoria in {city}"

    async def main() -> str:
        assistant = Agent(name="Assistant", tools=[search_hotels])
        result = await Runner.run(assistant, "find hotels in city=Vienna please")
        return str(result.final_output)

    answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == ["search_hotels"]
    assert answer == "Based on the tool result: Hotel Astoria in Vienna"


def test_runner_run_streamed(battery: Any, tools: Any, sdk: Any) -> None:
    from agents import Agent, Runner, function_tool
    from openai.types.responses import ResponseTextDeltaEvent

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Rainy in {city}"

    async def main() -> tuple[list[str], list[str], str]:
        assistant = Agent(name="Assistant", tools=[get_weather])
        result = Runner.run_streamed(assistant, "What is the weather in city=Bergen now?")
        deltas: list[str] = []
        items: list[str] = []
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                deltas.append(event.data.delta)
            elif event.type == "run_item_stream_event":
                items.append(event.item.type)
        return deltas, items, str(result.final_output)

    deltas, items, answer = battery.run(lambda: asyncio.run(main()))
    assert battery.live_tools == ["get_weather"]
    assert answer == "".join(deltas) == "Based on the tool result: Rainy in Bergen"
    assert len(deltas) > 3
    assert items == ["tool_call_item", "tool_call_output_item", "message_output_item"]
    assert all(e.request["stream"] for e in battery.steps)


def test_handoff_between_two_agents(battery: Any, tools: Any, sdk: Any) -> None:
    from agents import Agent, Runner, function_tool

    @function_tool
    def get_forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        tools("get_forecast", city)
        return f"Snow tomorrow in {city}"

    # The triage agent only hands off; the specialist owns the tool. The stub calls the
    # handoff tool first (the only tool the triage agent offers), then the forecast tool.
    battery.stub.add_script(
        {"tool_calls": [{"name": "transfer_to_forecaster", "arguments": {}}]},
        {"tool_calls": [{"name": "get_forecast", "arguments": {"city": "Tromso"}}]},
    )

    def agent() -> tuple[str, str]:
        forecaster = Agent(name="Forecaster", handoff_description="Answers weather questions.", tools=[get_forecast])
        triage = Agent(name="Triage", instructions="Hand weather questions off.", handoffs=[forecaster])
        result = Runner.run_sync(triage, "Will it snow in Tromso tomorrow?")
        return result.last_agent.name, str(result.final_output)

    last, answer = battery.run(agent)
    assert last == "Forecaster"
    assert battery.live_tools == tools.names() == ["get_forecast"]
    # The stub answers from every tool result since the user's message: the handoff's too.
    assert answer == 'Based on the tool result: {"assistant": "Forecaster"}; Snow tomorrow in Tromso'
    steps = battery.steps
    assert len(steps) == 3
    assert steps[0].request["tools"][0]["name"] == "transfer_to_forecaster"
    assert steps[1].request["tools"][0]["name"] == "get_forecast"  # the specialist's turn


def test_chat_completions_model_streamed(battery: Any, tools: Any, sdk: Any) -> None:
    """The SDK on Chat Completions (``set_default_openai_api("chat_completions")``), streamed."""
    from agents import Agent, Runner, function_tool, set_default_openai_api

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Humid in {city}"

    set_default_openai_api("chat_completions")
    try:

        async def main() -> tuple[str, int]:
            assistant = Agent(name="Assistant", model="gpt-4o-mini", tools=[get_weather])
            result = Runner.run_streamed(assistant, "What is the weather in city=Manaus today?")
            events = [event async for event in result.stream_events()]
            return str(result.final_output), len(events)

        answer, events = battery.run(lambda: asyncio.run(main()))
    finally:
        set_default_openai_api("responses")
    assert battery.live_tools == ["get_weather"]
    assert answer == "Based on the tool result: Humid in Manaus"
    assert events > 5
    assert [e.name for e in battery.steps] == ["openai.chat.completions.create"] * 2
    assert all(e.request["stream"] for e in battery.steps)


def test_input_guardrail_agent_runs_beside_the_main_agent(battery: Any, tools: Any, sdk: Any) -> None:
    """An input guardrail that is itself an agent runs concurrently with the main agent's first turn.

    Two model calls in flight at once, yet strict matching holds: a step's place in the trace
    is where its call began, and the SDK starts the guardrail's and the agent's calls in the
    same order on every run (no I/O between them); only their answers race.
    """
    from agents import (
        Agent,
        GuardrailFunctionOutput,
        RunContextWrapper,
        Runner,
        TResponseInputItem,
        function_tool,
        input_guardrail,
    )

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Calm in {city}"

    checker = Agent(name="Checker", instructions="Say whether the request is about homework.")

    @input_guardrail
    async def no_homework(
        ctx: RunContextWrapper[None], agent: Agent, user_input: str | list[TResponseInputItem]
    ) -> GuardrailFunctionOutput:
        verdict = await Runner.run(checker, user_input, context=ctx.context)
        tools("guardrail", str(verdict.final_output))
        return GuardrailFunctionOutput(output_info=verdict.final_output, tripwire_triggered=False)

    async def main() -> str:
        assistant = Agent(name="Assistant", tools=[get_weather], input_guardrails=[no_homework])
        result = await Runner.run(assistant, "What is the weather in city=Riga today?")
        return str(result.final_output)

    answer = battery.run(lambda: asyncio.run(main()), match="strict")
    assert answer == "Based on the tool result: Calm in Riga"
    assert sorted(battery.live_tools) == ["get_weather", "guardrail"]
    steps = battery.steps
    assert len(steps) == 3
    assert sorted(str(e.request.get("instructions")) for e in steps[:2]) == [
        "None",
        "Say whether the request is about homework.",
    ]


def test_run_streamed_cancelled_halfway(battery: Any, tools: Any, sdk: Any) -> None:
    from agents import Agent, Runner
    from openai.types.responses import ResponseTextDeltaEvent

    async def main() -> list[str]:
        assistant = Agent(name="Assistant")
        result = Runner.run_streamed(assistant, "one two three four five six seven eight")
        deltas: list[str] = []
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                deltas.append(event.data.delta)
                if len(deltas) == 3:
                    result.cancel()  # the SDK's documented way to stop a streamed run
        return deltas

    deltas = battery.run(lambda: asyncio.run(main()))
    assert len(deltas) == 3  # cancel() drops the events already queued


def test_server_side_conversation_state_with_previous_response_id(battery: Any, tools: Any, sdk: Any) -> None:
    """Two turns chained by ``previous_response_id``: the second request names the first answer's id.

    On replay that id comes from the replayed first answer, so the second request is the
    recorded one again and strict matching holds.
    """
    from agents import Agent, Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Overcast in {city}"

    async def main() -> tuple[str, str]:
        assistant = Agent(name="Assistant", tools=[get_weather])
        first = await Runner.run(assistant, "What is the weather in city=Ghent today?", auto_previous_response_id=True)
        second = await Runner.run(
            assistant, "And the weather in city=Bruges now?", previous_response_id=first.last_response_id
        )
        return str(first.final_output), str(second.final_output)

    first, second = battery.run(lambda: asyncio.run(main()))
    assert first == "Based on the tool result: Overcast in Ghent"
    assert second == "Based on the tool result: Overcast in Bruges"
    assert tools.names() == ["get_weather", "get_weather"]
    chained = [e.request.get("previous_response_id") for e in battery.steps]
    assert chained[0] is None and all(chained[1:])  # each request names the answer before it
