"""The Responses API: create (streamed and not), parse, the stream helper, raw and streaming responses."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from _openai_support import MODEL, events, needs_responses
from pydantic import BaseModel

import rewind
from rewind.stub_server import StubServer

pytestmark = needs_responses

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "strict": True,
    }
]


class Answer(BaseModel):
    city: str
    temperature: int


def test_create_replays_a_real_response(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})
    with rewind.record(trace_path):
        live = client.responses.create(model=MODEL, input="weather in Oslo?", tools=TOOLS, instructions="be brief")
    (event,) = events(trace_path)
    assert event.name == "openai.responses.create"
    assert event.request["instructions"] == "be brief"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.responses.create(model=MODEL, input="weather in Oslo?", tools=TOOLS, instructions="be brief")
    assert type(replayed) is openai.types.responses.Response
    assert replayed == live
    assert replayed.output[0].type == "function_call" and replayed.output[0].name == "get_weather"


async def test_async_create(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await aclient.responses.create(model=MODEL, input="async hello")
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclient.responses.create(model=MODEL, input="async hello")
    assert replayed == live and replayed.output_text == "Echo: async hello"


def test_streamed_create_replays_typed_events(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = list(client.responses.create(model=MODEL, input="stream me", stream=True))
    (event,) = events(trace_path)
    assert event.response["status"] == "completed"  # the final Response snapshot
    stub.stop()
    with rewind.replay(trace_path):
        replayed = list(client.responses.create(model=MODEL, input="stream me", stream=True))
    assert [type(e) for e in replayed] == [type(e) for e in live]
    assert replayed == live
    assert replayed[-1].type == "response.completed"


async def test_async_streamed_create(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        stream = await aclient.responses.create(model=MODEL, input="stream me", stream=True)
        live = [e async for e in stream]
    stub.stop()
    async with rewind.replay(trace_path):
        stream = await aclient.responses.create(model=MODEL, input="stream me", stream=True)
        replayed = [e async for e in stream]
    assert replayed == live


def test_parse_replays_output_parsed(client, stub: StubServer, trace_path: Path) -> None:
    if not hasattr(client.responses, "parse"):
        pytest.skip("this openai SDK has no responses.parse")
    with rewind.record(trace_path):
        live = client.responses.parse(model=MODEL, input="weather as json", text_format=Answer)
    assert isinstance(live.output_parsed, Answer)
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.responses.parse(model=MODEL, input="weather as json", text_format=Answer)
    assert type(replayed) is type(live)
    assert replayed.output_parsed == live.output_parsed


def test_stream_helper(client, stub: StubServer, trace_path: Path) -> None:
    if not hasattr(client.responses, "stream"):
        pytest.skip("this openai SDK has no responses.stream")
    with rewind.record(trace_path), client.responses.stream(model=MODEL, input="helper") as stream:
        live_text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        live_final = stream.get_final_response()
    stub.stop()
    with rewind.replay(trace_path), client.responses.stream(model=MODEL, input="helper") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == live_text == "Echo: helper"
    assert final.id == live_final.id


async def test_async_stream_helper(aclient, stub: StubServer, trace_path: Path) -> None:
    if not hasattr(aclient.responses, "stream"):
        pytest.skip("this openai SDK has no responses.stream")
    async with rewind.record(trace_path), aclient.responses.stream(model=MODEL, input="async helper") as stream:
        live = await stream.get_final_response()
    stub.stop()
    async with rewind.replay(trace_path), aclient.responses.stream(model=MODEL, input="async helper") as stream:
        replayed = await stream.get_final_response()
    assert replayed.output_text == live.output_text


def test_with_raw_response(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        raw = client.responses.with_raw_response.create(model=MODEL, input="raw")
        live = raw.parse()
    stub.stop()
    with rewind.replay(trace_path):
        raw = client.responses.with_raw_response.create(model=MODEL, input="raw")
    assert raw.parse() == live
    assert raw.headers.get("x-request-id")


def test_with_streaming_response_stream_sync(client, stub: StubServer, trace_path: Path) -> None:
    """The path the OpenAI Agents SDK streams with."""
    with (
        rewind.record(trace_path),
        client.responses.with_streaming_response.create(model=MODEL, input="agents", stream=True) as response,
    ):
        live = list(response.parse())
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is False
    stub.stop()
    with (
        rewind.replay(trace_path),
        client.responses.with_streaming_response.create(model=MODEL, input="agents", stream=True) as response,
    ):
        assert response.headers.get("content-type", "").startswith("text/event-stream")
        replayed = list(response.parse())
    assert replayed == live


async def test_with_streaming_response_stream_async(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path), aclient.responses.with_streaming_response.create(
        model=MODEL, input="agents", stream=True
    ) as response:
        live = [e async for e in await response.parse()]
    stub.stop()
    async with rewind.replay(trace_path), aclient.responses.with_streaming_response.create(
        model=MODEL, input="agents", stream=True
    ) as response:
        replayed = [e async for e in await response.parse()]
    assert replayed == live


async def test_with_streaming_response_async_iter_lines(aclient, stub: StubServer, trace_path: Path) -> None:
    async with (
        rewind.record(trace_path),
        aclient.responses.with_streaming_response.create(model=MODEL, input="raw sse", stream=True) as r,
    ):
        live_lines = [line async for line in r.iter_lines()]
    stub.stop()
    async with (
        rewind.replay(trace_path),
        aclient.responses.with_streaming_response.create(model=MODEL, input="raw sse", stream=True) as r,
    ):
        replayed_lines = [line async for line in r.iter_lines()]
    data = [line for line in live_lines if line.startswith("data:")]
    assert [line for line in replayed_lines if line.startswith("data:")] == data


def test_with_streaming_response_non_stream_records_on_parse(client, stub: StubServer, trace_path: Path) -> None:
    with (
        rewind.record(trace_path),
        client.responses.with_streaming_response.create(model=MODEL, input="plain") as response,
    ):
        live = response.parse()
    (event,) = events(trace_path)
    assert event.response["id"] == live.id
    stub.stop()
    with (
        rewind.replay(trace_path),
        client.responses.with_streaming_response.create(model=MODEL, input="plain") as response,
    ):
        assert response.parse() == live
