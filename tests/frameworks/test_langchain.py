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
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0, stream_usage=True)
        full = None
        async for chunk in model.astream("count the words in this sentence"):
            full = chunk if full is None else full + chunk
        assert full is not None
        return str(full.content), full.usage_metadata

    text, usage = battery.run(lambda: asyncio.run(main()))
    assert text == "Echo: count the words in this sentence"
    assert usage["output_tokens"] > 0  # the final usage chunk replays too
