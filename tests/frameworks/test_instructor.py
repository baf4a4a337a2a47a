"""instructor, unmodified: a patched OpenAI client with ``response_model=`` against the stub."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("instructor")

from pydantic import BaseModel, field_validator


class UserInfo(BaseModel):
    name: str
    age: int


def test_response_model_with_a_validator_that_counts(battery: Any, tools: Any) -> None:
    import instructor
    from openai import OpenAI

    class Checked(UserInfo):
        # Validators are agent code: they run on the live answer and again on the replayed one.
        @field_validator("age")
        @classmethod
        def plausible(cls, age: int) -> int:
            tools("validate_age", age)
            return age

    def agent() -> tuple[str, dict[str, Any]]:
        client = instructor.from_openai(OpenAI(max_retries=0))
        user = client.chat.completions.create(
            model="gpt-4o-mini",
            response_model=Checked,
            messages=[{"role": "user", "content": "Extract: name=Ada is 36 years old."}],
        )
        # instructor answers with an instance of a subclass it builds per call, so two answers
        # never compare equal, even two live ones: compare the class name and the fields.
        return type(user).__name__, user.model_dump()

    user = battery.run(agent)
    assert user == ("Checked", {"name": "Ada", "age": 1})  # the stub fills numbers with 1
    assert battery.live_tools == tools.names() == ["validate_age"]
    (step,) = battery.steps
    # instructor's default mode is TOOLS: one forced function call named after the model.
    assert step.request["tool_choice"] == {"type": "function", "function": {"name": "Checked"}}


def test_validation_retry_is_recorded_and_replayed(battery: Any) -> None:
    """A first answer that fails validation makes instructor ask again; both calls replay."""
    import instructor
    from openai import OpenAI

    battery.stub.add_script(
        {"tool_calls": [{"name": "UserInfo", "arguments": {"name": "Ada", "age": "old"}}]},
        {"tool_calls": [{"name": "UserInfo", "arguments": {"name": "Ada", "age": 36}}]},
    )

    def agent() -> dict[str, Any]:
        client = instructor.from_openai(OpenAI(max_retries=0))
        return client.chat.completions.create(
            model="gpt-4o-mini",
            response_model=UserInfo,
            max_retries=2,
            messages=[{"role": "user", "content": "Extract: name=Ada is 36 years old."}],
        ).model_dump()

    user = battery.run(agent)
    assert user == {"name": "Ada", "age": 36}
    first, second = battery.steps
    # The retry carries the validation error back to the model.
    assert "valid integer" in second.request["messages"][-1]["content"]
    assert len(second.request["messages"]) > len(first.request["messages"])


def test_async_client_json_mode(battery: Any) -> None:
    import instructor
    from openai import AsyncOpenAI

    async def main() -> dict[str, Any]:
        client = instructor.from_openai(AsyncOpenAI(max_retries=0), mode=instructor.Mode.JSON_SCHEMA)
        user = await client.chat.completions.create(
            model="gpt-4o-mini",
            response_model=UserInfo,
            messages=[{"role": "user", "content": "Extract: name=Grace is 45."}],
        )
        return user.model_dump()

    user = battery.run(lambda: asyncio.run(main()))
    assert user == {"name": "Grace", "age": 1}
    (step,) = battery.steps
    assert step.request["response_format"]["type"] == "json_schema"


def test_partial_streaming(battery: Any) -> None:
    import instructor
    from openai import OpenAI

    def agent() -> list[dict[str, Any]]:
        client = instructor.from_openai(OpenAI(max_retries=0))
        stream = client.chat.completions.create_partial(
            model="gpt-4o-mini",
            response_model=UserInfo,
            messages=[{"role": "user", "content": "Extract: name=Linus is 55."}],
        )
        return [partial.model_dump() for partial in stream]

    partials = battery.run(agent)
    assert partials[-1] == {"name": "Linus", "age": 1}
    assert battery.steps[0].request["stream"] is True


def test_anthropic_client(battery: Any) -> None:
    import instructor
    from anthropic import Anthropic

    def agent() -> dict[str, Any]:
        client = instructor.from_anthropic(Anthropic(max_retries=0))
        user = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=512,
            response_model=UserInfo,
            messages=[{"role": "user", "content": "Extract: name=Hedy is 30."}],
        )
        return user.model_dump()

    assert battery.run(agent, providers=("anthropic",)) == {"name": "Hedy", "age": 1}
    (step,) = battery.steps
    assert step.name == "anthropic.messages.create"
    assert step.request["tool_choice"]["name"] == "UserInfo"  # ANTHROPIC_TOOLS mode: a forced tool
