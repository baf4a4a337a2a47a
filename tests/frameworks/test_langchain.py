"""LangChain chat models, unmodified, on langchain-openai against the stub server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

from pydantic import BaseModel, Field


class Weather(BaseModel):
    """A weather report."""

    city: str = Field(description="The city")
    temperature_c: int = Field(description="Degrees Celsius")
    sunny: bool


def test_structured_output_with_a_pydantic_model(battery: Any) -> None:
    from langchain_openai import ChatOpenAI

    def agent() -> Weather:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        structured = model.with_structured_output(Weather)
        return structured.invoke("Report the weather in Oslo.")

    report = battery.run(agent)
    assert isinstance(report, Weather)
    assert report.sunny is True and report.temperature_c == 1
    (step,) = battery.steps
    # langchain-openai's default: the SDK's parse() with the model class as response_format,
    # which the trace keeps as the class's name and JSON schema.
    assert step.name == "openai.chat.completions.parse"
    assert step.request["response_format"]["json_schema"]["title"] == "Weather"


def test_structured_output_via_function_calling(battery: Any) -> None:
    from langchain_openai import ChatOpenAI

    def agent() -> Weather:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        structured = model.with_structured_output(Weather, method="function_calling")
        return structured.invoke("Report the weather in Oslo.")

    report = battery.run(agent)
    assert isinstance(report, Weather) and report.sunny is True
    (step,) = battery.steps
    assert step.request["tool_choice"]["function"]["name"] == "Weather"


def test_stream_a_chat_model(battery: Any) -> None:
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    def agent() -> list[str]:
        prompt = ChatPromptTemplate.from_messages([("system", "Be brief."), ("user", "{question}")])
        chain = prompt | ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        return [str(chunk.content) for chunk in chain.stream({"question": "tell me about rewinding tapes"})]

    chunks = battery.run(agent)
    assert "".join(chunks) == "Echo: tell me about rewinding tapes"
    assert len([c for c in chunks if c]) > 3  # token by token
    (step,) = battery.steps
    assert step.request["stream"] is True


def test_astream_a_chat_model_with_usage(battery: Any) -> None:
    from langchain_openai import ChatOpenAI

    async def main() -> tuple[str, Any]:
        # base_url= given: without it, ChatOpenAI shares one cached async HTTP client per process,
        # whose pooled connections die with the event loop of an earlier asyncio.run().
        model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0, stream_usage=True)
        full = None
        async for chunk in model.astream("count the words in this sentence"):
            full = chunk if full is None else full + chunk
        assert full is not None
        return str(full.content), full.usage_metadata

    text, usage = battery.run(lambda: asyncio.run(main()))
    assert text == "Echo: count the words in this sentence"
    assert usage["output_tokens"] > 0  # the final usage chunk replays too


def test_responses_api_streaming_with_a_tool(battery: Any, tools: Any) -> None:
    """``use_responses_api=True``: LangChain on OpenAI's Responses API, streamed, in a tool loop."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        tools("get_weather", city)
        return f"Breezy in {city}"

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", use_responses_api=True, streaming=True, max_retries=0)
        bound = model.bind_tools([get_weather])
        messages: list[Any] = [HumanMessage("What is the weather in city=Split today?")]
        reply = None
        for chunk in bound.stream(messages):
            reply = chunk if reply is None else reply + chunk
        assert reply is not None
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
        return [chunk.text for chunk in bound.stream(messages)]

    chunks = battery.run(agent)
    assert battery.live_tools == tools.names() == ["get_weather"]
    assert "".join(chunks) == "Based on the tool result: Breezy in Split"
    assert [e.name for e in battery.steps] == ["openai.responses.create"] * 2


def test_a_stream_abandoned_halfway_replays_the_same(battery: Any) -> None:
    from langchain_openai import ChatOpenAI

    def agent() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        seen = []
        for chunk in model.stream("one two three four five six seven"):
            seen.append(str(chunk.content))
            if len(seen) == 4:
                break  # the caller has what it needs
        return seen

    seen = battery.run(agent)
    assert len(seen) == 4


def test_the_framework_retry_of_a_rate_limit_replays(battery: Any) -> None:
    """The SDK under ChatOpenAI retries a 429 by itself, inside one recorded step.

    rewind records at the SDK method (``create``), above the SDK's own retry loop: the step
    holds the call's outcome, and a replay serves it at once, with no failed attempt and no
    retry wait.
    """
    from langchain_openai import ChatOpenAI

    battery.stub.fail_next(429, headers={"retry-after": "0"})

    def agent() -> str:
        return str(ChatOpenAI(model="gpt-4o-mini", max_retries=1).invoke("hello after a 429").content)

    assert battery.run(agent) == "Echo: hello after a 429"
    assert battery.stub.request_count == 2  # live: the 429, then the retry
    assert [(e.name, e.ok) for e in battery.steps] == [("openai.chat.completions.create", True)]


def test_an_async_stream_abandoned_halfway_replays_the_same(battery: Any) -> None:
    from langchain_openai import ChatOpenAI

    async def main() -> list[str]:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=battery.stub.openai_base_url, max_retries=0)
        seen: list[str] = []
        async for chunk in model.astream("one two three four five six seven"):
            seen.append(str(chunk.content))
            if len(seen) == 4:
                break
        return seen

    assert len(battery.run(lambda: asyncio.run(main()))) == 4
