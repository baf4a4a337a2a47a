"""smolagents' ToolCallingAgent, unmodified, on LiteLLMModel and on OpenAIServerModel against the stub.

smolagents sends tool results back as *user* messages ("Observation: ...") and ends a run
only through its ``final_answer`` tool, so the stub is scripted with the two tool calls a
model would make; the tool itself is the agent's own code and really runs.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("smolagents")

SCRIPT = (
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Bergen"}}]},
    {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "Bergen is foggy, 12C."}}]},
)


def _weather_tool(tools: Any) -> Any:
    from smolagents import tool

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city to look up.
        """
        tools("get_weather", city)
        return f"Foggy and 12C in {city}"

    return get_weather


def _observations(agent: Any) -> list[str]:
    return [str(step.observations) for step in agent.memory.steps if getattr(step, "observations", None)]


def test_tool_calling_agent_on_litellm(battery: Any, tools: Any) -> None:
    from smolagents import LiteLLMModel, ToolCallingAgent

    get_weather = _weather_tool(tools)
    battery.stub.add_script(*SCRIPT)

    def agent() -> tuple[str, list[str]]:
        model = LiteLLMModel(model_id="openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery")
        runner = ToolCallingAgent(tools=[get_weather], model=model, max_steps=4, verbosity_level=0)
        answer = runner.run("What is the weather in Bergen?")
        return str(answer), _observations(runner)

    answer, observations = battery.run(agent, providers=("litellm", "openai"))
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Bergen is foggy, 12C."
    assert any("Foggy and 12C in Bergen" in o for o in observations)
    # litellm reaches the stub through the openai SDK: one step per model call, never two.
    steps = battery.steps
    assert [(e.kind, e.name) for e in steps] == [("llm", "litellm.completion")] * 2
    assert battery.stub.request_count == 2


def test_tool_calling_agent_on_openai_server_model(battery: Any, tools: Any) -> None:
    from smolagents import OpenAIServerModel, ToolCallingAgent

    get_weather = _weather_tool(tools)
    battery.stub.add_script(*SCRIPT)

    def agent() -> tuple[str, list[str]]:
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery")
        runner = ToolCallingAgent(tools=[get_weather], model=model, max_steps=4, verbosity_level=0)
        answer = runner.run("What is the weather in Bergen?")
        return str(answer), _observations(runner)

    answer, observations = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Bergen is foggy, 12C."
    assert any("Foggy and 12C in Bergen" in o for o in observations)
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")] * 2


@pytest.mark.parametrize("model_class", ["LiteLLMModel", "OpenAIServerModel"])
def test_tool_calling_agent_streams_outputs(battery: Any, tools: Any, model_class: str) -> None:
    import smolagents
    from smolagents import ToolCallingAgent

    get_weather = _weather_tool(tools)
    battery.stub.add_script(*SCRIPT)

    def agent() -> tuple[str, list[str]]:
        if model_class == "LiteLLMModel":
            model = smolagents.LiteLLMModel(
                model_id="openai/gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery"
            )
        else:
            model = smolagents.OpenAIServerModel(
                model_id="gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery"
            )
        runner = ToolCallingAgent(tools=[get_weather], model=model, max_steps=4, verbosity_level=0, stream_outputs=True)
        events = list(runner.run("What is the weather in Bergen?", stream=True))
        return str(events[-1].output), [type(event).__name__ for event in events]

    answer, kinds = battery.run(
        agent, providers=("litellm", "openai") if model_class == "LiteLLMModel" else ("openai",)
    )
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "Bergen is foggy, 12C."
    assert "ChatMessageStreamDelta" in kinds and kinds[-1] == "FinalAnswerStep"
    steps = battery.steps
    assert len(steps) == 2 and all(e.request.get("stream") for e in steps)


def test_code_agent_runs_the_models_code(battery: Any, tools: Any) -> None:
    """CodeAgent: the model writes Python that calls the tool; smolagents' local executor runs it."""
    from smolagents import CodeAgent, OpenAIServerModel

    get_weather = _weather_tool(tools)
    battery.stub.add_script(
        "Thought: I will call the tool and answer with what it says.\n"
        "<code>\nreport = get_weather(city='Bergen')\nfinal_answer(report.upper())\n</code>"
    )

    def agent() -> str:
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=battery.stub.openai_base_url, api_key="sk-battery")
        runner = CodeAgent(tools=[get_weather], model=model, max_steps=3, verbosity_level=0)
        return str(runner.run("What is the weather in Bergen?"))

    answer = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert answer == "FOGGY AND 12C IN BERGEN"
    assert [(e.kind, e.name) for e in battery.steps] == [("llm", "openai.chat.completions.create")]
